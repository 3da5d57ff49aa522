"""The layout of `loom.runtime`: its modules import each other without a cycle, no function hides
an import, it depends on no other part of Loom but `loom.model.isolation`,
`loom.model.messaging` and `loom.model.wire_decimals`, its modules stay small, and it passes `mypy --strict` (with
`loom.testing`)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import loom.runtime

RUNTIME = Path(loom.runtime.__file__).parent
SRC = RUNTIME.parents[1]
PACKAGE = "loom.runtime"
# the one definition of isolation levels is shared with the compiler (docs/architecture.md), the
# one of where a durable event travels on a broker with the AsyncAPI generator, and the one of a
# `decimal(P, S)` answer's JSON schema with it too
ALLOWED_OUTSIDE = frozenset(
    {"loom.model.isolation", "loom.model.messaging", "loom.model.wire_decimals"}
)
MAX_LINES = 600


def _modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), str(p)) for p in sorted(RUNTIME.glob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The absolute names `node` imports (a relative one resolved inside loom.runtime); for
    `from . import x` / `from loom.runtime import x`, the module `loom.runtime.x`."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
        return
    if node.level > 1:
        yield "loom"  # above the package: never right, reported as such
        return
    base = PACKAGE if node.level == 1 else ""
    module = ".".join(x for x in (base, node.module or "") if x)
    if module in (PACKAGE, "loom.model"):  # `from loom.model import messaging`: that module
        yield from (f"{module}.{a.name}" for a in node.names)
    else:
        yield module


def _load_time_imports(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module loads (`if TYPE_CHECKING:` blocks never run)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _load_time_imports(node.body)
            yield from _load_time_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _load_time_imports(block)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, tree in modules.items():
        deps = set()
        for node in _load_time_imports(tree.body):
            for target in _imported(node):
                if target.startswith(PACKAGE + "."):
                    dep = target[len(PACKAGE) + 1 :].split(".")[0]
                    if dep in modules and dep != name:
                        deps.add(dep)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of `graph` (its modules in order, the first again last), or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for dep in sorted(graph[node]):
            found = visit(dep)
            if found is not None:
                return found
        path.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        found = visit(node)
        if found is not None:
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_runtime_imports_form_no_cycle() -> None:
    graph = _graph()
    assert "_service" in graph and "_work" in graph["_service"]  # the graph is really read
    cycle = _cycle(graph)
    assert cycle is None, "import cycle in loom.runtime: " + " -> ".join(cycle or ())


def test_no_function_imports_a_loom_or_relative_module() -> None:
    found = []
    for name, tree in _modules().items():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and any(
                    t == "loom" or t.startswith("loom.") for t in _imported(node)
                ):
                    found.append(f"{name}.py:{node.lineno} in {fn.name}()")
    assert found == [], "imports inside functions (move them to the top): " + ", ".join(found)


def test_the_runtime_depends_on_no_other_part_of_loom() -> None:
    found = []
    for name, tree in _modules().items():
        for node in ast.walk(tree):  # every import, TYPE_CHECKING ones too
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node):
                of_loom = target == "loom" or target.startswith("loom.")
                inside = target == PACKAGE or target.startswith(PACKAGE + ".")
                if of_loom and not inside and target not in ALLOWED_OUTSIDE:
                    found.append(f"{name}.py:{node.lineno} imports {target}")
    assert found == []


def test_runtime_modules_stay_small() -> None:
    long = {
        p.name: n
        for p in RUNTIME.glob("*.py")
        if (n := len(p.read_text().splitlines())) >= MAX_LINES
    }
    assert long == {}


def test_the_runtime_and_the_testing_helpers_pass_mypy_strict() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "src/loom/runtime", "src/loom/testing"],
        cwd=SRC.parent,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
