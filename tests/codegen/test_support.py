"""The workflow language on the Python back end (hand-built IR in `support_ir.py`): snapshots,
format/lint/mypy, and HTTP behaviour on SQLite and PostgreSQL."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from loom.codegen.python import generate
from tests.codegen.support_ir import support_model
from tests.codegen.util import check_snapshots, import_generated, ruff, write_tree


@pytest.fixture(scope="module")
def support_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tree(generate(support_model()), tmp_path_factory.mktemp("sup") / "sup")


def test_support_snapshots(update_snapshots: bool) -> None:
    model = support_model()
    assert generate(model) == generate(model, package="other")
    check_snapshots("hand_support", generate(model), update_snapshots)


def test_support_format_and_lint(support_dir: Path) -> None:
    for length in ("88", "100"):
        done = ruff("format", "--isolated", "--line-length", length, "--check", str(support_dir))
        assert done.returncode == 0, done.stdout + done.stderr
    done = ruff("check", "--isolated", "--select", "F,E9", str(support_dir))
    assert done.returncode == 0, done.stdout + done.stderr


def test_support_mypy_strict(support_dir: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", support_dir.name],
        cwd=support_dir.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr


class Svc:
    def __init__(self, app: Any, client: httpx.AsyncClient, main: ModuleType) -> None:
        self.app = app
        self.client = client
        self.pkg = main.__name__.rsplit(".", 1)[0]

    def module(self, name: str) -> ModuleType:
        return importlib.import_module(f"{self.pkg}.{name}")

    async def post(self, path: str, body: object = None) -> httpx.Response:
        return await self.client.post(path, json=body)

    async def open(self, code: str, due: str, price: str = "0", customer: str = "ann") -> str:
        body = {"code": code, "customer": customer, "dueAt": due, "price": price}
        r = await self.post("/api/workflows/open_ticket", body)
        assert r.status_code == 200, r.text
        return str(r.json())

    async def ticket(self, id: str) -> dict[str, Any]:
        r = await self.client.get(f"/api/tickets/{id}")
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture
async def svc(support_dir: Path, database_url: str) -> AsyncIterator[Svc]:
    main = import_generated(support_dir)
    app = main.build_app(database_url)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://loom.test") as client:
            yield Svc(app, client, main)


async def test_unique_key_duplicate_is_409(svc: Svc) -> None:
    await svc.open("A-1", "2026-01-01T00:00:00Z")
    body = {"code": "A-1", "customer": "bob", "dueAt": "2026-01-01T00:00:00Z", "price": "1"}
    r = await svc.post("/api/workflows/open_ticket", body)
    assert r.status_code == 409, r.text
    problem = r.json()
    assert problem["type"] == "urn:loom:problem:duplicate-key"
    assert problem["aggregate"] == "Ticket" and "code" in problem["detail"]


async def test_not_found_has_the_by_id_shape(svc: Svc) -> None:
    r = await svc.post("/api/workflows/escalate_by_code", {"code": "nope"})
    assert r.status_code == 404
    miss = r.json()
    assert miss["detail"] == "Ticket not found" and miss["aggregate"] == "Ticket"
    r = await svc.client.get("/api/tickets/0192f1c4-0000-7000-8000-000000000000")
    by_id = r.json()
    assert set(miss) == set(by_id)
    assert {k: miss[k] for k in ("type", "title", "status")} == {
        k: by_id[k] for k in ("type", "title", "status")
    }
    r = await svc.post("/api/workflows/escalate_open", {"customer": "zed"})
    assert (r.status_code, r.json()["detail"]) == (404, "no open ticket")
    r = await svc.post("/api/workflows/close_by_code", {"code": "nope"})
    assert r.status_code == 404 and r.json()["aggregate"] == "Ticket"


async def test_if_let_get_by_key_find_and_delete(svc: Svc) -> None:
    a = await svc.open("A-1", "2026-01-01T00:00:00Z", customer="ann")
    b = await svc.open("B-1", "2026-01-01T00:00:00Z", customer="ann")
    assert (await svc.post("/api/workflows/escalate_by_code", {"code": "A-1"})).status_code == 204
    assert (await svc.ticket(a))["status"] == "Breached"
    assert (await svc.post("/api/workflows/escalate_open", {"customer": "ann"})).status_code == 204
    assert (await svc.ticket(b))["status"] == "Breached"  # the only Open one
    assert (await svc.post("/api/workflows/close_by_code", {"code": "B-1"})).status_code == 204
    assert (await svc.ticket(b))["status"] == "Closed"
    assert (await svc.post("/api/workflows/close_all_for", {"customer": "ann"})).status_code == 204
    assert (await svc.ticket(a))["status"] == "Closed"
    assert (await svc.post("/api/workflows/remove_ticket", {"code": "A-1"})).status_code == 204
    assert (await svc.client.get(f"/api/tickets/{a}")).status_code == 404
    r = await svc.post("/api/workflows/remove_ticket", {"code": "A-1"})
    assert (r.status_code, r.json()["detail"]) == (404, "Ticket not found")


async def test_for_loop_gate_and_transactions(svc: Svc) -> None:
    early = await svc.open("E", "2026-01-01T00:00:00Z")
    mid = await svc.open("M", "2026-01-02T00:00:00Z")
    await svc.open("L", "2026-01-03T00:00:00Z")
    fresh = await svc.open("F", "2026-02-01T00:00:00Z")
    await svc.post("/api/workflows/escalate_by_code", {"code": "L"})  # L leaves Open
    # DueBefore selects E, M, L (by id): the gate refuses L after E and M were flagged
    r = await svc.post("/api/workflows/strict_sweep", {"asOf": "2026-01-05T00:00:00Z"})
    assert r.status_code == 422 and r.json()["type"] == "urn:loom:problem:state-gate-refused"
    assert r.json()["rule"] == "Ticket.flagBreached: when status == Open"
    # transactional: the earlier iterations rolled back
    assert [(await svc.ticket(i))["status"] for i in (early, mid)] == ["Open", "Open"]
    # non-transactional: the earlier iterations stay committed
    r = await svc.post("/api/workflows/loose_sweep", {"asOf": "2026-01-05T00:00:00Z"})
    assert r.status_code == 422
    assert [(await svc.ticket(i))["status"] for i in (early, mid)] == ["Breached", "Breached"]
    # the retrieval selects only Open rows: every element passes the gate
    r = await svc.post("/api/workflows/sweep", {"asOf": "2026-03-01T00:00:00Z"})
    assert r.status_code == 204, r.text
    assert (await svc.ticket(fresh))["status"] == "Breached"


async def test_criteria_compare_decimals_and_datetimes_in_sql(svc: Svc) -> None:
    ids = {
        price: await svc.open(f"P{price}", due, price)
        for price, due in (
            ("9.5", "2026-01-01T10:00:00+05:00"),  # 05:00Z
            ("10", "2026-01-01T07:00:00Z"),
            ("100", "2026-01-01T08:00:00+03:00"),  # 05:00Z... +03:00 -> 05:00Z
            ("0.25", "2025-12-31T23:00:00-08:00"),  # 2026-01-01 07:00Z
        )
    }
    repos = svc.module("support.repositories")
    service = svc.app.state.loom
    from datetime import UTC, datetime

    async with service.autocommit() as work:
        tickets = repos.Tickets(work)
        over = await tickets.find_all_by_priced_over(Decimal("9.6"))
        assert sorted(str(t.price) for t in over) == ["10", "100"]
        assert sorted(str(t.price) for t in await tickets.find_all_by_pricey()) == ["10", "100"]
        assert len(await tickets.run_expensive(Decimal("0.3"))) == 3
        cheap = await tickets.find_all_by_not_closed_or_cheap()
        assert len(cheap) == 4
        due = await tickets.run_due(datetime(2026, 1, 1, 6, 0, tzinfo=UTC))
        assert sorted(str(t.price) for t in due) == ["100", "9.5"]
        first = await tickets.find_by_due_before(datetime(2026, 1, 1, 7, 30, tzinfo=UTC))
        assert first is not None and str(first.id) == ids["9.5"]  # first by id
        assert await tickets.find_by_open_for("nobody") is None
        assert (await tickets.get_by_code("P10")).price == Decimal(10)
        assert len(await tickets.find_all_by_customer("ann")) == 4


async def test_crudish_create_update_delete(svc: Svc) -> None:
    t = await svc.open("T-1", "2026-01-01T00:00:00Z")
    r = await svc.post("/api/notes", {"ticket": t, "text": "hello"})
    assert r.status_code == 201, r.text
    note = r.json()
    assert r.headers["location"] == f"/api/notes/{note['id']}"
    assert note["pinned"] is False and note["weight"] is None and note["tags"] == []
    assert note["version"] == 1 and note["createdAt"]
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={"pinned": True, "weight": 3})
    assert r.status_code == 200, r.text
    assert (r.json()["pinned"], r.json()["weight"], r.json()["text"]) == (True, 3, "hello")
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={"weight": None})
    assert r.status_code == 200 and r.json()["weight"] is None and r.json()["version"] == 3
    # immutable and unknown members are refused, naming them
    for member in ("ticket", "createdAt", "color"):
        r = await svc.client.patch(f"/api/notes/{note['id']}", json={member: t})
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:invalid-request"
        assert r.json()["errors"][0]["path"] == f"body.{member}"
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={"text": ""})
    assert r.status_code == 422 and r.json()["type"] == "urn:loom:problem:invariant-failed"
    r = await svc.client.delete(f"/api/notes/{note['id']}")
    assert r.status_code == 204
    r = await svc.client.delete(f"/api/notes/{note['id']}")
    assert r.status_code == 404 and r.json()["aggregate"] == "Note"
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={})
    assert r.status_code == 404


async def test_declared_factory_immutable_and_private(svc: Svc) -> None:
    body = {"code": "", "customer": "c", "dueAt": "2026-01-01T00:00:00Z", "price": "1.50"}
    r = await svc.post("/api/tickets", body)
    assert r.status_code == 422 and r.json()["detail"] == "a ticket needs a code"
    r = await svc.post("/api/tickets", {**body, "code": "X"})
    assert r.status_code == 201, r.text
    ticket = r.json()
    assert ticket["status"] == "Open" and Decimal(ticket["price"]) == Decimal("1.50")
    r = await svc.post("/api/tickets", {**body, "code": "X"})
    assert r.status_code == 409 and r.json()["type"] == "urn:loom:problem:duplicate-key"
    r = await svc.client.patch(f"/api/tickets/{ticket['id']}", json={"code": "Y"})
    assert r.status_code == 422 and r.json()["errors"][0]["path"] == "body.code"
    r = await svc.client.patch(f"/api/tickets/{ticket['id']}", json={"customer": "d"})
    assert r.status_code == 200 and r.json()["customer"] == "d"
    assert (await svc.post(f"/api/tickets/{ticket['id']}/touch")).status_code in (404, 405)
    paths = svc.app.openapi()["paths"]
    assert "/api/tickets/{id}/touch" not in paths and "/api/tickets/{id}/escalate" in paths


async def test_command_and_query_handlers(svc: Svc) -> None:
    a = await svc.open("A", "2026-01-01T00:00:00Z", customer="ann")
    await svc.open("B", "2026-02-01T00:00:00Z", customer="bob")
    r = await svc.post("/api/commands/escalate_open", {"customer": "ann"})
    assert r.status_code == 204, r.text
    r = await svc.post("/api/commands/escalate_open", {"customer": "ann"})
    assert (r.status_code, r.json()["detail"]) == (404, "no open ticket")
    r = await svc.post("/api/commands/close_code", {"code": "A"})
    assert (r.status_code, r.json()) == (200, a)
    r = await svc.post("/api/commands/close_code", {"code": "nope"})
    assert r.status_code == 404
    r = await svc.client.get("/api/queries/due_tickets", params={"asOf": "2026-03-01T00:00:00Z"})
    assert r.status_code == 200, r.text
    assert [t["code"] for t in r.json()] == ["B"]  # A is closed
    r = await svc.client.get("/api/queries/due_tickets")
    assert r.status_code == 422 and r.json()["errors"][0]["path"] == "query.asOf"
    r = await svc.client.get("/api/queries/ticket_by_code", params={"code": "A"})
    assert r.status_code == 200 and r.json()["id"] == a and r.json()["status"] == "Closed"
    r = await svc.client.get("/api/queries/ticket_by_code", params={"code": "zzz"})
    assert r.status_code == 200 and r.json() is None
    params = (("code", "B"), ("asOf", "2026-01-15T00:00:00Z"), ("tags", "x"), ("tags", "y"))
    r = await svc.client.get("/api/queries/slack", params=params)
    assert (r.status_code, r.json()) == (200, True)
    r = await svc.client.get("/api/queries/slack", params=[*params, ("limit", "3")])
    assert (r.status_code, r.json()) == (200, False)


async def test_workflow_functions(svc: Svc) -> None:
    r = await svc.post("/api/workflows/rate", {"priority": 9})
    assert (r.status_code, r.json()) == (200, 2)
    r = await svc.post("/api/workflows/rate", {"priority": 1})
    assert (r.status_code, r.json()) == (200, 10)


async def test_crudish_update_refuses_null_for_a_required_field(svc: Svc) -> None:
    t = await svc.open("T-1", "2026-01-01T00:00:00Z")
    r = await svc.post("/api/notes", {"ticket": t, "text": "hello", "weight": 2})
    note = r.json()
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={"text": None})
    assert r.status_code == 422 and r.json()["errors"][0]["path"] == "body.text"
    r = await svc.client.patch(f"/api/notes/{note['id']}", json={"weight": None, "tags": ["a"]})
    assert r.status_code == 200 and (r.json()["weight"], r.json()["tags"]) == (None, ["a"])
