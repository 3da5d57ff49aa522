"""The flow of one correlation (`GET /api/admin/flow/{id}`, the console's `/_loom/flow`) on the
shop served whole, over HTTP on SQLite and PostgreSQL: every event, reaction and timeout of one
order in time order, a fired timeout recorded, the links from other screens, a peer that does not
answer named, and a tenant's administrator confined to its tenant."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.runtime.http.flow_admin import local_flow
from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.test_shop_timeout import payment_is_down
from tests.e2e.tokens import token, use_secret
from tests.liveserver import free_port

ROOT = Path(__file__).resolve().parents[3]
SHOP = [ROOT / "examples/shop/shop.loom"]
START = datetime(2030, 3, 1, 12, 0, tzinfo=UTC)
HTML = {"Accept": "text/html"}


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def shop(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY", "LOOM_DEPLOYABLE"):
        monkeypatch.delenv(name, raising=False)
    async with serve(SHOP, database_url, clock=clock) as client:
        yield client


async def place(c: ServiceClient, correlation: str) -> str:
    body = {"sku": "lamp", "quantity": 2, "failPayment": False}
    r = await c.post(
        "/api/workflows/place_order", json=body, headers={"X-Correlation-Id": correlation}
    )
    assert r.status_code == 200, r.text
    return str(r.json())


async def flow(c: ServiceClient, correlation: str, **params: Any) -> dict[str, Any]:
    r = await c.get(f"/api/admin/flow/{correlation}", params=params)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def steps(found: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(e["kind"], e["name"], e["status"]) for e in found["entries"]]


async def test_an_order_paid_in_time_order(shop: ServiceClient) -> None:
    await place(shop, "order-paid")
    found = await flow(shop, "order-paid")
    assert found["correlation_id"] == "order-paid" and found["peers"] == []
    got = steps(found)
    print(*got, sep="\n")
    reactions = [name for kind, name, _ in got if kind == "reaction"]
    assert "Inventory.reserveStock.on(Orders.OrderPlaced)" in reactions
    assert "Payment.takePayment.on(Inventory.StockReserved)" in reactions
    assert (
        reactions.index("Inventory.reserveStock.on(Orders.OrderPlaced)")
        < reactions.index("Payment.takePayment.on(Inventory.StockReserved)")
        < reactions.index("Orders.settleOrder.on(Payment.PaymentSucceeded)")
    )
    # a `retention: log` channel keeps its delivered rows: the event itself shows
    assert ("event", "Payment.PaymentSucceeded", "delivered") in got
    times = [e["at"] for e in found["entries"]]
    assert times == sorted(times)
    settle = next(e for e in found["entries"] if e["name"].startswith("Orders.settleOrder"))
    assert settle["context"] == "Orders" and settle["detail"] == "applied Payment.PaymentSucceeded"
    assert settle["causation_id"]  # PaymentSucceeded was raised by a reaction
    assert (await flow(shop, "another-order"))["entries"] == []


async def test_a_fired_timeout_is_in_the_flow(shop: ServiceClient, clock: VirtualClock) -> None:
    payment_is_down(shop)
    await place(shop, "order-late")
    armed = steps(await flow(shop, "order-late"))
    assert ("timeout", "Orders.PaymentDeadline.payment", "armed") in armed, armed
    await clock.advance(timedelta(minutes=31))
    await shop.service.settle()
    got = steps(await flow(shop, "order-late"))
    print(*got, sep="\n")
    fired = ("timeout", "Orders.PaymentDeadline.timeout(payment)", "fired")
    assert fired in got and ("timeout", "Orders.PaymentDeadline.payment", "armed") not in got
    released = ("reaction", "Inventory.reserveStock.on(Orders.PaymentTimedOut)", "applied")
    assert got.index(fired) < got.index(released)


async def test_an_instance_lists_the_steps_run_for_it(
    shop: ServiceClient, clock: VirtualClock
) -> None:
    # the instance's timeline: its durable reactions and its fired timeout, in order, and
    # none of another instance's
    await place(shop, "order-on-time")
    payment_is_down(shop)
    late = await place(shop, "order-late")
    await clock.advance(timedelta(minutes=31))
    await shop.service.settle()
    r = await shop.get(f"/api/admin/processes/Orders.PaymentDeadline/instances/{late}")
    assert r.status_code == 200, r.text
    steps = [(s["kind"], s["step"], s["correlation_id"]) for s in r.json()["steps"]]
    print(*steps, sep="\n")
    assert steps == [
        ("reaction", "Orders.PaymentDeadline.create(OrderPlaced)", "order-late"),
        ("timeout", "Orders.PaymentDeadline.timeout(payment)", "order-late"),
    ]
    raised = [s["raised"] for s in r.json()["steps"]]
    assert raised == [[], ["Orders.PaymentTimedOut"]]  # what the timeout's step raised
    times = [s["at"] for s in r.json()["steps"]]
    assert times == sorted(times)
    page = await shop.get(f"/_loom/processes/Orders.PaymentDeadline/{late}", headers=HTML)
    assert page.status_code == 200
    timeline = page.text.split("<h2>Timeline</h2>", 1)[1]
    assert "Orders.PaymentDeadline.timeout(payment)" in timeline
    assert 'href="/_loom/flow?correlation=order-late"' in timeline
    assert "order-on-time" not in timeline


async def test_the_console_screen_and_a_silent_peer(
    shop: ServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    payment_is_down(shop)
    await place(shop, "order-seen")
    form = await shop.get("/_loom/flow", headers=HTML)
    assert form.status_code == 200 and 'name="correlation"' in form.text
    assert 'href="/_loom/flow" aria-current="page"' in form.text
    page = (await shop.get("/_loom/flow", params={"correlation": "order-seen"}, headers=HTML)).text
    assert "Inventory.reserveStock.on(Orders.OrderPlaced)" in page and "peer-silent" not in page
    # the timers screen links each timeout to its flow
    timers = (await shop.get("/_loom/timers", headers=HTML)).text
    assert 'href="/_loom/flow?correlation=order-seen"' in timers
    # a peer nobody serves: named, and the flow still shows this deployable's part
    silent = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("LOOM_API_WAREHOUSE", silent)
    page = (await shop.get("/_loom/flow", params={"correlation": "order-seen"}, headers=HTML)).text
    assert f"Peer {silent} did not answer" in page, page
    assert "Inventory.reserveStock.on(Orders.OrderPlaced)" in page
    merged = await flow(shop, "order-seen", peers="true")
    assert [(p["url"], p["answered"]) for p in merged["peers"]] == [(silent, False)]
    assert merged["entries"] == (await flow(shop, "order-seen"))["entries"]
    # a peer that takes the connection and never answers: given up after the peer timeout
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen()
        monkeypatch.setenv("LOOM_API_WAREHOUSE", f"http://127.0.0.1:{mute.getsockname()[1]}")
        monkeypatch.setenv("LOOM_FLOW_PEER_TIMEOUT", "0.3")
        started = time.monotonic()
        (peer,) = (await flow(shop, "order-seen", peers="true"))["peers"]
        assert peer["error"] == "did not answer within 0.3s", peer
        assert time.monotonic() - started < 5


TENANTED = [ROOT / "tests/e2e/models/tenants_channels.loom"]


async def test_a_tenants_administrator_sees_its_own_flow_only(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_secret(monkeypatch)
    a, a_admin = token(tenant="acme"), token(tenant="acme", roles=["admin"])
    b_admin, operator = token(tenant="globex", roles=["admin"]), token(roles=["admin"])
    async with serve(TENANTED, database_url) as c:
        for who in (a, token(sub="bob", tenant="globex")):
            r = await c.post("/api/accounts", json={"customer": "c1"}, headers=who)
            assert r.status_code == 201, r.text
        body = {"number": "N-1", "customer": "c1", "amount": 10}
        order = (await c.post("/api/orders", json=body, headers=a)).json()["id"]
        place = {**a, "X-Correlation-Id": "acme-order"}
        r = await c.post(f"/api/orders/{order}/place", json={}, headers=place)
        assert r.status_code < 300, r.text
        await c.settle()
        path = "/api/admin/flow/acme-order"
        mine = (await c.get(path, headers=a_admin)).json()["entries"]
        assert [(e["kind"], e["name"], e["tenant"]) for e in mine] == [
            ("reaction", "Ledger.Book.on(Sales.Placed)", "acme")
        ]
        assert (await c.get(path, headers=operator)).json()["entries"] == mine
        # another tenant's administrator, a user without the role, no token at all
        leaks = 0
        r = await c.get(path, headers=b_admin)
        leaks += r.status_code != 200 or r.json()["entries"] != []
        leaks += (await c.get(path, headers=a)).status_code != 403
        leaks += (await c.get(path)).status_code != 401
        page = await c.get("/_loom/flow", params={"correlation": "acme-order"}, headers=b_admin)
        leaks += page.status_code != 200 or "Ledger.Book" in page.text
        print(f"flow of another tenant's correlation: 4 attempts, {leaks} leaks")
        assert leaks == 0


async def test_a_deployable_without_processes_shows_its_console(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Flow screen's switcher leads to every deployable's console, some without processes
    (the shop's Inventory): their Processes screen is empty, and the service goes on answering."""
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with serve([ROOT / "tests/e2e/models/reactions.loom"], database_url) as c:
        for path in ("/_loom/processes", "/_loom/timers", "/_loom/flow?correlation=x"):
            r = await c.get(path, headers=HTML)
            assert r.status_code == 200, (path, r.text)
        assert "This service runs no process" in (await c.get("/_loom/processes")).text


async def test_a_call_of_another_context_is_in_the_flow(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command calling another context's handler (`resource { kind: api }`, in process here):
    the call is in the flow of its correlation, with the calling context and the called one."""
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    model = [ROOT / "tests/runtime/api_calls/dispatch.loom"]
    async with serve(model, database_url) as c:
        hired = await c.post(
            "/api/commands/hire", json={"name": "Ada"}, headers={"X-Correlation-Id": "hire-ada"}
        )
        assert hired.status_code == 200, hired.text
        calls = [
            (e.name, e.context, e.status, e.detail.split(" (")[0] if e.detail else None)
            for e in (await local_flow(c.service, "hire-ada", None)).entries
        ]
        assert calls == [("POST /api/commands/register", "Dispatch", "ok", "to context Directory")]
        page = await c.get("/_loom/flow", params={"correlation": "hire-ada"}, headers=HTML)
        assert "POST /api/commands/register" in page.text and "to context Directory" in page.text
        assert (await local_flow(c.service, "someone-else", None)).entries == []


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan"])
async def test_a_bad_peer_timeout_stops_the_start(
    database_url: str, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("LOOM_FLOW_PEER_TIMEOUT", value)
    with pytest.raises(ValueError) as refused:
        async with serve(SHOP, database_url):
            pass
    said = f"LOOM_FLOW_PEER_TIMEOUT must be a number of seconds > 0, not {value!r}"
    assert said in str(refused.value)
