"""Binding the arguments of `Agg.create(…)` in its three spellings (positional, named, record) to
the aggregate's create inputs: its declared factory's parameters, else its fields."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import a, show
from loom.model import ir


def _args_only(ck: Checker, call: ast.Call, scope: Scope) -> None:
    for arg in call.args:
        for v in arg.entries if isinstance(arg, ast.Record) else [arg]:
            ck.expr(v.value, scope)


def create_args(
    ck: Checker, ctx: ContextSymbols, agg: ast.Aggregate, call: ast.Call, scope: Scope
) -> dict[str, ir.Expr] | None:
    # The inputs: the declared factory's parameters, else the stored fields.
    fields: list[ast.Field] | list[ast.Param] = (
        agg.factory.params if agg.factory is not None else agg.fields
    )
    by_name = {f.name: f for f in fields}
    what = f"`{agg.name}.create`"
    ok = True
    pairs: list[tuple[ast.Field | ast.Param | None, ast.Arg]] = []
    records = [x for x in call.args if isinstance(x, ast.Record)]
    plain = [x for x in call.args if isinstance(x, ast.Arg)]
    if records and (len(records) > 1 or plain):
        ck.report(
            "loom.workflow-create-args",
            f"a record must be the only argument of {what}",
            call.span,
            "record mixed with other arguments",
            help="put every input in the one record: `{ x: a, y: b }`",
        )
        _args_only(ck, call, scope)
        return None
    entries = records[0].entries if records else plain
    positional = [x for x in entries if x.name is None]
    named = [x for x in entries if x.name is not None]
    if positional and named:
        first = named[0] if entries[0].name is None else positional[0]
        ck.report(
            "loom.workflow-create-args",
            f"{what} mixes positional and named arguments",
            first.span,
            "switches style here",
            help="name every argument (`x: a, y: b`), or none of them",
        )
        _args_only(ck, call, scope)
        return None
    if len(positional) > len(fields):
        extra = positional[len(fields)]
        ck.report(
            "loom.workflow-create-args",
            f"{what} takes at most {len(fields)} input"
            f"{'s' if len(fields) != 1 else ''} ({', '.join(f.name for f in fields)}), "
            f"but {len(positional)} were given",
            extra.span,
            "one too many",
            secondary=[(agg.name_span, "aggregate declared here")],
            help="remove the extra arguments",
        )
        ok = False
    for i, arg in enumerate(positional[: len(fields)]):
        pairs.append((fields[i], arg))
    seen: dict[str, ast.Arg] = {}
    for arg in named:
        assert arg.name is not None and arg.name_span is not None
        if arg.name in seen:
            ck.report(
                "loom.workflow-create-args",
                f"input `{arg.name}` of {what} is given twice",
                arg.name_span,
                "given again here",
                secondary=[(seen[arg.name].span, "first given here")],
                help="give it once",
            )
            ok = False
            ck.expr(arg.value, scope)
            continue
        seen[arg.name] = arg
        f = by_name.get(arg.name)
        if f is None:
            derived = any(d.name == arg.name for d in agg.derived)
            ck.report(
                "loom.workflow-create-args",
                f"`{arg.name}` is not an input of {what}",
                arg.name_span,
                "derived, not an input" if derived else "unknown input",
                help=did_you_mean(arg.name, by_name)
                or f"its inputs are {', '.join(f'`{n}`' for n in by_name) or 'none'}",
            )
            ok = False
            ck.expr(arg.value, scope)
            continue
        ck.refer(arg.name_span, f.name_span)
        pairs.append((f, arg))
    given: dict[str, ir.Expr] = {}
    for f, arg in pairs:
        assert f is not None
        ft = ck.type_of(f.type)
        x = ck.expr(arg.value, scope, ft)
        if not ck.mismatch(
            x,
            arg.value,
            ft,
            f"input `{f.name}` of {what} is {a(ft)}, but this is {a(x.type)}",
            [(f.name_span, f"`{f.name}` is declared here as `{show(ft)}`")],
        ):
            ok = False
        given[f.name] = x
    missing = [
        f.name
        for f in fields
        if f.name not in given
        and getattr(f, "default", None) is None
        and not isinstance(ck.type_of(f.type), ir.OptionalType)
        and not f.type.is_optional
    ]
    if missing and ok:
        listed = ", ".join(f"`{n}`" for n in missing)
        ck.report(
            "loom.workflow-create-args",
            f"{what} leaves out the required input{'s' if len(missing) > 1 else ''} {listed}",
            call.callee.span,
            f"missing {listed}",
            secondary=[(agg.name_span, "aggregate declared here")],
            help="give every input that has no default and is not optional",
        )
        ok = False
    return given if ok else None
