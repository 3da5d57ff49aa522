"""Accepted means it runs (issue 23): every reaction form the language accepts, served and driven
once over HTTP, on SQLite and PostgreSQL.

The model is generated (tests/e2e/reaction_matrix.py: every workflow kind x every trigger it
accepts x the durable and the in-process path, and the context timer), built once, and served once
per database on a virtual clock. Each case starts from a `Thing` of its own, triggers its
workflow — a command, an operation whose event is delivered by the outbox relay or in-process, a
timeout fired by the clock or by `POST /api/admin/timers/{id}/fire`, the timer's tick — and reads
the effects back over HTTP: the aggregate changed, the emitted event folded by a projection, the
instance's state (its pending timeouts, its end). Forms the language refuses are not generated;
`test_refused_forms` asserts the diagnostic that refuses each.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from loom.lang import compile_sources
from loom.model.naming import snake
from loom.testing import ServiceClient, VirtualClock, serve
from tests.conftest import create_pg_database
from tests.e2e.reaction_matrix import (
    CASES,
    KINDS,
    PATHS,
    REFUSED,
    Case,
    model_text,
    refused_model,
)

START = datetime(2031, 3, 3, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("matrix") / "matrix.loom"
    path.write_text(model_text(), encoding="utf-8")
    return path


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def module_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """One database per engine for the whole module (the cases share the served service)."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('sqlite') / 'matrix.db'}"
    cluster = request.getfixturevalue("pg_cluster")
    return str(cluster.url(create_pg_database(cluster)))


class Matrix:
    def __init__(self, client: ServiceClient, clock: VirtualClock) -> None:
        self.client = client
        self.clock = clock

    async def ok(self, method: str, path: str, body: Any = None, status: int = 200) -> Any:
        r = await self.client.request(method, path, json=body)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content else None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def matrix(model: Path, module_database: str) -> AsyncIterator[Matrix]:
    clock = VirtualClock(start=START)
    async with serve([model], module_database, clock=clock) as client:
        yield Matrix(client, clock)


async def _fire(m: Matrix, case: Case, thing: str) -> None:
    """The operators' route fires the case's timeout (its job, by process and key) or the
    context timer, now: the handler commits."""
    if case.kind == "timer":
        target = "Matrix.sweep"
    else:
        page = await m.ok("GET", "/api/admin/timers?limit=500")
        (job,) = [
            t["job_id"]
            for t in page["items"]
            if (t["kind"], t.get("process"), t.get("key"))
            == ("timeout", f"Matrix.{case.workflow}", thing)
        ]
        target = job
    got = await m.ok("POST", f"/api/admin/timers/{target}/fire")
    assert got["outcome"] == "fired", got


async def _drive(m: Matrix, case: Case, thing: str) -> None:
    command = f"/api/workflows/{snake(case.workflow)}"
    operation = f"/api/things/{thing}/{snake(case.operation)}"
    if case.far:  # another context's aggregate raises the event, about this Thing
        bell = (await m.ok("POST", "/api/bells", {"thing": thing}, 201))["id"]
        operation = f"/api/bells/{bell}/{snake(case.operation)}"
    if case.trigger == "command":
        await m.ok("POST", command, {"thing": thing}, 204)
    elif case.trigger == "starter":
        await m.ok("POST", operation, None, 204)
    elif case.trigger == "on":
        if case.stateful:  # an `on` reaches an existing instance: the command starts it
            await m.ok("POST", command, {"thing": thing}, 204)
        await m.ok("POST", operation, None, 204)
    elif case.trigger.startswith("timeout"):
        await m.ok("POST", operation, None, 204)  # the starter arms it
        got = await m.ok("GET", f"/api/workflows/{snake(case.workflow)}/instances/{thing}")
        assert [t["name"] for t in got["timeouts"]] == ["due"] and got["n"] == 0
    if case.trigger.endswith("@clock"):
        assert await m.clock.advance(timedelta(hours=1)) >= 1
    elif case.trigger.endswith("@fire"):
        await _fire(m, case, thing)


@pytest.mark.asyncio(loop_scope="module")  # the module's one served service per database
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_every_accepted_reaction_runs(matrix: Matrix, case: Case) -> None:
    sweep = ("D" if case.path == "durable" else "L") if case.kind == "timer" else ""
    thing = (await matrix.ok("POST", "/api/things", {"tag": case.name, "sweep": sweep}, 201))["id"]
    await _drive(matrix, case, thing)
    # the aggregate changed, and the event the body emitted arrived (folded by a projection)
    assert (await matrix.ok("GET", f"/api/things/{thing}"))["hits"] == 1
    seen = await matrix.ok("GET", f"/api/projections/seen/{thing}")
    assert (seen["count"], seen["last"]) == (1, case.name)
    assert (await matrix.ok("GET", f"/api/projections/keyed/{thing}"))["count"] == 1
    if not case.stateful:
        return
    got = await matrix.ok("GET", f"/api/workflows/{snake(case.workflow)}/instances/{thing}")
    assert got["n"] == 1  # assigned, or (event-sourced) folded by `apply`
    if case.trigger.startswith("timeout"):  # its handler ended the instance
        assert got["ended"] is True and got["timeouts"] == []
    elif case.kind == "process":  # the step armed its timeout with the instance
        assert [t["name"] for t in got["timeouts"]] == ["later"]


def test_every_form_is_run_or_refused() -> None:
    """Each kind meets each trigger: in the matrix on both paths, or refused (a correlated
    workflow that arms a timeout is the process kind)."""
    for kind in KINDS:
        for trigger in ("command", "starter", "on", "timeout"):
            paths = {c.path for c in CASES if (c.kind, c.trigger.split("@")[0]) == (kind, trigger)}
            if (kind, trigger) in REFUSED or (kind, trigger) == ("correlated", "timeout"):
                assert not paths, (kind, trigger)
            else:
                assert paths == set(PATHS), (kind, trigger)


@pytest.mark.parametrize("form", sorted(REFUSED), ids="-".join)
def test_refused_forms(form: tuple[str, str]) -> None:
    members, code = REFUSED[form]
    result = compile_sources({"refused.loom": refused_model(members)})
    assert {d.code for d in result.diagnostics if d.severity == "error"} == {code}
