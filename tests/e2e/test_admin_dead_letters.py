"""Dead letters in bulk over HTTP, on SQLite and PostgreSQL (docs/events.md, "Dead letters for
operators"): grouped by how they failed, redriven by group or ids at a rate, archived (then listed
with `?archived=true` only, never redriven); a tenant's administrator confined to its tenant's
(every attempt counted: `leaked: 0`); every action in the audit log; bad input a 4xx problem."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from loom.runtime import clock as clock_
from loom.testing import ServiceClient, serve
from tests.e2e.test_admin_outbox import A_ADMIN, MODEL, OPERATOR, A, B, ok, place
from tests.e2e.test_process_admin import MODELS, StillClock
from tests.e2e.tokens import use_secret

GROUPS = "/api/admin/dead-letters/groups"
REDRIVE = "/api/admin/dead-letters/redrive"


@pytest.fixture
async def ops(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve([MODEL], database_url) as client:
        yield client


async def test_grouped_redriven_at_a_rate_and_archived(ops: ServiceClient) -> None:
    c = ops
    for _ in range(3):
        await place(c, A, "zed")  # acme has no account for zed: each dies at once
    await place(c, B, "zed")

    every = await ok(await c.get(GROUPS, headers=OPERATOR))
    assert sum(g["count"] for g in every) == 4
    (group,) = await ok(await c.get(GROUPS, headers=A_ADMIN))
    assert group["count"] == 3 and group["tenant"] == "acme"
    key = group["group"]
    assert key["kind"] == "event" and key["channel"] == "Sales.Placements"
    assert key["event_type"] == "Sales.Placed" and key["consumer"]
    # one bug, one group: the ids in its message are normalised away
    assert not re.search(r"[0-9a-f]{8}-[0-9a-f]{4}", key["fingerprint"]), key

    r = await c.post("/api/accounts", json={"customer": "zed"}, headers=A)  # the cause, fixed
    assert r.status_code == 201, r.text
    done = await ok(
        await c.post(REDRIVE, json={"group": key, "rate_per_second": 2}, headers=A_ADMIN)
    )
    assert done == {
        "selected": 3,
        "redriven": 3,
        "missing": 0,
        "remaining": 0,
        "batches": 2,
        "rate_per_second": 2.0,
    }
    assert await ok(await c.get(GROUPS, headers=A_ADMIN)) == []
    (account,) = (await ok(await c.get("/api/accounts", headers=A)))["items"]
    assert account["placed"] == 3

    (left,) = await ok(await c.get(GROUPS, headers=OPERATOR))
    globex = left["sample_id"]
    assert left["tenant"] == "globex"
    r = await c.post(f"/api/admin/dead-letters/{globex}/archive", headers=A_ADMIN)
    assert r.status_code == 404, r.text  # another tenant's
    r = await c.post(f"/api/admin/dead-letters/{globex}/archive", headers=OPERATOR)
    assert r.status_code == 204, r.text
    assert await ok(await c.get(GROUPS, headers=OPERATOR)) == []
    assert (await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR)))["total"] == 0
    archived = await ok(
        await c.get("/api/admin/dead-letters", params={"archived": "true"}, headers=OPERATOR)
    )
    assert [d["event_id"] for d in archived["items"]] == [globex]
    (kept,) = await ok(await c.get(GROUPS, params={"archived": "true"}, headers=OPERATOR))
    assert kept["count"] == 1
    again = await ok(await c.post(REDRIVE, json={"ids": [globex]}, headers=OPERATOR))
    assert again["redriven"] == 0 and again["missing"] == 1  # archived: never redriven

    audit = (await ok(await c.get("/api/admin/audit", headers=OPERATOR)))["items"]
    assert [(a["action"], a["actor"], a["tenant"]) for a in audit] == [
        ("redrive", "ops", None),
        ("archive", "ops", "globex"),
        ("redrive", "ann", "acme"),
    ]
    assert audit[2]["parameters"]["rate_per_second"] == 2.0 and len(audit[2]["targets"]) == 3
    mine = (await ok(await c.get("/api/admin/audit", headers=A_ADMIN)))["items"]
    assert [a["action"] for a in mine] == ["redrive"]


async def test_a_tenant_admin_sees_and_moves_its_own_letters_only(ops: ServiceClient) -> None:
    c = ops
    await place(c, B, "zed")  # globex's only: anything acme's admin moves or reads is a leak
    (b_group,) = await ok(await c.get(GROUPS, headers=OPERATOR))
    attempts = 0
    leaked: list[tuple[Any, ...]] = []
    listed = await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR))
    b_id = next(d["event_id"] for d in listed["items"] if d["tenant"] == "globex")
    for method, path, body in (
        ("GET", GROUPS, None),
        ("GET", f"{GROUPS}?archived=true", None),
        ("POST", REDRIVE, {"ids": [b_id]}),
        ("POST", REDRIVE, {"group": b_group["group"]}),
        ("POST", f"/api/admin/dead-letters/{b_id}/archive", None),
    ):
        attempts += 1
        r = await c.request(method, path, json=body, headers=A_ADMIN)
        if "globex" in r.text or r.status_code == 204 or _moved_or_listed(r):
            leaked.append((method, path, r.status_code, r.text))
    attempts += 1
    audit = (await ok(await c.get("/api/admin/audit", headers=A_ADMIN)))["items"]
    if "globex" in str(audit) or {a["tenant"] for a in audit} != {"acme"}:
        leaked.append(("audit", audit))  # its own refused attempts only
    still = await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR))
    assert b_id in [d["event_id"] for d in still["items"]]  # untouched
    for who in (A, B, {}):
        attempts += 1
        r = await c.get(GROUPS, headers=who)
        if r.status_code not in (401, 403):
            leaked.append(("no admin", who, r.status_code, r.text))
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert not leaked, leaked


def _moved_or_listed(r: Any) -> bool:
    """An answer that shows or moved a letter (acme has none): a group, a redrive, an item."""
    if r.status_code != 200:
        return False
    body = r.json()
    if isinstance(body, list):
        return bool(body)
    return bool(body.get("redriven") or body.get("items"))


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"ids": ["x"]},
        {"ids": [], "group": {"kind": "event", "event_type": "A", "fingerprint": ""}},
        {"ids": ["00000000-0000-0000-0000-000000000000"], "rate_per_second": 0},
        {"ids": ["00000000-0000-0000-0000-000000000000"], "rate_per_second": "fast"},
        {"group": {"kind": "letter", "event_type": "A", "fingerprint": ""}},
        {"ids": ["00000000-0000-0000-0000-000000000000"], "extra": 1},
    ],
)
async def test_bad_redrives_are_problems(ops: ServiceClient, body: dict[str, Any]) -> None:
    r = await ops.post(REDRIVE, json=body, headers=OPERATOR)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"


async def test_archive_of_nothing(ops: ServiceClient) -> None:
    r = await ops.post("/api/admin/dead-letters/not-an-id/archive", headers=OPERATOR)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    missing = "00000000-0000-0000-0000-000000000000"
    r = await ops.post(f"/api/admin/dead-letters/{missing}/archive", headers=OPERATOR)
    assert r.status_code == 404 and "no dead letter has the id" in r.text


@pytest.fixture
async def refusing(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Any]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the test runs the scheduler's rounds
    clock = StillClock()
    clock_.set_clock(clock)
    try:
        async with serve([MODELS / "desk_refusing_timeout.loom"], database_url) as client:
            yield client, clock
    finally:
        clock_.reset_clock()


async def test_dead_timeouts_are_grouped_archived_and_redriven(refusing: Any) -> None:
    c, clock = refusing
    tickets = []
    for _ in range(3):
        t = await ok(await c.post("/api/workflows/open_ticket", json={"title": "x"}))
        await ok(await c.post(f"/api/tickets/{t}/close"), 204)  # its nudge is refused: dead
        tickets.append(t)
    for _ in range(20):  # each round a day later, past any backoff; bounded, not timed
        clock.advance(timedelta(days=1))
        await c.service.scheduler.run_due()
        if (await ok(await c.get("/api/admin/dead-letters")))["total"] == 3:
            break
    (group,) = await ok(await c.get(GROUPS))
    assert group["count"] == 3
    assert group["group"] | {"fingerprint": ""} == {
        "kind": "timeout",
        "channel": None,
        "event_type": "nudge",
        "consumer": "Desk.FollowUp",
        "fingerprint": "",
    }
    archived = group["sample_id"]
    r = await c.post(f"/api/admin/dead-letters/{archived}/archive")
    assert r.status_code == 204, r.text
    (group,) = await ok(await c.get(GROUPS))
    assert group["count"] == 2
    done = await ok(await c.post(REDRIVE, json={"group": group["group"]}))
    assert (done["redriven"], done["missing"], done["batches"]) == (2, 0, 1)
    page = await ok(await c.get("/api/admin/timers"))
    assert sum(x["kind"] == "timeout" for x in page["items"]) == 2  # armed again
    kept = await ok(await c.get("/api/admin/dead-letters", params={"archived": "true"}))
    assert [(x["kind"], x["job_id"]) for x in kept["items"]] == [("timeout", archived)]
    # the instance whose timeout was archived reads without it (the process detail too)
    key = kept["items"][0]["key"]
    instance = await ok(await c.get(f"/api/workflows/follow_up/instances/{key}"))
    assert instance["timeouts"] == []
    detail = await ok(await c.get(f"/api/admin/processes/Desk.FollowUp/instances/{key}"))
    assert detail["timeouts"] == []
    job = next(x["job_id"] for x in page["items"] if x["kind"] == "timeout")
    fired = await ok(await c.post(f"/api/admin/timers/{job}/fire"))
    audit = (await ok(await c.get("/api/admin/audit")))["items"]
    assert [(a["action"], a["outcome"]) for a in audit] == [
        ("fire", fired["outcome"]),
        ("redrive", "redriven=2 remaining=0"),
        ("archive", "timeout"),
    ]


@pytest.mark.parametrize(
    ("method", "path", "content"),
    [
        ("GET", f"{GROUPS}?archived=maybe", None),
        ("GET", "/api/admin/dead-letters?archived=2", None),
        ("GET", "/api/admin/audit?limit=0", None),
        ("GET", "/api/admin/audit?offset=-1", None),
        ("POST", REDRIVE, b"not json"),
        ("POST", REDRIVE, b"[1, 2]"),
    ],
)
async def test_bad_queries_and_bodies_are_problems(
    ops: ServiceClient, method: str, path: str, content: bytes | None
) -> None:
    headers = {**OPERATOR, "Content-Type": "application/json"}
    r = await ops.request(method, path, content=content, headers=headers)
    assert r.status_code == 422, r.text
    assert r.headers["content-type"] == "application/problem+json"
