"""scripts/console_screenshots.py writes a screenshot of every screen, desktop and 320 px wide
(docs/console.md shows those it wrote into docs/console/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.console.browser import ROOT, require_browser

SCREENS = (
    "processes",
    "instances",
    "instance",
    "timers",
    "reschedule",
    "cancel",
    "outbox",
    "dead-letters",
    "redrive",
    "model",
    "model-flow",
    "flow",
)


def test_the_script_writes_every_screen_at_both_widths(tmp_path: Path) -> None:
    require_browser()
    script = ROOT / "scripts/console_screenshots.py"
    r = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=180,
        check=False,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for screen in SCREENS:
        for size in ("desktop", "320"):
            shot = tmp_path / f"{screen}-{size}.png"
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", shot
    documented = (ROOT / "docs/console.md").read_text()
    for screen in SCREENS:
        assert f"console/{screen}-desktop.png" in documented, screen
        assert (ROOT / "docs/console" / f"{screen}-320.png").exists(), screen
