"""Generated code calls the runtime with keywords: at most two arguments by position.

A "runtime call" here is a call whose callee is rooted at
- a name the module imports from `loom.runtime` or one of its modules (`log_fact`, `map_or`,
  `ConcurrencyConflict`, `times.…`, …),
- `service` or `work` (`service.processes.store.arm(…)`, `service.recurring.register(…)`),
- a repository class the module imports from `.repositories`, or
- a local alias of one of these: a name assigned a bare attribute chain of one
  (`events = service.events`) or a repository built on the unit of work
  (`accounts = Accounts(work)`).

Left out on purpose: the user's own domain (aggregate and value constructors, operations such as
`j.reacted(…)`, whose arguments follow the model's parameter order), SQLAlchemy's `Table(…)`, and
the module's own helper functions (`dunning_timeout_grace(service, due, work)`).
"""

from __future__ import annotations

import ast

from tests.codegen.util import SNAPSHOTS

MAX_POSITIONAL = 2


def _root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (`service` in `service.processes.store.arm`)."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _bare_chain(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _runtime_names(tree: ast.Module) -> set[str]:
    names = {"service", "work"}
    repositories: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            imported = {alias.asname or alias.name for alias in node.names}
            if module == "loom.runtime" or module.startswith("loom.runtime."):
                names |= imported
            elif node.level == 1 and module == "repositories":
                repositories |= imported
    names |= repositories
    for node in ast.walk(tree):  # aliases: `events = service.events`, `xs = Xs(work)`
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        built = isinstance(value, ast.Call) and _root(value.func) in repositories
        if isinstance(target, ast.Name) and (
            built or (_bare_chain(value) and _root(value) in names)
        ):
            names.add(target.id)
    return names


def positional_runtime_calls(source: str) -> list[str]:
    """Runtime calls in `source` passing more than MAX_POSITIONAL arguments by position."""
    tree = ast.parse(source)
    runtime = _runtime_names(tree)
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and len(node.args) > MAX_POSITIONAL
        and _root(node.func) in runtime
    ]
    calls.sort(key=lambda node: (node.lineno, node.col_offset))
    return [f"line {node.lineno}: {ast.unparse(node)}" for node in calls]


def test_runtime_calls_in_the_snapshots_use_keywords() -> None:
    found = {
        str(path.relative_to(SNAPSHOTS)): calls
        for path in sorted(SNAPSHOTS.rglob("*.py"))
        if (calls := positional_runtime_calls(path.read_text(encoding="utf-8")))
    }
    assert found == {}


CHECKED = """
from logging import INFO
from loom.runtime import log_fact, times
from sqlalchemy import Table
from .repositories import Accounts
from .domain import Job

def f(service, work, j: Job) -> None:
    events = service.events
    accounts = Accounts(work)
    log_fact("fact", INFO, {})
    service.processes.store.disarm(work, "P", "k", "n")
    events.subscribe(1, 2, 3)
    accounts.find(1, 2, 3)
    times.between(1, 2, 3)
    log_fact("fact", level=INFO, fields={})
    Table("t", 1, 2, 3)
    Job(1, 2, 3)
    j.reacted(1, 2, 3)
"""


def test_the_check_tells_runtime_calls_from_the_domain() -> None:
    found = positional_runtime_calls(CHECKED)
    assert [f.split(":")[0] for f in found] == [f"line {n}" for n in (11, 12, 13, 14, 15)]
