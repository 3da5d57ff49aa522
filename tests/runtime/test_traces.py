"""Traces (docs/observability.md#traces), recorded by the OpenTelemetry SDK's in-memory exporter
from the generated services, over HTTP, on SQLite and PostgreSQL: each span kind, its name after
the model, the trace context carried through the outbox to every reaction (one trace per request,
no orphan span), a fired timeout's new trace linked to the one that armed it, a redrive's too, an
API call's CLIENT span and forwarded `traceparent`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from loom.migrate.serve import prepare_database
from loom.runtime import SchemaMismatch
from loom.testing import ServiceClient, VirtualClock, build_service, serve
from tests.spans import Recorder, attributes, parent_of

ROOT = Path(__file__).resolve().parents[2]
BANKING = [ROOT / "examples/banking/banking.loom"]
SHOP = [ROOT / "examples/shop/shop.loom"]
DISPATCH = [ROOT / "tests/runtime/api_calls/dispatch.loom"]
DUNNING = [ROOT / "tests/e2e/models/dunning.loom"]
PARENT_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{PARENT_TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def spans() -> Recorder:
    return Recorder()


async def _account(c: ServiceClient) -> str:
    r = await c.post("/api/workflows/register_customer", json={"name": "Ada"})
    assert r.status_code == 200, r.text
    customer = r.json()
    r = await c.post("/api/workflows/open_account", json={"owner": customer, "number": "1"})
    assert r.status_code == 200, r.text
    account: str = r.json()
    return account


async def test_a_request_is_a_server_span_with_its_operation_unit_of_work_and_commit(
    database_url: str, spans: Recorder
) -> None:
    async with serve(BANKING, database_url, tracer_provider=spans.provider) as c:
        account = await _account(c)
        spans.clear()
        r = await c.post(
            f"/api/accounts/{account}/deposit",
            json={"amount": 10},
            headers={"traceparent": TRACEPARENT, "tracestate": "vendor=1"},
        )
        assert r.status_code == 204, r.text
        assert (await c.get("/healthz")).status_code == 200
    server = spans.one("POST /api/accounts/{id}/deposit")
    assert server.kind is SpanKind.SERVER
    assert server.context is not None and format(server.context.trace_id, "032x") == PARENT_TRACE
    assert server.parent is not None and format(server.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert attributes(server) | {"loom.correlation_id": "?"} == {
        "http.request.method": "POST",
        "url.path": f"/api/accounts/{account}/deposit",
        "url.scheme": "http",
        "client.address": "127.0.0.1",
        "loom.correlation_id": "?",
        "http.route": "/api/accounts/{id}/deposit",
        "http.response.status_code": 204,
    }
    operation = spans.one("Account.deposit")
    assert parent_of(operation, spans.spans) is server
    assert attributes(operation) == {
        "loom.context": "Banking",
        "loom.aggregate": "Account",
        "loom.operation": "deposit",
    }
    unit = spans.one("transaction")
    assert parent_of(unit, spans.spans) is operation
    commit = spans.one("COMMIT")
    assert parent_of(commit, spans.spans) is unit and commit.kind is SpanKind.CLIENT
    engine = "sqlite" if database_url.startswith("sqlite") else "postgresql"
    isolation = "serializable" if engine == "sqlite" else "read committed"
    assert attributes(commit) == {
        "db.system.name": engine,
        "db.operation.name": "COMMIT",
        "loom.isolation": isolation,
    }
    # the probes are neither traced nor counted
    assert not [s for s in spans.spans if "healthz" in s.name]
    # the caller's span is not recorded here: the server span is the only one without its parent
    assert spans.orphans() == ["POST /api/accounts/{id}/deposit"]


async def test_a_refusal_is_recorded_but_only_a_5xx_fails_a_span(
    database_url: str, spans: Recorder
) -> None:
    async with serve(BANKING, database_url, tracer_provider=spans.provider) as c:
        account = await _account(c)
        spans.clear()
        r = await c.post(f"/api/accounts/{account}/withdraw", json={"amount": 99})
        assert r.status_code == 422, r.text
    server = spans.one("POST /api/accounts/{id}/withdraw")
    operation = spans.one("Account.withdraw")
    assert server.status.status_code is StatusCode.UNSET
    assert operation.status.status_code is StatusCode.UNSET
    assert attributes(operation)["error.type"]
    assert [e.name for e in operation.events] == ["exception"]
    assert attributes(server)["http.response.status_code"] == 422


async def _place(c: ServiceClient, fail: bool) -> None:
    body = {"sku": "lamp", "quantity": 2, "failPayment": fail}
    r = await c.post("/api/workflows/place_order", json=body)
    assert r.status_code == 200, r.text


async def test_one_request_of_the_shop_is_one_trace_through_every_reaction(
    database_url: str, spans: Recorder
) -> None:
    async with serve(SHOP, database_url, tracer_provider=spans.provider) as c:
        subscribed = {
            event_type: {s.name for s in c.service.events.handlers_for(cls)}
            for event_type, cls in c.service.events._types.items()
        }
        for fail in (False, True):  # the happy path, then the compensation
            await _place(c, fail)
        async with c.service.engine.connect() as conn:
            stored = (await conn.execute(text("SELECT count(*) FROM __loom_outbox"))).scalar()
    traces = spans.traces()
    for trace_id in traces:
        print(spans.tree(trace_id))
    assert len(traces) == 2, sorted(s.name for s in spans.spans)
    assert spans.orphans() == []
    print(f"outbox rows left: {stored}")
    for trace in traces.values():
        roots = [s for s in trace if s.parent is None]
        assert [r.name for r in roots] == ["POST /api/workflows/place_order"]
        # trace completeness, from the model: every reactor subscribed to an event of the
        # trace ran in a span of the same trace
        events = {attributes(s)["loom.event"] for s in trace if s.kind is SpanKind.CONSUMER}
        ran = {attributes(s).get("loom.reactor") for s in trace}
        for event_type in events:
            assert subscribed[event_type] <= ran, (event_type, subscribed[event_type] - ran)
    compensation = next(t for t in traces.values() if any("Released" in s.name for s in t))
    names = {s.name for s in compensation}
    assert "Orders.settleOrder.on(Payment.OrderCancelled)" in names
    assert "process Inventory.Stock" in names and "process Payment.Payments" in names


async def test_the_outbox_row_keeps_the_trace_context_of_the_span_that_raised_it(
    database_url: str, spans: Recorder
) -> None:
    async with serve(SHOP, database_url, tracer_provider=spans.provider, settle=False) as c:
        await _place(c, False)
        async with c.service.engine.connect() as conn:
            rows = (
                await conn.execute(text("SELECT event_type, trace_context FROM __loom_outbox"))
            ).all()
    [(event_type, stored)] = rows
    assert event_type == "Orders.OrderPlaced"
    unit = spans.one("autocommit")
    assert unit.context is not None
    trace_id, span_id = format(unit.context.trace_id, "032x"), format(unit.context.span_id, "016x")
    # the flags: sampled (and the SDK's random trace id flag)
    assert stored in (f"00-{trace_id}-{span_id}-01", f"00-{trace_id}-{span_id}-03")


async def test_a_redriven_dead_letter_starts_a_trace_linked_to_the_one_that_raised_it(
    database_url: str, spans: Recorder
) -> None:
    async with serve(SHOP, database_url, tracer_provider=spans.provider, settle=False) as c:
        await _place(c, False)
        async with c.service.engine.begin() as conn:  # as if its deliveries had all failed
            await conn.execute(text("UPDATE __loom_outbox SET status = 'dead', attempts = 5"))
            event_id = (await conn.execute(text("SELECT event_id FROM __loom_outbox"))).scalar()
        raised = spans.one("autocommit")
        # the spans are kept (not cleared): the relay may be delivering the row already
        # (PostgreSQL wakes it at the commit), and a span of that delivery ending after a clear
        # would look orphaned; the redrive's own delivery is the one that starts a trace
        r = await c.post(f"/api/admin/dead-letters/{event_id}/redrive")
        assert r.status_code == 204, r.text
        await c.service.settle()
    [process] = [s for s in spans.named("process Orders.Fulfilment") if s.parent is None]
    assert raised.context is not None
    assert [link.context.span_id for link in process.links] == [raised.context.span_id]
    assert spans.orphans() == []


async def test_a_fired_timeout_starts_a_trace_linked_to_the_span_that_armed_it(
    database_url: str, spans: Recorder
) -> None:
    start = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
    with VirtualClock(start=start) as clock:
        async with serve(DUNNING, database_url, tracer_provider=spans.provider, clock=clock) as c:
            r = await c.post("/api/workflows/open_subscription", json={"customer": "Ada"})
            assert r.status_code == 200, r.text
            r = await c.post(f"/api/subscriptions/{r.json()}/fail")
            assert r.status_code == 204, r.text
            [reactor] = [s for s in spans.spans if s.name.startswith("Billing.Dunning.create")]
            [armed] = [s for s in spans.spans if parent_of(s, spans.spans) is reactor]
            # the instance keeps the trace context of the step that moved it last
            assert await _step_context(c) == _ids(armed)
            spans.clear()
            assert await clock.advance(timedelta(days=3, minutes=1)) >= 1
            [step] = spans.named("transaction")
            assert await _step_context(c) == _ids(step)
    fired = spans.one("timeout Billing.Dunning.grace")
    assert fired.parent is None  # a trace of its own, days after the request
    assert attributes(fired) | {"loom.correlation_id": "?"} == {
        "loom.process": "Billing.Dunning",
        "loom.timeout": "grace",
        "loom.correlation_id": "?",
        "loom.attempt": 1,
    }
    # armed inside the (in-process) reaction's unit of work: the link names that span
    assert armed.context is not None and armed.name == "transaction"
    assert [link.context.span_id for link in fired.links] == [armed.context.span_id]
    assert {parent_of(s, spans.spans) for s in spans.spans if s is not fired} != {None}
    assert spans.orphans() == []


async def _step_context(c: ServiceClient) -> tuple[str, str]:
    """The trace and span id the Dunning instance's row stores."""
    async with c.service.engine.connect() as conn:
        query = text("SELECT _trace_context FROM billing_dunning_instances")
        stored = (await conn.execute(query)).scalar_one()
    _, trace_id, span_id, _ = stored.split("-")
    return trace_id, span_id


def _ids(span: ReadableSpan) -> tuple[str, str]:
    assert span.context is not None
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


async def test_an_api_call_is_a_client_span_whose_callee_continues_the_trace(
    database_url: str, spans: Recorder
) -> None:
    async with serve(DISPATCH, database_url, tracer_provider=spans.provider) as c:
        hired = await c.post("/api/commands/hire", json={"name": "Ada"})
        assert hired.status_code == 200, hired.text
    [client] = [s for s in spans.spans if s.kind is SpanKind.CLIENT and "commands" in s.name]
    assert attributes(client)["loom.context"] == "Directory"
    callee = [s for s in spans.spans if s.kind is SpanKind.SERVER and s.parent is not None]
    assert [parent_of(s, spans.spans) for s in callee] == [client]
    assert len(spans.traces()) == 1 and spans.orphans() == []


async def test_statements_are_spans_only_when_asked(
    database_url: str, spans: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(BANKING, database_url, tracer_provider=spans.provider) as c:
        await _account(c)
    assert not [s for s in spans.spans if "db.query.text" in attributes(s)]
    spans.clear()
    monkeypatch.setenv("LOOM_OTEL_SQL", "1")
    async with serve(BANKING, database_url, tracer_provider=spans.provider) as c:
        await _account(c)
    statements = [s for s in spans.spans if "db.query.text" in attributes(s)]
    assert {s.name for s in statements} >= {"INSERT", "SELECT"}
    assert all(parent_of(s, spans.spans) is not None for s in statements)


BEFORE_TRACES = [
    "ALTER TABLE __loom_outbox DROP COLUMN trace_context",
    "ALTER TABLE __loom_timers DROP COLUMN trace_context",
    "ALTER TABLE orders_payment_deadline_instances DROP COLUMN _trace_context",
]


async def test_a_database_from_before_traces_is_refused_then_migrated(
    database_url: str, spans: Recorder
) -> None:
    main = build_service(SHOP)
    async with serve(SHOP, database_url):
        pass  # the schema, as the new service makes it
    engine = create_async_engine(database_url)
    async with engine.begin() as conn:
        for statement in BEFORE_TRACES:
            await conn.execute(text(statement))
    await engine.dispose()
    with pytest.raises(SchemaMismatch) as refused:
        async with serve(SHOP, database_url):
            pass
    assert sorted(refused.value.diffs) == [
        "column __loom_outbox.trace_context is missing",
        "column __loom_timers.trace_context is missing",
        "column orders_payment_deadline_instances._trace_context is missing",
    ]
    notes = await prepare_database(SHOP, main, database_url, "", migrate=True)
    print("\n".join(notes))
    assert len(notes) == 3 and all("add column" in n for n in notes)
    async with serve(SHOP, database_url, tracer_provider=spans.provider, settle=False) as c:
        await _place(c, False)
        async with c.service.engine.connect() as conn:
            stored = (
                await conn.execute(text("SELECT trace_context FROM __loom_outbox"))
            ).scalar_one()
    assert stored is not None and stored.split("-")[1] == _ids(spans.one("autocommit"))[0]
