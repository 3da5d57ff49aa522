"""`loom.operation-bypasses-workflow`: an operation that a workflow (a command, a reaction or a
timeout of it) or a timer of the context calls, which is also a public route with no `requires`
gate. Through the route a client runs the step on its own: settles a due with any payment id
without the payment having arrived, withdraws from one account without the transfer's deposit into
the other. The warning asks for `internal` (no route), a gate, or `public` (the route is meant to
be there too: a deposit a teller makes beside the transfer that makes one). One warning per
operation, a secondary span at each such caller.

Command handlers and domain services do not count: a handler is itself one client request over the
operation (the seed's application service), and the body calling a service is where the
orchestration lives."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.facts import CallOp
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.model import naming


def _callers(ck: Checker, ctx: ContextSymbols) -> list[tuple[str, list[ast.Stmt]]]:
    """Each workflow or timer body of the context, with how to name it."""
    out: list[tuple[str, list[ast.Stmt]]] = []
    for wf in ctx.workflows.values():
        for c in wf.creates:
            who = "a reaction of" if c in ck.facts.triggers else "the command of"
            out.append((f"{who} workflow `{wf.name}`", c.body))
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
            if op is None or op.private or op.internal or op.public or op.requires is not None:
                continue
            route = f"POST /api/{naming.plural_snake(aggregate)}/{{id}}/{naming.snake(operation)}"
            ck.report(
                "loom.operation-bypasses-workflow",
                f"`{aggregate}.{operation}` is a step of the context's workflows, and also the "
                f"public route `{route}` with no `requires` gate: a client can run it on its own",
                op.name_span,
                "public operation, no gate",
                secondary=sites,
                help=f"declare it `internal operation {operation}(…)` (no route) if only the "
                "context runs it, gate the route with `requires …`, or write "
                f"`public operation {operation}(…)` if clients may run it on its own too",
            )
