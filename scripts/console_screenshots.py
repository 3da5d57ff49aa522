"""Screenshots of each screen of the web console, on a desktop and 320 px wide, for
docs/console.md: `.venv/bin/python scripts/console_screenshots.py [--out docs/console]`.

It serves the desk model (tests/e2e/models/desk_timers.loom) with `loom run` on a SQLite file,
opens two tickets (each a follow-up instance waiting on its timeout), fires one from the console,
and shoots every screen with Debian's chromium (scripts/setup.sh test installs it)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers: the browser's launch, `loom run`

from playwright.sync_api import sync_playwright  # noqa: E402

from tests.e2e.console.browser import (  # noqa: E402
    DESKTOP,
    NARROW,
    desk_served,
    launch,
    missing,
    open_ticket,
)


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
            "model": "/_loom/model",
            "model-flow": "/_loom/model?view=flow",
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
            browser.close()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/console")
    for path in shoot(parser.parse_args().out):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
