"""A database from before the admin audit log (SQLite and PostgreSQL): it lacks `__loom_audit`,
so the service refuses it (`SchemaMismatch`, naming the table), and `loom run --migrate` adds it;
the admin actions are then recorded (docs/http.md, "Admin routes")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from loom.runtime import SchemaMismatch
from loom.testing import serve
from tests.liveserver import free_port, running

MODEL = Path(__file__).parents[1] / "e2e" / "models" / "desk_timers.loom"


async def _before_the_audit_log(url: str) -> None:
    async with serve([MODEL], url):
        pass
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DROP TABLE __loom_audit"))
    finally:
        await engine.dispose()


async def _refused(url: str) -> str:
    with pytest.raises(SchemaMismatch) as refused:
        async with serve([MODEL], url):
            pass
    return str(refused.value)


def test_an_old_database_is_refused_then_migrated(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):  # the loopback operator's
        monkeypatch.delenv(name, raising=False)
    asyncio.run(_before_the_audit_log(database_url))
    said = asyncio.run(_refused(database_url))
    assert "table __loom_audit is missing" in said, said
    with running(str(MODEL), "--database-url", database_url, "--migrate", port=free_port()) as base:
        later = {"due_at": "2099-01-01T00:00:00Z"}
        r = httpx.post(f"{base}/api/admin/timers/Desk.sweep/reschedule", json=later)
        assert r.status_code == 200, r.text
        audit = httpx.get(f"{base}/api/admin/audit").json()
        assert [(a["action"], a["actor"]) for a in audit["items"]] == [("reschedule", "loopback")]
