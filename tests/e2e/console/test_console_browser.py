"""The console in a real browser (Debian's chromium, Playwright) against `loom run` on SQLite
(docs/console.md): find an instance, open it, fire its timeout, see it completed, by mouse and by
keyboard; signing in with an admin token (an HttpOnly, SameSite=Strict cookie) and out; the
read-only console shows no action and refuses a POST; axe-core finds no serious or
critical violation on any screen, on a desktop or 320 px wide. The action screens: a timer
rescheduled and cancelled (its confirmation page), a group of dead letters redriven at a rate
after the dialog showed what will run, one archived, by a signed-in user whose name the audit
log shows.

The tests skip without chromium, unless LOOM_REQUIRE_CHROMIUM=1 (scripts/test.sh), where they
fail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.console.browser import (
    DESKTOP,
    NARROW,
    dead_count,
    desk_served,
    launch,
    open_ticket,
    ops_served,
    place,
    require_browser,
    serious_violations,
    served,
    sign_in,
    until,
)
from tests.e2e.test_admin_outbox import OPERATOR, A
from tests.e2e.tokens import SECRET, bearer, token

require_browser()

ROOT = Path(__file__).resolve().parents[3]

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with desk_served(tmp_path_factory.mktemp("desk")) as base:
        yield base


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with ops_served(tmp_path_factory.mktemp("ops")) as base:
        yield base


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP)
    yield context.new_page()
    context.close()


def test_find_an_instance_open_it_fire_its_timeout(desk: str, page: Page) -> None:
    ticket = open_ticket(desk)
    open_ticket(desk, "another")
    page.goto(f"{desk}/_loom/")
    expect(page.get_by_role("heading", name="Processes")).to_be_visible()
    page.get_by_role("link", name="Desk.FollowUp").click()
    page.get_by_label("Key").fill(ticket)
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("1–1 of 1")).to_be_visible()
    page.get_by_role("link", name=ticket).click()
    expect(page.locator("#state")).to_have_text("running")
    assert page.evaluate("typeof htmx") == "object"  # the package's htmx: links swap the body
    page.get_by_role("button", name="Fire now nudge").click()
    expect(page.get_by_role("status")).to_have_text("Done: timeout fired")
    expect(page.locator("#state")).to_have_text("completed")
    expect(page.get_by_text("No timeout is armed")).to_be_visible()


def test_by_keyboard_alone(desk: str, page: Page) -> None:
    ticket = open_ticket(desk)
    page.goto(f"{desk}/_loom/processes/Desk.FollowUp?key={ticket}")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")  # to the main content: the next Tab is inside it
    link = page.get_by_role("link", name=ticket)
    for _ in range(20):
        page.keyboard.press("Tab")
        if link.evaluate("e => e === document.activeElement"):
            break
    expect(link).to_be_focused()
    page.keyboard.press("Enter")
    fire = page.get_by_role("button", name="Fire now nudge")
    fire.focus()
    outline = fire.evaluate("e => getComputedStyle(e).outlineStyle")
    assert outline != "none"  # the focus shows
    page.keyboard.press("Enter")
    expect(page.locator("#state")).to_have_text("completed")


@pytest.mark.parametrize("viewport", [DESKTOP, NARROW], ids=["desktop", "320px"])
def test_no_serious_accessibility_violation(
    desk: str, browser: Any, viewport: dict[str, int]
) -> None:
    ticket = open_ticket(desk)
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    found: dict[str, list[dict[str, Any]]] = {}
    for path in (
        "/_loom/processes",
        "/_loom/processes/Desk.FollowUp",
        f"/_loom/processes/Desk.FollowUp/{ticket}",
        "/_loom/timers",
        "/_loom/dead-letters",
        "/_loom/audit",
        "/_loom/processes/Desk.Nothing",
        f"/_loom/flow?correlation={ticket}",
    ):
        page.goto(f"{desk}{path}")
        found[path] = serious_violations(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], (path, width)  # no page scrolls sideways
    context.close()
    print(f"axe at {viewport['width']} px: {sum(map(len, found.values()))} serious or critical")
    assert found == {path: [] for path in found}


def test_read_only_shows_no_action_and_refuses_a_post(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    with desk_served(tmp_path_factory.mktemp("ro"), "--console-read-only") as base:
        ticket = open_ticket(base)
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.goto(f"{base}/_loom/processes/Desk.FollowUp/{ticket}")
        expect(page.locator("#state")).to_have_text("running")
        expect(page.get_by_text("read-only")).to_be_visible()
        assert page.get_by_role("button").count() == 0
        page.goto(f"{base}/_loom/timers")
        assert page.get_by_role("button").count() == 0
        r = page.request.post(f"{base}/_loom/timers/Desk.sweep/fire", form={"csrf": "x"})
        assert r.status == 403 and "read-only" in r.text()
        page.goto(f"{base}/_loom/processes/Desk.FollowUp/{ticket}")
        expect(page.locator("#state")).to_have_text("running")
        context.close()


def test_sign_in_with_an_admin_token(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("signed")
    with desk_served(folder, "--jwt-secret", SECRET) as base:
        context = browser.new_context(viewport=NARROW)
        page = context.new_page()
        page.goto(f"{base}/_loom/timers")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert serious_violations(page) == []
        page.get_by_label("Bearer token").fill(bearer(token(sub="ann", roles=["support"])))
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text("role `admin`")
        page.get_by_label("Bearer token").fill(bearer(token(sub="ops", roles=["admin"])))
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("heading", name="Processes")).to_be_visible()
        (cookie,) = context.cookies()
        assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
            "loom_console",
            True,
            "Strict",
        )
        assert page.evaluate("document.cookie") == ""  # no script reads the token
        page.get_by_role("link", name="Timers").click()
        expect(page.get_by_role("heading", name="Timers")).to_be_visible()
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
        assert context.cookies() == []
        context.close()


def test_a_tenant_administrator_sees_only_its_tenant(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # one correlation key escalated in two tenants; acme's administrator signs in
    key = "11111111-2222-3333-4444-555555555555"
    model = ROOT / "tests/e2e/models/tenants_instances.loom"
    with served(model, tmp_path_factory.mktemp("tenants"), "--jwt-secret", SECRET) as base:
        for tenant in ("acme", "globex"):
            r = httpx.post(
                f"{base}/api/workflows/report", json={"ticket": key}, headers=token(tenant=tenant)
            )
            assert r.status_code == 204, r.text
        context = browser.new_context(viewport=DESKTOP)
        page = context.new_page()
        page.goto(f"{base}/_loom/processes/Desk.Escalation")
        admin = token(sub="ann", tenant="acme", roles=["admin"])
        page.get_by_label("Bearer token").fill(bearer(admin))
        page.get_by_role("button", name="Sign in").click()
        # signed in once its cookie is set (the page it is sent back to says so): then the rest
        expect(page.get_by_role("button", name="Sign out")).to_be_visible()
        seen: dict[str, str] = {}
        for screen in ("processes/Desk.Escalation", "timers", "dead-letters", "outbox", "audit"):
            page.goto(f"{base}/_loom/{screen}")
            seen[screen] = page.locator("main").inner_text()
        page.goto(f"{base}/_loom/processes/Desk.Escalation/{key}?tenant=globex")
        seen["globex's instance"] = page.locator("main").inner_text()
        leaks = [screen for screen, text in seen.items() if "globex" in text]
        print(f"screens read by acme's administrator: {len(seen)}, showing globex: {len(leaks)}")
        assert leaks == []
        listed = seen["processes/Desk.Escalation"]  # its own instance only, of the two
        assert key in listed and "1–1 of 1" in listed
        context.close()


def test_reschedule_and_cancel_a_timer(desk: str, page: Page) -> None:
    ticket = open_ticket(desk, "scanner")
    page.goto(f"{desk}/_loom/timers")
    row = page.get_by_role("row").filter(has_text=ticket)
    expect(row.locator(".status")).to_have_text("armed")
    row.get_by_role("link", name="Reschedule").click()
    page.get_by_label("In (a delay from now").fill("3h")
    page.get_by_role("button", name="Reschedule").click()
    expect(page.get_by_role("status")).to_contain_text("Done: timeout rescheduled to")
    page.get_by_role("row").filter(has_text=ticket).get_by_role("link", name="Cancel").click()
    expect(page.get_by_role("heading", name="Cancel Desk.FollowUp.nudge")).to_be_visible()
    page.get_by_role("link", name="Keep it").click()  # the confirmation's way back
    expect(page.get_by_role("row").filter(has_text=ticket)).to_have_count(1)
    page.get_by_role("row").filter(has_text=ticket).get_by_role("link", name="Cancel").click()
    page.get_by_role("button", name="Cancel the timeout").click()
    expect(page.get_by_role("status")).to_have_text("Done: timeout cancelled")
    expect(page.get_by_role("row").filter(has_text=ticket)).to_have_count(0)


def test_redrive_a_group_at_a_rate_see_what_will_run_and_archive(ops: str, page: Page) -> None:
    before = dead_count(ops)
    for customer in ("zed", "zed", "yul"):
        place(ops, customer)
    until(lambda: dead_count(ops) == before + 3)
    sign_in(page, ops, "olga")
    page.get_by_role("link", name="Dead letters").click()
    groups = page.get_by_role("region", name="Groups table")
    zed = groups.get_by_role("row").filter(has_text="customer zed")
    expect(zed.get_by_role("cell", name="2", exact=True)).to_be_visible()
    zed.get_by_role("link", name="Redrive group").click()
    will_run = page.locator("#what-will-run")
    expect(will_run).to_contain_text("Ledger.Book.on(Sales.Placed)")
    expect(will_run).to_contain_text("deployable model")
    expect(will_run).to_contain_text("Ledger.Account.book")
    expect(will_run).to_contain_text("when placed >= 0")
    r = httpx.post(f"{ops}/api/accounts", json={"customer": "zed"}, headers=A, timeout=10)
    assert r.status_code == 201, r.text  # the cause, fixed
    page.get_by_label("Rate (letters a second)").fill("1")
    page.get_by_role("button", name="Redrive 2 at this rate").click()
    expect(page.get_by_role("status")).to_have_text("Done: 2 redriven at 1/s")
    expect(groups.get_by_role("row").filter(has_text="customer zed")).to_have_count(0)

    letters = page.get_by_role("region", name="Dead letters table")
    letters.get_by_role("row").filter(has_text="yul").get_by_role("checkbox").check()
    page.get_by_role("button", name="Redrive selected").click()  # a selection: its dialog
    expect(page.get_by_role("heading", name="Redrive 1 dead letter")).to_be_visible()
    expect(page.locator("#what-will-run")).to_contain_text("Ledger.Account.book")
    page.get_by_role("link", name="Back to the dead letters").click()
    letters.get_by_role("row").filter(has_text="yul").get_by_role("button", name="Archive").click()
    expect(page.get_by_role("status")).to_have_text("Done: archived")
    page.get_by_role("link", name="Archived").click()
    expect(page.get_by_role("heading", name="Dead letters (archived)")).to_be_visible()
    expect(page.get_by_role("region", name="Dead letters table")).to_contain_text("yul")
    page.get_by_role("link", name="Audit log").click()
    audit = page.get_by_role("region", name="Audit log table")
    expect(audit.get_by_role("row").nth(1)).to_contain_text("olga")  # the newest: the archive
    expect(audit.get_by_role("row").nth(1)).to_contain_text("archive")
    expect(audit.get_by_role("row").nth(2)).to_contain_text("olga")
    expect(audit.get_by_role("row").nth(2)).to_contain_text("redrive")


@pytest.mark.parametrize("viewport", [DESKTOP, NARROW], ids=["desktop", "320px"])
def test_the_action_screens_have_no_serious_accessibility_violation(
    desk: str, ops: str, browser: Any, viewport: dict[str, int]
) -> None:
    place(ops, "axe")
    until(lambda: dead_count(ops) >= 1)
    ticket = open_ticket(desk, "axe")
    job = next(
        t["job_id"]
        for t in httpx.get(f"{desk}/api/admin/timers", timeout=10).json()["items"]
        if t.get("key") == ticket
    )
    id = httpx.get(f"{ops}/api/admin/dead-letters", headers=OPERATOR, timeout=10).json()["items"]
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    found: dict[str, list[dict[str, Any]]] = {}
    for base, path in (
        (desk, f"/_loom/timers/{job}/reschedule"),
        (desk, f"/_loom/timers/{job}/cancel"),
        (desk, "/_loom/outbox"),
        (ops, "/_loom/outbox"),
        (ops, "/_loom/dead-letters"),
        (ops, f"/_loom/dead-letters/redrive?ids={id[0]['event_id']}"),
        (ops, "/_loom/dead-letters?archived=true"),
    ):
        if base == ops and not context.cookies():
            sign_in(page, ops, "axe")
        page.goto(f"{base}{path}")
        found[path] = serious_violations(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], (path, width)  # no page scrolls sideways
    context.close()
    print(f"axe at {viewport['width']} px: {sum(map(len, found.values()))} serious or critical")
    assert found == {path: [] for path in found}
