"""The stored events a change would leave undecodable, counted in the database, and the
`loom.migrate-pending-events` findings `loom migrate new` refuses it with (docs/migrations.md,
"Events in flight").

Stored events are the rows of `__loom_outbox`: pending ones (claimed or waiting for a retry
included), dead letters, and delivered ones a `log` channel retains (a `work` channel deletes a row
once delivered). The database is read, never written: a SQLite file that is not there yet holds
no events, and is not created.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import MetaData, column, func, inspect, select, table
from sqlalchemy.engine import Connection, make_url

from loom.lang.diagnostics import Diagnostic
from loom.migrate.events import Break, EventsSnap, breaks, unknown_types
from loom.migrate.lint import span_at
from loom.runtime import Service

__all__ = ["EventCheck", "Pending", "check_stored_events", "event_findings"]

CODE = "loom.migrate-pending-events"
OUTBOX = table("__loom_outbox", column("event_type"), column("status"), column("payload"))


@dataclass(frozen=True)
class Pending:
    """A break, and the stored events it leaves undecodable, by status."""

    brk: Break
    statuses: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.statuses.values())


@dataclass
class EventCheck:
    pending: list[Pending] = field(default_factory=list)  # breaks with stored events
    clear: list[Break] = field(default_factory=list)  # breaks no stored event is affected by
    skipped: str | None = None  # why the database was not read


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


async def check_stored_events(url: str, old: EventsSnap | None, new: EventsSnap) -> EventCheck:
    """The breaks from `old` to `new` (plus stored types no event of either decodes), each with
    the stored events it affects in the database at `url`."""
    static = breaks(old, new) if old is not None else []
    try:
        parsed = make_url(url)
    except Exception as exc:  # noqa: BLE001 - a bad URL: one sentence, the check skipped
        return EventCheck(clear=static, skipped=f"cannot use the database URL: {exc}")
    if parsed.get_backend_name() == "sqlite" and not _sqlite_exists(parsed.database):
        return EventCheck(clear=static)  # no database yet: no stored events
    try:
        service = Service.from_url(url, MetaData())
    except Exception as exc:  # noqa: BLE001 - a missing driver ...
        return EventCheck(clear=static, skipped=f"cannot use the database URL: {_first_line(exc)}")
    try:
        async with service.engine.connect() as conn:
            return await conn.run_sync(lambda sync: _count(sync, static, old, new))
    except Exception as exc:  # noqa: BLE001 - unreachable, refused, unknown database ...
        return EventCheck(
            clear=static, skipped=f"cannot connect to the database: {_first_line(exc)}"
        )
    finally:
        await service.dispose()


def _sqlite_exists(database: str | None) -> bool:
    return bool(database) and database != ":memory:" and Path(str(database)).is_file()


def _count(
    conn: Connection, static: list[Break], old: EventsSnap | None, new: EventsSnap
) -> EventCheck:
    if not inspect(conn).has_table("__loom_outbox"):
        return EventCheck(clear=static)
    stored = {r[0] for r in conn.execute(select(OUTBOX.c.event_type).distinct())}
    out = EventCheck()
    for brk in [*static, *unknown_types(stored, old, new)]:
        statuses: Counter[str] = Counter()
        types = [t for t in brk.stored if t in stored]
        if types and brk.kind == "removed":
            query = (
                select(OUTBOX.c.status, func.count())
                .where(OUTBOX.c.event_type.in_(types))
                .group_by(OUTBOX.c.status)
            )
            # the rows (pairs): a result itself has keys(), so dict() would read it as a mapping
            statuses.update(dict(conn.execute(query).all()))
        elif types:
            query = select(OUTBOX.c.status, OUTBOX.c.payload).where(OUTBOX.c.event_type.in_(types))
            for status, payload in conn.execute(query):
                if brk.affects(_payload(payload)):
                    statuses[status] += 1
        if statuses:
            out.pending.append(Pending(brk, dict(sorted(statuses.items()))))
        else:
            out.clear.append(brk)
    return out


def _payload(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_STATUS = {"pending": "pending", "dead": "dead-lettered", "delivered": "retained in a log"}


def event_findings(
    pending: list[Pending], *, fallback_file: str, old_label: str
) -> list[tuple[Diagnostic, bool]]:
    """A `loom.migrate-pending-events` error per break with stored events, and whether its span
    is in the model as of the last migration (not a line of the files as they are now)."""
    out = []
    for p in pending:
        brk = p.brk
        span = span_at((brk.source, _width(brk)) if brk.source else None, fallback_file)
        old_model = brk.in_old_model or brk.source is None
        if brk.in_old_model and brk.source:
            span = replace(span, file=f"{span.file} (as of {old_label})")
        how = ", ".join(f"{n} {_STATUS.get(s, s)}" for s, n in p.statuses.items())
        noun = "event" if p.total == 1 else "events"
        out.append(
            (
                Diagnostic.make(
                    CODE,
                    f"{p.total} stored {noun} of {' / '.join(brk.stored)} ({how}) would not "
                    f"decode under the new model: {brk.describe()}",
                    span,
                    _LABEL[brk.kind],
                    help=_help(brk),
                ),
                old_model,
            )
        )
    return out


def _width(brk: Break) -> int:
    if brk.kind == "removed":
        return len("event")
    return len(brk.field or "")


_LABEL = {
    "removed": "no event of the new model decodes it",
    "missing": "required, with no default for the stored events",
    "type": "a type the stored values are not",
}


def _help(brk: Break) -> str:
    deliver = (
        "deliver them first: run the previous version until its relay has delivered the pending "
        "ones, and redrive or delete the dead letters (`loom dead-letters`)"
    )
    if brk.kind == "removed":
        short = brk.stored[0].rpartition(".")[2]
        return (
            f"{deliver}; a `log` channel keeps delivered events for ever: keep the event, or "
            f"declare the event that replaces it `renamed from {short}`"
        )
    if brk.kind == "missing":
        return (
            f"give `{brk.field}` a default (`= …`): it is the value stored events decode to (the "
            f"upcast); or make it `renamed from` the field they hold; or {deliver}"
        )
    return (
        f"no upcast converts a stored value yet: {deliver}; or keep `{brk.field}` as `{brk.was}` "
        "and add a new field, with a default, beside it"
    )
