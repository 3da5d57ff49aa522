"""`readOnly` fields, and the fields a `with crudish` aggregate's routes should not take.

- `loom.crudish-writes-gated-field` (warning): a field of a crudish aggregate that an operation's
  `when` gate reads and an operation assigns (its lifecycle state, the shop's `status`) is taken by
  the crudish POST or PATCH, so a client sets it directly, past the gate. `readOnly` puts it out
  of their reach.
- `loom.read-only-field-unset` (error): a `readOnly` field of a crudish aggregate without a
  declared factory has no default and is not optional: the crudish POST, which never takes it,
  could not create one.
- `readOnly` on a projection's or a workflow's state field has no meaning
  (`loom.invalid-statement`, as `immutable` on a projection's).
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.facts import LocalWrite
from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.model import ir, walk


def check_read_only(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for agg in ctx.aggregates.values():
            if agg.crudish:
                _unset(ck, agg)
                _gated(ck, agg)
        for wf in ctx.workflows.values():
            _meaningless(ck, wf.state, f"the state of workflow `{wf.name}`", "its bodies")
        for proj in ctx.projections.values():
            _meaningless(ck, proj.fields, f"projection `{proj.name}`", "its `on` reactions")


def _unset(ck: Checker, agg: ast.Aggregate) -> None:
    if agg.factory is not None:
        return  # the POST takes the factory's parameters, and the factory sets the field
    for f in agg.fields:
        if f.read_only and f.default is None and not f.type.is_optional:
            ck.report(
                "loom.read-only-field-unset",
                f"`{f.name}` of `{agg.name}` is `readOnly`, so the crudish POST never takes it, "
                "and it has no default to start from",
                f.name_span,
                "read-only, no default",
                help=f"give it a default (`{f.name}: {ck.text(f.type.span)} readOnly = …`), make "
                f"it optional, or declare a factory `create(…) {{ {f.name} := … }}`",
            )


def _gated(ck: Checker, agg: ast.Aggregate) -> None:
    """Warn of each field a `when` gate reads and an operation assigns, that a route takes."""
    guarded: dict[str, Span] = {}
    assigned: set[str] = set()
    for op in agg.operations:
        x = ck.facts.exprs.get(op.when) if op.when is not None else None
        if x is not None and op.when is not None:
            for e in walk.expressions(x):
                if isinstance(e, ir.SelfField) and e.kind == "field":
                    guarded.setdefault(e.name, op.when.span)
        for s in ast.walk_stmts(op.body):
            if (
                isinstance(s, ast.Assign)
                and isinstance(s.target, ast.Name)
                and not isinstance(ck.facts.stmts.get(s), LocalWrite)
            ):
                assigned.add(s.target.name)
    routes = "PATCH of `{}` takes" if agg.factory is not None else "POST and PATCH of `{}` take"
    for f in agg.fields:
        gate = guarded.get(f.name)
        if gate is None or f.name not in assigned or f.read_only or f.immutable:
            continue
        ck.report(
            "loom.crudish-writes-gated-field",
            f"`{f.name}` is guarded by a `when` gate and changed by operations, but the crudish "
            f"{routes.format(agg.name)} it too, so a client sets it directly, past the gate",
            f.name_span,
            "a client can set it",
            secondary=[(gate, "the gate that reads it")],
            help=f"declare it out of the crudish routes' reach: `{f.name}: "
            f"{ck.text(f.type.span)} readOnly{_default_text(ck, f)}`; only the factory and the "
            "operations then change it",
        )


def _default_text(ck: Checker, f: ast.Field) -> str:
    return f" = {ck.text(f.default.span)}" if f.default is not None else ""


def _meaningless(ck: Checker, fields: list[ast.Field], where: str, writers: str) -> None:
    for f in fields:
        if f.read_only:
            ck.report(
                "loom.invalid-statement",
                f"`readOnly` has no meaning on the field `{f.name}` of {where}",
                f.name_span,
                "`readOnly` here",
                help=f"no route sets it: only {writers} change it; remove `readOnly`",
            )
