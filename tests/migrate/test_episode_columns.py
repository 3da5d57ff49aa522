"""A database from before episodes (SQLite and PostgreSQL): its process instance tables lack
`episode`, `started_at` and `ended_at`, and it has no `__loom_episodes`. `loom migrate new` plans
them, `apply` adds them, and an instance that had already completed reads as episode 1; the next
starter for its key begins episode 2 (docs/processes.md#episodes)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from click.testing import CliRunner
from sqlalchemy import MetaData, Table, insert
from sqlalchemy.ext.asyncio import create_async_engine

from loom.build.package import build_model, import_package
from loom.cli.main import app
from loom.lang import compile_files
from loom.migrate.folder import revisions
from loom.migrate.model import service_metadata
from loom.migrate.plan import make_plan, write_revision
from loom.migrate.snapshot import empty
from loom.migrate.tables import snapshot_of
from loom.testing import serve

from .test_instances import _migrate

MODEL = Path(__file__).parents[1] / "e2e" / "models" / "dunning.loom"
EPISODE_COLUMNS = ("episode", "started_at", "ended_at")


def _before_episodes(model: Path, build: Path) -> MetaData:
    """The model's schema as the code generator wrote it before episodes."""
    result = compile_files([model])
    assert result.model is not None
    build_model(result.model, build)
    now = service_metadata(import_package(build))
    old = MetaData()
    for table in now.tables.values():
        if table.name == "__loom_episodes":
            continue
        if not table.name.endswith("_instances"):
            table.to_metadata(old)
            continue
        columns = [c._copy() for c in table.c if c.name not in EPISODE_COLUMNS]
        Table(table.name, old, *columns, info=dict(table.info))
    return old


async def _seed(url: str, old: MetaData, subscription: Any) -> None:
    """A subscription whose dunning process completed, written by the code before episodes."""
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            subscriptions = old.tables["billing_subscriptions"]
            row = {"id": subscription, "version": 2, "customer": "Ada", "status": "Active"}
            await conn.execute(insert(subscriptions).values(row | {"notices": 1}))
            dunning = old.tables["billing_dunning_instances"]
            done = {"subscription": subscription, "version": 2, "failures": 1, "ended": True}
            await conn.execute(insert(dunning).values(done))
    finally:
        await engine.dispose()


async def _after(model: Path, url: str, subscription: str) -> tuple[Any, Any, Any]:
    async with serve([model], url) as http:
        path = f"/api/workflows/dunning/instances/{subscription}"
        before = (await http.get(path)).json()
        failed = await http.post(f"/api/subscriptions/{subscription}/fail")
        assert failed.status_code == 204, failed.text
        after = (await http.get(path)).json()
        episodes = (await http.get(f"{path}/episodes")).json()
        return before, after, episodes


def test_an_old_instances_table_gets_the_episode_columns(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    model = tmp_path / "dunning.loom"
    shutil.copy(MODEL, model)
    old = _before_episodes(model, tmp_path / "build")
    folder = tmp_path / "migrations"
    snap = snapshot_of(old)
    plan = make_plan(empty(), snap, fallback_file="dunning.loom")
    write_revision(folder, revisions(folder), "before episodes", plan, snap)
    applied = CliRunner().invoke(
        app, ["migrate", "apply", str(model), "--database-url", database_url]
    )
    assert applied.exit_code == 0, applied.output
    subscription = uuid4()
    asyncio.run(_seed(database_url, old, subscription))

    planned = _migrate(model, database_url)
    for wf in ("dunning", "first_notice"):
        table = f"billing_{wf}_instances"
        assert f"add column {table}.episode (BigInteger), default 1" in planned, planned
        assert f"add column {table}.started_at (DateTime, optional)" in planned, planned
        assert f"add column {table}.ended_at (DateTime, optional)" in planned, planned
    assert "create table __loom_episodes" in planned, planned

    before, after, episodes = asyncio.run(_after(model, database_url, str(subscription)))
    assert (before["episode"], before["ended"], before["startedAt"]) == (1, True, None)
    assert (after["episode"], after["ended"], after["failures"]) == (2, False, 1)
    assert [(e["episode"], e["status"], e["startedAt"]) for e in episodes] == [
        (1, "completed", None),
        (2, "running", after["startedAt"]),
    ]
    assert episodes[0]["state"]["failures"] == 1
