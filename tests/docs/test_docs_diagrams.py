"""Every diagram in the docs marked `<!-- diagram: PATH --view VIEW [--from START] -->` right above
a ```` ```mermaid ```` block is what `loom diagram PATH --view VIEW` draws now: a changed model or
drawing fails here until `pytest --update-snapshots` rewrites the block (then review the diff)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.build.sources import model_files
from loom.codegen.diagrams import diagram, flow_from
from loom.lang import compile_files

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"<!-- diagram: (?P<path>\S+) --view (?P<view>\w+)(?: --from (?P<start>.+?))? -->\n"
    r"```mermaid\n(?P<body>.*?)```",
    re.DOTALL,
)


def drawn(path: str, view: str, start: str | None) -> str:
    result = compile_files(model_files([ROOT / path]))
    assert result.model is not None, [d.message for d in result.diagnostics]
    if start is None:
        return diagram(result.model, view, "mermaid")
    assert view == "flow", view
    text = flow_from(result.model, start, "mermaid")
    assert text is not None, f"--from {start} names nothing"
    return text


def test_the_diagrams_doc_shows_the_shop_in_each_view() -> None:
    text = (ROOT / "docs/diagrams.md").read_text()
    views = [(m["path"], m["view"]) for m in BLOCK.finditer(text)]
    assert views == [("examples/shop", v) for v in ("context", "flow", "states", "deployables")]


def block(m: re.Match[str]) -> str:
    """The block `m` as it should read: its marker, then the diagram drawn now."""
    start = f" --from {m['start']}" if m["start"] else ""
    marker = f"<!-- diagram: {m['path']} --view {m['view']}{start} -->"
    return f"{marker}\n```mermaid\n{drawn(m['path'], m['view'], m['start'])}```"


@pytest.mark.parametrize(
    "doc", [d for d in DOCS if BLOCK.search(d.read_text())], ids=lambda d: d.name
)
def test_the_diagrams_are_up_to_date(doc: Path, update_snapshots: bool) -> None:
    text = doc.read_text()
    if update_snapshots:
        doc.write_text(BLOCK.sub(block, text))
        return
    stale = [m.group("path", "view") for m in BLOCK.finditer(text) if m[0] != block(m)]
    assert not stale, f"{doc.name}: out of date: {stale} (run pytest with --update-snapshots)"
