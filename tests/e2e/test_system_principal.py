"""`currentUser` in the bodies the system runs (docs/language.md#who-may-requires-and-currentuser),
over HTTP on SQLite and PostgreSQL with a virtual clock (tests/e2e/models/system_principal.loom).

- Tenanted `Desk`: a reaction records `currentUser.tenant` (the tenant of its event) and
  `currentUser.isSystem`; the context timer, run once per tenant that has rows, stamps each of
  that tenant's notes with `currentUser.tenant` and creates a `Sweep` row of it. Two tenants with
  the same texts: every row carries its own tenant, and each tenant's probe of the other's rows is
  a 404 (`cross-tenant attempts: N, leaked: 0`).
- Untenanted `Jobs`: a starter, a reaction and a timeout record `currentUser.isSystem` (true),
  and the reaction what the system answers for the rest (not authenticated, no role, no claim),
  although the request that raised the event came from an authenticated admin.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve
from tests.e2e.tokens import token, use_secret

MODEL = [Path(__file__).resolve().parent / "models" / "system_principal.loom"]
START = datetime(2031, 2, 3, 8, 0, tzinfo=UTC)
TENANTS = {"acme": token(tenant="acme"), "globex": token(sub="bob", tenant="globex")}
ADMIN = token(sub="ann", roles=["admin"])


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def desk(
    database_url: str, clock: VirtualClock, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


async def ok(c: ServiceClient, method: str, path: str, who: dict[str, str], **kw: Any) -> Any:
    r = await c.request(method, path, headers=who, **kw)
    assert r.status_code in (200, 201, 204), r.text
    return r.json() if r.status_code != 204 else None


async def test_a_tenanted_reaction_and_timer_run_in_their_tenant(
    desk: ServiceClient, clock: VirtualClock
) -> None:
    c = desk
    notes: dict[str, list[str]] = {}
    for tenant, who in TENANTS.items():
        notes[tenant] = [
            (await ok(c, "POST", "/api/notes", who, json={"text": t}))["id"] for t in ("n1", "n2")
        ]
        # the reaction to Posted runs as the system principal of the poster's tenant
        await ok(c, "POST", f"/api/notes/{notes[tenant][0]}/post", who, json={})
    for tenant, who in TENANTS.items():
        first, second = [await ok(c, "GET", f"/api/notes/{n}", who) for n in notes[tenant]]
        assert (first["reactedIn"], first["reactedAsSystem"]) == (tenant, True)
        assert (second["reactedIn"], second["sweptIn"]) == ("", "")

    await clock.advance(timedelta(hours=1))  # one tick: a run per tenant, in that tenant
    attempts = 0
    leaked: list[tuple[object, ...]] = []
    for tenant, who in TENANTS.items():
        for n in notes[tenant]:
            assert (await ok(c, "GET", f"/api/notes/{n}", who))["sweptIn"] == tenant
        sweeps = (await ok(c, "GET", "/api/sweeps", who))["items"]
        assert [s["sweptIn"] for s in sweeps] == [tenant]
        other = next(w for t, w in TENANTS.items() if t != tenant)
        for n in notes[tenant]:
            attempts += 1
            r = await c.get(f"/api/notes/{n}", headers=other)
            if r.status_code != 404:
                leaked.append((tenant, n, r.status_code, r.text))
        attempts += 1
        listed = (await ok(c, "GET", "/api/notes", other))["items"]
        if any(x["id"] in notes[tenant] for x in listed):
            leaked.append((tenant, "listed", listed))

    await clock.advance(timedelta(hours=1))  # a second tick: nothing left unswept, a Sweep each
    for tenant, who in TENANTS.items():
        sweeps = (await ok(c, "GET", "/api/sweeps", who))["items"]
        assert [s["sweptIn"] for s in sweeps] == [tenant, tenant]
    print(f"cross-tenant attempts: {attempts}, leaked: {len(leaked)}")
    assert attempts == 6
    assert leaked == []


async def test_an_untenanted_starter_reaction_and_timeout_run_as_the_system(
    desk: ServiceClient, clock: VirtualClock
) -> None:
    c = desk
    job = (await ok(c, "POST", "/api/jobs", ADMIN, json={"name": "nightly"}))["id"]
    # an authenticated admin starts it; what its event starts runs as the system, not as ann
    await ok(c, "POST", f"/api/jobs/{job}/start", ADMIN, json={})
    got = await ok(c, "GET", f"/api/jobs/{job}", ADMIN)
    assert (
        got["reactedAsSystem"],
        got["reactedAuthenticated"],
        got["reactedAsAdmin"],
        got["reactedSub"],
        got["timedOutAsSystem"],
    ) == (True, False, False, "", False)
    instance = await ok(c, "GET", f"/api/workflows/deadline/instances/{job}", ADMIN)
    assert (instance["startedBySystem"], [t["name"] for t in instance["timeouts"]]) == (
        True,
        ["late"],
    )

    await clock.advance(timedelta(minutes=59))
    assert (await ok(c, "GET", f"/api/jobs/{job}", ADMIN))["timedOutAsSystem"] is False
    await clock.advance(timedelta(minutes=1))  # the timeout runs as the system principal
    assert (await ok(c, "GET", f"/api/jobs/{job}", ADMIN))["timedOutAsSystem"] is True
    instance = await ok(c, "GET", f"/api/workflows/deadline/instances/{job}", ADMIN)
    assert (instance["ended"], instance["timeouts"]) == (True, [])
