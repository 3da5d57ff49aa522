"""Mermaid itself (npm's `mermaid`, the library the forges draw ```mermaid blocks with, installed
by `scripts/setup.sh test` into scripts/node) parses every Mermaid golden file, and one of each
kind of node and arrow the renderer writes, so the diagrams render in a Markdown file.

Without Node or the package the test skips, unless LOOM_REQUIRE_NODE=1 (scripts/test.sh)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import get_args

import pytest

from loom.codegen.diagrams import mermaid
from loom.codegen.diagrams.graph import Edge, Graph, Group, Node, Shape
from tests.codegen.util import ROOT, SNAPSHOTS

SCRIPT = ROOT / "scripts/node/mermaid-parse.mjs"


def parse(paths: list[Path]) -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    if node is None or not (ROOT / "scripts/node/node_modules/mermaid").is_dir():
        message = "Node or npm's mermaid is missing: run `bash scripts/setup.sh test`"
        if os.environ.get("LOOM_REQUIRE_NODE"):
            pytest.fail(message)
        pytest.skip(message)
    return subprocess.run(
        [node, str(SCRIPT), *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def every_shape() -> tuple[Graph, Graph]:
    """A flowchart and a state diagram with every shape, a dashed and a labelled arrow, quotes
    and line breaks in labels, ids needing escapes, and every keyword as an id."""
    words = sorted(mermaid.KEYWORDS)
    flow = Graph("flowchart", [Group("g_1", 'a "group"')])
    flow.nodes += [Node(f"n.{s}:x", f'{s}\nsecond "line"', s, "g_1") for s in get_args(Shape)]
    flow.nodes += [Node(word, word) for word in words]
    flow.edges += [
        Edge("n.box:x", "n.round:x", "on(A.B) / schedule t, cancel u: x"),
        *(Edge("n.round:x", word, 'a "call"', dashed=True) for word in words),
        *(Edge(word, "n.queue:x") for word in words),
    ]
    states = Graph("states", [Group("M.a_b", "M.a_b status")])
    states.nodes += [
        Node("M.a_b:start", "", "start", "M.a_b"),
        Node("M.a_b.S", "S", "round", "M.a_b"),
        *(Node(word, word, "round", "M.a_b") for word in words),
        Node("M.a_b:end", "", "end", "M.a_b"),
    ]
    states.edges += [
        Edge("M.a_b:start", "M.a_b.S", "create(X) / schedule t"),
        Edge("M.a_b.S", "M.a_b.S", "timeout t"),
        *(Edge("M.a_b.S", word, "y") for word in words),
        Edge("M.a_b.S", "M.a_b:end"),
    ]
    return flow, states


def test_mermaid_parses_every_golden_file_and_every_shape(tmp_path: Path) -> None:
    golden = sorted((SNAPSHOTS / "diagrams").glob("*/*.mmd"))
    assert golden
    own = []
    for i, graph in enumerate(every_shape()):
        path = tmp_path / f"shapes{i}.mmd"
        path.write_text(mermaid.render(graph))
        own.append(path)
    done = parse([*golden, *own])
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        f"ok {p} {'stateDiagram' if 'stateDiagram' in p.read_text() else 'flowchart-v2'}"
        for p in [*golden, *own]
    ]
