"""The catalogue of problem types (loom.runtime.values.problem_types) is the one place a type is spelled:
docs/http.md's table of problems lists exactly its types with their statuses, and no runtime module
writes a `urn:loom:problem:` literal of its own."""

from __future__ import annotations

import re
from pathlib import Path

from loom.runtime.values.problem_types import CATALOGUE, PREFIX

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| (\d{3}) \| `([a-z-]+)` \|", re.MULTILINE)


def _documented() -> set[tuple[int, str]]:
    text = (ROOT / "docs" / "http.md").read_text()
    table = text[text.index("## Problems") :]
    return {(int(status), slug) for status, slug in ROW.findall(table)}


def test_docs_http_lists_every_problem_type_with_its_status() -> None:
    catalogued = {(p.status, p.slug) for p in CATALOGUE.values()}
    assert sorted(_documented() - catalogued) == [], "documented but not in the catalogue"
    assert sorted(catalogued - _documented()) == [], "in the catalogue but not documented"


def test_no_runtime_module_spells_a_problem_type() -> None:
    literal = re.compile(r'"' + re.escape(PREFIX) + r"[a-z-]")
    spelled = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted((ROOT / "src" / "loom").rglob("*.py"))
        if path.name != "_problem_types.py"
        for n, line in enumerate(path.read_text().splitlines(), start=1)
        if literal.search(line)
    ]
    assert spelled == []
