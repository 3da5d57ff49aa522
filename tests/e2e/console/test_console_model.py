"""The console's Model screen and `GET /api/admin/model` over HTTP, on SQLite and PostgreSQL
(docs/console.md#model): the context map and the event flow with the live counts on their nodes,
which change as an event waits in the outbox, dies, or a process instance starts; a tenant's
administrator counts its tenant's rows only, and the hostile see none (`leaks: 0`)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loom.testing import ServiceClient, serve
from tests.e2e.test_admin_outbox import A_ADMIN, MODEL, OPERATOR, A, B, ok, order, place
from tests.e2e.tokens import token, use_secret

MODELS = Path(__file__).resolve().parents[1] / "models"
COUNTS = "/api/admin/model"
PLACED_BY = "Ledger.Book.on(Sales.Placed)"  # the reactor, as `loom.reactor` names it


@pytest.fixture
async def ops(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve([MODEL], database_url) as client:
        yield client


def zero() -> dict[str, int]:
    return {"running": 0, "pending": 0, "dead": 0}


def counts_of(page: str, node: str) -> str | None:
    """The counts the drawing's layer shows on `node`, or None."""
    found = re.search(rf'<text class="counts" data-node="{re.escape(node)}"[^>]*>([^<]*)<', page)
    return found.group(1) if found else None


async def test_counts_change_as_events_wait_and_die(ops: ServiceClient) -> None:
    c = ops
    before = await ok(await c.get(COUNTS, headers=OPERATOR))
    assert before["nodes"]["Sales"] == before["nodes"]["Sales.Placed"] == zero()
    assert before["elements"]["Sales.Shipments"]["kind"] == "channel"

    id = await order(c, A, "zed")  # no account for zed: the shipment waits for its retry
    await ok(await c.post(f"/api/orders/{id}/ship", headers=A), 204)
    await place(c, A, "zed")  # dies at once (maxAttempts 1)
    await place(c, B, "zed")  # globex's, dead too

    after = await ok(await c.get(COUNTS, headers=OPERATOR))
    elements, nodes = after["elements"], after["nodes"]
    assert elements["Sales.Shipments"] == {"kind": "channel", "running": 0, "pending": 1, "dead": 0}
    assert elements["Sales.Shipped"] == {"kind": "event", "running": 0, "pending": 1, "dead": 0}
    assert elements["Sales.Placed"]["dead"] == 2 and elements[PLACED_BY]["dead"] == 2
    assert elements[PLACED_BY]["kind"] == "reactor"
    # a context counts its channels (and the reactors of its own): the flow its nodes'
    assert nodes["Sales"] == {"running": 0, "pending": 1, "dead": 2}
    assert nodes["Ledger"] == {"running": 0, "pending": 0, "dead": 2}
    assert nodes["Sales.Shipped"]["pending"] == 1 and nodes[PLACED_BY]["dead"] == 2
    assert nodes["Sales.Order.place"] == zero()

    mine = await ok(await c.get(COUNTS, headers=A_ADMIN))  # acme's rows only
    assert mine["nodes"]["Sales"] == {"running": 0, "pending": 1, "dead": 1}

    flow = await c.get("/_loom/model", params={"view": "flow"}, headers=OPERATOR)
    assert flow.status_code == 200 and "text/html" in flow.headers["content-type"]
    page = flow.text
    assert '<svg class="model" role="group"' in page and 'id="model-counts"' in page
    assert counts_of(page, "Sales.Shipped") == "1 pending"
    assert counts_of(page, PLACED_BY) == "2 dead"
    assert counts_of(page, "Sales.Order.place") is None
    # each counting node links to the screen listing its rows; the table says the same in text
    assert '<a href="/_loom/outbox" aria-label="Shipped">' in page
    assert '<a href="/_loom/dead-letters" aria-label="Book.on(Sales.Placed)">' in page
    table = page[page.index('id="model-table"') :]
    assert '<a href="/_loom/outbox">Shipped</a>' in table
    assert "<td>0</td><td>1</td><td>0</td>" in table  # Shipped: 1 pending
    assert 'hx-get="/_loom/model/counts?view=flow" hx-trigger="every 5s"' in page

    context = (await c.get("/_loom/model", headers=OPERATOR)).text
    assert counts_of(context, "Sales") == "1 pending · 2 dead"
    assert 'aria-current="page">Context map' in context

    # the poll's answer: the counts layer and the table alone, swapped in by their ids
    live = await c.get("/_loom/model/counts", params={"view": "flow"}, headers=A_ADMIN)
    assert live.status_code == 200
    assert live.text.count('hx-swap-oob="true"') == 2 and "<h1>" not in live.text
    assert counts_of(live.text, PLACED_BY) == "1 dead"


async def test_an_instance_started_shows_on_its_process(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with serve([MODELS / "desk_timers.loom"], database_url) as c:
        starter = "Desk.FollowUp.create(TicketOpened)"  # the process's first node in the flow
        assert (await ok(await c.get(COUNTS)))["nodes"][starter] == zero()
        for title in ("printer", "scanner"):
            await ok(await c.post("/api/workflows/open_ticket", json={"title": title}))
        counted = await ok(await c.get(COUNTS))
        assert counted["elements"]["Desk.FollowUp"]["running"] == 2
        assert counted["nodes"][starter]["running"] == counted["nodes"]["Desk"]["running"] == 2
        page = (await c.get("/_loom/model", params={"view": "flow"})).text
        assert counts_of(page, starter) == "2 running"
        link = (
            '<a href="/_loom/processes/Desk.FollowUp" aria-label="FollowUp.create(TicketOpened)">'
        )
        assert link in page
        assert (
            '<a href="/_loom/processes/Desk.FollowUp">Desk</a>'
            in (await c.get("/_loom/model")).text
        )


async def test_bad_input_is_a_clear_answer(ops: ServiceClient) -> None:
    r = await ops.get("/_loom/model", params={"view": "states"}, headers=OPERATOR)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert "view is one of context, flow" in r.text
    r = await ops.get(
        "/_loom/model", params={"view": "states"}, headers={**OPERATOR, "Accept": "text/html"}
    )
    assert r.status_code == 422 and "<h1>" in r.text and "view is one of" in r.text


async def test_the_hostile_count_nothing(ops: ServiceClient) -> None:
    await place(ops, B, "zed")  # globex's dead letter
    callers: dict[str, dict[str, str]] = {
        "no token": {},
        "not an admin": token(sub="gus", tenant="globex", roles=["agent"]),
        "another tenant's admin": A_ADMIN,
    }
    attempts, leaks = 0, []
    for who, headers in callers.items():
        for path in (COUNTS, "/_loom/model?view=flow", "/_loom/model/counts?view=context"):
            attempts += 1
            r = await ops.get(path, headers=headers)
            if r.status_code == 200 and (
                (path == COUNTS and any(n["dead"] for n in r.json()["nodes"].values()))
                or re.search(r"\d+ dead</text>|<td>[1-9]", r.text)
                or (who != "another tenant's admin" and "<h1>Model" in r.text)
            ):
                leaks.append((who, path, r.status_code))
    print(f"model counts, hostile: {attempts} attempts, leaks: {len(leaks)} {leaks}")
    assert leaks == []


# a context whose channel carries an event to a reactor of its own: its dead letter touches two
# elements of the context's node (the channel and the reactor), and counts once there
ONE_CONTEXT = """
context Desk {
  aggregate Ticket with crudish {
    customer: string
    operation raise() { emit Raised { ticket: id, customer: customer } }
  }
  aggregate Card with crudish {
    customer: string
    raised: int = 0
    unique(customer)
    internal operation count() { raised := raised + 1 }
  }
  repository Tickets for Ticket { }
  repository Cards for Card { }
  event Raised { ticket: Desk.Ticket id, customer: string }
  channel Raising {
    carries: Raised
    maxAttempts: 1
  }
  workflow Tally {
    on(e: Raised) {
      let c = Cards.getBy(customer: e.customer)
      c.count()
    }
  }
}
"""


async def test_a_dead_letter_counts_once_on_a_node_showing_two_of_its_elements(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):  # the loopback operator's
        monkeypatch.delenv(name, raising=False)
    model = tmp_path / "desk.loom"
    model.write_text(ONE_CONTEXT)
    async with serve([model], database_url) as c:
        for _ in range(3):  # no card for ada: each dies at once
            r = await c.post("/api/tickets", json={"customer": "ada"})
            assert r.status_code == 201, r.text
            await ok(await c.post(f"/api/tickets/{r.json()['id']}/raise"), 204)
        await c.service.settle()
        found = await ok(await c.get(COUNTS))
    elements, nodes = found["elements"], found["nodes"]
    print(elements, nodes["Desk"], sep="\n")
    assert elements["Desk.Raising"]["dead"] == 3 and elements["Desk.Tally.on(Raised)"]["dead"] == 3
    assert nodes["Desk"] == {"running": 0, "pending": 0, "dead": 3}
