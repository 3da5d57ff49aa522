"""Events on the in-process path (no channel), correlation ids and the principal of reactions, on
SQLite and PostgreSQL, through HTTP against the events sample service."""

from __future__ import annotations

import logging
import re
from uuid import UUID

import pytest

from loom.runtime import (
    SYSTEM,
    DomainEvent,
    current_envelope,
    current_principal,
)

from . import events_service
from .events_kit import lines, running
from .events_service import OrderPlaced, StockReserved

UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


@pytest.fixture(autouse=True)
def _clear_notified() -> None:
    events_service.NOTIFIED.clear()


async def test_chains_run_before_the_request_answers(database_url: str) -> None:
    async with running(database_url, durable=False) as svc:
        product = await svc.product(available=5)
        order = await svc.place(product, qty=2)
        # OrderPlaced -> ReserveStock -> StockReserved -> Fulfil -> OrderReserved -> Notify, all
        # re-entering the dispatcher after each reaction's own commit
        assert await svc.order_status(order) == "Reserved"
        assert await svc.stock(product) == (3, 2)
        assert await svc.reservations(product) == [order]
        assert [order] == events_service.NOTIFIED
        # no channel: nothing touches an outbox (the tables are not even created)
        assert svc.service.channels == ()


async def test_a_failed_reaction_keeps_the_answer_and_leaves_no_effect(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url, durable=False) as svc:
        product = await svc.product(available=5)
        # The reaction saves its reservation, then the product: make the product's save fail,
        # after the reservation's row was written in the reaction's transaction.
        svc.service.faults.fail_save(2)
        with caplog.at_level(logging.INFO, logger="loom.events"):
            r = await svc.client.post(
                "/api/workflows/place_order",
                json={"product": str(product), "qty": 2, "total": "1.00"},
            )
        assert r.status_code == 200, r.text  # the command keeps its 2xx ...
        order = UUID(r.json())
        assert await svc.order_status(order) == "Pending"  # ... and its write
        assert await svc.reservations(product) == []  # the reaction's write rolled back
        assert await svc.stock(product) == (5, 0)
        assert not svc.service.faults.armed  # the fault was reached, in the reaction
        (failed,) = lines(caplog, "reactor_failed")
        assert failed == {
            "event": "reactor_failed",
            "level": "error",
            "handler": "Stock.ReserveStock.start",
            "event_type": "Shop.OrderPlaced",
            "event_id": failed["event_id"],
            "correlation_id": r.headers["x-correlation-id"],
            "causation_id": None,
            "error": "RuntimeError: injected fault",
            # a hand-built service has no model revision
            "model_revision": "unknown",
            "reader_revision": "unknown",
        }
        # the other reaction of the same event ran and committed; nothing was retried
        handled = [(x["handler"], x["event_type"]) for x in lines(caplog, "event_handled")]
        assert handled == [("Shop.Fulfil.start", "Shop.OrderPlaced")]
        assert [x["event_type"] for x in lines(caplog, "event_dispatched")] == ["Shop.OrderPlaced"]


async def test_a_refusing_reaction_is_one_log_line(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url, durable=False) as svc:
        product = await svc.product(available=0)
        with caplog.at_level(logging.ERROR, logger="loom.events"):
            order = await svc.place(product)
        assert await svc.order_status(order) == "Pending"
        (failed,) = lines(caplog)
        assert failed["event"] == "reactor_failed"
        assert failed["error"] == "Refused: insufficient stock"


async def test_correlation_and_causation_follow_the_chain(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url, durable=False) as svc:
        product = await svc.product(available=5)
        seen: dict[str, object] = {}

        async def spy(event: DomainEvent) -> None:
            envelope = current_envelope()
            assert envelope is not None
            seen[envelope.event_type] = envelope
            seen[f"{envelope.event_type} principal"] = current_principal()

        svc.service.events.subscribe(OrderPlaced, spy, name="test.spy")
        svc.service.events.subscribe(StockReserved, spy, name="test.spy")
        with caplog.at_level(logging.INFO, logger="loom.events"):
            await svc.place(product, headers={"X-Correlation-Id": "checkout-42"})
        placed, reserved = seen["Shop.OrderPlaced"], seen["Stock.StockReserved"]
        assert placed.correlation_id == reserved.correlation_id == "checkout-42"  # type: ignore[attr-defined]
        assert placed.causation_id is None  # type: ignore[attr-defined]
        assert reserved.causation_id == str(placed.event_id)  # type: ignore[attr-defined]
        assert seen["Shop.OrderPlaced principal"] is SYSTEM
        assert current_principal() is not SYSTEM  # restored after the reactions
        logged = lines(caplog)
        assert {x["event"] for x in logged} == {"event_dispatched", "event_handled"}
        assert all(x["correlation_id"] == "checkout-42" for x in logged)
        by_type = {x["event_type"]: x for x in logged}
        assert by_type["Stock.StockReserved"]["causation_id"] == str(placed.event_id)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("abc-123", True),
        ("x" * 128, True),
        ("x" * 129, False),  # too long
        ("has space", False),
        ("tab\tinside", False),
        ("", False),
    ],
)
async def test_x_correlation_id_in_and_out(database_url: str, sent: str, kept: bool) -> None:
    async with running(database_url, durable=False) as svc:
        r = await svc.client.get(f"/api/orders/{UUID(int=1)}", headers={"X-Correlation-Id": sent})
        assert r.status_code == 404  # a problem response carries it too
        got = r.headers["x-correlation-id"]
        if kept:
            assert got == sent
        else:
            assert UUID_TEXT.match(got), got


async def test_a_repeated_x_correlation_id_is_read_as_its_last(database_url: str) -> None:
    async with running(database_url, durable=False) as svc:
        sent = [("X-Correlation-Id", "first-1"), ("X-Correlation-Id", "last-2")]
        r = await svc.client.get(f"/api/orders/{UUID(int=1)}", headers=sent)
        assert r.status_code == 404
        assert r.headers.get_list("x-correlation-id") == ["last-2"]


async def test_every_response_carries_a_correlation_id(database_url: str) -> None:
    async with running(database_url, durable=False) as svc:
        ok = await svc.client.post("/api/products", json={"sku": "A"})
        invalid = await svc.client.post("/api/products", json={"sku": 1, "extra": True})
        missing = await svc.client.get("/api/no-such-route")
        boom = await svc.client.get("/api/plain-boom", headers={"X-Correlation-Id": "boom-1"})
        assert [ok.status_code, invalid.status_code, missing.status_code] == [200, 422, 404]
        for r in (ok, invalid, missing):
            assert UUID_TEXT.match(r.headers["x-correlation-id"])
        assert len({r.headers["x-correlation-id"] for r in (ok, invalid, missing)}) == 3
        # raised past every handler: still a problem body, the id, and no traceback
        assert boom.status_code == 500
        assert boom.headers["x-correlation-id"] == "boom-1"
        assert boom.headers["content-type"] == "application/problem+json"
        assert "raised past" not in boom.text and "Traceback" not in boom.text


async def test_an_unrouted_event_is_logged_with_its_ids(
    database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with running(database_url, durable=False) as svc:
        stray = StockReserved(order=UUID(int=7), product=UUID(int=8), qty=1)  # type: ignore[arg-type]
        with caplog.at_level(logging.WARNING, logger="loom.events"):
            await svc.service.events.dispatch([stray])
        (line,) = lines(caplog)
        assert line["event"] == "event_unrouted"
        assert line["handler"] == "Shop.Fulfil.on_stock_reserved"
        assert line["event_type"] == "Stock.StockReserved"
        assert UUID(line["event_id"]).version == 7
        assert line["correlation_id"] == line["event_id"]  # a chain's root names it
        assert line["level"] == "warning"
