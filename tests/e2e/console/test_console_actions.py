"""The console's action screens over HTTP, on SQLite and PostgreSQL (docs/console.md): the outbox
and publish-now; the timers with their status in words, rescheduled and cancelled (through their
form and confirmation pages); the dead letters grouped, a group redriven at a rate after its
dialog listed what will run (from the model), a selection redriven, one archived; every action
audited as the signed-in user's, via the console; read-only; a tenant's administrator and the
hostile refused, 0 leaks."""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote_plus, urlencode
from uuid import UUID

import pytest
from sqlalchemy import update

from loom.runtime.processes.tables import timers
from loom.testing import ServiceClient, serve
from tests.e2e.console.test_console_http import FOLLOW_UP, csrf_of, open_ticket
from tests.e2e.test_admin_outbox import A_ADMIN, OPERATOR, A, B, ok, order, place
from tests.e2e.tokens import bearer, token, use_secret

MODELS = Path(__file__).resolve().parents[1] / "models"
OPS = MODELS / "console_ops.loom"
FORM = {"Content-Type": "application/x-www-form-urlencoded"}  # a form with a repeated name


@pytest.fixture
async def ops(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve([OPS], database_url) as client:
        yield client


@pytest.fixture
async def desk(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the timers stay where the console puts them
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY"):
        monkeypatch.delenv(name, raising=False)
    async with serve([MODELS / "desk_timers.loom"], database_url) as client:
        yield client


async def until(check: Callable[[], Awaitable[bool]], seconds: float = 10.0) -> None:
    """Poll `check` until it holds, or fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while not await check():
        assert time.monotonic() < deadline, "not reached in time"
        await asyncio.sleep(0.05)


async def audit_rows(c: ServiceClient) -> list[dict[str, Any]]:
    return list((await ok(await c.get("/api/admin/audit", headers=OPERATOR)))["items"])


def done_of(location: str) -> str:
    found = re.search(r"[?&]done=([^&]*)", location)
    assert found, location
    return unquote_plus(found.group(1))


async def test_the_outbox_and_publish_now(ops: ServiceClient) -> None:
    c = ops
    id = await order(c, A, "zed")  # acme has no account for zed: the shipment waits for a retry
    await ok(await c.post(f"/api/orders/{id}/ship", headers=A), 204)
    page = await c.get("/_loom/outbox", headers=A_ADMIN)
    assert page.status_code == 200, page.text
    text = page.text
    row = text[text.index('<th scope="row">Sales.Shipments') :].split("</tr>")[0]
    assert "<td>1</td>" in row and "zed" in html.unescape(row), row  # pending, and its error
    assert 'action="/_loom/outbox/publish-now"' in text and 'aria-current="page">Outbox' in text

    await ok(await c.post("/api/accounts", json={"customer": "zed"}, headers=A), 201)  # fixed
    r = await c.post("/_loom/outbox/publish-now", data={"csrf": csrf_of(text)}, headers=A_ADMIN)
    assert r.status_code == 303, r.text
    assert done_of(r.headers["location"]) == "1 retries made due, 1 pending"

    async def shipped() -> bool:
        (account,) = (await ok(await c.get("/api/accounts", headers=A)))["items"]
        return bool(account["shipped"] == 1)

    await until(shipped)
    (row_,) = await audit_rows(c)
    assert (row_["action"], row_["actor"], row_["tenant"]) == ("publish-now", "ann", "acme")
    assert row_["parameters"] == {"via": "console"} and row_["outcome"] == "made_due=1"


async def test_a_group_redriven_at_a_rate_after_what_will_run(ops: ServiceClient) -> None:
    c = ops
    for _ in range(3):
        await place(c, A, "zed")  # no account for zed: each dies at once (maxAttempts 1)
    await place(c, B, "zed")
    page = (await c.get("/_loom/dead-letters", headers=A_ADMIN)).text
    assert "globex" not in page
    groups = page[page.index("<h2>Groups") : page.index("<h2>Letters")]
    assert '<th scope="row">Sales.Placed</th>' in groups and "<td>3</td>" in groups
    assert "Ledger.Book.on(Sales.Placed)" in groups
    link = re.search(r'href="(/_loom/dead-letters/redrive\?group=[0-9a-f]+)"', groups)
    assert link, groups

    dialog = (await c.get(html.unescape(link.group(1)), headers=A_ADMIN)).text
    will_run = html.unescape(
        dialog[dialog.index('id="what-will-run"') : dialog.index("</section>")]
    )
    assert "Redrive 3 dead letters" in dialog
    assert "Ledger.Book.on(Sales.Placed)</strong> — reactor in context Ledger" in will_run
    assert "deployable <strong>model</strong>" in will_run and "(failed" in will_run
    assert "operation <code>Ledger.Account.book</code>" in will_run
    assert "<code>requires currentUser.isSystem</code>, <code>when placed >= 0</code>" in will_run
    assert 'name="rate_per_second" type="number"' in dialog and 'value="10"' in dialog
    # the same from the JSON admin route
    consumers = await ok(await c.get("/api/admin/events/Sales.Placed/consumers", headers=A_ADMIN))
    assert consumers["channel"] == "Sales.Placements"
    (book,) = consumers["consumers"]
    assert book["name"] == "Ledger.Book.on(Sales.Placed)" and book["deployable"] == "model"
    assert book["runs"] == [
        {
            "kind": "operation",
            "name": "Ledger.Account.book",
            "gates": ["requires currentUser.isSystem", "when placed >= 0"],
        }
    ]
    r = await c.get("/api/admin/events/Sales.Nothing/consumers", headers=A_ADMIN)
    assert r.status_code == 404 and "Sales.Nothing" in r.text
    for who in ({}, A):
        r = await c.get("/api/admin/events/Sales.Placed/consumers", headers=who)
        assert r.status_code in (401, 403), r.text

    await ok(await c.post("/api/accounts", json={"customer": "zed"}, headers=A), 201)  # fixed
    gid = link.group(1).rsplit("=", 1)[1]
    form = {"csrf": csrf_of(dialog), "group": gid, "rate_per_second": "2", "back": "/x"}
    started = time.monotonic()
    r = await c.post("/_loom/dead-letters/redrive", data=form, headers=A_ADMIN)
    assert r.status_code == 303, r.text
    assert done_of(r.headers["location"]) == "3 redriven at 2/s"
    assert time.monotonic() - started >= 0.9  # two batches, a second apart
    (account,) = (await ok(await c.get("/api/accounts", headers=A)))["items"]
    assert account["placed"] == 3
    assert "Sales.Placed" not in (await c.get("/_loom/dead-letters", headers=A_ADMIN)).text
    (row,) = await audit_rows(c)
    assert (row["action"], row["actor"], row["tenant"]) == ("redrive", "ann", "acme")
    assert row["parameters"]["via"] == "console" and row["parameters"]["rate_per_second"] == 2
    assert row["parameters"]["group"]["event_type"] == "Sales.Placed"
    assert row["outcome"] == "redriven=3 remaining=0" and len(row["targets"]) == 3
    # globex's letter is still dead: no other tenant's was touched
    left = await ok(await c.get("/api/admin/dead-letters/groups", headers=OPERATOR))
    assert [(g["count"], g["tenant"]) for g in left] == [(1, "globex")]


async def test_a_selection_redriven_and_one_archived(ops: ServiceClient) -> None:
    c = ops
    for _ in range(2):
        await place(c, A, "zed")
    items = (await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR)))["items"]
    one, other = (d["event_id"] for d in items)
    page = (await c.get("/_loom/dead-letters", headers=OPERATOR)).text
    assert 'id="selection"' in page and f'name="ids" value="{one}" form="selection"' in page
    dialog = await c.get(
        "/_loom/dead-letters/redrive", params=[("ids", one), ("ids", other)], headers=OPERATOR
    )
    assert "Redrive 2 dead letters" in dialog.text and "Ledger.Account.book" in dialog.text
    r = await c.get("/_loom/dead-letters/redrive", params={"ids": "nope"}, headers=OPERATOR)
    assert r.status_code == 422, r.text

    r = await c.post(
        f"/_loom/dead-letters/{other}/archive", data={"csrf": csrf_of(page)}, headers=OPERATOR
    )
    assert r.status_code == 303 and done_of(r.headers["location"]) == "archived"
    assert other not in (await c.get("/_loom/dead-letters", headers=OPERATOR)).text
    archived = (await c.get("/_loom/dead-letters?archived=true", headers=OPERATOR)).text
    assert other in archived and "Dead letters (archived)" in archived
    assert "Redrive" not in archived and "/archive" not in archived  # set aside: no action

    await ok(await c.post("/api/accounts", json={"customer": "zed"}, headers=A), 201)
    form = urlencode(
        [("csrf", csrf_of(page)), ("ids", one), ("ids", other), ("rate_per_second", "5")]
    )
    r = await c.post("/_loom/dead-letters/redrive", content=form, headers={**OPERATOR, **FORM})
    assert r.status_code == 303 and done_of(r.headers["location"]) == "1 redriven at 5/s"
    actions = [(a["action"], a["targets"], a["parameters"]) for a in await audit_rows(c)]
    assert actions == [
        ("redrive", [one], {"rate_per_second": 5.0, "via": "console"}),
        ("archive", [other], {"via": "console"}),
    ]
    for bad in ({"rate_per_second": "0"}, {"rate_per_second": "fast"}, {}):
        r = await c.post(
            "/_loom/dead-letters/redrive", data={"csrf": csrf_of(page), **bad}, headers=OPERATOR
        )
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"


def status_of(page: str, name: str) -> str:
    row = page[page.index(f'<th scope="row">{name}') :].split("</tr>")[0]
    found = re.search(r'<span class="status (\w+)">(\w+)</span>', row)
    assert found and found.group(1) == found.group(2), row  # in words, not only its colour
    return found.group(2)


async def test_timers_rescheduled_and_cancelled(desk: ServiceClient) -> None:
    c = desk
    ticket = await open_ticket(c)
    (job,) = [
        t["job_id"]
        for t in (await ok(await c.get("/api/admin/timers")))["items"]
        if t.get("key") == ticket
    ]
    page = (await c.get("/_loom/timers")).text
    assert status_of(page, "Desk.FollowUp.nudge") == "armed"
    assert f'href="/_loom/timers/{job}/reschedule"' in page
    assert f'href="/_loom/timers/{job}/cancel"' in page
    assert 'href="/_loom/timers/Desk.sweep/cancel"' not in page  # a context timer: no cancel

    form_page = (await c.get(f"/_loom/timers/{job}/reschedule")).text
    assert 'name="delay"' in form_page and 'type="datetime-local"' in form_page
    csrf = csrf_of(form_page)
    before = datetime.now(UTC)
    r = await c.post(f"/_loom/timers/{job}/reschedule", data={"csrf": csrf, "delay": "2h"})
    assert r.status_code == 303 and done_of(r.headers["location"]).startswith(
        "timeout rescheduled to "
    )
    (moved,) = [t for t in (await ok(await c.get("/api/admin/timers")))["items"] if t.get("key")]
    due = datetime.fromisoformat(moved["due_at"])
    assert timedelta(hours=2) <= due - before < timedelta(hours=2, minutes=1)
    form = {"csrf": csrf, "due_at": "2030-05-01T14:00"}
    await ok(await c.post(f"/_loom/timers/{job}/reschedule", data=form), 303)
    (moved,) = [t for t in (await ok(await c.get("/api/admin/timers")))["items"] if t.get("key")]
    assert datetime.fromisoformat(moved["due_at"]) == datetime(2030, 5, 1, 14, tzinfo=UTC)
    for bad in ({"delay": "soon"}, {"due_at": "tomorrow"}, {}):
        r = await c.post(f"/_loom/timers/{job}/reschedule", data={"csrf": csrf, **bad})
        assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    # its status, in words: overdue (due over a minute ago), due, leased (a scheduler runs it)
    past = (datetime.now(UTC) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S")
    await ok(
        await c.post(f"/_loom/timers/{job}/reschedule", data={"csrf": csrf, "due_at": past}), 303
    )
    assert status_of((await c.get("/_loom/timers")).text, "Desk.FollowUp.nudge") == "overdue"
    await ok(
        await c.post(f"/_loom/timers/{job}/reschedule", data={"csrf": csrf, "delay": "0s"}), 303
    )
    assert status_of((await c.get("/_loom/timers")).text, "Desk.FollowUp.nudge") == "due"
    lease = update(timers).where(timers.c.job_id == UUID(job))
    async with c.service.engine.begin() as conn:
        await conn.execute(lease.values(claimed_until=datetime.now(UTC) + timedelta(minutes=1)))
    assert status_of((await c.get("/_loom/timers")).text, "Desk.FollowUp.nudge") == "leased"
    r = await c.post(f"/_loom/timers/{job}/cancel", data={"csrf": csrf})
    assert r.status_code == 409 and "being fired" in r.text  # a scheduler holds it
    async with c.service.engine.begin() as conn:
        await conn.execute(lease.values(claimed_until=None))

    confirm = (await c.get(f"/_loom/timers/{job}/cancel")).text
    assert "Cancel the timeout" in confirm and "Keep it" in confirm and ticket in confirm
    r = await c.post(f"/_loom/timers/{job}/cancel", data={"csrf": csrf_of(confirm)})
    assert r.status_code == 303 and done_of(r.headers["location"]) == "timeout cancelled"
    assert ticket not in (await c.get("/_loom/timers")).text
    assert "No timeout is armed" in (await c.get(f"{FOLLOW_UP}/{ticket}")).text

    r = await c.get("/_loom/timers/Desk.sweep/cancel")
    assert r.status_code == 422 and "cannot be cancelled" in r.text
    r = await c.post("/_loom/timers/Desk.sweep/reschedule", data={"csrf": csrf, "delay": "1d"})
    assert r.status_code == 303, r.text
    r = await c.get("/_loom/timers/00000000-0000-0000-0000-000000000000/reschedule")
    assert r.status_code == 404

    actions = [(a["action"], a["parameters"].get("via"), a["outcome"]) for a in await audit_rows(c)]
    assert actions[0] == ("reschedule", "console", "timer")
    assert ("cancel", "console", "timeout") in actions
    assert [a for a, *_ in actions].count("reschedule") == 5


async def test_an_instance_reschedules_and_cancels_its_timeout_and_comes_back(
    desk: ServiceClient,
) -> None:
    c = desk
    ticket = await open_ticket(c)
    instance = f"{FOLLOW_UP}/{ticket}"
    page = (await c.get(instance)).text
    (job,) = re.findall(r'href="/_loom/timers/([^/"]+)/reschedule\?back=', page)
    back = quote(instance)
    assert f'href="/_loom/timers/{job}/cancel?back={back}"' in page
    form_page = (await c.get(f"/_loom/timers/{job}/reschedule", params={"back": instance})).text
    assert f'name="back" value="{instance}"' in form_page
    r = await c.post(
        f"/_loom/timers/{job}/reschedule",
        data={"csrf": csrf_of(form_page), "delay": "3h", "back": instance},
    )
    assert r.status_code == 303 and r.headers["location"].startswith(f"{instance}?done=")
    confirm = (await c.get(f"/_loom/timers/{job}/cancel", params={"back": instance})).text
    assert f'<a href="{instance}">Keep it</a>' in confirm
    r = await c.post(
        f"/_loom/timers/{job}/cancel", data={"csrf": csrf_of(confirm), "back": instance}
    )
    assert r.status_code == 303 and r.headers["location"].startswith(f"{instance}?done=")
    assert "No timeout is armed" in (await c.get(instance)).text
    # a `back` off the console is not followed: the page goes back to the timers
    ticket = await open_ticket(c)
    (job,) = re.findall(
        r'href="/_loom/timers/([^/"]+)/reschedule\?back=',
        (await c.get(f"{FOLLOW_UP}/{ticket}")).text,
    )
    for elsewhere in ("https://evil.example/", "//evil.example/_loom/x"):
        got = (await c.get(f"/_loom/timers/{job}/reschedule", params={"back": elsewhere})).text
        assert 'name="back" value="/_loom/timers"' in got and "evil" not in got


async def test_a_signed_in_user_s_name_is_in_the_audit_row(ops: ServiceClient) -> None:
    c = ops
    await place(c, A, "zed")
    r = await c.post("/_loom/login", data={"token": bearer(token(sub="olga", roles=["admin"]))})
    assert r.status_code == 303, r.text
    page = (await c.get("/_loom/dead-letters")).text  # the cookie: no Authorization header
    (letter,) = (await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR)))["items"]
    id = letter["event_id"]
    r = await c.post(f"/_loom/dead-letters/{id}/archive", data={"csrf": csrf_of(page)})
    assert r.status_code == 303, r.text
    (row,) = await audit_rows(c)
    assert (row["action"], row["actor"], row["tenant"]) == ("archive", "olga", "acme")


async def test_read_only_hides_the_new_actions_and_refuses_them(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_secret(monkeypatch)
    monkeypatch.setenv("LOOM_CONSOLE_READ_ONLY", "true")
    async with serve([OPS], database_url) as c:
        await place(c, A, "zed")
        (letter,) = (await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR)))["items"]
        id = letter["event_id"]
        for path in ("/_loom/outbox", "/_loom/dead-letters", "/_loom/dead-letters?archived=true"):
            page = (await c.get(path, headers=OPERATOR)).text
            for label in ("Publish now", "Redrive", "/archive", 'type="checkbox"', "csrf"):
                assert label not in page.replace("read-only", ""), (path, label)
        refused = [
            ("GET", f"/_loom/dead-letters/redrive?ids={id}"),
            ("POST", "/_loom/outbox/publish-now"),
            ("POST", "/_loom/dead-letters/redrive"),
            ("POST", f"/_loom/dead-letters/{id}/archive"),
        ]
        for method, path in refused:
            r = await c.request(method, path, data={"csrf": "0" * 64}, headers=OPERATOR)
            assert r.status_code == 403 and "read-only" in r.text, (path, r.text)
        assert (await audit_rows(c)) == []


async def test_the_new_routes_refuse_the_hostile(ops: ServiceClient) -> None:
    """The outbox and dead-letter screens, dialogs and actions without a token, with a non-admin
    token, with another tenant's admin token, and posted cross-site with the operator's: none
    shows or touches globex's letters or retries; the count of leaks is printed."""
    c = ops
    theirs = await place(c, B, "zed")  # globex's dead letter
    shipped = await order(c, B, "zed")
    await ok(await c.post(f"/api/orders/{shipped}/ship", headers=B), 204)  # globex's retry
    (letter,) = (await ok(await c.get("/api/admin/dead-letters", headers=OPERATOR)))["items"]
    id = letter["event_id"]
    (group,) = await ok(await c.get("/api/admin/dead-letters/groups", headers=OPERATOR))
    gid = group["group_id"]
    reads = [
        "/_loom/outbox",
        "/_loom/dead-letters",
        "/_loom/dead-letters?archived=true",
        f"/_loom/dead-letters/redrive?ids={id}",
        f"/_loom/dead-letters/redrive?group={gid}",
        "/api/admin/events/Sales.Placed/consumers",
    ]
    actions: list[tuple[str, dict[str, str]]] = [
        ("/_loom/outbox/publish-now", {}),
        ("/_loom/dead-letters/redrive", {"ids": id}),
        ("/_loom/dead-letters/redrive", {"group": gid}),
        (f"/_loom/dead-letters/{id}/archive", {}),
        (f"/_loom/dead-letters/{id}/redrive", {}),
    ]
    csrf = csrf_of((await c.get("/_loom/outbox", headers=A_ADMIN)).text)
    callers: dict[str, dict[str, str]] = {
        "no token": {},
        "not an admin": B,
        "another tenant's admin": A_ADMIN,
    }
    attempts, leaks = 0, []
    for who, headers in callers.items():
        for path in reads:
            attempts += 1
            r = await c.get(path, headers=headers)
            shown = id in r.text or theirs in r.text or "globex" in r.text
            login = r.status_code == 200 and 'name="token"' in r.text  # the sign-in form
            if shown or (who != "another tenant's admin" and r.status_code < 400 and not login):
                leaks.append((who, "GET", path, r.status_code))
        for path, fields in actions:
            attempts += 1
            r = await c.post(path, data={"csrf": csrf, **fields}, headers=headers)
            # acme's admin may publish acme's (none): a 303 that made nothing due
            harmless = path.endswith("publish-now") and who == "another tenant's admin"
            if r.status_code < 400 and not harmless:
                leaks.append((who, "POST", path, r.status_code))
    for path, fields in actions:  # the operator's own token, from another site's page
        attempts += 1
        r = await c.post(
            path,
            data={"csrf": csrf_of((await c.get("/_loom/outbox", headers=OPERATOR)).text), **fields},
            headers={**OPERATOR, "Sec-Fetch-Site": "cross-site"},
        )
        if r.status_code != 403:
            leaks.append(("cross-site", "POST", path, r.status_code))
    print(f"console actions, hostile: {attempts} attempts, leaks: {len(leaks)} {leaks}")
    assert leaks == []
    (still,) = await ok(await c.get("/api/admin/dead-letters/groups", headers=OPERATOR))
    assert still["count"] == 1  # neither redriven nor archived
    outbox = await ok(await c.get("/api/admin/outbox", headers=OPERATOR))
    assert sum(ch["retrying"] for ch in outbox) == 1  # globex's retry not brought forward
