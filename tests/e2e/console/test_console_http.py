"""The web console at /_loom/ over HTTP, on SQLite and PostgreSQL (docs/console.md): its screens,
a timeout fired from its form, the read-only switch, the CSRF guard, loopback-only without a
token verifier, the login cookie and a tenant administrator's view, a dead timeout redriven."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID

import httpx
import pytest
from sqlalchemy import update

from loom.runtime.processes.tables import DEAD, timers
from loom.testing import ServiceClient, serve
from tests.e2e.tokens import bearer, token, use_secret

MODELS = Path(__file__).resolve().parents[1] / "models"
FOLLOW_UP = "/_loom/processes/Desk.FollowUp"
HTML = {"Accept": "text/html"}


@pytest.fixture
async def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the console fires the timeouts
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with serve([MODELS / "desk_timers.loom"], database_url) as client:
        yield client


async def open_ticket(c: ServiceClient) -> str:
    r = await c.post("/api/workflows/open_ticket", json={"title": "printer"})
    assert r.status_code == 200, r.text
    return str(r.json())


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, page
    return found.group(1)


def fire_url(page: str) -> str:
    found = re.search(r'action="(/_loom/timers/[^"]+/fire)"', page)
    assert found, page
    return found.group(1)


async def test_screens_and_a_timeout_fired_from_the_detail(desk: ServiceClient) -> None:
    ticket = await open_ticket(desk)
    home = await desk.get("/_loom/")
    assert home.status_code == 303 and home.headers["location"] == "/_loom/processes"

    listed = await desk.get("/_loom/processes")
    assert listed.status_code == 200 and "text/html" in listed.headers["content-type"]
    assert 'href="/_loom/processes/Desk.FollowUp"' in listed.text
    page = (await desk.get(FOLLOW_UP, params={"state": "running", "key": ticket})).text
    assert f"{FOLLOW_UP}/{ticket}" in page and "1–1 of 1" in page
    assert "No instance matches" in (await desk.get(FOLLOW_UP, params={"state": "completed"})).text

    detail = (await desk.get(f"{FOLLOW_UP}/{ticket}")).text
    assert 'class="state running"' in detail and "nudge" in detail and "armed" in detail
    # the process's declared machine, this instance's state marked, and what moves it
    machine = detail[detail.index('id="state-machine"') : detail.index("<h2>Timeouts")]
    assert "<svg" in machine and 'aria-label="State machine: running, completed.' in machine
    assert machine.count('aria-current="true"') == 1
    assert '<g class="state-box current" aria-current="true"><rect' in machine
    assert "running (this instance)" in machine
    assert "<td>running</td><td>completed</td><td>timeout nudge</td>" in machine
    here = f"{FOLLOW_UP}/{ticket}"
    form = {"csrf": csrf_of(detail), "back": here}
    r = await desk.post(fire_url(detail), data=form)
    assert r.status_code == 303, r.text
    assert r.headers["location"] == f"{here}?done=timeout+fired"
    after = (await desk.get(f"{FOLLOW_UP}/{ticket}")).text
    assert 'class="state completed"' in after and "No timeout is armed" in after
    assert "completed (this instance)" in after and "running (this instance)" not in after
    # the console's action is in the audit log, the console's screen and the admin route's alike
    (row,) = (await desk.get("/api/admin/audit")).json()["items"]
    assert row["action"] == "fire" and row["parameters"] == {"kind": "timeout", "via": "console"}
    assert row["outcome"] == "fired" and row["actor"] in ("loopback", "anonymous")
    log = (await desk.get("/_loom/audit")).text
    assert '<th scope="row">fire</th>' in log and row["targets"][0] in log
    assert "<td>console</td><th" in log  # through what: the console, or an admin route

    for screen in ("/_loom/timers", "/_loom/dead-letters"):
        r = await desk.get(screen)
        assert r.status_code == 200, (screen, r.text)
    timers = (await desk.get("/_loom/timers")).text
    assert "Desk.sweep" in timers and "/_loom/timers/Desk.sweep/fire" in timers
    r = await desk.post("/_loom/timers/Desk.sweep/fire", data={"csrf": csrf_of(timers)})
    assert r.status_code == 303 and r.headers["location"] == "/_loom/timers?done=timer+fired"


async def test_bad_input_is_a_clear_answer(desk: ServiceClient) -> None:
    r = await desk.get("/_loom/processes/Desk.Nothing")
    assert r.status_code == 404 and "no process is named Desk.Nothing" in r.text
    r = await desk.get("/_loom/processes/Desk.Nothing", headers=HTML)
    assert r.status_code == 404 and "<h1>" in r.text and "Desk.Nothing" in r.text
    r = await desk.get(FOLLOW_UP, params={"offset": "-1"})
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    page = (await desk.get("/_loom/timers")).text
    r = await desk.post("/_loom/dead-letters/not-a-uuid/redrive", data={"csrf": csrf_of(page)})
    assert r.status_code == 422, r.text
    missing = "/_loom/dead-letters/00000000-0000-0000-0000-000000000000/redrive"
    r = await desk.post(missing, data={"csrf": csrf_of(page)})
    assert r.status_code == 404 and "no dead letter" in r.text


async def test_a_cross_site_post_is_refused(desk: ServiceClient) -> None:
    ticket = await open_ticket(desk)
    detail = (await desk.get(f"{FOLLOW_UP}/{ticket}")).text
    url = fire_url(detail)
    attempts = [
        ({}, {}),  # a form of another site: it cannot read the token
        ({"csrf": "0" * 64}, {}),
        ({"csrf": csrf_of(detail)}, {"Sec-Fetch-Site": "cross-site"}),
    ]
    for form, headers in attempts:
        r = await desk.post(url, data=form, headers=headers)
        assert r.status_code == 403, r.text
        assert r.headers["content-type"] == "application/problem+json"
    assert 'class="state running"' in (await desk.get(f"{FOLLOW_UP}/{ticket}")).text


async def test_read_only_hides_the_actions_and_refuses_them(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    monkeypatch.setenv("LOOM_CONSOLE_READ_ONLY", "true")
    async with serve([MODELS / "desk_timers.loom"], database_url) as c:
        ticket = await open_ticket(c)
        detail = (await c.get(f"{FOLLOW_UP}/{ticket}")).text
        assert "read-only" in detail and "Fire now" not in detail
        page = (await c.get("/_loom/timers")).text
        assert "Fire now" not in page and "Reschedule" not in page and "Cancel" not in page
        timers = (await c.get("/api/admin/timers")).json()["items"]
        job = next(t["job_id"] for t in timers if t.get("key") == ticket)
        for method, path in (
            ("POST", f"/_loom/timers/{job}/fire"),
            ("GET", f"/_loom/timers/{job}/reschedule"),  # the form, the confirmation: none
            ("GET", f"/_loom/timers/{job}/cancel"),
            ("POST", f"/_loom/timers/{job}/reschedule"),
            ("POST", f"/_loom/timers/{job}/cancel"),
        ):
            r = await c.request(method, path, data={"csrf": "0" * 64, "delay": "1h"})
            assert r.status_code == 403 and "read-only" in r.text, (path, r.text)
            assert r.headers["content-type"] == "application/problem+json"
        assert 'class="state running"' in (await c.get(f"{FOLLOW_UP}/{ticket}")).text


def from_address(client: ServiceClient, host: str) -> httpx.AsyncClient:
    """A client of the same app whose requests come from `host`."""
    transport = httpx.ASGITransport(app=client.app, client=(host, 40000))
    return httpx.AsyncClient(transport=transport, base_url="http://loom.test")


async def test_without_a_verifier_only_loopback_unless_public(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    async with serve([MODELS / "desk_timers.loom"], database_url) as c:
        for host in ("127.0.0.1", "::1"):
            async with from_address(c, host) as near:
                assert (await near.get("/_loom/processes")).status_code == 200
        async with from_address(c, "203.0.113.9") as far:
            for method, path in (
                ("GET", "/_loom/processes"),
                ("GET", "/_loom/timers"),
                ("POST", "/_loom/timers/Desk.sweep/fire"),
            ):
                r = await far.request(method, path)
                assert r.status_code == 403 and "--console-public" in r.text, (path, r.text)
    monkeypatch.setenv("LOOM_CONSOLE_PUBLIC", "true")
    async with (
        serve([MODELS / "desk_timers.loom"], database_url) as c,
        from_address(c, "203.0.113.9") as far,
    ):
        assert (await far.get("/_loom/processes")).status_code == 200


async def test_no_console(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_NO_CONSOLE", "true")
    async with serve([MODELS / "desk_timers.loom"], database_url) as c:
        for path in ("/_loom/", "/_loom/processes", "/_loom/static/console.css"):
            assert (await c.get(path)).status_code == 404, path


@pytest.fixture
async def tenanted(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    async with serve([MODELS / "tenants_instances.loom"], database_url) as client:
        yield client


def unechoed(page: str) -> str:
    """`page` without the query it was asked with, which its links may echo (as is, or
    URL-encoded in a link's `back`): what is left is what it shows."""
    return page.replace("tenant=globex", "").replace("tenant%3Dglobex", "")


async def test_login_cookie_roles_and_tenants(tenanted: ServiceClient) -> None:
    c = tenanted
    key = "11111111-2222-3333-4444-555555555555"
    for tenant in ("acme", "globex"):
        r = await c.post(
            "/api/workflows/report", json={"ticket": key}, headers=token(tenant=tenant)
        )
        assert r.status_code == 204, r.text
    escalations = "/_loom/processes/Desk.Escalation"

    r = await c.get("/_loom/processes")  # no token: the login form
    assert r.status_code == 200 and 'name="token"' in r.text and "Desk.Escalation" not in r.text
    r = await c.post("/_loom/login", data={"token": bearer(token(tenant="acme"))})
    assert r.status_code == 403 and "role `admin`" in r.text and "set-cookie" not in r.headers
    r = await c.post("/_loom/login", data={"token": "not-a-token"})
    assert r.status_code == 401 and "set-cookie" not in r.headers
    r = await c.post(
        "/_loom/login",
        data={"token": bearer(token(sub="ops", roles=["admin"]))},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert r.status_code == 403 and "set-cookie" not in r.headers

    # the operator, signed in: every tenant's instances
    r = await c.post("/_loom/login", data={"token": bearer(token(sub="ops", roles=["admin"]))})
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"]
    for attribute in ("loom_console=", "HttpOnly", "SameSite=strict", "Path=/_loom"):
        assert attribute.lower() in cookie.lower(), cookie
    page = (await c.get(escalations)).text
    assert "acme" in page and "globex" in page and "Sign out" in page
    r = await c.post("/_loom/logout", data={"csrf": csrf_of(page)})
    assert r.status_code == 303 and 'loom_console=""' in r.headers["set-cookie"]
    c.cookies.clear()
    c.cookies.set("loom_console", "expired-or-forged", path="/_loom")
    r = await c.get(escalations)  # a cookie that no longer verifies: the form again
    assert r.status_code == 200 and 'name="token"' in r.text and "globex" not in r.text
    c.cookies.clear()

    # a tenant's administrator, by its Authorization header (a proxy's): its tenant's rows only
    acme_admin = token(sub="ann", tenant="acme", roles=["admin"])
    attempts, leaked = 0, []
    for path, params in (
        (escalations, {}),
        (escalations, {"tenant": "globex"}),
        (f"{escalations}/{key}", {"tenant": "globex"}),
        ("/_loom/timers", {}),
        ("/_loom/dead-letters", {}),
        ("/_loom/processes", {}),
    ):
        attempts += 1
        r = await c.get(path, params=params, headers=acme_admin)
        # the page's own links may echo the query asked; none of its rows is globex's
        if "globex" in unechoed(r.text):
            leaked.append((path, params, r.status_code))
    print(f"tenant admin: {attempts} reads, leaked: {len(leaked)}")
    assert leaked == []
    page = (await c.get(f"{escalations}/{key}", headers=acme_admin)).text
    assert "tenant acme" in page and key in page
    r = await c.get("/_loom/processes", headers=token(roles=["support"]))
    assert r.status_code == 403
    # nor act on another tenant's: globex's timeout is no timeout of acme's admin
    operator = token(sub="ops", roles=["admin"])
    pending = (await c.get("/api/admin/timers", headers=operator)).json()["items"]
    (theirs,) = [t["job_id"] for t in pending if t.get("tenant") == "globex"]
    form = {"csrf": csrf_of((await c.get("/_loom/timers", headers=acme_admin)).text)}
    r = await c.post(f"/_loom/timers/{theirs}/fire", data=form, headers=acme_admin)
    assert r.status_code == 404, r.text
    pending = (await c.get("/api/admin/timers", headers=operator)).json()["items"]
    assert theirs in [t["job_id"] for t in pending]  # still armed


async def test_a_dead_timeout_listed_and_redriven(desk: ServiceClient) -> None:
    ticket = await open_ticket(desk)
    (job,) = [
        t["job_id"]
        for t in (await desk.get("/api/admin/timers")).json()["items"]
        if t.get("key") == ticket
    ]
    # its handler failed every attempt (as the scheduler leaves such a timeout: tables.DEAD)
    async with desk.service.engine.begin() as conn:
        await conn.execute(
            update(timers)
            .where(timers.c.job_id == UUID(job))
            .values(status=DEAD, attempts=5, last_error="the printer is on fire")
        )
    page = (await desk.get("/_loom/dead-letters")).text
    assert "Desk.FollowUp.nudge" in page and "the printer is on fire" in page
    assert f"/_loom/dead-letters/redrive?ids={job}" in page  # the redrive dialog first
    detail = (await desk.get(f"{FOLLOW_UP}/{ticket}")).text
    assert 'class="status dead"' in detail and f"/_loom/dead-letters/{job}/redrive" in detail
    r = await desk.post(
        f"/_loom/dead-letters/{job}/redrive",
        data={"csrf": csrf_of(page), "back": "/_loom/dead-letters"},
    )
    assert r.status_code == 303 and r.headers["location"] == "/_loom/dead-letters?done=redriven"
    assert "No dead letter" in (await desk.get("/_loom/dead-letters")).text
    detail = (await desk.get(f"{FOLLOW_UP}/{ticket}")).text
    assert 'class="status dead"' not in detail and "Fire now" in detail
    # a `back` of another site is not followed
    r = await desk.post(
        fire_url(detail), data={"csrf": csrf_of(detail), "back": "//evil.example/x"}
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/_loom/processes?")


async def test_replicas_sharing_a_secret_take_each_other_s_forms(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")
    monkeypatch.setenv("LOOM_SERVICE_SECRET", "a-service-secret-of-at-least-32-bytes!")
    desk = [MODELS / "desk_timers.loom"]
    async with serve(desk, database_url) as one, serve(desk, database_url) as two:
        form = {"csrf": csrf_of((await one.get("/_loom/timers")).text)}
        r = await two.post("/_loom/timers/Desk.sweep/fire", data=form)
        assert r.status_code == 303, r.text


async def test_every_console_route_refuses_the_hostile(tenanted: ServiceClient) -> None:
    """Every console route without a token, with a non-admin token, with another tenant's
    admin token, and (for an action) posted cross-site with the operator's: none shows or
    touches globex's instance; the count of leaks is printed."""
    c = tenanted
    key = "11111111-2222-3333-4444-555555555555"
    for tenant in ("acme", "globex"):  # acme's: its admin's page has a form (a CSRF token)
        r = await c.post(
            "/api/workflows/report", json={"ticket": key}, headers=token(tenant=tenant)
        )
        assert r.status_code == 204, r.text
    operator = token(sub="ops", roles=["admin"])
    ((job, correlation),) = [
        (t["job_id"], t["correlation_id"])
        for t in (await c.get("/api/admin/timers", headers=operator)).json()["items"]
        if t.get("tenant") == "globex"
    ]
    (due,) = [
        t["due_at"]
        for t in (await c.get("/api/admin/timers", headers=operator)).json()["items"]
        if t["job_id"] == job
    ]
    process = "/_loom/processes/Desk.Escalation"
    reads = [
        "/_loom/processes",
        process,
        f"{process}/{key}?tenant=globex",
        "/_loom/timers",
        "/_loom/dead-letters",
        f"/_loom/timers/{job}/reschedule",
        f"/_loom/timers/{job}/cancel",
        f"/_loom/flow?correlation={correlation}",
    ]
    actions = [
        f"/_loom/timers/{job}/fire",
        f"/_loom/dead-letters/{job}/redrive",
        f"/_loom/timers/{job}/reschedule",
        f"/_loom/timers/{job}/cancel",
    ]
    acme_admin = token(sub="ann", tenant="acme", roles=["admin"])
    csrf = csrf_of((await c.get("/_loom/timers", headers=acme_admin)).text)
    callers: dict[str, dict[str, str]] = {
        "no token": {},
        "not an admin": token(sub="gus", tenant="globex", roles=["agent"]),
        "another tenant's admin": acme_admin,
    }
    attempts, leaks = 0, []
    for who, headers in callers.items():
        for path in reads:
            attempts += 1
            r = await c.get(path, headers=headers)
            if "globex" in unechoed(r.text) or (
                who != "another tenant's admin" and r.status_code == 200 and key in r.text
            ):
                leaks.append((who, "GET", path, r.status_code))
        for path in actions:
            attempts += 1
            r = await c.post(path, data={"csrf": csrf, "delay": "1h"}, headers=headers)
            if r.status_code < 400:
                leaks.append((who, "POST", path, r.status_code))
    for path in actions:  # the operator's own token, from another site's page
        attempts += 1
        r = await c.post(
            path,
            data={"csrf": csrf, "delay": "1h"},
            headers={**operator, "Sec-Fetch-Site": "cross-site"},
        )
        if r.status_code != 403:
            leaks.append(("cross-site", "POST", path, r.status_code))
    print(f"console, hostile: {attempts} attempts, leaks: {len(leaks)} {leaks}")
    assert leaks == []
    pending = (await c.get("/api/admin/timers", headers=operator)).json()["items"]
    (still,) = [t for t in pending if t["job_id"] == job]  # never fired nor cancelled
    assert still["due_at"] == due  # nor rescheduled
