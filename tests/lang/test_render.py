"""Golden snapshots of the text and JSON renderings (`pytest --update-snapshots` rewrites them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import SupportsIndex

import pytest

from loom.lang import compile_sources, render_json, render_text
from loom.lang.render import render_one, summary

DATA = Path(__file__).parent / "data" / "render"


CASES = sorted(DATA.glob("*.loom")) + sorted(p for p in DATA.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_render_snapshot(case: Path, update_snapshots: bool) -> None:
    # A folder is one model of several files, named relative to the folder.
    files = sorted(case.glob("*.loom")) if case.is_dir() else [case]
    names = {(f"{case.name}/{f.name}" if case.is_dir() else f.name): f.read_text() for f in files}
    result = compile_sources(names)
    assert result.diagnostics, "a render case must produce diagnostics"
    outputs = {
        case.with_suffix(".txt"): render_text(result.diagnostics, result.sources) + "\n",
        case.with_suffix(".json"): render_json(result.diagnostics) + "\n",
    }
    for path, text in outputs.items():
        if update_snapshots or not path.exists():
            path.write_text(text)
            continue
        assert text == path.read_text(), f"{path.name} changed; rerun with --update-snapshots"


def test_text_rendering_has_the_documented_parts() -> None:
    result = compile_sources({"x.loom": (DATA / "type_mismatch.loom").read_text()})
    text = render_text(result.diagnostics, result.sources)
    lines = text.splitlines()
    assert lines[0] == (
        "x.loom:7:15: error[loom.type-mismatch]: cannot assign an `int` to `name`, a `string` field"
    )
    assert "      name := n" in text and "^ this is an `int`" in text
    assert "---- `name` is declared here as `string`" in text
    assert "= help:" in text and lines[-1] == "1 error"


def test_json_rendering_fields() -> None:
    result = compile_sources({"x.loom": (DATA / "several.loom").read_text()})
    items = json.loads(render_json(result.diagnostics))
    assert {
        "code",
        "severity",
        "message",
        "file",
        "line",
        "column",
        "end_line",
        "end_column",
        "labels",
        "help",
    } <= set(items[0])
    assert [i["line"] for i in items] == sorted(i["line"] for i in items)
    assert any(i["severity"] == "warning" for i in items)


def test_color_output_uses_ansi_only_when_asked() -> None:
    result = compile_sources({"x.loom": (DATA / "type_mismatch.loom").read_text()})
    assert "\x1b[" not in render_text(result.diagnostics, result.sources)
    assert "\x1b[" in render_text(result.diagnostics, result.sources, color=True)


def test_nothing_to_render() -> None:
    assert render_text([], {}) == ""
    assert json.loads(render_json([])) == []


class _CountedText(str):
    """A source text that counts how often it is split into lines."""

    splits = 0

    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:
        self.splits += 1
        return super().split(sep, maxsplit)


def _many_warnings(n: int, marker: str) -> str:
    """A model of `n` aggregates whose public `add` a workflow also runs: one warning each, with a
    secondary label in the same file (a model grown in one file, as in bench/compiler.py)."""
    aggregates = "".join(
        f"  aggregate Item{i} {{\n    quantity: int = 0\n"
        f"    operation add(n: int) {{ quantity += n }}\n  }}\n"
        f"  repository Item{i}s for Item{i} {{ }}\n"
        for i in range(n)
    )
    params = ", ".join(f"a{i}: Item{i} id" for i in range(n))
    loads = "".join(
        f"      let x{i} = Item{i}s.getById(a{i})\n      x{i}.add(n)\n" for i in range(n)
    )
    workflow = f"  workflow restock transactional {{\n    create({params}, n: int) {{\n{loads}    }}\n  }}\n"
    return f"// {marker}\ncontext Shop {{\n{aggregates}{workflow}}}\n"


@pytest.mark.parametrize("n", [1, 40])
def test_rendering_splits_each_source_once(n: int) -> None:
    # Every label quotes a line of its file; splitting the whole file for each made rendering
    # quadratic in a large file. Whatever the number of diagnostics, a source is split once, by
    # `render_text` and by callers of `render_one` (loom.migrate) alike.
    text = _many_warnings(n, f"render {n}")
    result = compile_sources({"m.loom": text})
    assert len(result.diagnostics) == n
    assert all(d.secondary for d in result.diagnostics)
    plain = render_text(result.diagnostics, result.sources)
    counted = _CountedText(text)
    assert render_text(result.diagnostics, {"m.loom": counted}) == plain
    assert counted.splits == 1
    again = _CountedText(text + "\n")  # another text: split once more, and only once
    blocks = [render_one(d, {"m.loom": again}) for d in result.diagnostics]
    assert "\n\n".join(blocks) + "\n\n" + summary(result.diagnostics) == plain
    assert again.splits == 1
