"""Screenshots of each screen of the web console, on a desktop and 320 px wide, for
docs/console.md: `.venv/bin/python scripts/console_screenshots.py [--out docs/console]`.

It serves the desk model (tests/e2e/models/desk_timers.loom) with `loom run` on a SQLite file,
opens two tickets (each a follow-up instance waiting on its timeout), fires one from the console,
and shoots every screen with Debian's chromium (scripts/setup.sh test installs it); then the shop
(examples/shop, served whole) for the flow of one order."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers: the browser's launch, `loom run`
SHOP = ROOT / "examples/shop/shop.loom"
ORDER = "order-1042"  # the correlation id of the order whose flow is shown

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.console.browser import (  # noqa: E402
    DESKTOP,
    NARROW,
    desk_served,
    launch,
    missing,
    open_ticket,
)
from tests.liveserver import free_port, running  # noqa: E402


def shoot(out: Path) -> list[Path]:
    why = missing()
    if why is not None:
        raise SystemExit(why)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as folder, desk_served(Path(folder)) as base:
        fired, waiting = open_ticket(base, "printer"), open_ticket(base, "scanner")
        screens = {
            "processes": "/_loom/processes",
            "instances": "/_loom/processes/Desk.FollowUp",
            "instance": f"/_loom/processes/Desk.FollowUp/{waiting}",
            "timers": "/_loom/timers",
            "dead-letters": "/_loom/dead-letters",
        }
        with sync_playwright() as p:
            browser = launch(p)
            page = browser.new_page(viewport=DESKTOP)
            page.goto(f"{base}/_loom/processes/Desk.FollowUp/{fired}")
            page.get_by_role("button", name="Fire now nudge").click()
            page.get_by_role("status").wait_for()
            for size, viewport in (("desktop", DESKTOP), ("320", NARROW)):
                page.set_viewport_size(viewport)
                for name, path in screens.items():
                    page.goto(f"{base}{path}")
                    target = out / f"{name}-{size}.png"
                    page.screenshot(path=str(target), full_page=True)
                    written.append(target)
            with shop_served(Path(folder)) as shop:
                page.set_viewport_size(DESKTOP)
                for size, viewport in (("desktop", DESKTOP), ("320", NARROW)):
                    page.set_viewport_size(viewport)
                    page.goto(f"{shop}/_loom/flow?correlation={ORDER}")
                    target = out / f"flow-{size}.png"
                    page.screenshot(path=str(target), full_page=True)
                    written.append(target)
            browser.close()
    return written


@contextmanager
def shop_served(folder: Path) -> Iterator[str]:
    """`loom run` of the shop whole, an order placed and its flow settled: its base URL."""
    model = Path(shutil.copy(SHOP, folder / SHOP.name))
    url = f"sqlite+aiosqlite:///{folder / 'shop.db'}"
    with running(str(model), "--database-url", url, port=free_port()) as base:
        body = {"sku": "lamp", "quantity": 2, "failPayment": False}
        headers = {"X-Correlation-Id": ORDER}
        httpx.post(f"{base}/api/workflows/place_order", json=body, headers=headers, timeout=10)
        deadline = time.monotonic() + 30
        while "Orders.settleOrder" not in httpx.get(f"{base}/api/admin/flow/{ORDER}").text:
            if time.monotonic() > deadline:
                raise SystemExit("the shop's order did not settle within 30 s")
            time.sleep(0.1)
        yield base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/console")
    for path in shoot(parser.parse_args().out):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
