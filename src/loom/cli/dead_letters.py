"""`loom dead-letters list|redrive`: durable events whose delivery failed maxAttempts times
(docs/events.md) and process timeouts whose handler did (docs/processes.md), on a service's
tables."""

from __future__ import annotations

import enum
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


class DeadKind(enum.StrEnum):
    event = "event"
    timeout = "timeout"


kind_option = click.option(
    "--kind",
    type=click.Choice(DeadKind),
    help="Only dead events, or only dead timeouts (default: both).",
)


@click.group("dead-letters")
def dead_letters() -> None:
    """List and redrive dead letters: durable events whose delivery failed maxAttempts times
    (docs/events.md) and process timeouts whose handler did (docs/processes.md)."""


@dead_letters.command("list")
@model_files_argument
@format_option()
@page_options
@kind_option
@database_options
def dead_letters_list(
    files: tuple[Path, ...],
    database_url: str | None,
    format: Format,
    limit: int,
    offset: int,
    kind: DeadKind | None,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """List dead letters, oldest first: dead events, then dead timeouts (exit 0, also when there
    are none)."""
    import asyncio  # here, not at the top: `loom check` and `loom build` never load it (start-up)
    import json

    url = service_database_url(files, database_url, contexts, deployable)
    wanted = None if kind is None else kind.value
    try:
        page = asyncio.run(on_outbox(url, lambda svc: dead_page(svc, limit, offset, wanted)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        fail(f"cannot read the dead letters of {safe_url(url)}: {exc}")
    if format is Format.json:
        click.echo(json.dumps(page, default=str, ensure_ascii=False))
        return
    items = page["items"]
    if not items:
        click.echo(
            f"no dead letters ({page['total']} in all)" if page["total"] else "no dead letters"
        )
        return
    first = offset + 1
    click.echo(f"{page['total']} dead letter(s); {first}-{offset + len(items)}:")
    for d in items:
        if d["kind"] == "timeout":
            click.echo(
                f"timeout  {d['job_id']}  {d['process']}.{d['timeout']}  key={d['key']}"
                f"  attempts={d['attempts']}  due={d['due_at']}  correlation={d['correlation_id']}"
                + (f"  tenant={d['tenant']}" if d.get("tenant") else "")
            )
        else:
            click.echo(
                f"event    {d['event_id']}  {d['event_type']}  channel={d['channel']}"
                f"  attempts={d['attempts']}  occurred={d['occurred_at']}"
                f"  correlation={d['correlation_id']}  revision={d['model_revision'] or 'unknown'}"
                + (f"  tenant={d['tenant']}" if d.get("tenant") else "")
            )
        click.echo(f"    last error: {d['last_error']}")


@dead_letters.command("redrive")
@click.argument(
    "args",
    nargs=-1,
    metavar="EVENT_ID [FILE]...",
    help="The dead letter to put back in the queue (none with --all), then optionally the "
    "model's files or its folder, as for `list`.",
)
@click.option("--all", "all_", is_flag=True, help="Redrive every dead letter.")
@kind_option
@database_options
def dead_letters_redrive(
    args: tuple[str, ...],
    all_: bool,
    database_url: str | None,
    kind: DeadKind | None,
    deployable: str | None,
    contexts: str | None,
) -> None:
    """Put dead letters back in the queue: the service's relay delivers them (its scheduler fires
    the timeouts) again from attempt 1. ID is an event id or a timeout's job id.

    Exit codes: 0 redriven (with --all, also when there was none); 1 EVENT_ID is not a dead
    letter; 2 wrong arguments or no database.
    """
    import asyncio  # here, not at the top: `loom check` and `loom build` never load it (start-up)
    from uuid import UUID

    rest = list(args or [])
    event_id: UUID | None = None
    if not all_:
        if not rest:
            fail("name the dead letter's EVENT_ID, or pass --all")
        try:
            event_id = UUID(rest.pop(0))
        except ValueError:
            fail("EVENT_ID must be a UUID (as `loom dead-letters list` shows it)")
    url = service_database_url([Path(p) for p in rest], database_url, contexts, deployable)
    try:
        wanted = None if kind is None else kind.value
        count = asyncio.run(on_outbox(url, lambda svc: redrive(svc, event_id, wanted)))
    except Exception as exc:  # noqa: BLE001 - a sentence, never a traceback
        fail(f"cannot redrive in {safe_url(url)}: {exc}")
    if event_id is None:
        click.echo(f"redriven {count} dead letter(s)")
    elif count == 2:
        click.echo(f"redriven {event_id}: the service's scheduler fires it again")
    elif count:
        click.echo(f"redriven {event_id}: the service's relay delivers it again")
    else:
        click.echo(f"error: no dead letter has the event id {event_id}", err=True)
        raise click.exceptions.Exit(1)


async def dead_page(service: Any, limit: int, offset: int, kind: Any) -> dict[str, Any]:
    from loom.runtime.http.admin import dead_page as admin_dead_page

    items, total = await admin_dead_page(service, limit, offset, kind)
    return {
        "items": [item.model_dump(mode="json") for item in items],
        "limit": limit,
        "offset": offset,
        "total": total,
    }


async def redrive(service: Any, event_id: Any, kind: Any) -> int:
    """How many were redriven; for one id, 1 for an event and 2 for a timeout. What was
    redriven is written to the service's audit log (`audit_command`)."""
    count = await _redrive(service, event_id, kind)
    if count:
        targets = [] if event_id is None else [event_id]
        parameters = {"all": True, "kind": kind or "any"} if event_id is None else {}
        redriven = 1 if event_id is not None else count
        await audit_command(service, "redrive", targets, parameters, f"redriven={redriven}")
    return count


async def _redrive(service: Any, event_id: Any, kind: Any) -> int:
    events = bool(service.channels) and kind in (None, "event")
    timeouts = service.uses_processes and kind in (None, "timeout")
    if event_id is None:
        count = int(await service.outbox.redrive_all()) if events else 0
        return count + (int(await service.timers.redrive_all()) if timeouts else 0)
    if events and await service.outbox.redrive(event_id):
        return 1
    return 2 if timeouts and await service.timers.redrive(event_id) else 0
