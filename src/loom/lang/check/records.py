"""Value objects and payloads: their declarations, record expressions `Name { field: value, … }`,
reads of their fields, and the places a value object cannot go.

A value object (`value Money { … }`) is an immutable record compared by its fields, with optional
invariants over them; it may be the type of anything that holds a value. A payload (`command`,
`query`, `response`, `error`) is a transport record: in scope only as a workflow `create` parameter
and in a commandHandler / queryHandler contract (`type_refs.resolve_type(payloads=True)`), and built
only in those bodies. A stored value object is one JSON column the database does not query, so a
criterion, a natural key or a declared find over one is refused (`loom.value-object-in-query`); a
queryHandler's parameters travel in the query string, which holds no nested object
(`loom.query-parameter-type`).
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.names.symbols import PAYLOAD_SCOPE, ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import AnyType, a, bare, is_error, is_record, show
from loom.model import ir

Record = ast.ValueObject | ast.Payload


def _what(rec: Record) -> str:
    return "value object" if isinstance(rec, ast.ValueObject) else f"{rec.kind} payload"


def record_type(ctx: ContextSymbols, rec: Record) -> ir.ValueType | ir.PayloadType:
    if isinstance(rec, ast.ValueObject):
        return ir.ValueType(rec.name, ctx.name)
    return ir.PayloadType(rec.name, ctx.name, rec.kind)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Declarations


def check_records(ck: Checker, ctx: ContextSymbols) -> None:
    records: list[ast.ValueObject | ast.Payload] = [*ctx.values.values(), *ctx.payloads.values()]
    for rec in records:
        for f in rec.fields:
            if f.default is not None:
                default_of(ck, ctx, f)
        if isinstance(rec, ast.ValueObject):
            scope = Scope(ctx, None, "invariant", record=rec)
            for inv in rec.invariants:
                ck.facts.exprs[inv.condition] = ck.condition(inv.condition, scope, "an invariant")
    _cycles(ck, ctx)


def default_of(ck: Checker, ctx: ContextSymbols, f: ast.Field) -> ir.Expr | None:
    """The typed default of a record field, checked once (a record expression that leaves the field
    out may need it before the declaration's own turn)."""
    assert f.default is not None
    found = ck.facts.exprs.get(f.default)
    if found is not None:
        return found
    busy = ck.defaults_in_progress
    if f in busy:
        return None  # a value object containing itself: reported as a cycle
    busy.add(f)
    try:
        ft = ck.type_of(f.type)
        x = ck.root(f.default, Scope(ctx, None, "default"), ft)
        ck.mismatch(
            x,
            f.default,
            ft,
            f"the default of `{f.name}` is {a(x.type)}, but the field is {a(ft)}",
            [(f.type.span, f"`{f.name}` is declared here as `{show(ft)}`")],
        )
    finally:
        busy.discard(f)
    return x


def _cycles(ck: Checker, ctx: ContextSymbols) -> None:
    """A value object may not contain itself, through other value objects, lists or optionals:
    its JSON, its wire schema and its constructor would never end."""
    deps: dict[str, list[tuple[str, Span]]] = {}
    for vo in ctx.values.values():
        for f in vo.fields:
            t = bare(ck.type_of(f.type))
            if isinstance(t, ir.ValueType) and t.name in ctx.values:
                deps.setdefault(vo.name, []).append((t.name, f.type.name_span))
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = path[path.index(name) :] + [name]
            first = ctx.values[cycle[0]]
            ck.report(
                "loom.cyclic-definition",
                f"value object `{cycle[0]}` contains itself: "
                + " → ".join(f"`{n}`" for n in cycle),
                first.name_span,
                "contains itself",
                secondary=[
                    (ctx.values[n].name_span, f"`{n}` is part of the cycle")
                    for n in dict.fromkeys(cycle[1:-1])
                ],
                help="a value object holds values, never (a list of) itself; refer to an "
                "aggregate by id, or flatten the fields",
            )
            done.update(cycle)
            return
        if name in done:
            return
        for dep, _ in deps.get(name, []):
            visit(dep, [*path, name])
            if name in done:
                return
        done.add(name)

    for name in deps:
        visit(name, [])


# --------------------------------------------------------------------------------------------------
# Record expressions and field reads


def _values_only(ck: Checker, e: ast.RecordExpr, scope: Scope) -> None:
    for entry in e.entries:
        ck.expr(entry.value, scope)


def record_expr(ck: Checker, e: ast.RecordExpr, scope: Scope, text: str) -> ir.Expr:
    ctx = scope.ctx
    name = e.type_name
    rec: Record | None = ctx.values.get(name) or ctx.payloads.get(name)
    if rec is None:
        _values_only(ck, e, scope)
        if name in ctx.aggregates:
            message = f"`{name}` is an aggregate; `{name} {{ … }}` builds a value object or payload"
            help = f"create the aggregate in a workflow or handler body: `{name}.create({{ … }})`"
        elif name in ctx.events:
            message = f"`{name}` is an event; `{name} {{ … }}` builds a value object or payload"
            help = f"raise the event with `emit {name} {{ … }}`"
        else:
            message = f"unknown value object or payload `{name}`"
            help = did_you_mean(name, [*ctx.values, *ctx.payloads]) or (
                f"declare it: `value {name} {{ field: type, … }}`"
            )
        ck.report("loom.unknown-type", message, e.type_span, "not a record type", help=help)
        return ck.poison(e)
    if isinstance(rec, ast.Payload) and scope.kind != "workflow":
        _values_only(ck, e, scope)
        ck.report(
            "loom.unknown-type",
            f"`{name}` is a {rec.kind} payload, and payload types are not in scope here",
            e.type_span,
            "a payload type out of its scope",
            secondary=[(rec.name_span, f"{rec.kind} `{name}` is declared here")],
            help=PAYLOAD_SCOPE + "; build it in the body of a commandHandler or queryHandler "
            "that answers it",
        )
        return ck.poison(e)
    fields = {f.name: f for f in rec.fields}
    given: dict[str, ast.Arg] = {}
    values: dict[str, ir.Expr] = {}
    for entry in e.entries:
        assert entry.name is not None and entry.name_span is not None
        if entry.name in given:
            ck.report(
                "loom.record-fields",
                f"field `{entry.name}` of `{name}` is given twice",
                entry.name_span,
                "given again here",
                secondary=[(given[entry.name].span, "first given here")],
                help="give each field once",
            )
            ck.expr(entry.value, scope)
            continue
        given[entry.name] = entry
        f = fields.get(entry.name)
        if f is None:
            ck.report(
                "loom.record-fields",
                f"{_what(rec)} `{name}` has no field `{entry.name}`",
                entry.name_span,
                "unknown field",
                secondary=[(rec.name_span, f"`{name}` is declared here")],
                help=did_you_mean(entry.name, fields)
                or f"its fields are {', '.join(f'`{n}`' for n in fields) or 'none'}",
            )
            ck.expr(entry.value, scope)
            continue
        ft = ck.type_of(f.type)
        x = ck.expr(entry.value, scope, ft)
        ck.mismatch(
            x,
            entry.value,
            ft,
            f"field `{f.name}` of `{name}` is {a(ft)}, but this value is {a(x.type)}",
            [(f.span, "declared here")],
        )
        values[f.name] = x
    missing = [
        f.name
        for f in rec.fields
        if f.name not in given and f.default is None and not f.type.is_optional
    ]
    if missing:
        listed = ", ".join(f"`{n}`" for n in missing)
        ck.report(
            "loom.record-fields",
            f"`{name} {{ … }}` leaves out {listed}, which "
            f"{'have' if len(missing) > 1 else 'has'} no default",
            e.type_span,
            f"missing {listed}",
            secondary=[(rec.name_span, f"`{name}` is declared here")],
            help="give every field that has no default and is not optional",
        )
    args = []
    for f in rec.fields:
        value = values.get(f.name)
        if value is None and f.name not in given and f.default is not None:
            value = default_of(ck, ctx, f)
        args.append(ir.RecordArg(f.name, ck.type_of(f.type), value))  # type: ignore[arg-type]
    return ir.Construct(record_type(ctx, rec), tuple(args), text)


def record_member(
    ck: Checker,
    e: ast.MemberAccess,
    x: ir.Expr,
    t: ir.ValueType | ir.PayloadType,
    text: str,
) -> ir.Expr:
    syms = ck.prog.contexts[t.context]
    rec: Record = syms.values[t.name] if isinstance(t, ir.ValueType) else syms.payloads[t.name]
    fields = {f.name: f for f in rec.fields}
    f = fields.get(e.name)
    if f is None:
        ck.report(
            "loom.unknown-field",
            f"{_what(rec)} `{t.name}` has no field `{e.name}`",
            e.name_span,
            "unknown field",
            secondary=[(rec.name_span, f"`{t.name}` is declared here")],
            help=did_you_mean(e.name, fields)
            or f"its fields are {', '.join(f'`{n}`' for n in fields) or 'none'}",
        )
        return ck.poison(e)
    return ir.Member(x, e.name, ck.type_of(f.type), text)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Where value objects cannot go


def holds_record(t: AnyType) -> bool:
    return is_record(bare(t))


def value_read(x: ir.Expr) -> tuple[str, AnyType] | None:
    """The first read of a stored field holding a value object (the field itself, or a field inside
    it) in a criterion condition: its text and the stored field's type. None when there is none.
    Fields of a value-typed *parameter* are plain values bound from Python, and allowed."""
    stack: list[ir.Expr] = [x]
    while stack:
        e = stack.pop()
        root = e
        while isinstance(root, ir.Member):
            root = root.obj
        if isinstance(root, ir.SelfField) and holds_record(root.type):
            return e.text, root.type
        if isinstance(e, ir.Unary):
            stack.append(e.operand)
        elif isinstance(e, ir.Binary):
            stack.extend((e.right, e.left))
        elif isinstance(e, ir.Conditional):
            stack.extend((e.otherwise, e.then, e.condition))
        elif isinstance(e, ir.ListLiteral):
            stack.extend(reversed(e.items))
        elif isinstance(e, ir.FunctionCall):
            stack.extend(reversed(e.args))
    return None


def refuse_value_query(ck: Checker, what: str, read: str, t: AnyType, span: Span) -> None:
    ck.report(
        "loom.value-object-in-query",
        f"{what} reads `{read}`, which is (or is inside) {a(t)}: a value object is stored as "
        "JSON, which the database does not query",
        span,
        "reads a value object",
        help="query a plain field instead: copy the part you select on into a field of the "
        "aggregate (e.g. `priceAmount: decimal`), or load the rows and decide in the body",
    )


def check_query_params(ck: Checker, h: ast.Handler) -> None:
    """A queryHandler's parameters travel in the query string: plain values, or one payload whose
    fields are plain values (the query string is then its fields)."""
    sole = len(h.params) == 1
    for p in h.params:
        t = ck.type_of(p.type)
        if is_error(t):
            continue
        if isinstance(t, ir.PayloadType) and sole:
            rec = ck.prog.contexts[t.context].payloads[t.name]
            for f in rec.fields:
                ft = ck.type_of(f.type)
                if holds_record(ft):
                    ck.report(
                        "loom.query-parameter-type",
                        f"field `{f.name}` of `{t.name}` is {a(ft)}, which the query string of "
                        f"queryHandler `{h.name}` cannot carry",
                        p.type.span,
                        "its fields become query parameters",
                        secondary=[(f.span, f"`{f.name}` is {a(ft)}")],
                        help="query parameters are plain values (and lists of them); pass the "
                        "value object's fields as fields of their own, or make it a commandHandler",
                    )
            continue
        if holds_record(t):
            if not isinstance(bare(t), ir.PayloadType):
                why = "a value object is a nested object"
            elif sole:
                why = (
                    "only a payload itself (not optional, not a list) is a set of query parameters"
                )
            else:
                why = "a payload among other parameters would be a nested object"
            ck.report(
                "loom.query-parameter-type",
                f"parameter `{p.name}` of queryHandler `{h.name}` is {a(t)}, which a query string "
                f"cannot carry: {why}",
                p.type.span,
                "not a query-string value",
                help="query parameters are plain values (and lists of them), or one payload as "
                "the only parameter (its fields become the query parameters)",
            )


def result_problem(t: AnyType, what: str) -> str | None:
    """Why `what` ("a workflow", "a commandHandler", "a queryHandler") cannot answer `t`, or None."""
    b = bare(t)
    if is_error(b):
        return None
    if isinstance(b, ir.EventType):
        return "an event"
    if isinstance(b, ir.AggregateType) and what != "a queryHandler":
        return "an aggregate"
    if what == "a workflow" and isinstance(b, ir.ValueType):
        return "a value object"
    if what == "a workflow" and isinstance(b, ir.PayloadType):
        return f"a {b.kind} payload"
    return None
