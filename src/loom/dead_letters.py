"""What `loom dead-letters list|redrive` do on a service's tables: the commands themselves (their
options and their words) are in `loom.cli`."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from loom.model_files import NoModelFiles, model_files
from loom.run_options import Held, OptionError, default_database, default_database_file

# `sqlite[+driver]:///PATH[?query]`: PATH relative to the current folder, or `/abs` (four slashes)
_SQLITE_FILE = re.compile(r"sqlite(?:\+\w+)?:///(.*)", re.DOTALL)


def default_url(model: Path | None, held: Held) -> str:
    """The database `loom run` keeps beside the model (a file or its folder; None: the current
    folder) for the service of `held`: the whole model's `<first file>.db`, a deployable's
    `<deployable>.db`. Raises OptionError with a sentence when there is none."""
    target = model or Path.cwd()
    if target.is_dir():
        try:
            files = model_files([target])
        except NoModelFiles as exc:
            raise OptionError(f"{exc}, or pass --database-url") from exc
        # `loom run` names the whole model's database after the first model file it was given
        with_db = [f for f in files if f.with_suffix(".db").exists()]
        first = (with_db or files)[0]
    elif target.is_file():
        first = target
    else:
        raise OptionError(f"{target}: no such file or folder")
    db = default_database_file(first, held)
    if not db.exists():
        raise OptionError(
            f"no database at {db} (has `loom run{held.args()}` served this model?); "
            "pass --database-url for another one"
        )
    return default_database(first, held)


def refuse_missing_sqlite(url: str) -> None:
    """Raise OptionError when `url` names a SQLite file that is not there: opening it would
    create an empty database and read it as one without dead letters or timers (a typo in the
    path passing for a healthy service)."""
    found = _SQLITE_FILE.match(url)
    if found is None:
        return
    name = found.group(1).split("?", 1)[0]
    if name in ("", ":memory:") or name.startswith("file:"):
        return
    if not Path(name).is_file():
        raise OptionError(
            f"no database at {Path(name).resolve()} (the --database-url file is not there; "
            "a SQLite file is never created here)"
        )


async def on_outbox(url: str, action: Callable[[Any], Awaitable[Any]]) -> Any:
    """Run `action(service)` on the tables directly (no model needed): the service has channels
    when the database has an outbox, and processes when it has a timer table; a database where
    no such service ever ran reads as empty."""
    from sqlalchemy import MetaData, inspect

    from loom.runtime import Channel, Service

    probe = Service.from_url(url, MetaData())
    try:
        async with probe.engine.connect() as conn:
            tables = await conn.run_sync(lambda c: set(inspect(c).get_table_names()))
    finally:
        await probe.dispose()
    channels = [Channel("(any)", ())] if "__loom_outbox" in tables else []
    service = Service.from_url(
        url, MetaData(), channels=channels, processes="__loom_timers" in tables
    )
    try:
        return await action(service)
    finally:
        await service.dispose()


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
    """How many were redriven; for one id, 1 for an event and 2 for a timeout."""
    events = bool(service.channels) and kind in (None, "event")
    timeouts = service.uses_processes and kind in (None, "timeout")
    if event_id is None:
        count = int(await service.outbox.redrive_all()) if events else 0
        return count + (int(await service.timers.redrive_all()) if timeouts else 0)
    if events and await service.outbox.redrive(event_id):
        return 1
    return 2 if timeouts and await service.timers.redrive(event_id) else 0
