"""`loom.timeout-refusal-unguarded`: an `on timeout` body calls an operation with a `when` gate
outside any `if`.

A refusal in a timeout is dead-lettered at once (the scheduler does not retry a decision the model
would make again: docs/processes.md), so a gate that no longer holds when the timeout fires (the
ticket was closed first) leaves a dead letter for an admin to read. Guarding the call with the
gate's condition lets the timeout do nothing, and complete, instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from loom.lang.check.checker import Checker
from loom.lang.check.facts import CallOp
from loom.lang.syntax import ast


def check_timeout_refusals(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for wf in ctx.workflows.values():
            for timeout in wf.timeouts:
                for s in _unguarded(timeout.body):
                    found = ck.facts.stmts.get(s)
                    if not isinstance(found, CallOp) or not isinstance(s, ast.ExprStmt):
                        continue
                    agg = ctx.aggregates.get(found.aggregate)
                    ops = agg.operations if agg is not None else []
                    op = next((o for o in ops if o.name == found.operation), None)
                    if op is None or op.when is None:
                        continue
                    gate = ck.text(op.when.span)
                    call = ck.text(s.expr.span)
                    guard = _through(gate, found.target, agg)
                    ck.report(
                        "loom.timeout-refusal-unguarded",
                        f"`{call}` runs in timeout `{timeout.name}` of `{wf.name}` unguarded: "
                        f"whenever its gate `when {gate}` does not hold as the timeout fires, it "
                        "is refused, and a refused timeout is dead-lettered at once (a retry "
                        "would be refused again)",
                        s.expr.span,
                        "refused when the gate does not hold",
                        secondary=[(op.when.span, f"the gate of `{found.aggregate}.{op.name}`")],
                        help=f"guard the call with the gate's condition: `if {guard} {{ {call} }}`, "
                        "so the timeout does nothing where the gate would refuse; or `cancel` the "
                        "timeout where the state changes",
                    )


def _through(gate: str, target: str, agg: ast.Aggregate | None) -> str:
    """The gate's text read through the local `target`: `status == Pending` -> `o.status ==
    Pending` (each member of the aggregate it names, not after a `.` nor in a string)."""
    if agg is None:
        return gate
    names = {f.name for f in agg.fields} | {d.name for d in agg.derived} | {"id"}
    names |= {fn.name for fn in agg.functions}
    word = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![.\w])([A-Za-z_]\w*)')
    return word.sub(lambda m: f"{target}.{m.group(1)}" if m.group(1) in names else m.group(0), gate)


def _unguarded(stmts: list[ast.Stmt]) -> Iterator[ast.Stmt]:
    """The statements of a body outside any `if` / `if let` (a `for` guards nothing)."""
    for s in stmts:
        yield s
        if isinstance(s, ast.ForEach):
            yield from _unguarded(s.body)
