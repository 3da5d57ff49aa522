"""Applying migrations to a database, and reading where a database stands.

The record is the table `__loom_migrations` (revision, name, checksum, applied_at, baseline).
`apply` runs in one transaction: on PostgreSQL under the advisory lock a starting service also
takes to create or check its schema (so two `apply` at once, or an `apply` and replicas
starting, go one after the other and the later find the work done), on SQLite under BEGIN
IMMEDIATE. Each pending revision's `upgrade()` runs through Alembic's operations; once they ran,
the database must have exactly the tables and columns of the last snapshot, or the whole
transaction is rolled back.

A database made before the model had migrations (by the create-all of `loom run` or of a
service's start-up) is a baseline: when its tables are exactly those of the snapshot of some
revision (the latest one that matches), the revisions up to it are recorded as applied without
running, and the later ones run. A database that holds some tables but matches no snapshot is
refused, with what differs from the closest one.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from sqlalchemy import Boolean, Column, MetaData, String, Table, insert, inspect, select
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncConnection

from loom.migrate.folder import MigrationsError, Revision
from loom.migrate.snapshot import Snapshot
from loom.runtime import Service
from loom.runtime.storage.engine import BEGIN_OPTION, SCHEMA_LOCK
from loom.runtime.storage.replicas import (
    MIGRATIONS_TABLE,
    REPLICAS_TABLE,
    ReplicaRow,
    alive_replicas,
)
from loom.runtime.storage.schema_check import ColumnShape, differences, read_shape

__all__ = [
    "VERSION_TABLE",
    "Applied",
    "DatabaseUnreachable",
    "Status",
    "apply",
    "apply_unrecorded",
    "database_shape",
    "read_database",
    "serving_replicas",
    "shape_on",
    "snapshot_shape",
    "status",
]

VERSION_TABLE = MIGRATIONS_TABLE
# aiosqlite's worker threads are `Thread-N (_connection_worker_thread)`; one a failed connect
# started stops within a millisecond or so once the loop runs
_SQLITE_WORKER = "(_connection_worker_thread)"
_SQLITE_WORKER_WAIT_S = 1.0
_record_metadata = MetaData()
_record = Table(
    VERSION_TABLE,
    _record_metadata,
    Column("revision", String, primary_key=True),
    Column("name", String, nullable=False),
    Column("checksum", String, nullable=False),
    Column("applied_at", String, nullable=False),
    Column("baseline", Boolean, nullable=False),
)
T = TypeVar("T")


class DatabaseUnreachable(Exception):
    """The URL is not one Loom can use, or the database does not answer."""


@dataclass
class Status:
    applied: list[str]  # revision names, in order
    pending: list[Revision]
    baselined: list[str]
    # what the database holds beyond or short of the snapshot of the last applied revision
    drift: list[str]
    # no revision recorded, but tables there: `apply` will try to baseline it
    unrecorded_tables: bool = False
    # applied revisions whose script is not the one applied (edited since)
    changed: list[str] = field(default_factory=list)


@dataclass
class Applied:
    applied: list[str] = field(default_factory=list)
    baselined: list[str] = field(default_factory=list)


def snapshot_shape(snapshot: Snapshot) -> dict[str, dict[str, ColumnShape]]:
    return {
        name: {c["name"]: ColumnShape(c["nullable"]) for c in table["columns"]}
        for name, table in snapshot["tables"].items()
    }


async def _on_database(url: str, action: Callable[[AsyncConnection, bool], Awaitable[T]]) -> T:
    """Run `action(connection, is_postgres)` in one transaction on `url` (serialised, see the
    module's docstring)."""
    try:
        service = Service.from_url(url, MetaData())
    except Exception as exc:  # noqa: BLE001 - a bad URL or a missing driver: one sentence
        raise DatabaseUnreachable(f"cannot use the database URL: {_first_line(exc)}") from None
    try:
        workers = _sqlite_workers()
        try:
            conn = await service.engine.connect()
        except Exception as exc:  # noqa: BLE001 - unreachable, refused, unknown database ...
            await _let_sqlite_workers_stop(workers)
            raise DatabaseUnreachable(
                f"cannot connect to the database: {_first_line(exc)}"
            ) from None
        try:
            if service.is_sqlite:
                conn = await conn.execution_options(**{BEGIN_OPTION: "BEGIN IMMEDIATE"})
            async with conn.begin():
                postgres = service.dialect == "postgresql"
                if postgres:
                    await conn.execute(SCHEMA_LOCK)
                return await action(conn, postgres)
        finally:
            await conn.close()
    finally:
        await service.dispose()


def _sqlite_workers() -> set[threading.Thread]:
    """The aiosqlite worker threads alive now (one per connection, named after its target)."""
    return {t for t in threading.enumerate() if t.name.endswith(_SQLITE_WORKER)}


async def _let_sqlite_workers_stop(before: set[threading.Thread]) -> None:
    """Wait (briefly) for the worker threads a failed SQLite connect started: aiosqlite stops
    one by queueing a close whose result it hands back to this loop; were the loop closed first
    (`asyncio.run` returning on the refusal), the thread would die printing `RuntimeError: Event
    loop is closed` after the command's one-line error."""
    deadline = time.monotonic() + _SQLITE_WORKER_WAIT_S
    while time.monotonic() < deadline:
        if not any(t.is_alive() for t in _sqlite_workers() - before):
            return
        await asyncio.sleep(0.001)


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _read_record(conn: Connection) -> list[tuple[str, str, bool]]:
    if not inspect(conn).has_table(VERSION_TABLE):
        return []
    rows = conn.execute(
        select(_record.c.revision, _record.c.name, _record.c.baseline).order_by(_record.c.revision)
    )
    return [(r.revision, r.name, bool(r.baseline)) for r in rows]


def _checksums(conn: Connection) -> dict[str, str]:
    rows = conn.execute(select(_record.c.revision, _record.c.checksum))
    return {r.revision: r.checksum for r in rows}


def _check_record(record: list[tuple[str, str, bool]], revisions: Sequence[Revision]) -> None:
    known = {r.number: r for r in revisions}
    for number, name, _baseline in record:
        if number not in known:
            raise MigrationsError(
                f"the database records migration {name}, which the migrations folder does not "
                "have: it was migrated by a newer version of the model; use that version"
            )
    applied = [number for number, _, _ in record]
    expected = [r.number for r in revisions[: len(applied)]]
    if applied != expected:
        raise MigrationsError(
            f"the database records migrations {', '.join(applied)}, not the first {len(applied)} "
            "of the migrations folder"
        )


def shape_on(conn: Connection) -> dict[str, dict[str, ColumnShape]]:
    shape = read_shape(conn)
    shape.pop(VERSION_TABLE, None)
    shape.pop(REPLICAS_TABLE, None)  # Loom's bookkeeping too (storage.replicas)
    return shape


async def status(url: str, revisions: Sequence[Revision]) -> Status:
    """Where the database at `url` stands against `revisions`."""

    def read(conn: Connection) -> Status:
        record = _read_record(conn)
        _check_record(record, revisions)
        actual = shape_on(conn)
        done = len(record)
        baselined = [name for _, name, baseline in record if baseline]
        if done == 0:
            return Status([], list(revisions), [], [], unrecorded_tables=bool(actual))
        expected = snapshot_shape(revisions[done - 1].snapshot())
        drift = differences(expected, actual, extra_tables=True)
        sums = _checksums(conn)
        changed = [r.name for r in revisions[:done] if sums.get(r.number) != r.checksum()]
        applied = [name for _, name, _ in record]
        return Status(applied, list(revisions[done:]), baselined, drift, changed=changed)

    return await _on_database(url, lambda conn, _pg: conn.run_sync(read))


async def apply(url: str, revisions: Sequence[Revision]) -> Applied:
    """Apply the pending revisions (see the module's docstring); raises MigrationsError, the
    database left as it was, when it cannot."""

    def run(conn: Connection) -> Applied:
        _record_metadata.create_all(conn)
        record = _read_record(conn)
        _check_record(record, revisions)
        result = Applied()
        done = len(record)
        if done:
            _refuse_drift(conn, revisions[done - 1])
        else:
            done = _baseline(conn, revisions, result)
        for revision in revisions[done:]:
            _run_script(conn, revision)
            _write_record(conn, revision, baseline=False)
            result.applied.append(revision.name)
        if revisions and (result.applied or result.baselined):
            drift = differences(
                snapshot_shape(revisions[-1].snapshot()), shape_on(conn), extra_tables=True
            )
            if drift:
                raise MigrationsError(
                    "after the migrations the database does not have the schema of "
                    f"{revisions[-1].snapshot_path.name}, so nothing was applied:\n"
                    + "\n".join(f"  - {d}" for d in drift)
                )
        return result

    return await _on_database(url, lambda conn, _pg: conn.run_sync(run))


def _baseline(conn: Connection, revisions: Sequence[Revision], result: Applied) -> int:
    """How many revisions the database already holds though none is recorded (see the module's
    docstring); they are recorded as applied."""
    actual = shape_on(conn)
    if not actual or not revisions:
        return 0
    closest: tuple[Revision, list[str]] | None = None
    for revision in reversed(revisions):
        diffs = differences(snapshot_shape(revision.snapshot()), actual, extra_tables=True)
        if not diffs:
            for earlier in revisions[: int(revision.number)]:
                _write_record(conn, earlier, baseline=True)
                result.baselined.append(earlier.name)
            return int(revision.number)
        if closest is None or len(diffs) < len(closest[1]):
            closest = (revision, diffs)
    assert closest is not None
    revision, diffs = closest
    raise MigrationsError(
        "the database has tables but no record of migrations, and its tables are not those of "
        f"any migration's snapshot (closest: {revision.name}):\n"
        + "\n".join(f"  - {d}" for d in diffs)
        + "\nmake the database match (or start from an empty one), then apply again"
    )


def _run_script(conn: Connection, revision: Revision) -> None:
    spec = importlib.util.spec_from_file_location(
        f"loom_migration_{revision.number}_{revision.checksum()}", revision.script
    )
    if spec is None or spec.loader is None:
        raise MigrationsError(f"cannot load {revision.script}")
    # Alembic only when a script runs: `loom run` on an up-to-date database never loads it
    from alembic.operations import Operations
    from alembic.runtime.migration import MigrationContext

    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        context = MigrationContext.configure(connection=conn)
        with Operations.context(context):
            module.upgrade()
    except MigrationsError:
        raise
    except Exception as exc:  # noqa: BLE001 - the database's refusal, as one sentence
        raise MigrationsError(
            f"migration {revision.name} failed, so nothing was applied: {_first_line(exc)}"
        ) from None


def _refuse_drift(conn: Connection, last: Revision) -> None:
    """Refuse a database whose tables are not those of the last migration it records: scripts
    written for that schema cannot be run on it, and one folder's numbers recorded by another
    folder's migrations (another deployable's database) would otherwise pass for applied."""
    drift = differences(snapshot_shape(last.snapshot()), shape_on(conn), extra_tables=True)
    if drift:
        lines = "\n".join(f"  - {d}" for d in drift)
        raise MigrationsError(
            f"the database records {last.name} but has drifted from its schema, so nothing was "
            f"applied:\n{lines}\nis it the database of another deployable, or of another "
            "model? (`loom migrate status` says the same)"
        )


def _write_record(conn: Connection, revision: Revision, *, baseline: bool) -> None:
    conn.execute(
        insert(_record).values(
            revision=revision.number,
            name=revision.name,
            checksum=revision.checksum(),
            applied_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            baseline=baseline,
        )
    )


async def serving_replicas(url: str) -> list[ReplicaRow]:
    """The replicas serving on the database at `url` (`storage.replicas`: heartbeat alive)."""
    return await _on_database(url, lambda conn, _pg: conn.run_sync(alive_replicas))


async def database_shape(url: str) -> dict[str, dict[str, ColumnShape]]:
    """The shape of the database's tables (Loom's record of migrations left out)."""
    return await read_database(url, shape_on)


async def read_database(url: str, read: Callable[[Connection], T]) -> T:
    """`read(connection)` in one transaction on `url`, serialised as the others here; a URL it
    cannot use or a database that does not answer is `DatabaseUnreachable`."""
    return await _on_database(url, lambda conn, _pg: conn.run_sync(read))


async def apply_unrecorded(url: str, script: Path, expected: Snapshot) -> None:
    """Run one script that no migrations folder holds (`loom run --migrate` on a model without
    migrations: additive changes only), then check the database has the tables of `expected`;
    nothing is recorded."""

    def run(conn: Connection) -> None:
        _run_script(conn, Revision("0000", script))
        drift = differences(snapshot_shape(expected), shape_on(conn))
        if drift:
            raise MigrationsError(
                "after the changes the database still differs from the model, so nothing was "
                "applied:\n" + "\n".join(f"  - {d}" for d in drift)
            )

    await _on_database(url, lambda conn, _pg: conn.run_sync(run))
