"""`loom timers list|fire`: the pending timeouts and context timers of a service's database, and
making one due now, for operators and manual tests (docs/processes.md, "Timers for operators").

Like `loom dead-letters`, it works on the tables (no model, no handlers): `fire` makes the timeout
(or the context timer's next tick) due now, and the running service's scheduler fires it, once,
as it fires any due timer (announced on PostgreSQL, so at once; on SQLite at its next poll). A
running service also fires one itself: `POST /api/admin/timers/{id}/fire`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from loom.cli.output import Format, fail, format_option
from loom.cli.service_database import (
    audit_command,
    database_options,
    model_files_argument,
    on_outbox,
    page_options,
    service_database_url,
)
from loom.serving.database import safe_url


@click.group()
def timers() -> None:
    """List the pending timeouts and context timers of a service, and fire one now
    (docs/processes.md)."""


async def _page(service: Any, limit: int, offset: int) -> dict[str, Any]:
    # here, not at the top: `loom check` and `loom build` never load the runtime (start-up)
    from loom.runtime.http.timer_admin import timers_page

    items, total = await timers_page(service, limit, offset)
    dumped = [item.model_dump(mode="json") for item in items]
    return {"items": dumped, "limit": limit, "offset": offset, "total": total}


async def _make_due(service: Any, id: str) -> str | None:
    """Make `id` due now (answers its kind, None when nothing has it), audited as a fire."""
    from loom.runtime.http.timer_admin import make_due

    kind = await make_due(service, id) if service.uses_processes else None
    if kind is not None:
        await audit_command(service, "fire", [id], {"kind": kind}, "made due")
    return kind


@timers.command("list")
@model_files_argument
@format_option()
@page_options
@database_options
def timers_list(
    files: tuple[Path, ...],
    database_url: str | None,
    format: Format,
    limit: int,
    offset: int,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """List the armed timeouts, earliest due first, then the context timers with their next tick
    (exit 0, also when there are none)."""
    import asyncio
    import json

    url = service_database_url(files, database_url, contexts, deployable)
    try:
        page = asyncio.run(on_outbox(url, lambda svc: _page(svc, limit, offset)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        fail(f"cannot read the timers of {safe_url(url)}: {exc}")
    if format is Format.json:
        click.echo(json.dumps(page, ensure_ascii=False))
        return
    items = page["items"]
    if not items:
        click.echo(f"no pending timers ({page['total']} in all)" if page["total"] else "no timers")
        return
    click.echo(f"{page['total']} pending timer(s); {offset + 1}-{offset + len(items)}:")
    for x in items:
        if x["kind"] == "timeout":
            click.echo(
                f"timeout  {x['job_id']}  {x['process']}.{x['timeout']}  key={x['key']}"
                f"  due={x['due_at']}  attempts={x['attempts']}"
                + (f"  tenant={x['tenant']}" if x.get("tenant") else "")
            )
        else:
            click.echo(f"timer    {x['timer']}  due={x['due_at']}  last run={x['last_run_at']}")


@timers.command("fire")
@click.argument(
    "id",
    metavar="ID",
    help="A timeout's job id, or a context timer's name, as `loom timers list` shows it.",
)
@model_files_argument
@database_options
def timers_fire(
    id: str,
    files: tuple[Path, ...],
    database_url: str | None,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """Make a pending timeout (or a context timer's next tick) due now: the running service's
    scheduler fires it, once.

    Exit codes: 0 due now; 1 no pending timeout or context timer has this id; 2 wrong arguments
    or no database.
    """
    import asyncio

    url = service_database_url(files, database_url, contexts, deployable)
    try:
        kind = asyncio.run(on_outbox(url, lambda svc: _make_due(svc, id)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        fail(f"cannot fire in {safe_url(url)}: {exc}")
    if kind is None:
        fail(f"no pending timeout or context timer has the id {id}", 1)
    click.echo(f"{kind} {id} is due now: the service's scheduler fires it")
