"""Save and emit are atomic in a body that is not transactional (an event was lost for good after
kill -9). Each body of tests/e2e/models/outbox_atomic.loom runs in a process that kills itself
(SIGKILL) right after its n-th commit, for n = 1, 2, … until a run survives: a crash at every
boundary of the body. The service is then restarted on the same database, the relay delivers what
the outbox holds, and the test counts, per body, the records left without the event that announces
them (lost) and the events delivered twice (doubled). On SQLite and PostgreSQL.

The body that saves two aggregates, the order first (`placeWithCourier`, which `loom check` warns
of: `loom.torn-body`), runs the same way to show that the count sees a loss: the crash between its
two commits leaves an order whose event was never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from loom.testing import ServiceClient, serve
from loom.testing._service import build_service
from tests.waiting import until

ROOT = Path(__file__).resolve().parents[2]
MODEL = [Path(__file__).parent / "models" / "outbox_atomic.loom"]
# one ticket per event delivered: of kind "kitchen" per OrderPlaced, "delivery" per DeliveryRequested
PENDING = "SELECT count(*) FROM __loom_outbox WHERE status = 'pending'"
TICKETS = 'SELECT "order" FROM ordering_tickets WHERE kind = :kind'


@dataclass(frozen=True)
class Body:
    name: str
    path: str
    tag: str  # the runs' customers (or orders) are tagged `<tag>-<n>`
    announced: str  # SQL: the ids the body wrote, each of which must have its event
    kind: str = "kitchen"  # the tickets its event makes


BODIES = [
    Body(
        "workflow place",
        "/api/workflows/place",
        "place",
        "SELECT id FROM ordering_orders WHERE customer LIKE 'place-%'",
    ),
    Body(
        "commandHandler PlaceOrder",
        "/api/commands/place_order",
        "command",
        "SELECT id FROM ordering_orders WHERE customer LIKE 'command-%'",
    ),
    Body(
        "correlated workflow delivery (the instance row carries the event)",
        "/api/workflows/delivery",
        "delivery",
        'SELECT "order" FROM ordering_delivery_instances',
        "delivery",
    ),
]
TORN = Body(
    "workflow placeWithCourier (two aggregates, warned)",
    "/api/workflows/place_with_courier",
    "courier",
    "SELECT id FROM ordering_orders WHERE customer LIKE 'courier-%'",
)


def _crash_at_each_commit(build: Path, url: str, body: Body, payload: Any) -> int:
    """Run the body in a process killed after its n-th commit, n = 1, 2, … until a run survives;
    answer how many runs were killed (the body's commit boundaries)."""
    for n in range(1, 10):
        run = subprocess.run(
            [
                *(sys.executable, "-m", "tests.e2e.crash_at_commit"),
                *(str(build), url, str(n), body.path, json.dumps(payload(f"{body.tag}-{n}"))),
            ],
            check=False,
            cwd=ROOT,
            # a killed run's relay may have claimed rows; a short lease frees them for the restart
            env={**os.environ, "LOOM_RELAY_LEASE": "0.2"},
            capture_output=True,
            text=True,
            timeout=120,
        )
        if run.returncode == 0:
            assert run.stdout[:1] == "2", run.stdout + run.stderr
            return n - 1
        assert run.returncode == -9, f"not killed by the fault:\n{run.stdout}{run.stderr}"
    raise AssertionError(f"{body.name} still committing after 9 commits")


async def _count(url: str, body: Body) -> tuple[int, int, int]:
    """(records, records without their event's ticket, tickets beyond one per record)."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            ids = {str(r[0]) for r in await conn.execute(sa.text(body.announced))}
            found = await conn.execute(sa.text(TICKETS), {"kind": body.kind})
            tickets = [str(r[0]) for r in found]
    finally:
        await engine.dispose()
    lost = sum(1 for i in ids if i not in tickets)
    doubled = sum(max(0, tickets.count(i) - 1) for i in ids)
    return len(ids), lost, doubled


async def _drain(client: ServiceClient) -> None:
    """Settle until the outbox holds nothing pending (rows a killed run claimed are due again once
    its short lease has run out)."""

    async def nothing_pending() -> bool:
        await client.settle()
        async with client.service.engine.connect() as conn:
            return not (await conn.execute(sa.text(PENDING))).scalar_one()

    await until(nothing_pending, timeout=30, what="no outbox row pending")


async def _crash_and_restart(url: str, bodies: list[Body]) -> dict[str, tuple[int, int, int, int]]:
    """Crash each body at each commit, restart, settle: (crash points, records, lost, doubled)."""
    service = build_service(MODEL)
    assert service.__file__ is not None
    build = Path(service.__file__).parent
    orders: dict[str, str] = {}  # the orders a delivery run asks for, placed beforehand
    async with serve(MODEL, url) as client:
        for n in range(1, 10):
            answer = await client.post("/api/workflows/place", json={"customer": f"d-{n}"})
            orders[f"delivery-{n}"] = answer.json()
        courier = (await client.post("/api/couriers", json={"name": "Cy"})).json()["id"]
    payloads: dict[str, Any] = {
        "place": lambda tag: {"customer": tag},
        "command": lambda tag: {"customer": tag},
        "delivery": lambda tag: {"order": orders[tag]},
        "courier": lambda tag: {"customer": tag, "courier": courier},
    }
    crashes = {b.name: _crash_at_each_commit(build, url, b, payloads[b.tag]) for b in bodies}
    async with serve(MODEL, url) as client:  # the restart: the relay delivers what is left
        await _drain(client)
    counts = {}
    for b in bodies:
        records, lost, doubled = await _count(url, b)
        counts[b.name] = (crashes[b.name], records, lost, doubled)
        print(
            f"{b.name}: crashed at {crashes[b.name]} commit(s); {records} records, "
            f"lost {lost}, doubled {doubled}"
        )
    return counts


async def test_a_crash_after_any_commit_of_a_body_loses_no_event(database_url: str) -> None:
    counts = await _crash_and_restart(database_url, BODIES)
    for name, (crashes, records, lost, doubled) in counts.items():
        assert crashes >= 1, name
        assert records == crashes + 1, name  # every killed run had committed its record
        assert (lost, doubled) == (0, 0), name


async def test_the_count_sees_the_loss_a_body_of_two_commits_can_suffer(database_url: str) -> None:
    ((crashes, records, lost, doubled),) = (await _crash_and_restart(database_url, [TORN])).values()
    assert crashes == 2  # after the order's commit, after the courier's (with the event)
    assert records == 3
    assert (lost, doubled) == (1, 0)  # the order of the run killed between the two commits


async def test_a_refusal_after_a_commit_says_what_stays_saved(database_url: str) -> None:
    """A body that is not transactional lost a race at its second save: the 409 names the order
    its first save committed (detail and `saved`), and that order is there."""
    from loom.runtime import ConcurrencyConflict

    async with serve(MODEL, database_url) as client:
        courier = (await client.post("/api/couriers", json={"name": "Cy"})).json()["id"]
        client.service.faults.fail_save(2, ConcurrencyConflict("Courier", courier))
        answer = await client.post(
            "/api/workflows/place_with_courier", json={"customer": "raced", "courier": courier}
        )
        assert answer.status_code == 409, answer.text
        problem = answer.json()
        [saved] = problem["saved"]
        assert saved["aggregate"] == "Order"
        assert problem["detail"] == (
            f"Courier {courier} was changed concurrently; reload it and try again; already saved"
            f" by this request and not undone, as its body is not transactional: Order {saved['id']}"
        )
        order = (await client.get(f"/api/orders/{saved['id']}")).json()
        assert order["customer"] == "raced"
        assert (await client.get(f"/api/couriers/{courier}")).json()["jobs"] == 0
