"""The bad-input corpus (corpus.py) against every route of examples/support and examples/shop,
each served by a real `loom run`, on SQLite and PostgreSQL: zero 5xx (bad_input.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .bad_input import SHOP, SUPPORT, Example, bad_input
from .conftest import Report


@pytest.mark.parametrize("example", [SUPPORT, SHOP], ids=lambda e: e.name)
async def test_bad_input_never_answers_5xx(
    example: Example, database_url: str, tmp_path: Path, report: Report
) -> None:
    findings = await bad_input(tmp_path, example, database_url)
    report(findings.lines())

    assert findings.routes > 10 and sum(findings.statuses.values()) > 30 * findings.routes
    assert findings.server_errors == [], "\n".join(findings.lines())
    assert findings.unsent == 0, "the corpus did not finish in time"
