"""Debian's chromium driven by Playwright for the console's tests and its screenshot script
(scripts/console_screenshots.py): the launch (never a browser Playwright downloads), a `loom run`
of the desk model with a ticket whose follow-up waits on a timeout, and of the operations model
(outbox, dead letters), and axe-core's check."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_admin_outbox import OPERATOR, A
from tests.e2e.tokens import SECRET, bearer, token
from tests.liveserver import free_port, running

ROOT = Path(__file__).resolve().parents[3]
CHROMIUM = Path("/usr/bin/chromium")
# what this machine's closed network needs (/work/.library/env/machines/python.md)
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
AXE = ROOT / "scripts/node/node_modules/axe-core/axe.min.js"
DESK = ROOT / "tests/e2e/models/desk_timers.loom"
OPS = ROOT / "tests/e2e/models/console_ops.loom"
DESKTOP = {"width": 1280, "height": 800}
NARROW = {"width": 320, "height": 640}


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (scripts/setup.sh test installs Debian's chromium)"
    if not AXE.exists():
        return f"{AXE} is missing (scripts/setup.sh test installs scripts/node)"
    return None


def require_browser() -> None:
    """Skip the caller (a module, at its import, or a test) without chromium or axe-core,
    unless LOOM_REQUIRE_CHROMIUM=1 (scripts/test.sh): then fail it."""
    why = missing()
    if why is None:
        return
    if os.environ.get("LOOM_REQUIRE_CHROMIUM"):
        pytest.fail(why)
    pytest.skip(why, allow_module_level=True)


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)


@contextmanager
def desk_served(folder: Path, *options: str) -> Iterator[str]:
    """`loom run` of the desk model on a SQLite file in `folder` (its scheduler off: the console
    fires the timeouts), with `options`: its base URL."""
    with served(DESK, folder, *options) as base:
        yield base


@contextmanager
def ops_served(folder: Path) -> Iterator[str]:
    """`loom run` of the console's operations model (two tenanted contexts over durable
    channels, a reactor that fails for a customer without an account) verifying tokens signed
    with the tests' secret: its base URL."""
    with served(OPS, folder, "--jwt-secret", SECRET) as base:
        yield base


@contextmanager
def served(source: Path, folder: Path, *options: str) -> Iterator[str]:
    """`loom run` of the model `source` on a SQLite file in `folder`, its scheduler off."""
    model = Path(shutil.copy(source, folder / source.name))
    previous = os.environ.get("LOOM_SCHEDULER")
    os.environ["LOOM_SCHEDULER"] = "off"
    try:
        url = f"sqlite+aiosqlite:///{folder / 'console.db'}"
        with running(str(model), "--database-url", url, *options, port=free_port()) as base:
            yield base
    finally:
        if previous is None:
            os.environ.pop("LOOM_SCHEDULER", None)
        else:
            os.environ["LOOM_SCHEDULER"] = previous


def open_ticket(base: str, title: str = "printer") -> str:
    r = httpx.post(f"{base}/api/workflows/open_ticket", json={"title": title}, timeout=10)
    r.raise_for_status()
    return str(r.json())


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations of serious or critical impact on the page, printed."""
    if not page.evaluate("typeof axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    serious = [v for v in found if v.get("impact") in ("serious", "critical")]
    for v in serious:
        nodes = [n.get("target") for n in v.get("nodes", [])]
        print(f"axe {v['impact']}: {v['id']}: {v['help']} at {nodes} ({page.url})")
    return serious


def until(check: Callable[[], bool], seconds: float = 15.0) -> None:
    """Poll `check` until it holds, or fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.05)


def dead_count(base: str) -> int:
    """The dead letters of the service at `base`, every tenant's."""
    r = httpx.get(f"{base}/api/admin/dead-letters", headers=OPERATOR, timeout=10)
    return int(r.json()["total"])


def place(base: str, customer: str) -> None:
    """An order placed in acme for `customer` (its Placed event dies without an account)."""
    body = {"customer": customer, "amount": 5}
    r = httpx.post(f"{base}/api/orders", json=body, headers=A, timeout=10)
    r.raise_for_status()
    placed = httpx.post(f"{base}/api/orders/{r.json()['id']}/place", headers=A, timeout=10)
    placed.raise_for_status()


def sign_in(page: Any, base: str, subject: str) -> None:
    """Sign in to the console at `base` as an admin named `subject` (its login form)."""
    from playwright.sync_api import expect

    page.goto(f"{base}/_loom/dead-letters")
    page.get_by_label("Bearer token").fill(bearer(token(sub=subject, roles=["admin"])))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Processes")).to_be_visible()
