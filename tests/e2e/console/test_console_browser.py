"""The console in a real browser (Debian's chromium, Playwright) against `loom run` on SQLite
(docs/console.md): find an instance, open it, fire its timeout, see it completed, by mouse and by
keyboard; signing in with an admin token (an HttpOnly, SameSite=Strict cookie) and out; the
read-only console shows no action and refuses a POST; axe-core finds no serious or
critical violation on any screen, on a desktop or 320 px wide.

The tests skip without chromium, unless LOOM_REQUIRE_CHROMIUM=1 (scripts/test.sh), where they
fail."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.console.browser import (
    DESKTOP,
    NARROW,
    desk_served,
    launch,
    open_ticket,
    require_browser,
    serious_violations,
)
from tests.e2e.tokens import SECRET, bearer, token

require_browser()

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
