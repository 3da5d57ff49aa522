"""Screenshots of each screen of the web console, on a desktop and 320 px wide, for
docs/console.md: `.venv/bin/python scripts/console_screenshots.py [--out docs/console]`.

It serves the desk model (tests/e2e/models/desk_timers.loom) with `loom run` on a SQLite file,
opens two tickets (each a follow-up instance waiting on its timeout), fires one from the console;
the operations model (tests/e2e/models/console_ops.loom): a shipment waiting for its retry,
placements dead for want of an account; and the shop (examples/shop, served whole) for the flow
of one order; then shoots every screen with Debian's chromium (scripts/setup.sh test installs
it)."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers: the browser's launch, `loom run`
SHOP = ROOT / "examples/shop/shop.loom"
ORDER = "order-1042"  # the correlation id of the order whose flow is shown

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.console.browser import (  # noqa: E402
    DESKTOP,
    NARROW,
    dead_count,
    desk_served,
    launch,
    missing,
    open_ticket,
    ops_served,
    place,
    sign_in,
    until,
)
from tests.e2e.test_admin_outbox import OPERATOR, A  # noqa: E402
from tests.liveserver import free_port, running  # noqa: E402


def shoot(out: Path) -> list[Path]:
    why = missing()
    if why is not None:
        raise SystemExit(why)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory() as folder:
        for name in ("desk", "ops", "shop"):
            (Path(folder) / name).mkdir()
        written += _shoot(out, Path(folder))
    return written


def _shoot(out: Path, folder: Path) -> list[Path]:
    written: list[Path] = []
    with (
        desk_served(folder / "desk") as base,
        ops_served(folder / "ops") as ops,
        sync_playwright() as p,
    ):
        fired, waiting = open_ticket(base, "printer"), open_ticket(base, "scanner")
        timers = httpx.get(f"{base}/api/admin/timers", timeout=10).json()["items"]
        job = next(t["job_id"] for t in timers if t.get("key") == waiting)
        group = _troubles(ops)
        screens = {
            "processes": (base, "/_loom/processes"),
            "instances": (base, "/_loom/processes/Desk.FollowUp"),
            "instance": (base, f"/_loom/processes/Desk.FollowUp/{waiting}"),
            "timers": (base, "/_loom/timers"),
            "reschedule": (base, f"/_loom/timers/{job}/reschedule"),
            "cancel": (base, f"/_loom/timers/{job}/cancel"),
            "outbox": (ops, "/_loom/outbox"),
            "dead-letters": (ops, "/_loom/dead-letters"),
            "redrive": (ops, f"/_loom/dead-letters/redrive?group={group}"),
            "model": (base, "/_loom/model"),
            "model-flow": (base, "/_loom/model?view=flow"),
        }
        browser = launch(p)
        page = browser.new_page(viewport=DESKTOP)
        page.goto(f"{base}/_loom/processes/Desk.FollowUp/{fired}")
        page.get_by_role("button", name="Fire now nudge").click()
        page.get_by_role("status").wait_for()
        sign_in(page, ops, "ops")
        for size, viewport in (("desktop", DESKTOP), ("320", NARROW)):
            page.set_viewport_size(viewport)
            for name, (at, path) in screens.items():
                page.goto(f"{at}{path}")
                target = out / f"{name}-{size}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
        with shop_served(folder / "shop") as shop:
            for size, viewport in (("desktop", DESKTOP), ("320", NARROW)):
                page.set_viewport_size(viewport)
                page.goto(f"{shop}/_loom/flow?correlation={ORDER}")
                target = out / f"flow-{size}.png"
                page.screenshot(path=str(target), full_page=True)
                written.append(target)
        browser.close()
    return written


def _troubles(ops: str) -> Any:
    """A shipment waiting for its retry and dead placements at `ops`: the id of their group."""
    r = httpx.post(f"{ops}/api/orders", json={"customer": "zed", "amount": 5}, headers=A)
    httpx.post(f"{ops}/api/orders/{r.json()['id']}/ship", headers=A).raise_for_status()
    for customer in ("zed", "zed", "zed", "yul"):
        place(ops, customer)
    until(lambda: dead_count(ops) == 4)
    groups = httpx.get(f"{ops}/api/admin/dead-letters/groups", headers=OPERATOR, timeout=10)
    return groups.json()[0]["group_id"]


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
