"""`loom.operation-bypasses-workflow`: an operation that a reaction, a timeout or a timer of the
context runs, which is also a public route with no `requires` gate. Those bodies run because
something happened (a payment arrived, a deadline passed); through the route a client runs the
operation saying so without it having happened (`POST /api/dues/{id}/settle` with any payment id).
The warning asks for `internal` (no route) or a gate. One warning per operation, a secondary span at
each such caller.

A command workflow or handler that calls a public operation is not warned about: both are requests
a client makes, and whether the operation may also be asked for on its own (a deposit beside a
transfer) is the modeller's call, made with `internal`. Domain services do not count either: the
body calling the service is where the orchestration lives."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.facts import CallOp
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.model import naming


def _callers(ck: Checker, ctx: ContextSymbols) -> list[tuple[str, list[ast.Stmt]]]:
    """Each body of the context that runs because something happened, with how to name it."""
    out: list[tuple[str, list[ast.Stmt]]] = []
    for wf in ctx.workflows.values():
        out += [
            (f"a reaction of workflow `{wf.name}`", c.body)
            for c in wf.creates
            if c in ck.facts.triggers
        ]
        out += [(f"a reaction of workflow `{wf.name}`", o.body) for o in wf.ons]
        out += [(f"timeout `{t.name}` of workflow `{wf.name}`", t.body) for t in wf.timeouts]
    out += [(f"timer `{t.name}`", t.body) for t in ctx.timers.values()]
    return out


def check_bypassing_routes(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        calls: dict[tuple[str, str], list[tuple[Span, str]]] = {}
        for who, body in _callers(ck, ctx):
            for s in ast.walk_stmts(body):
                found = ck.facts.stmts.get(s)
                if isinstance(found, CallOp):
                    key = (found.aggregate, found.operation)
                    calls.setdefault(key, []).append((s.span, f"called by {who} here"))
        for (aggregate, operation), sites in calls.items():
            agg = ctx.aggregates.get(aggregate)
            op = next((o for o in agg.operations if o.name == operation), None) if agg else None
            if op is None or op.private or op.internal or op.requires is not None:
                continue
            route = f"POST /api/{naming.plural_snake(aggregate)}/{{id}}/{naming.snake(operation)}"
            ck.report(
                "loom.operation-bypasses-workflow",
                f"`{aggregate}.{operation}` runs when an event or a time comes, and is also the "
                f"public route `{route}` with no `requires` gate: a client can run it any time",
                op.name_span,
                "public operation, no gate",
                secondary=sites,
                help=f"declare it `internal operation {operation}(…)` (no route) if only the "
                "context calls it, or gate the route with `requires …`",
            )
