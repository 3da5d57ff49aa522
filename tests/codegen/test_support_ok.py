"""`tests/lang/data/ok/support_workflows.loom` through the front end and this back end: one HTTP
smoke test per construct group, on SQLite and PostgreSQL, and the extern loading errors."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loom.codegen.python import generate
from loom.runtime import ExternError
from tests.codegen.util import ROOT, import_generated, write_tree

MODEL = "tests/lang/data/ok/support_workflows.loom"
EXTERNS = """
class TicketExterns:
    def notify(self, ticket, channel):
        ticket.customer = ticket.customer + "!" + channel

    def score(self, ticket):
        return ticket.priority * 10
"""


@pytest.fixture(scope="module")
def ok_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        from loom.lang import compile_files
    except ImportError:  # pragma: no cover
        pytest.skip("no front end")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = compile_files([MODEL])
    finally:
        os.chdir(cwd)
    if result.model is None:
        pytest.skip(f"the front end does not accept {MODEL} yet")
    base = tmp_path_factory.mktemp("ok")
    (base / "ok_support_externs.py").write_text(EXTERNS, encoding="utf-8")
    return write_tree(generate(result.model), base / "oksup")


@pytest.fixture
def externs_on_path(ok_dir: Path) -> Iterator[None]:
    sys.path.insert(0, str(ok_dir.parent))
    try:
        yield
    finally:
        sys.path.remove(str(ok_dir.parent))
        sys.modules.pop("ok_support_externs", None)


@pytest.fixture
async def client(
    ok_dir: Path, database_url: str, externs_on_path: None
) -> AsyncIterator[httpx.AsyncClient]:
    app = import_generated(ok_dir).build_app(database_url, extern_module="ok_support_externs")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            yield c


async def _ticket(c: httpx.AsyncClient, code: str, due: str = "2026-01-01T00:00:00Z") -> Any:
    r = await c.post("/api/tickets", json={"code": code, "customer": "acme", "dueAt": due})
    assert r.status_code == 201, r.text
    return r.json()


async def test_keys_crudish_and_handlers(client: httpx.AsyncClient) -> None:
    a = await _ticket(client, "A")
    # the composite natural key (customer, dueAt)
    r = await client.post(
        "/api/tickets", json={"code": "B", "customer": "acme", "dueAt": "2026-01-01T00:00:00Z"}
    )
    assert r.status_code == 409 and r.json()["type"] == "urn:loom:problem:duplicate-key"
    r = await client.post("/api/commands/bump_by_code", json={"code": "A", "n": 4})
    assert r.status_code == 204
    r = await client.get("/api/queries/by_code", params={"code": "A"})
    assert r.status_code == 200 and r.json()["priority"] == 5
    r = await client.get("/api/queries/by_code", params={"code": "Z"})
    assert r.status_code == 404 and r.json()["detail"] == "Ticket not found"
    b = await _ticket(client, "B", "2026-02-01T00:00:00Z")
    r = await client.post("/api/commands/escalate_pair", json={"a": a["id"], "b": b["id"]})
    assert (r.status_code, r.json()) == (200, True)
    r = await client.post("/api/commands/close_ticket", json={"code": "B"})
    assert (r.status_code, r.json()) == (200, b["id"])
    # `filter NotClosed`: a closed ticket is invisible to every read through Tickets ...
    r = await client.post("/api/commands/remove", json={"code": "B"})
    assert r.status_code == 404 and r.json()["aggregate"] == "Ticket"
    assert (await client.get(f"/api/tickets/{b['id']}")).status_code == 404
    # ... except a read that says `ignoring NotClosed`
    r = await client.post("/api/commands/reopen", json={"id": b["id"]})
    assert r.status_code == 204, r.text
    assert (await client.get(f"/api/tickets/{b['id']}")).json()["status"] == "Breached"
    r = await client.post("/api/commands/remove", json={"code": "B"})
    assert r.status_code == 204
    r = await client.post("/api/commands/purge", json={"id": b["id"]})
    assert r.status_code == 404 and r.json()["aggregate"] == "Ticket"


async def test_loops_externs_and_state(client: httpx.AsyncClient) -> None:
    t = await _ticket(client, "A")
    r = await client.post("/api/workflows/sweep", json={"asOf": "2026-06-01T00:00:00Z"})
    assert (r.status_code, r.json()) == (200, 0)
    assert (await client.get(f"/api/tickets/{t['id']}")).json()["status"] == "Breached"
    r = await client.post(f"/api/tickets/{t['id']}/score")
    assert (r.status_code, r.json()) == (200, 10)
    r = await client.post("/api/commands/notify", json={"id": t["id"], "channel": "sms"})
    assert r.status_code == 204
    assert (await client.get(f"/api/tickets/{t['id']}")).json()["customer"] == "acme!sms"
    r = await client.post("/api/workflows/fulfill_order", json={"ticket": t["id"], "priority": 9})
    assert r.status_code == 204, r.text
    r = await client.get(f"/api/workflows/fulfill_order/instances/{t['id']}")
    assert r.json() == {"ticket": t["id"], "version": 1, "attempts": 11, "note": None}
    r = await client.post("/api/workflows/adopt", json={"code": "A"})
    assert r.status_code == 204
    r = await client.get(f"/api/workflows/adopt/instances/{t['id']}")
    assert r.json() == {"ticket": t["id"], "version": 1}
    for amount in (3, 4):
        r = await client.post("/api/workflows/ledger", json={"ticket": t["id"], "amount": amount})
        assert r.status_code == 204
    r = await client.get(f"/api/workflows/ledger/instances/{t['id']}")
    assert r.json() == {"ticket": t["id"], "version": 2, "total": 7}
    r = await client.get(f"/api/workflows/ledger/instances/{uuid.uuid4()}")
    assert r.status_code == 404 and r.json()["aggregate"] == "Ledger"


@pytest.mark.parametrize(
    ("module", "message"),
    [
        (None, "no module implements them"),
        ("no_such_module_xyz", "cannot import the extern module"),
        ("json", "has no class TicketExterns"),
    ],
)
async def test_missing_externs_fail_at_startup(
    ok_dir: Path, tmp_path: Path, module: str | None, message: str
) -> None:
    os.environ.pop("LOOM_EXTERN_MODULE", None)
    app = import_generated(ok_dir).build_app(
        f"sqlite+aiosqlite:///{tmp_path / 'x.db'}", extern_module=module
    )
    with pytest.raises(ExternError, match=message):
        async with app.router.lifespan_context(app):
            pass


async def test_extern_module_from_the_environment(
    ok_dir: Path, tmp_path: Path, externs_on_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_EXTERN_MODULE", "ok_support_externs")
    app = import_generated(ok_dir).build_app(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}")
    async with app.router.lifespan_context(app):
        assert set(app.state.loom.externs) == {"TicketExterns"}
