"""The module structure of the compiler: no import cycles, and no import of a `loom.` module hidden
inside a function (the usual way to paper over a cycle); and no module of Loom as long as 600
lines.

The graph is built from the source with `ast`, never by importing it. An edge goes from a module to
each `loom.` module it imports at module level (`from pkg import sub` counts as importing `pkg.sub`
when `sub` is a module). Imports under a module-level `if TYPE_CHECKING:` are for the type checker
only and are left out of the graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(*packages: str) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((SRC / package.replace(".", "/")).rglob("*.py")):
            out[_module_name(path)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.module is None or node.level:
        return []
    return [
        f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
        for a in node.names
    ]


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported (also inside a module-level `try` or `if`),
    except the ones under `if TYPE_CHECKING:`."""
    out: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                stack.extend(node.body)
            stack.extend(node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                stack.extend(handler.body)
    return out


# The subsystems a service loads on first use, so that the start of one whose model does not use
# them pays nothing for them (tests/cli/test_run_imports.py holds it), OpenTelemetry's half only
# when the service traces: a function may import these, and only these, of Loom. Such an import is
# an edge of the graph all the same, as if made at the top.
ON_DEMAND = (
    "loom.runtime.processes",
    "loom.runtime.http.admin",
    "loom.runtime.http.timer_admin",
    "loom.runtime.http.process_admin",
    "loom.runtime.http.dead_letter_admin",
    "loom.runtime.http.outbox_admin",
    "loom.runtime.http.audit",
    "loom.runtime.http.event_consumers",
    "loom.runtime.http.model_admin",
    "loom.runtime.http.flow_admin",
    "loom.runtime.http.flow_model",
    "loom.runtime.http.flow_peers",
    "loom.runtime.http.console.routes",
    "loom.runtime.values.traces",
    "loom.runtime.storage.sqlite_driver",
    "loom.runtime.storage.asyncpg_driver",
)


def on_demand(module: str) -> bool:
    return any(module == m or module.startswith(f"{m}.") for m in ON_DEMAND)


def _on_demand_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports inside functions of the on-demand subsystems."""
    out: list[ast.Import | ast.ImportFrom] = []
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(scope):
                if isinstance(node, ast.Import | ast.ImportFrom) and not getattr(node, "level", 0):
                    names = (
                        [a.name for a in node.names]
                        if isinstance(node, ast.Import)
                        else [node.module or ""]
                    )
                    if all(on_demand(n) for n in names):
                        out.append(node)
    return out


def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    known = set(modules)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {
            t
            for node in [*_top_level_imports(tree), *_on_demand_imports(tree)]
            for t in _targets(node, known)
            if t in known and t != name
        }
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, as the list of modules on it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def _hidden_imports(modules: dict[str, Path]) -> list[str]:
    """`loom.` imports inside a function or class body, as `module:line`."""
    out: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for scope in ast.walk(tree):
            if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for node in ast.walk(scope):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    targets = [node.module or ""]
                else:
                    continue
                if all(on_demand(t) for t in targets):
                    continue
                if any(t == "loom" or t.startswith("loom.") for t in targets):
                    out.append(f"{name}:{node.lineno}")
    return sorted(set(out))


FRONT_END = ("loom.lang", "loom.codemod")
BACK_END = ("loom.runtime", "loom.codegen")
MODEL = "loom.model"
MAX_LINES = 600


def test_the_front_end_has_no_import_cycle() -> None:
    assert _cycle(_graph(_modules(*FRONT_END))) is None


def test_the_front_end_imports_nothing_inside_functions() -> None:
    assert _hidden_imports(_modules(*FRONT_END)) == []


def test_the_front_end_is_split_into_its_passes() -> None:
    """Each pass is a package whose `__init__` holds its one entry function."""
    import loom.lang.check
    import loom.lang.flow
    import loom.lang.lower
    import loom.lang.names
    import loom.lang.syntax

    assert callable(loom.lang.syntax.parse)
    assert callable(loom.lang.names.resolve)
    assert callable(loom.lang.check.check)
    assert callable(loom.lang.lower.lower)
    assert callable(loom.lang.flow.check_flow)
    flat = [p.name for p in (SRC / "loom/lang").glob("*.py")]
    assert sorted(flat) == [
        "__init__.py",
        "codes.py",
        "compiler.py",
        "diagnostics.py",
        "render.py",
        "types.py",
    ]


def test_the_graph_sees_a_cycle(tmp_path: Path) -> None:
    """The checker of this file finds a cycle and a hidden import when there is one."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    hidden = tmp_path / "m.py"
    hidden.write_text("def f():\n    from loom.lang import check\n")
    assert _hidden_imports({"m": hidden}) == ["m:2"]


def test_the_back_end_has_no_import_cycle_nor_hidden_import() -> None:
    """The runtime and the code generator keep to the same rule (they are not the front end's, but
    the check is cheap)."""
    modules = _modules(*BACK_END)
    assert _cycle(_graph(modules)) is None
    assert _hidden_imports(modules) == []


def test_the_model_has_no_import_cycle_nor_hidden_import() -> None:
    """The IR's package imports its modules in one direction (types, expressions, statements, the
    declarations, the contexts); `api.py`, `time.py` and `topology.py` name the IR's nodes for the
    type checker only."""
    modules = _modules(MODEL)
    assert "loom.model.ir.statements" in _graph(modules)["loom.model.ir"]  # the graph is read
    assert _cycle(_graph(modules)) is None
    assert _hidden_imports(modules) == []


def test_no_module_reaches_600_lines() -> None:
    """A module that long holds more than one thing: split it by what its parts hold."""
    long = {
        str(path.relative_to(SRC)): n
        for path in sorted((SRC / "loom").rglob("*.py"))
        if (n := len(path.read_text(encoding="utf-8").splitlines())) >= MAX_LINES
    }
    assert long == {}
