"""The shop across three deployables in a real browser (issue 30 §2; docs/console.md, "Flow of
one correlation"): `loom up` of examples/shop with examples/shop/deployables.loom (Orders,
Inventory, Payment, NATS between them), driven through the one console URL it prints.

A stuck order, made so: the test's copy of the shop lets a client create a reservation (`with
crudish`) and reserves one sku for one order at a time (`unique(sku)`), and the test reserves the
lamp first. The order it then places is stuck: Inventory's reaction to OrderPlaced conflicts
until its attempts run out, and the event is dead in Inventory. In the browser: the order's
payment deadline (a process of Orders) is found running, its state highlighted; its flow, asked of
every deployable, shows the dead event in Inventory; the cause is fixed (the blocking reservation
deleted through the API), the dead letter redriven on Inventory's console (reached by the flow
screen's deployable switcher), and the flow reaches the terminal state: the deadline completed,
the order paid.

Skipped without Debian's chromium or nats-server, unless LOOM_REQUIRE_CHROMIUM=1."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.console.browser import CHROMIUM, DESKTOP, launch
from tests.liveserver import free_ports

ROOT = Path(__file__).resolve().parents[3]
SHOP = ROOT / "examples/shop/shop.loom"
SPLIT = ROOT / "examples/shop/deployables.loom"
NATS = shutil.which("nats-server") or str(Path(sys.executable).parent / "nats-server")
# the test's copy of the shop: reservations a client may make, one per sku at a time
CHANGES = {
    "  aggregate Reservation {": "  aggregate Reservation with crudish {",
    "    released: bool = false": "    released: bool readOnly = false",
    "    unique(order)\n    internal": "    unique(order)\n    unique(sku)\n    internal",
}
DEADLINE = "Orders.PaymentDeadline"

if not CHROMIUM.exists() or not os.access(NATS, os.X_OK):
    why = f"needs {CHROMIUM} and nats-server (scripts/setup.sh test)"
    if os.environ.get("LOOM_REQUIRE_CHROMIUM"):
        pytest.fail(why)
    pytest.skip(why, allow_module_level=True)

from playwright.sync_api import Page, expect, sync_playwright  # noqa: E402


def until(check: Any, what: str, timeout: float = 60) -> Any:
    """Poll `check()` until it answers something true, for at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)
    return found


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`loom up` of the test's shop: the console URL it prints and each deployable's URL."""
    folder = tmp_path_factory.mktemp("shop3")
    text = SHOP.read_text()
    for old, new in CHANGES.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (folder / "shop.loom").write_text(text)
    shutil.copy(SPLIT, folder / "deployables.loom")
    log = folder / "up.log"
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PATH": f"{Path(NATS).parent}:{os.environ['PATH']}",
    }
    for name in ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY", "LOOM_NO_CONSOLE"):
        env.pop(name, None)
    command = [sys.executable, "-m", "loom.cli", "up", "shop.loom", "deployables.loom"]
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*command, "--port", str(free_ports(3))],
            cwd=folder,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
    try:

        def started() -> str:
            said = log.read_text()
            if proc.poll() is not None:
                pytest.fail(f"loom up exited: {said}")
            return said if "Ctrl-C stops them all." in said else ""

        seen = until(started, "loom up", timeout=180)
        urls = dict(re.findall(r"^(\w+) +(http://127\.0\.0\.1:\d+)(?:/_loom/)?", seen, re.M))
        urls["console"] = re.findall(r"^console +(\S+)", seen, re.M)[0]
        yield urls
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def page() -> Iterator[Page]:
    with sync_playwright() as p:
        browser = launch(p)
        context = browser.new_context(viewport=DESKTOP)
        yield context.new_page()
        browser.close()


def test_a_stuck_order_redriven_across_three_deployables(shop: dict[str, str], page: Page) -> None:
    orders, inventory = shop["Orders"], shop["Inventory"]
    assert shop["console"] == f"{orders}/_loom/"
    # the cause: the lamp is already reserved, for another order
    blocker = {"order": str(uuid.uuid4()), "sku": "lamp", "quantity": 1}
    r = httpx.post(f"{inventory}/api/reservations", json=blocker, timeout=10)
    assert r.status_code == 201, r.text
    body = {"sku": "lamp", "quantity": 1, "failPayment": False}
    r = httpx.post(
        f"{orders}/api/workflows/place_order",
        json=body,
        headers={"X-Correlation-Id": "stuck-lamp"},
        timeout=10,
    )
    assert r.status_code == 200, r.text
    order = str(r.json())
    until(
        lambda: httpx.get(f"{inventory}/api/admin/dead-letters").json()["total"],
        "the dead letter in Inventory",
    )

    # the stuck order's process, found from the one console URL, its state highlighted
    page.goto(shop["console"])
    page.get_by_role("link", name=DEADLINE).click()
    page.get_by_label("Key").fill(order)
    page.get_by_role("button", name="Filter").click()
    page.get_by_role("link", name=order).click()
    expect(page.locator("#state")).to_have_text("running")
    current = page.locator('#state-machine [aria-current="true"]')
    expect(current).to_have_count(1)
    expect(current).to_contain_text("running")

    # its timeline: the reaction that started it, on Orders' deployable
    timeline = page.get_by_role("region", name="Timeline table")
    expect(timeline).to_contain_text(f"{DEADLINE}.create(OrderPlaced)")

    # its flow, from the timeout's link: every deployable asked, the event dead in Inventory
    timeouts = page.get_by_role("region", name="Timeouts table")
    timeouts.get_by_role("link", name="Flow of correlation stuck-lamp").click()
    expect(page.get_by_role("heading", name="Flow of one correlation")).to_be_visible()
    expect(page.locator("#peer-silent")).to_have_count(0)
    dead = page.locator("tr.flow-event", has_text="Orders.OrderPlaced").filter(has_text="Inventory")
    expect(dead).to_contain_text("dead")
    expect(page.locator("tr", has_text=f"{DEADLINE}.create(OrderPlaced)")).to_have_count(1)

    # the cause fixed through the API, the dead letter redriven on Inventory's console
    blocking = httpx.get(f"{inventory}/api/reservations").json()["items"]
    for reservation in blocking:
        if reservation["order"] == blocker["order"]:
            r = httpx.delete(f"{inventory}/api/reservations/{reservation['id']}")
            assert r.status_code == 204, r.text
    page.get_by_role("link", name="Inventory", exact=True).click()
    page.get_by_role("link", name="Dead letters").click()
    expect(page.get_by_role("link", name="Flow of correlation stuck-lamp")).to_be_visible()
    # the letter's dialog lists what will run, then the redrive
    page.get_by_role("link", name=re.compile("^Redrive Orders.OrderPlaced")).first.click()
    expect(page.locator("#what-will-run")).to_contain_text("Inventory")
    page.get_by_role("button", name=re.compile("^Redrive 1 at this rate")).click()
    expect(page.get_by_role("status")).to_contain_text("redriven")

    # the flow reaches the terminal state: the deadline completed, the order paid
    flow = f"{shop['console']}flow?correlation=stuck-lamp"

    def settled() -> bool:
        # both of Orders' reactions to the payment: each its own consumer, applied in either order
        page.goto(flow)
        return all(
            page.locator("tr", has_text=f"{reaction}.on(Payment.PaymentSucceeded)").count() == 1
            for reaction in (DEADLINE, "Orders.settleOrder")
        )

    until(settled, "the flow's terminal state")
    expect(
        page.locator("tr", has_text="Orders.settleOrder.on(Payment.PaymentSucceeded)")
    ).to_have_count(1)
    where = page.locator("tbody tr td:nth-child(2)").all_inner_texts()
    deployables = {t.split(" · ")[0].strip() for t in where}
    assert deployables == {"Orders", "Inventory", "Payment"}, deployables
    page.goto(f"{orders}/_loom/processes/{DEADLINE}/{order}")
    expect(page.locator("#state")).to_have_text("completed")
    assert httpx.get(f"{orders}/api/orders/{order}").json()["status"] == "Paid"
