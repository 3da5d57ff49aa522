"""Tenants and keyed tables on a real database, SQLite and PostgreSQL (docs/migrations.md#tenanted-contexts).

- A context made `tenanted` with a correlated workflow and a projection: their instance and row
  tables get the `tenant` column and a primary key of (tenant, key) when empty, so two tenants may
  hold one key; with rows the migration refuses, in words and changing nothing.
- Loom's own `__loom_timers` and `__loom_episodes` from before tenants: the migration adds their
  `tenant` (existing rows are untenanted, `""`) and keys them per tenant, and an instance armed
  before fires after it."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import (
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    UniqueConstraint,
    insert,
    inspect,
    select,
)
from sqlalchemy.ext.asyncio import create_async_engine

from loom.build.package import build_model, import_package
from loom.cli.main import app
from loom.lang import compile_files, compile_sources
from loom.migrate.database import apply
from loom.migrate.folder import MigrationsError, revisions
from loom.migrate.model import service_metadata
from loom.migrate.plan import make_plan, write_revision
from loom.migrate.snapshot import empty
from loom.migrate.tables import snapshot_of
from loom.testing import serve
from loom.testing._clock import VirtualClock
from tests.migrate.kit import run_on as _run
from tests.migrate.kit import write_versions

from .test_instances import _migrate

DATA = Path(__file__).parent / "data" / "tenanted-keyed-tables"
KEYED = ("desk_escalation_instances", "desk_activity_rows")
DUNNING = Path(__file__).parents[1] / "e2e" / "models" / "dunning.loom"
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)


def _metadata(name: str, out: Path) -> MetaData:
    text = (DATA / f"{name}.loom").read_text(encoding="utf-8")
    result = compile_sources({f"{name}.loom": text})
    assert result.ok and result.model is not None
    build_model(result.model, out)
    return service_metadata(import_package(out))


def _primary_keys(conn: Any) -> dict[str, list[str]]:
    found = inspect(conn)
    return {t: found.get_pk_constraint(t)["constrained_columns"] for t in KEYED}


@pytest.mark.parametrize("rows", [0, 1], ids=["empty", "with-rows"])
async def test_keyed_tables_become_tenanted(database_url: str, tmp_path: Path, rows: int) -> None:
    before, after = _metadata("before", tmp_path / "v1"), _metadata("after", tmp_path / "v2")
    revs = write_versions(tmp_path / "migrations", before, after)
    script = revs[1].script.read_text(encoding="utf-8")
    for keyed in KEYED:
        assert f"{keyed} becomes tenanted and has rows" in script
    assert (await apply(database_url, revs[:1])).applied == [revs[0].name]
    key = uuid.uuid4()
    if rows:
        table = before.tables["desk_activity_rows"]
        await _run(
            database_url,
            before,
            lambda c: c.execute(insert(table), {"ticket": key, "version": 1, "opened": 1}),
        )
        with pytest.raises(MigrationsError, match="becomes tenanted and has rows"):
            await apply(database_url, revs)
        assert await _run(database_url, before, _primary_keys) == {t: ["ticket"] for t in KEYED}
        got = await _run(database_url, before, lambda c: c.execute(select(table)).all())
        assert [tuple(r) for r in got] == [(key, 1, 1)]
        return
    assert (await apply(database_url, revs)).applied == [revs[1].name]
    assert await _run(database_url, after, _primary_keys) == {
        t: ["tenant", "ticket"] for t in KEYED
    }
    # one key in two tenants, not twice in one
    t = after.tables["desk_activity_rows"]
    make = {"ticket": key, "version": 1, "opened": 0}
    await _run(
        database_url,
        after,
        lambda c: c.execute(insert(t), [{**make, "tenant": n} for n in ("acme", "globex")]),
    )
    with pytest.raises(Exception, match=r"(?i)unique|duplicate"):
        await _run(database_url, after, lambda c: c.execute(insert(t), {**make, "tenant": "acme"}))


def _before_tenants(model: Path, build: Path) -> MetaData:
    """The model's schema with Loom's timers and episodes as they were before tenants."""
    result = compile_files([model])
    assert result.model is not None
    build_model(result.model, build)
    now = service_metadata(import_package(build))
    old = MetaData()
    for table in now.tables.values():
        if table.name not in ("__loom_timers", "__loom_episodes"):
            table.to_metadata(old)
            continue
        columns = [c._copy() for c in table.c if c.name != "tenant"]
        indexes = [Index(i.name, *(c.name for c in i.columns)) for i in table.indexes]
        if table.name == "__loom_timers":
            keys: list[Any] = [
                UniqueConstraint("process", "key", "name", name="uq___loom_timers_name")
            ]
        else:
            keys = [PrimaryKeyConstraint("process", "key", "episode", name="pk___loom_episodes")]
        Table(table.name, old, *columns, *keys, *indexes, info=dict(table.info))
    return old


async def _seed(url: str, old: MetaData, subscription: uuid.UUID) -> None:
    """A subscription in dunning (its grace armed) after one completed episode, as the code
    before tenants wrote it."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            subs = old.tables["billing_subscriptions"]
            row = {"id": subscription, "version": 2, "customer": "Ada", "status": "PastDue"}
            await conn.execute(insert(subs).values(row | {"notices": 1}))
            instance = {
                "subscription": subscription,
                "version": 3,
                "failures": 1,
                "ended": False,
                "episode": 2,
                "started_at": START,
                "ended_at": None,
            }
            await conn.execute(insert(old.tables["billing_dunning_instances"]).values(instance))
            archived = {
                "process": "Billing.Dunning",
                "key": str(subscription),
                "episode": 1,
                "started_at": START - timedelta(days=9),
                "ended_at": START - timedelta(days=8),
                "status": "completed",
                "state": '{"failures": 1}',
            }
            await conn.execute(insert(old.tables["__loom_episodes"]).values(archived))
            due = START + timedelta(days=3)
            timer = {
                "job_id": uuid.uuid4(),
                "process": "Billing.Dunning",
                "key": str(subscription),
                "name": "grace",
                "due_at": due,
                "available_at": due,
                "attempts": 0,
                "status": "armed",
                "armed_at": START,
            }
            await conn.execute(insert(old.tables["__loom_timers"]).values(timer))
    finally:
        await engine.dispose()


async def _after(model: Path, url: str, subscription: str) -> tuple[Any, Any, Any, int]:
    with VirtualClock(start=START) as clock:
        async with serve([model], url) as http:
            clock.attach(http.service)
            path = f"/api/workflows/dunning/instances/{subscription}"
            before = (await http.get(path)).json()
            episodes = (await http.get(f"{path}/episodes")).json()
            fired = await clock.advance(timedelta(days=3))
            status = (await http.get(f"/api/subscriptions/{subscription}")).json()["status"]
            return before, episodes, status, fired


def test_loom_timers_and_episodes_from_before_tenants(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    model = tmp_path / "dunning.loom"
    shutil.copy(DUNNING, model)
    old = _before_tenants(model, tmp_path / "build")
    folder = tmp_path / "migrations"
    snap = snapshot_of(old)
    write_revision(
        folder,
        revisions(folder),
        "before tenants",
        make_plan(empty(), snap, fallback_file="dunning.loom"),
        snap,
    )
    applied = CliRunner().invoke(
        app, ["migrate", "apply", str(model), "--database-url", database_url]
    )
    assert applied.exit_code == 0, applied.output
    subscription = uuid.uuid4()
    asyncio.run(_seed(database_url, old, subscription))

    planned = _migrate(model, database_url)
    assert "add column __loom_timers.tenant" in planned, planned
    assert "add column __loom_episodes.tenant" in planned, planned
    assert (
        "change the primary key of __loom_episodes from (process, key, episode) to "
        "(process, tenant, key, episode)"
    ) in planned, planned
    assert "add unique key uq___loom_timers_name on __loom_timers" in planned, planned

    before, episodes, status, fired = asyncio.run(_after(model, database_url, str(subscription)))
    assert (before["episode"], [t["name"] for t in before["timeouts"]]) == (2, ["grace"])
    assert [(e["episode"], e["status"]) for e in episodes] == [(1, "completed"), (2, "running")]
    assert (fired, status) == (1, "Cancelled")
