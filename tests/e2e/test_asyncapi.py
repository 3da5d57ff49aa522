"""`GET /asyncapi.json` of a running service, and its message schemas against the events the
service really writes (docs/http.md, "Contracts: AsyncAPI").

The served document is the `asyncapi.json` that `loom build` wrote beside main.py, byte for byte.
Every payload the outbox receives during the shop's flows (captured by a trigger on the outbox
table, since a delivered row of a `work` channel is deleted) validates against its message's
payload schema, and the consumers that recorded inbox rows are the ones the document names. A
tenanted context's messages name the `Loom-Tenant` header, and the messages its relay publishes
on a broker carry exactly the headers their schema names, the tenant among them (on SQLite and
PostgreSQL).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from loom.build.package import build_model, import_package
from loom.lang import compile_sources
from loom.runtime import create_app
from loom.runtime.transports import MemoryBroker, MemoryTransport, Message
from loom.testing import ServiceClient, build_service, serve
from tests.asyncapi_schema import payload_validator
from tests.e2e.tokens import SECRET, token

ROOT = Path(__file__).resolve().parents[2]
SHOP = [ROOT / "examples/shop/shop.loom"]
CONTRACT = [ROOT / "tests/e2e/models/contract.loom"]
BANKING = [ROOT / "examples/banking/banking.loom"]
TENANTED = ROOT / "tests/e2e/models/tenants_channels.loom"
SPLIT = """
deployable Shop { contexts: Sales }
deployable Books { contexts: Ledger }
"""

# SQLite: every row the outbox receives, kept after the relay deletes it
CAPTURE = [
    "CREATE TABLE captured (event_type TEXT, payload TEXT, correlation_id TEXT)",
    (
        "CREATE TRIGGER capture AFTER INSERT ON __loom_outbox BEGIN "
        "INSERT INTO captured VALUES (NEW.event_type, NEW.payload, NEW.correlation_id); END"
    ),
]


def built_document(model: list[Path]) -> bytes:
    service = build_service(model)
    assert service.__file__ is not None
    return Path(service.__file__).with_name("asyncapi.json").read_bytes()


async def capture(c: ServiceClient) -> None:
    async with c.service.engine.begin() as conn:
        for statement in CAPTURE:
            await conn.execute(text(statement))


async def captured(c: ServiceClient) -> list[tuple[str, Any, str]]:
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(text("SELECT event_type, payload, correlation_id FROM captured"))
        return [(r.event_type, json.loads(r.payload), r.correlation_id) for r in rows]


async def test_the_service_serves_its_built_document(sqlite_url: str) -> None:
    async with serve(SHOP, sqlite_url) as c:
        r = await c.get("/asyncapi.json")
        assert r.status_code == 200
        assert r.headers["content-type"] == "application/json"
        assert r.content == built_document(SHOP)
        doc = r.json()
        assert doc["asyncapi"] == "3.0.0" and len(doc["channels"]) == 3
        # beside /openapi.json, not in it
        assert "/asyncapi.json" not in (await c.get("/openapi.json")).json()["paths"]


async def test_a_service_without_channels_serves_an_empty_contract(sqlite_url: str) -> None:
    async with serve(BANKING, sqlite_url) as c:
        r = await c.get("/asyncapi.json")
        assert r.status_code == 200 and r.content == built_document(BANKING)
        doc = r.json()
        assert (doc["asyncapi"], doc["info"]["title"]) == ("3.0.0", "Banking")
        assert (doc["channels"], doc["operations"]) == ({}, {})


async def test_the_shops_events_match_their_messages(sqlite_url: str) -> None:
    async with serve(SHOP, sqlite_url) as c:
        await capture(c)
        doc = (await c.get("/asyncapi.json")).json()
        correlations = []
        for fail in (False, True):
            correlation = f"contract-{fail}"
            body = {"sku": "lamp", "quantity": 2, "failPayment": fail}
            r = await c.post(
                "/api/workflows/place_order", json=body, headers={"X-Correlation-Id": correlation}
            )
            assert r.status_code == 200, r.text
            correlations.append(correlation)
        rows = await captured(c)
        async with c.service.engine.connect() as conn:
            inbox = {
                r.consumer for r in await conn.execute(text("SELECT consumer FROM __loom_inbox"))
            }
    types = Counter(t for t, _, _ in rows)
    print(f"outbox rows captured: {len(rows)} {dict(types)}; inbox consumers: {len(inbox)}")
    # the happy path and the compensation: every event of the shop but the payment timeout
    assert set(types) == set(doc["components"]["messages"]) - {"Orders.PaymentTimedOut"}
    invalid = []
    for event_type, payload, _ in rows:
        errors = [e.message for e in payload_validator(doc, event_type).iter_errors(payload)]
        if errors:
            invalid.append((event_type, payload, errors))
    assert invalid == [], invalid
    assert {correlation for _, _, correlation in rows} == set(correlations)
    # the consumers that applied them are those the receive operations name, and no other
    named = {
        (consumer["name"], consumer["message"])
        for operation in doc["operations"].values()
        for consumer in operation.get("x-loom-consumers", [])
    }
    assert inbox == {name for name, message in named if message in types}


async def test_every_field_type_matches_its_schema(sqlite_url: str) -> None:
    async with serve(CONTRACT, sqlite_url) as c:
        await capture(c)
        doc = (await c.get("/asyncapi.json")).json()
        thing = {
            "name": "lamp",
            "count": 3,
            "amount": "0.00000001",
            "tags": ["a", "bb"],
            "notes": [{"text": "hi", "weight": 12.5}],
            "memo": "short",
            "color": "Green",
            "day": "2026-11-29",
            "flag": True,
        }
        r = await c.post("/api/things", json=thing)
        assert r.status_code == 201, r.text
        thing_id = r.json()["id"]
        r = await c.post(f"/api/things/{thing_id}/shout", json={"at": "2026-11-29T10:00:00Z"})
        assert r.status_code == 204, r.text
        r = await c.post("/api/things", json={"name": "bare"})
        assert r.status_code == 201, r.text
        bare = r.json()["id"]
        r = await c.post(f"/api/things/{bare}/shout", json={"at": "2026-11-29T11:00:00+02:00"})
        assert r.status_code == 204, r.text
        rows = await captured(c)
    # Whispered rides no channel: it never reaches the outbox
    assert [t for t, _, _ in rows] == ["Wire.Shouted", "Wire.Shouted"]
    check = payload_validator(doc, "Wire.Shouted")
    for _, payload, _ in rows:
        assert [e.message for e in check.iter_errors(payload)] == [], payload
    full, empty = (p for _, p, _ in rows)
    assert full["thing"] == str(uuid.UUID(thing_id))
    assert (full["amount"], full["notes"]) == ("1E-8", [{"text": "hi", "weight": "12.5"}])
    assert (full["lastHeard"], full["day"], full["color"]) == (
        "2026-11-29T10:00:00Z",
        "2026-11-29",
        "Green",
    )
    # a datetime sent with an offset is read as UTC, so the event carries it in UTC too
    assert (empty["memo"], empty["day"], empty["lastHeard"]) == (
        None,
        None,
        "2026-11-29T09:00:00Z",
    )


class _Recording(MemoryTransport):
    """The in-memory broker, keeping every message the relay publishes (a `work` channel's are
    gone from the stream once consumed)."""

    def __init__(self, broker: MemoryBroker) -> None:
        super().__init__(broker, ack_wait=0.5)
        self.sent: list[Message] = []

    async def publish(self, message: Message) -> None:
        await super().publish(message)
        self.sent.append(message)


async def test_a_tenanted_contexts_messages_carry_the_tenant_header(
    database_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Sales (tenanted) in a deployable of its own: its relay publishes `Sales.Placed` on the
    broker for Ledger's consumer, which runs elsewhere."""
    for name in (
        "LOOM_JWT_PUBLIC_KEY",
        "LOOM_JWT_AUDIENCE",
        "LOOM_JWT_ISSUER",
        "LOOM_TENANT_CLAIM",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    result = compile_sources({"tenants_channels.loom": TENANTED.read_text() + SPLIT})
    assert result.model is not None, [d.message for d in result.diagnostics]
    build_model(result.model, tmp_path / "out")
    main = import_package(tmp_path / "out" / "shop")
    transport = _Recording(MemoryBroker())
    # the generated build_app, on a broker: what --broker gives a deployed service
    monkeypatch.setattr(main, "create_app", functools.partial(create_app, brokers={"": transport}))
    app = main.build_app(database_url)
    async with app.router.lifespan_context(app), ServiceClient(app, main) as c:
        r = await c.get("/asyncapi.json")
        assert r.status_code == 200
        assert r.content == (tmp_path / "out" / "shop" / "asyncapi.json").read_bytes()
        doc = r.json()
        for tenant in ("acme", "globex"):
            who = token(sub=f"{tenant}-user", tenant=tenant)
            body = {"number": "N-1", "customer": "c", "amount": 5}
            r = await c.post("/api/orders", json=body, headers=who)
            assert r.status_code == 201, r.text
            r = await c.post(f"/api/orders/{r.json()['id']}/place", json={}, headers=who)
            assert r.status_code == 204, r.text
            await c.settle()
    schemas = doc["components"]["schemas"]
    message = doc["components"]["messages"]["Sales.Placed"]
    assert message["headers"] == {"$ref": "#/components/schemas/Loom.TenantedHeaders"}
    headers, plain = schemas["Loom.TenantedHeaders"], schemas["Loom.Headers"]
    assert list(headers["properties"]) == [*plain["properties"], "Loom-Tenant"]
    assert headers["required"] == [*plain["required"], "Loom-Tenant"]
    assert headers["properties"]["Loom-Tenant"]["type"] == "string"
    # what the relay really sent: the headers the schema names, every required one, the tenant's
    sent = [(m.event_type, m.headers()) for m in transport.sent]
    print(f"messages published: {len(sent)}")
    assert [t for t, _ in sent] == ["Sales.Placed", "Sales.Placed"]
    for _, h in sent:
        assert set(headers["required"]) <= set(h) <= set(headers["properties"]), h
    assert [h["Loom-Tenant"] for _, h in sent] == ["acme", "globex"]
