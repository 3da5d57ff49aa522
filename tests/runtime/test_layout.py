"""The layout of `loom.runtime`: no function hides an import (but of a subsystem loaded on first
use, `ON_DEMAND`), it depends on no other part of Loom but the `loom.model` modules
`ALLOWED_OUTSIDE` names, its modules stay
small, and it passes `mypy --strict` (with `loom.testing`). That its layers import only downwards
and nothing forms a cycle is checked by the import contracts of `scripts/lint.sh`."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import loom.runtime
from tests.lang.test_layout import on_demand

RUNTIME = Path(loom.runtime.__file__).parent
SRC = RUNTIME.parents[1]
PACKAGE = "loom.runtime"
# the one definition of isolation levels is shared with the compiler (docs/architecture.md), the
# one of where a durable event travels on a broker with the AsyncAPI generator, and the one of a
# `decimal(P, S)` answer's JSON schema with it too; the names of the model's elements in telemetry
# with the tools that draw and overlay them
ALLOWED_OUTSIDE = frozenset(
    {
        "loom.model.isolation",
        "loom.model.messaging",
        "loom.model.telemetry",
        "loom.model.wire_decimals",
    }
)
MAX_LINES = 600


def _modules() -> dict[str, ast.Module]:
    """Every module of the runtime, by its path below it (`storage/work.py`)."""
    return {
        p.relative_to(RUNTIME).as_posix(): ast.parse(p.read_text(), str(p))
        for p in sorted(RUNTIME.rglob("*.py"))
    }


def _imported(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The absolute names `node` imports (the runtime's modules import absolutely: a relative
    import is reported as `loom`); for `from loom.runtime import x`, `loom.runtime.x`."""
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
        return
    if node.level > 0:
        yield "loom"
        return
    base = ""
    module = ".".join(x for x in (base, node.module or "") if x)
    if module in (PACKAGE, "loom.model"):  # `from loom.model import messaging`: that module
        yield from (f"{module}.{a.name}" for a in node.names)
    else:
        yield module


def test_no_function_imports_a_loom_or_relative_module() -> None:
    found = []
    for name, tree in _modules().items():
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom) and any(
                    (t == "loom" or t.startswith("loom.")) and not on_demand(t)
                    for t in _imported(node)
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
        for p in RUNTIME.rglob("*.py")
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


def test_the_runtime_face_names_each_public_name_once_where_it_is_defined() -> None:
    # `loom.runtime` loads a name's module on first use: its table of homes, its `__all__` and
    # the imports type checkers read must name the same things
    face = ast.parse((RUNTIME / "__init__.py").read_text())
    typed = {
        alias.name: node.module
        for node in ast.walk(face)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{PACKAGE}.")
        for alias in node.names
    }
    homes = {name: f"{PACKAGE}.{home}" for name, home in loom.runtime._HOME_OF.items()}
    assert typed == homes
    assert sorted(loom.runtime.__all__) == sorted([*homes, *loom.runtime._MODULES])
    for name in loom.runtime.__all__:  # each resolves (importing its module)
        assert getattr(loom.runtime, name) is not None, name
