"""The console's Model screen in a real browser (Debian's chromium, Playwright) against `loom run`
of the desk model on SQLite (docs/console.md#model): the event flow's node shows its process's
running instances, its count follows a new instance by the page's poll alone, and its link opens
the process's instances; axe-core finds no serious or critical violation, on a desktop or 320 px
wide, where the drawing scrolls inside the page and the table of counts stays.

The tests skip without chromium, unless LOOM_REQUIRE_CHROMIUM=1 (scripts/test.sh)."""

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

require_browser()

from playwright.sync_api import expect, sync_playwright  # noqa: E402

STARTER = "Desk.FollowUp.create(TicketOpened)"  # the follow-up's first node in the flow
POLLED_MS = 15_000  # the page asks every 5 s: three chances


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with desk_served(tmp_path_factory.mktemp("model")) as base:
        yield base


def test_a_node_shows_its_count_follows_it_and_links_to_its_rows(desk: str, browser: Any) -> None:
    context = browser.new_context(viewport=DESKTOP)
    page = context.new_page()
    open_ticket(desk, "printer")
    page.goto(f"{desk}/_loom/")
    page.get_by_role("link", name="Model").click()
    expect(page.get_by_role("heading", name="Model")).to_be_visible()
    page.get_by_role("link", name="Event flow").click()
    counts = page.locator(f'svg.model-counts text[data-node="{STARTER}"]')
    running = int((counts.text_content() or "").split()[0])
    row = page.get_by_role("row", name="FollowUp.create(TicketOpened)")
    expect(row).to_contain_text(str(running))
    open_ticket(desk, "scanner")  # no reload: the poll brings the new count
    expect(counts).to_have_text(f"{running + 1} running", timeout=POLLED_MS)
    expect(row.get_by_role("cell").first).to_have_text(str(running + 1), timeout=POLLED_MS)
    page.locator("svg.model").get_by_role("link", name="FollowUp.create(TicketOpened)").click()
    expect(page.get_by_role("heading", name="Desk.FollowUp")).to_be_visible()
    context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, NARROW], ids=["desktop", "320px"])
def test_no_serious_accessibility_violation(
    desk: str, browser: Any, viewport: dict[str, int]
) -> None:
    open_ticket(desk)
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    found: dict[str, list[dict[str, Any]]] = {}
    for path in ("/_loom/model", "/_loom/model?view=flow"):
        page.goto(f"{desk}{path}")
        found[path] = serious_violations(page)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= viewport["width"], (path, width)  # the page does not scroll sideways
        expect(page.get_by_role("table")).to_be_visible()  # the counts in text, at any width
        drawing = page.get_by_role("region", name="drawing")
        box = drawing.bounding_box()
        assert box is not None and box["width"] <= viewport["width"]
    context.close()
    print(f"axe on the Model screen at {viewport['width']} px: {sum(map(len, found.values()))}")
    assert found == {path: [] for path in found}
