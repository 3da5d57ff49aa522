"""`emit E { field: value, … }`, in operations, workflow and handler bodies and services: every field
of the event given once (one with a default may be left out), each of its declared type."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.facts import EmitFact
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.syntax import ast
from loom.lang.types import a
from loom.model import ir


def check_emit(ck: Checker, stmt: ast.Emit, scope: Scope) -> None:
    ev = scope.ctx.events.get(stmt.event)
    if ev is None:
        ck.report(
            "loom.unknown-event",
            f"unknown event `{stmt.event}` in context `{scope.ctx.name}`",
            stmt.event_span,
            "not an event",
            help=did_you_mean(stmt.event, scope.ctx.events)
            or f"declare it: `event {stmt.event} {{ … }}`",
        )
        for entry in stmt.fields:
            ck.expr(entry.value, scope)
        return
    ck.refer(stmt.event_span, ev.name_span)
    decls = {p.name: p for p in ev.fields}
    given: dict[str, ast.Arg] = {}
    args: dict[str, ir.Expr] = {}
    for entry in stmt.fields:
        assert entry.name is not None and entry.name_span is not None
        p = decls.get(entry.name)
        if entry.name in given:
            ck.report(
                "loom.emit-fields",
                f"field `{entry.name}` of `{ev.name}` is given twice",
                entry.name_span,
                "given again here",
                secondary=[(given[entry.name].span, "first given here")],
                help="give each field once",
            )
            ck.expr(entry.value, scope)
            continue
        given[entry.name] = entry
        if p is None:
            ck.report(
                "loom.emit-fields",
                f"event `{ev.name}` has no field `{entry.name}`",
                entry.name_span,
                "unknown field",
                help=did_you_mean(entry.name, decls)
                or f"its fields are {', '.join(f'`{n}`' for n in decls) or 'none'}",
            )
            ck.expr(entry.value, scope)
            continue
        ck.refer(entry.name_span, p.name_span)
        pt = ck.type_of(p.type)
        x = ck.expr(entry.value, scope, pt)
        ck.mismatch(
            x,
            entry.value,
            pt,
            f"field `{p.name}` of `{ev.name}` is {a(pt)}, but this value is {a(x.type)}",
            [(p.span, "declared here")],
        )
        args[p.name] = x
    missing = [n for n, f in decls.items() if n not in given and f.default is None]
    if missing:
        listed = ", ".join(f"`{n}`" for n in missing)
        ck.report(
            "loom.emit-fields",
            f"`emit {ev.name}` leaves out {listed}",
            stmt.event_span,
            f"missing {listed}",
            secondary=[(ev.name_span, "event declared here")],
            help="an emit gives every field of the event"
            + (" that has no default" if any(f.default for f in ev.fields) else ""),
        )
    ck.facts.emits[stmt] = EmitFact(ev.name, args)
