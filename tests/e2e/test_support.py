"""The support example (examples/support) over HTTP, on SQLite and PostgreSQL: every construct of the
workflow language observed from outside — crudish routes, natural keys, finds, loops, `if let`,
`notFound`, handlers, workflow state and instances, event sourcing, a domain service, externs."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from loom.testing import ServiceClient, build_service, serve
from tests.liveserver import free_port, running

from .conftest import ROOT
from .test_banking import assert_problem

SUPPORT = [ROOT / "examples/support/support.loom"]
PAST = "2020-01-01T00:00:00Z"
NOW = "2026-11-29T12:00:00Z"
FUTURE = "2999-01-01T00:00:00Z"


@pytest.fixture
async def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    # The extern implementation lives beside the model; the service imports it by module name.
    monkeypatch.syspath_prepend(str(ROOT / "examples/support"))
    main = build_service(SUPPORT)
    app = main.build_app(database_url, extern_module="support_externs")
    async with app.router.lifespan_context(app), ServiceClient(app, main) as client:
        yield client


async def new_ticket(c: ServiceClient, code: str, customer: str = "acme", due: str = FUTURE) -> str:
    r = await c.post("/api/tickets", json={"code": code, "customer": customer, "dueAt": due})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def ticket(c: ServiceClient, ticket_id: str) -> dict[str, Any]:
    r = await c.get(f"/api/tickets/{ticket_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def ok(r: Any, status: int = 204) -> Any:
    response = await r
    assert response.status_code == status, response.text
    return response.json() if status in (200, 201) else None


def same_problem_except(
    got: httpx.Response, reference: httpx.Response, *, detail: str, instance: str
) -> None:
    """`got` is byte-for-byte the problem `reference` is — same status, content type, members in the
    same order with the same values — except `detail` and `instance`, given here."""
    assert got.status_code == reference.status_code == 404, (got.text, reference.text)
    assert got.headers["content-type"] == reference.headers["content-type"]
    expected = dict(reference.json())
    expected.update(detail=detail, instance=instance)
    assert list(got.json().items()) == list(expected.items())


# --------------------------------------------------------------------------------------------------
# crudish


async def test_crudish_create_answers_201_with_location(desk: ServiceClient) -> None:
    r = await desk.post(
        "/api/tickets", json={"code": "T-1", "customer": "acme", "dueAt": "2026-12-01T09:00:00Z"}
    )
    assert r.status_code == 201, r.text
    body = r.json()
    assert r.headers["location"] == f"/api/tickets/{body['id']}"
    assert body == await ticket(desk, body["id"])
    assert (body["code"], body["customer"], body["status"], body["version"]) == (
        "T-1",
        "acme",
        "Open",
        1,
    )
    assert body["dueAt"].startswith("2026-12-01T09:00:00")
    # The declared factory's precondition guards the route.
    r = await desk.post("/api/tickets", json={"code": "", "customer": "acme", "dueAt": FUTURE})
    assert assert_problem(r, 422, "precondition-failed")["detail"] == "a ticket needs a code"
    # The natural key is a UNIQUE constraint.
    r = await desk.post("/api/tickets", json={"code": "T-1", "customer": "x", "dueAt": FUTURE})
    assert r.status_code == 409, r.text
    assert (await desk.get("/api/tickets")).json()["total"] == 1


async def test_crudish_update_refuses_immutable_and_unknown_fields(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    r = await desk.patch(f"/api/tickets/{t}", json={"customer": "globex", "touches": 2})
    assert r.status_code == 200, r.text
    assert (r.json()["customer"], r.json()["touches"], r.json()["version"]) == ("globex", 2, 2)
    assert r.json() == await ticket(desk, t)

    immutable = assert_problem(
        await desk.patch(f"/api/tickets/{t}", json={"code": "T-9"}), 422, "invalid-request"
    )
    assert any("code" in e["path"] or "code" in e["message"] for e in immutable["errors"]), (
        immutable
    )
    unknown = assert_problem(
        await desk.patch(f"/api/tickets/{t}", json={"colour": "red"}), 422, "invalid-request"
    )
    assert any("colour" in e["path"] or "colour" in e["message"] for e in unknown["errors"])
    got = await ticket(desk, t)
    assert (got["code"], got["version"]) == ("T-1", 2)
    missing = await desk.patch(f"/api/tickets/{uuid.uuid4()}", json={"customer": "x"})
    assert_problem(missing, 404, "not-found")


async def test_crudish_delete(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    r = await desk.delete(f"/api/tickets/{t}")
    assert r.status_code == 204 and r.content == b""
    assert_problem(await desk.get(f"/api/tickets/{t}"), 404, "not-found")
    assert_problem(await desk.delete(f"/api/tickets/{t}"), 404, "not-found")
    # The code is free again.
    await new_ticket(desk, "T-1")


# --------------------------------------------------------------------------------------------------
# loops and the when gate


async def test_sweep_flags_only_open_due_tickets(desk: ServiceClient) -> None:
    a = await new_ticket(desk, "A", due=PAST)
    b = await new_ticket(desk, "B", due=PAST)
    later = await new_ticket(desk, "C", due=FUTURE)
    await ok(desk.post(f"/api/tickets/{b}/flag_breached"))
    breached: list[Any] = []

    async def record(event: Any) -> None:
        breached.append(event.code)

    desk.service.events.subscribe(desk.module("support.domain").TicketBreached, record)
    assert await ok(desk.post("/api/workflows/sweep", json={"asOf": NOW}), 200) == 0
    assert [(await ticket(desk, x))["status"] for x in (a, b, later)] == [
        "Breached",
        "Breached",
        "Open",
    ]
    assert (await ticket(desk, b))["version"] == 2  # not selected, not saved again
    assert breached == ["A"]


@pytest.mark.parametrize(
    ("workflow", "earlier_kept"), [("strict_sweep", False), ("loose_sweep", True)]
)
async def test_a_refused_loop_element_aborts_the_sweep(
    desk: ServiceClient, workflow: str, earlier_kept: bool
) -> None:
    first = await new_ticket(desk, "A", due=PAST)
    breached = await new_ticket(desk, "B", due=PAST)
    after = await new_ticket(desk, "C", due=PAST)
    await ok(desk.post(f"/api/tickets/{breached}/flag_breached"))
    seen: list[str] = []

    async def record(event: Any) -> None:
        seen.append(event.code)

    desk.service.events.subscribe(desk.module("support.domain").TicketBreached, record)
    r = await desk.post(f"/api/workflows/{workflow}", json={"asOf": NOW})
    body = assert_problem(r, 422, "state-gate-refused")
    direct = assert_problem(
        await desk.post(f"/api/tickets/{breached}/flag_breached"), 422, "state-gate-refused"
    )
    assert (body["title"], body["rule"]) == (direct["title"], direct["rule"])
    # what the loose sweep committed before the refusal is named in the problem; the strict one
    # rolled back, and says only what the operation's own route says
    kept = "; already saved by this request and not undone, as its body is not transactional"
    saved = [{"aggregate": "Ticket", "id": first}] if earlier_kept else None
    assert body["detail"] == direct["detail"] + (f"{kept}: Ticket {first}" if saved else "")
    assert body.get("saved") == saved
    assert (await ticket(desk, first))["status"] == ("Breached" if earlier_kept else "Open")
    assert (await ticket(desk, after))["status"] == "Open"  # never visited
    assert seen == (["A"] if earlier_kept else [])  # rolled back: never announced


# --------------------------------------------------------------------------------------------------
# notFound and the standard 404


async def test_not_found_is_byte_for_byte_the_get_by_id_miss(desk: ServiceClient) -> None:
    missing = str(uuid.uuid4())
    strict = await desk.post("/api/commands/close_ticket", json={"ticket": missing})
    reference = assert_problem(strict, 404, "not-found")
    assert reference["aggregate"] == "Ticket"
    assert reference["instance"] == "/api/commands/close_ticket"
    bare = await desk.post("/api/commands/close_if_present", json={"ticket": missing})
    same_problem_except(
        bare, strict, detail="Ticket not found", instance="/api/commands/close_if_present"
    )
    # And the same problem as the aggregate's own GET miss.
    by_get = await desk.get(f"/api/tickets/{missing}")
    assert by_get.json()["detail"] == reference["detail"]
    same_problem_except(
        strict, by_get, detail=reference["detail"], instance="/api/commands/close_ticket"
    )

    t = await new_ticket(desk, "T-1")
    await ok(desk.post("/api/commands/close_if_present", json={"ticket": t}))
    assert (await ticket(desk, t))["status"] == "Closed"


async def test_not_found_with_a_detail(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1", customer="acme")
    await ok(desk.post("/api/commands/escalate_open", json={"customer": "acme"}))
    assert (await ticket(desk, t))["status"] == "Escalated"
    miss = await desk.post("/api/commands/escalate_open", json={"customer": "acme"})
    body = assert_problem(miss, 404, "not-found")
    assert body["detail"] == "no open ticket"
    assert body["instance"] == "/api/commands/escalate_open"
    reference = (
        await desk.post("/api/commands/close_ticket", json={"ticket": str(uuid.uuid4())})
    ).json()
    assert body.keys() == reference.keys()
    assert (body["type"], body["title"]) == (reference["type"], reference["title"])


async def test_get_by_natural_key(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    assert await ok(desk.post("/api/commands/close_by_code", json={"code": "T-1"}), 200) == t
    assert (await ticket(desk, t))["status"] == "Closed"
    miss = assert_problem(
        await desk.post("/api/commands/close_by_code", json={"code": "nope"}), 404, "not-found"
    )
    assert miss["aggregate"] == "Ticket"


# --------------------------------------------------------------------------------------------------
# handlers


async def test_query_handlers_over_get(desk: ServiceClient) -> None:
    a = await new_ticket(desk, "A", customer="acme", due=PAST)
    b = await new_ticket(desk, "B", customer="globex", due=PAST)
    await new_ticket(desk, "C", customer="acme", due=FUTURE)
    await ok(desk.post(f"/api/tickets/{b}/close"))

    r = await desk.get("/api/queries/due_tickets", params={"asOf": NOW})
    assert r.status_code == 200, r.text
    assert r.json() == [await ticket(desk, a)]  # aggregates answered as their JSON

    mine = (await desk.get("/api/queries/tickets_of", params={"customer": "acme"})).json()
    assert [x["code"] for x in mine] == ["A", "C"]
    assert (await desk.get("/api/queries/tickets_of", params={"customer": "none"})).json() == []

    slack = await desk.get("/api/queries/has_slack", params={"code": "C", "asOf": NOW})
    assert (slack.status_code, slack.json()) == (200, True)
    late = await desk.get("/api/queries/has_slack", params={"code": "A", "asOf": NOW})
    assert late.json() is False
    assert_problem(
        await desk.get("/api/queries/has_slack", params={"code": "Z", "asOf": NOW}),
        404,
        "not-found",
    )
    agent = await ok(
        desk.post("/api/workflows/hire_agent", json={"handle": "ann", "name": "Ann"}), 200
    )
    nobody = await desk.get("/api/queries/team_of", params={"handle": "ann"})
    assert (nobody.status_code, nobody.json()) == (200, None)  # a missing optional is null
    await ok(desk.post(f"/api/agents/{agent}/join", json={"t": "blue"}))
    team = await desk.get("/api/queries/team_of", params={"handle": "ann"})
    assert team.json() == "blue"
    echo = await desk.get("/api/queries/echo", params=[("codes", "x"), ("codes", "y")])
    assert (echo.status_code, echo.json()) == (200, ["x", "y"])
    bad = await desk.get("/api/queries/due_tickets", params={"asOf": "yesterday"})
    assert_problem(bad, 422, "invalid-request")
    # Read-only: a query changes nothing.
    assert (await ticket(desk, a))["version"] == 1


async def test_domain_service_in_a_transactional_handler(desk: ServiceClient) -> None:
    a, b = await new_ticket(desk, "A"), await new_ticket(desk, "B")
    await ok(desk.post("/api/commands/escalate_pair", json={"first": "A", "second": "B"}))
    assert [(await ticket(desk, x))["status"] for x in (a, b)] == ["Escalated", "Escalated"]
    c = await new_ticket(desk, "C")
    r = await desk.post("/api/commands/escalate_pair", json={"first": "C", "second": "A"})
    assert assert_problem(r, 422, "precondition-failed")["detail"] == "both tickets must be open"
    assert (await ticket(desk, c))["status"] == "Open"


async def test_if_let_over_a_declared_find_in_a_transactional_handler(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    agent = await ok(
        desk.post("/api/workflows/hire_agent", json={"handle": "ann", "name": "Ann"}), 200
    )
    idle = (await desk.get("/api/queries/idle_agents")).json()
    assert [x["id"] for x in idle] == [agent]
    miss = await desk.post("/api/commands/assign", json={"code": "T-1", "agent": "bob"})
    assert assert_problem(miss, 404, "not-found")["detail"] == "no such agent"
    for _ in range(3):
        await ok(desk.post("/api/commands/assign", json={"code": "T-1", "agent": "ann"}))
    assert (await desk.get("/api/queries/idle_agents")).json() == []
    await ok(desk.post(f"/api/tickets/{t}/close"))
    await ok(desk.post(f"/api/tickets/{t}/reopen", json={"until": FUTURE}))
    # The fourth take breaks the agent's invariant: the ticket's escalation rolls back with it.
    r = await desk.post("/api/commands/assign", json={"code": "T-1", "agent": "ann"})
    assert_problem(r, 422, "invariant-failed")
    assert (await ticket(desk, t))["status"] == "Open"


async def test_intake_creates_or_escalates(desk: ServiceClient) -> None:
    body = {"code": "T-1", "customer": "acme", "dueAt": FUTURE}
    await ok(desk.post("/api/workflows/intake", json=body))
    page = (await desk.get("/api/tickets")).json()
    assert [(x["code"], x["status"]) for x in page["items"]] == [("T-1", "Open")]
    await ok(desk.post("/api/workflows/intake", json=body))
    page = (await desk.get("/api/tickets")).json()
    assert [(x["code"], x["status"], x["version"]) for x in page["items"]] == [
        ("T-1", "Escalated", 2)
    ]


async def test_purge_deletes_and_never_saves_again(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    await ok(desk.post("/api/commands/purge", json={"code": "T-1"}))
    assert_problem(await desk.get(f"/api/tickets/{t}"), 404, "not-found")
    assert_problem(await desk.post("/api/commands/purge", json={"code": "T-1"}), 404, "not-found")


# --------------------------------------------------------------------------------------------------
# externs, workflow state, event sourcing


async def test_extern_operation_route_and_handler(desk: ServiceClient) -> None:
    import support_externs  # type: ignore[import-not-found]

    support_externs.SENT.clear()
    t = await new_ticket(desk, "T-1")
    await ok(desk.post(f"/api/tickets/{t}/notify", json={"channel": "sms"}))
    got = await ticket(desk, t)
    assert (got["lastNotified"], got["version"]) == ("sms", 2)
    await ok(desk.post("/api/commands/notify", json={"code": "T-1", "channel": "mail"}))
    assert (await ticket(desk, t))["lastNotified"] == "mail"
    assert support_externs.SENT == [("T-1", "sms"), ("T-1", "mail")]
    miss = await desk.post("/api/commands/notify", json={"code": "nope", "channel": "mail"})
    assert assert_problem(miss, 404, "not-found")["detail"] == "Ticket not found"


async def test_workflow_state_and_its_instance(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    assert_problem(await desk.get(f"/api/workflows/follow_up/instances/{t}"), 404, "not-found")
    await ok(desk.post("/api/workflows/follow_up", json={"ticket": t, "priority": 9}))
    r = await desk.get(f"/api/workflows/follow_up/instances/{t}")
    assert r.status_code == 200, r.text
    assert r.json() == {"ticket": t, "version": 1, "attempts": 1, "channel": "phone"}
    assert (await ticket(desk, t))["lastNotified"] == "phone"  # the extern, from a workflow
    await ok(desk.post("/api/workflows/follow_up", json={"ticket": t, "priority": 2}))
    r = await desk.get(f"/api/workflows/follow_up/instances/{t}")
    assert r.json() == {"ticket": t, "version": 2, "attempts": 5, "channel": "mail"}
    refused = await desk.post("/api/workflows/follow_up", json={"ticket": t, "priority": -1})
    assert (
        assert_problem(refused, 422, "precondition-failed")["detail"]
        == "priority is never negative"
    )
    assert (await desk.get(f"/api/workflows/follow_up/instances/{t}")).json()["version"] == 2
    missing = await desk.post(
        "/api/workflows/follow_up", json={"ticket": str(uuid.uuid4()), "priority": 1}
    )
    assert_problem(missing, 404, "not-found")


async def test_event_sourced_ledger(desk: ServiceClient) -> None:
    t = await new_ticket(desk, "T-1")
    charged: list[int] = []

    async def record(event: Any) -> None:
        charged.append(event.amount)

    desk.service.events.subscribe(desk.module("support.domain").Charged, record)
    await ok(desk.post("/api/workflows/ledger", json={"ticket": t, "amount": 5}))
    await ok(desk.post("/api/workflows/ledger", json={"ticket": t, "amount": 7}))
    r = await desk.get(f"/api/workflows/ledger/instances/{t}")
    assert r.json() == {"ticket": t, "version": 2, "total": 12, "charges": 2}
    assert charged == [5, 7]
    refused = await desk.post("/api/workflows/ledger", json={"ticket": t, "amount": 0})
    assert_problem(refused, 422, "precondition-failed")
    assert (await desk.get(f"/api/workflows/ledger/instances/{t}")).json()["total"] == 12
    assert charged == [5, 7]


# --------------------------------------------------------------------------------------------------
# the published surface


async def test_openapi_lists_handlers_and_hides_private_things(desk: ServiceClient) -> None:
    spec = (await desk.get("/openapi.json")).json()
    paths = spec["paths"]
    for command in (
        "escalate_open",
        "close_ticket",
        "close_if_present",
        "close_by_code",
        "escalate_pair",
        "assign",
        "notify",
        "purge",
    ):
        assert "post" in paths[f"/api/commands/{command}"], command
    for query in ("due_tickets", "tickets_of", "has_slack", "team_of", "idle_agents", "echo"):
        assert "get" in paths[f"/api/queries/{query}"], query
    params = {p["name"]: p for p in paths["/api/queries/due_tickets"]["get"]["parameters"]}
    assert params["asOf"]["in"] == "query"
    assert "post" in paths["/api/tickets"]
    assert {"patch", "delete", "get"} <= paths["/api/tickets/{id}"].keys()
    assert "post" in paths["/api/tickets/{id}/notify"]
    assert "get" in paths["/api/workflows/follow_up/instances/{id}"]
    assert "get" in paths["/api/workflows/ledger/instances/{id}"]
    assert "200" in paths["/api/commands/close_by_code"]["post"]["responses"]
    # Declared finds are public, read-only routes.
    assert set(paths["/api/tickets/find/by_customer"]) == {"get"}
    assert set(paths["/api/agents/find/by_handle"]) == {"get"}
    # No route for a private operation, a criterion, a retrieval or a service.
    assert "/api/tickets/{id}/touch" not in paths
    hidden = (
        "touch",
        "due_open",
        "overdue",
        "open_for",
        "escalation",
        "sla_days",
        "channel_for",
        "retriev",
        "criteri",
    )
    leaked = [p for p in paths if any(h in p.lower() for h in hidden)]
    assert leaked == [], leaked
    r = await desk.post(f"/api/tickets/{await new_ticket(desk, 'T-1')}/touch", json={})
    assert r.status_code in (404, 405)


# --------------------------------------------------------------------------------------------------
# a declared factory leaves the fields it does not assign at their defaults


async def test_factory_leaves_unassigned_optional_fields_null(
    database_url: str, tmp_path: Any
) -> None:
    model = tmp_path / "factory.loom"
    model.write_text(
        """
        context Desk {
          aggregate Note with crudish {
            title: string
            owner: string?
            pinned: bool = false
            create(title: string) { title := title }
          }
        }
        """
    )
    async with serve([model], database_url) as c:
        r = await c.post("/api/notes", json={"title": "hello"})
        assert r.status_code == 201, r.text
        assert (r.json()["title"], r.json()["owner"], r.json()["pinned"]) == ("hello", None, False)


# --------------------------------------------------------------------------------------------------
# `loom run --extern` (docs/extern.md)


@pytest.mark.parametrize("how", ["flag", "environment"])
def test_loom_run_loads_the_extern_module(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    for name in ("support.loom", "support_externs.py"):
        shutil.copy(ROOT / "examples/support" / name, tmp_path / name)
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    model = str(tmp_path / "support.loom")
    args = [model, "--extern", "support_externs"]
    if how == "environment":
        monkeypatch.setenv("LOOM_EXTERN_MODULE", "support_externs")
        args = [model]
    with running(*args, port=free_port()) as base:
        r = httpx.post(
            f"{base}/api/tickets", json={"code": "T-1", "customer": "acme", "dueAt": FUTURE}
        )
        assert r.status_code == 201, r.text
        t = r.json()["id"]
        r = httpx.post(f"{base}/api/tickets/{t}/notify", json={"channel": "sms"})
        assert r.status_code == 204, r.text
        assert httpx.get(f"{base}/api/tickets/{t}").json()["lastNotified"] == "sms"


async def test_an_unindexable_unique_key_is_refused_not_a_500(
    desk: ServiceClient, database_url: str
) -> None:
    # PostgreSQL refuses a B-tree entry over about 2.7 kB: a long `unique (code)` is the client's
    # data, so a 422 with nothing stored; SQLite has no such limit and stores it.
    code = "".join(f"{(i * 2654435761) % 4294967296:08x}" for i in range(1024))  # 8 kB, varied
    body = {"code": code, "customer": "acme", "dueAt": FUTURE}
    r = await desk.post("/api/tickets", json=body)
    listed = (await desk.get("/api/tickets")).json()
    if database_url.startswith("postgresql"):
        assert r.status_code == 422, r.text
        assert r.json()["type"] == "urn:loom:problem:invalid-request"
        assert listed["total"] == 0
    else:
        assert r.status_code == 201, r.text
        assert listed["total"] == 1
