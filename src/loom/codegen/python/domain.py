"""`<context>/domain.py`: id types, enums, events and aggregates (dataclasses with operations).

Operations mutate the aggregate in memory only; the route or workflow that called them saves at the
end, so a refusal (precondition, state gate, invariant) leaves nothing written.
"""

from __future__ import annotations

from collections.abc import Sequence

from loom.codegen.python.checks import (
    bound_checks,
    check,
    has_extern_checks,
    scaled_params,
)
from loom.codegen.python.checks import (
    has_invariants as checks_invariants,  # `has_invariants` is a parameter name here
)
from loom.codegen.python.expressions import Scope, render, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import Keyed, key_of, keyed, keyed_fields, state_class
from loom.codegen.python.layout import Doc, Group, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.stored import check_stored
from loom.codegen.python.type_names import TypeNames
from loom.model import ir, naming, walk
from loom.model.refusals import invariant, one_line, precondition, requires, state_gate


def emit_domain(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("__future__", "annotations")
    types = TypeNames(info, context, imports, mode="domain", in_domain=True)
    blocks: list[list[str]] = []

    for enum in context.enums:
        blocks.append(_enum(enum, imports))
    for record in context.records:
        blocks.append(_record(record, types, imports))
    for event in context.events:
        blocks.append(_event(event, types, imports))
    for agg in context.aggregates:
        blocks.append(_aggregate(info, context, agg, types, imports))
    for wf in keyed(context):
        blocks.append(_workflow_state(wf, types, imports))

    head = header(info.files_of(context), f"Domain of context {context.name}.")
    return module_text(head, imports, blocks)


def _enum(enum: ir.Enum, imports: Imports) -> list[str]:
    imports.module("enum")
    lines = [
        f"class {naming.pascal(enum.name)}(enum.StrEnum):",
        f"    {docstring(f'enum {enum.name} ({where(enum.origin)})')}",
        "",
    ]
    for member in enum.members:
        lines.append(f"    {naming.upper_snake(member)} = {py_str(member)}")
    return lines


def _event(event: ir.Event, types: TypeNames, imports: Imports) -> list[str]:
    imports.add("dataclasses", "dataclass")
    imports.add("typing", "ClassVar")
    imports.add("loom.runtime", "DomainEvent")
    lines = [
        "@dataclass(frozen=True, kw_only=True)",
        f"class {naming.pascal(event.name)}(DomainEvent):",
        f"    {docstring(f'event {event.name} ({where(event.origin)})')}",
        "",
        # qualified by its context: stable across contexts, the name logs and the outbox use
        f"    event_type: ClassVar[str] = {py_str(f'{event.context}.{event.name}')}",
    ]
    if event.renamed_from is not None:
        # a stored event written under the old name is still decoded and delivered as this one
        former = py_str(f"{event.context}.{event.renamed_from}")
        lines.append(f"    former_event_types: ClassVar[tuple[str, ...]] = ({former},)")
    lines += _wire_names(event.fields, imports)
    scope = Scope(imports=imports, enum_ref=types.enum_ref)
    for f in event.fields:
        name = naming.ident(f.name)
        annotation: Doc = types.render(f.type)
        if f.renamed_from is not None:
            # a stored event written before the rename has the field under its old key
            imports.add("typing", "Annotated")
            imports.add("loom.runtime", "formerly")
            keys = dict.fromkeys([f.name, name, f.renamed_from, naming.ident(f.renamed_from)])
            annotation = Group(
                "Annotated[", [annotation, Group("formerly(", [py_str(k) for k in keys], ")")], "]"
            )
        # a stored event written before the field existed decodes to its default
        default = _field_default(f, scope, imports)
        tail = "" if default is None else f" = {default}"
        if isinstance(annotation, Group):
            lines += lay(Group(f"{name}: {annotation.head}", annotation.items, "]" + tail), 1)
        else:
            lines += lay(f"{name}: {annotation}{tail}", 1)
    lengths = bound_checks(event.name, event.fields, imports)
    if lengths:  # an event raised with a longer string is refused where it is raised
        lines += ["", "    def __post_init__(self) -> None:"]
        lines.append(f"        {docstring(f'the string lengths of event {event.name}')}")
        for cond, refusal in lengths:
            lines += check(cond, refusal, imports, 2)
    return lines


def _wire_names(fields: Sequence[ir.Field], imports: Imports) -> list[str]:
    """The class's `__pydantic_config__` when a field's Python name is not its model name: the
    event codec keys a payload by the model names (the HTTP surface's spelling), and reads both."""
    renamed = [f for f in fields if naming.ident(f.name) != f.name]
    if not renamed:
        return []
    imports.add("typing", "ClassVar")
    imports.add("pydantic", "ConfigDict")
    imports.add("loom.runtime", "wire_names")
    names = [f"{naming.ident(f.name)}={py_str(f.name)}" for f in renamed]
    return lay(Group("__pydantic_config__: ClassVar[ConfigDict] = wire_names(", names, ")"), 1)


def _record(rec: ir.ValueObject | ir.Payload, types: TypeNames, imports: Imports) -> list[str]:
    """A value object or payload: a frozen dataclass, compared by its fields. A value object checks
    its invariants whenever it is constructed (`__post_init__`); reading one back from storage
    does not construct it again."""
    imports.add("dataclasses", "dataclass")
    scope = Scope(imports=imports, enum_ref=types.enum_ref)
    what = "value" if isinstance(rec, ir.ValueObject) else rec.kind
    lines = [
        "@dataclass(frozen=True, kw_only=True)",
        f"class {naming.pascal(rec.name)}:",
        f"    {docstring(f'{what} {rec.name} ({where(rec.origin)})')}",
    ]
    if rec.fields:
        lines.append("")
    lines += _wire_names(rec.fields, imports)
    for f in rec.fields:
        default = _field_default(f, scope, imports)
        if default is None and isinstance(f.type, ir.OptionalType):
            default = "None"
        annotation = f"    {naming.ident(f.name)}: {types.render(f.type)}"
        line = annotation if default is None else f"{annotation} = {default}"
        lines += lay(line.removeprefix("    "), 1)
    lengths = bound_checks(rec.name, rec.fields, imports) if isinstance(rec, ir.ValueObject) else []
    if isinstance(rec, ir.ValueObject) and (rec.invariants or lengths):
        lines += [
            "",
            "    def __post_init__(self) -> None:",
            f"        {docstring(f'invariants of {rec.name}, checked on construction')}",
        ]
        for inv in rec.invariants:
            comment = f"# invariant {one_line(inv.condition.text)} ({where(inv.origin)})"
            lines.append(f"        {comment}")
            lines += check(render(inv.condition, scope), invariant(rec.name, inv), imports, 2)
        for cond, refusal in lengths:
            lines += check(cond, refusal, imports, 2)
    return lines


_ZERO = {"int": "0", "string": '""', "bool": "False"}


def _workflow_state(wf: Keyed, types: TypeNames, imports: Imports) -> list[str]:
    """The state of a correlated workflow (one instance row per correlation key), or the row of a
    projection (one per key)."""
    imports.add("dataclasses", "dataclass")
    scope = Scope(imports=imports, enum_ref=types.enum_ref)
    what = "state of workflow" if isinstance(wf, ir.Workflow) else "a row of projection"
    lines = [
        "@dataclass(kw_only=True)",
        f"class {state_class(wf)}:",
        f"    {docstring(f'{what} {wf.name} ({where(wf.origin)})')}",
        "",
    ]
    for f in keyed_fields(wf):
        default = _field_default(f, scope, imports)
        annotation = f"    {naming.ident(f.name)}: {types.render(f.type)}"
        if default is None and f.name != key_of(wf):
            if isinstance(f.type, ir.OptionalType):
                default = "None"
            elif isinstance(f.type, ir.ListType):
                imports.add("dataclasses", "field")
                default = "field(default_factory=list)"
            elif isinstance(f.type, ir.PrimitiveType) and f.type.name in _ZERO:
                default = _ZERO[f.type.name]
            elif isinstance(f.type, ir.PrimitiveType) and f.type.name == "decimal":
                imports.add("decimal", "Decimal")
                default = "Decimal(0)"
            else:  # no zero value: unset until the body assigns it
                default = "None  # type: ignore[assignment]"
        line = annotation if default is None else f"{annotation} = {default}"
        lines += lay(line.removeprefix("    "), 1)
    return lines


def _is_constant(expr: ir.Expr) -> bool:
    if isinstance(expr, ir.Literal_ | ir.EnumMember):
        return True
    if isinstance(expr, ir.Unary) and expr.op == "-":
        return _is_constant(expr.operand)
    return False


def _field_default(f: ir.Field, scope: Scope, imports: Imports) -> str | None:
    if f.default is None:
        return None
    expr = f.default
    if isinstance(expr, ir.Now):
        imports.add("dataclasses", "field")
        imports.add("loom.runtime", "now")
        return "field(default_factory=now)"
    if isinstance(expr, ir.ListLiteral) and not expr.items:
        imports.add("dataclasses", "field")
        return "field(default_factory=list)"
    text = render_as(expr, f.type, scope)
    if _is_constant(expr):
        return text
    imports.add("dataclasses", "field")
    return f"field(default_factory=lambda: {text})"


def _aggregate(
    info: ModelInfo, context: ir.Context, agg: ir.Aggregate, types: TypeNames, imports: Imports
) -> list[str]:
    imports.add("dataclasses", "dataclass", "field")
    imports.add("loom.runtime", "AggregateRoot", "new_id")
    cls = naming.pascal(agg.name)
    id_t = types.id_name(context.name, agg.name)
    scope = Scope(imports=imports, enum_ref=types.enum_ref, owner=agg.name)
    lines = [
        "@dataclass(eq=False, kw_only=True)",
        f"class {cls}(AggregateRoot):",
        f"    {docstring(f'aggregate {agg.name} ({where(agg.origin)})')}",
        "",
        f"    id: {id_t} = field(default_factory=lambda: {id_t}(new_id()))",
    ]
    for f in agg.fields:
        default = _field_default(f, scope, imports)
        annotation = f"    {naming.ident(f.name)}: {types.render(f.type)}"
        line = annotation if default is None else f"{annotation} = {default}"
        lines += lay(line.removeprefix("    "), 1)

    has_invariants = checks_invariants(agg)
    methods: list[list[str]] = [_create(info, context, agg, types, imports, has_invariants)]
    for d in agg.derived:
        methods.append(_derived(d, types, scope))
    stored = check_stored(info, agg, imports)
    if stored is not None:
        methods.append(stored)
    if has_invariants:
        methods.append(_invariants(agg, scope))
    for fn in agg.functions:
        methods.append(_function(fn, types, imports, agg.name))
    for op in agg.operations:
        methods.append(_operation(info, context, agg, op, types, imports, has_invariants))
        if op.extern and has_extern_checks(agg, op):
            methods.append(_extern_checks(agg, op, types, scope))
    for method in methods:
        lines.append("")
        lines.extend(method)
    return lines


def _create(
    info: ModelInfo,
    context: ir.Context,
    agg: ir.Aggregate,
    types: TypeNames,
    imports: Imports,
    has_invariants: bool,
) -> list[str]:
    cls = naming.pascal(agg.name)
    taken = {naming.ident(f.name) for f in agg.create_inputs} | {"cls"}
    var = naming.NameAlloc(taken).take(naming.snake(agg.name))
    params: list[str] = ["cls"]
    if agg.create_inputs:
        params.append("*")
    params += [f"{naming.ident(f.name)}: {types.render(f.type)}" for f in agg.create_inputs]
    lines = ["    @classmethod"]
    lines += lay(Group(f"def {naming.create_method(agg)}(", params, f") -> {cls}:"), 1)
    checked = ", its invariants checked" if has_invariants else ""
    origin = agg.factory.origin if agg.factory is not None else agg.origin
    lines.append(
        "        " + docstring(f"{agg.name}.create ({where(origin)}): a new {agg.name}{checked}")
    )
    emits: list[ir.Emit] = []
    if agg.factory is not None:
        body, kwargs, emits = _factory_body(info, context, agg, agg.factory, types, imports, var)
        lines += body
    else:
        kwargs = [f"{naming.ident(f.name)}={naming.ident(f.name)}" for f in agg.create_inputs]
    if has_invariants or emits:
        lines += lay(call("cls", kwargs, prefix=f"{var} = "), 2)
        scope = Scope(
            imports=imports,
            enum_ref=types.enum_ref,
            self_name=var,
            params={p.name: naming.ident(p.name) for p in agg.create_inputs},
        )
        for stmt in emits:
            event = info.event(stmt.context, stmt.event)
            cls_name = types.domain_name(stmt.context, naming.pascal(stmt.event))
            lines += lay(
                call(f"{var}._raise_event", [call(cls_name, event_args(event, stmt, scope))]), 2
            )
        if has_invariants:
            lines.append(f"        {var}.check_invariants()")
        lines.append(f"        return {var}")
    else:
        lines += lay(call("cls", kwargs, prefix="return "), 2)
    return lines


def _factory_body(
    info: ModelInfo,
    context: ir.Context,
    agg: ir.Aggregate,
    factory: ir.Factory,
    types: TypeNames,
    imports: Imports,
    var: str,
) -> tuple[list[str], list[str], list[ir.Emit]]:
    """A declared `create(…) { … }`: preconditions and lets run first, assignments become locals,
    the aggregate is built from them (unassigned fields take their defaults), then its events."""
    params = {p.name: naming.ident(p.name) for p in factory.params}
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params=dict(params))
    alloc = naming.NameAlloc({"cls", var, *params.values()})
    fields = {f.name: f for f in agg.fields}
    lines: list[str] = []
    emits: list[ir.Emit] = []
    label = f"{agg.name}.create"
    for cond, refusal in bound_checks(label, factory.params, imports, params=True):
        lines += check(cond, refusal, imports, 2)
    lines += scaled_params(factory.params, imports, 2)
    if factory.requires is not None:
        gate = requires(label, factory.requires)
        lines += check(render(factory.requires, scope), gate, imports, 2)
    for stmt, later in zip(factory.body, walk.reads_after(factory.body), strict=True):
        if isinstance(stmt, ir.Precondition):
            lines += check(render(stmt.condition, scope), precondition(label, stmt), imports, 2)
        elif isinstance(stmt, ir.Let):
            name = naming.local(stmt.name, stmt.name in later)
            local = alloc.take(name)
            scope.locals[stmt.name] = local
            lines += lay(f"{local} = {render(stmt.value, scope)}", 2)
        elif isinstance(stmt, ir.Assign):
            value = stmt.value
            if (
                isinstance(value, ir.Param)
                and stmt.field not in scope.fields
                and params.get(value.name) == naming.ident(stmt.field)
            ):
                scope.fields[stmt.field] = params[value.name]  # `code := code`
                continue
            local = alloc.take(naming.ident(stmt.field))
            text = render_as(value, fields[stmt.field].type, scope)
            scope.fields[stmt.field] = local
            lines += lay(f"{local} = {text}", 2)
        elif isinstance(stmt, ir.Emit):
            emits.append(stmt)
        else:
            raise NotImplementedError(f"{type(stmt).__name__} in {label} ({where(factory.origin)})")
    kwargs = [
        f"{naming.ident(f.name)}={scope.fields.get(f.name, 'None')}"
        for f in agg.fields
        # unassigned optional fields without a default start as None
        if f.name in scope.fields or (f.default is None and isinstance(f.type, ir.OptionalType))
    ]
    return lines, kwargs, emits


def _derived(d: ir.Derived, types: TypeNames, scope: Scope) -> list[str]:
    lines = [
        "    @property",
        f"    def {naming.ident(d.name)}(self) -> {types.render(d.type)}:",
        f"        {docstring(f'derived {d.name} ({where(d.origin)})')}",
    ]
    lines += lay(f"return {render_as(d.value, d.type, scope)}", 2)
    return lines


def _extern_checks(
    agg: ir.Aggregate, op: ir.Operation, types: TypeNames, scope: Scope
) -> list[str]:
    """The checks of an extern operation, run by its callers before the user's code: its
    arguments, then its `requires` gate."""
    params = {p.name: naming.ident(p.name) for p in op.params}
    gate_scope = Scope(
        imports=scope.imports, enum_ref=scope.enum_ref, params=params, owner=agg.name
    )
    args = ["self"] + [f"{params[p.name]}: {types.render(p.type)}" for p in op.params]
    # it answers the arguments it checked, which the caller hands on to the extern's method:
    # each argument expression is evaluated once
    given = [types.render(p.type) for p in op.params]
    answer = f"tuple[{', '.join(given)}]" if given else "tuple[()]"
    lines = lay(Group(f"def {naming.extern_checks(op.name)}(", args, f") -> {answer}:"), 1)
    doc = f"arguments and requires of extern operation {agg.name}.{op.name} ({where(op.origin)})"
    lines.append(f"        {docstring(doc)}")
    label = f"{agg.name}.{op.name}"
    for cond, refusal in bound_checks(label, op.params, scope.imports, params=True):
        lines += check(cond, refusal, scope.imports, 2)
    if op.requires is not None:
        gate = requires(label, op.requires)
        lines += check(render(op.requires, gate_scope), gate, scope.imports, 2)
    names = [params[p.name] for p in op.params]
    answered = "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"
    lines.append(f"        return {answered}")
    return lines


def _invariants(agg: ir.Aggregate, scope: Scope) -> list[str]:
    lines = [
        "    def check_invariants(self) -> None:",
        f"        {docstring(f'invariants of {agg.name} ({where(agg.origin)})')}",
    ]
    for inv in agg.invariants:
        lines.append(f"        # invariant {one_line(inv.condition.text)} ({where(inv.origin)})")
        lines += check(render(inv.condition, scope), invariant(agg.name, inv), scope.imports, 2)
    for cond, refusal in bound_checks(agg.name, agg.fields, scope.imports):
        lines += check(cond, refusal, scope.imports, 2)
    return lines


def _function(fn: ir.Function, types: TypeNames, imports: Imports, owner: str) -> list[str]:
    scope = Scope(
        imports=imports,
        enum_ref=types.enum_ref,
        owner=owner,
        params={p.name: naming.ident(p.name) for p in fn.params},
    )
    params = ["self"] + [f"{naming.ident(p.name)}: {types.render(p.type)}" for p in fn.params]
    lines = lay(
        Group(f"def _{naming.snake(fn.name)}(", params, f") -> {types.render(fn.result)}:"), 1
    )
    lines.append(f"        {docstring(f'function {fn.name} ({where(fn.origin)})')}")
    return lines + function_body(fn, scope, 2, f"function {fn.name}")


def function_body(fn: ir.Function, scope: Scope, depth: int, label: str) -> list[str]:
    """The body of a pure function: `return <expr>`, or the block form (let, precondition,
    return)."""
    if fn.value is not None:
        return lay(f"return {render_as(fn.value, fn.result, scope)}", depth)
    lines: list[str] = []
    alloc = naming.NameAlloc({"self", *scope.params.values()})
    for stmt, later in zip(fn.body, walk.reads_after(fn.body), strict=True):
        if isinstance(stmt, ir.Precondition):
            refusal = precondition(label, stmt)
            lines += check(render(stmt.condition, scope), refusal, scope.imports, depth)
        elif isinstance(stmt, ir.Let):
            name = naming.local(stmt.name, stmt.name in later)
            scope.locals[stmt.name] = alloc.take(name)
            lines += lay(f"{scope.locals[stmt.name]} = {render(stmt.value, scope)}", depth)
        elif isinstance(stmt, ir.Return):
            lines += lay(f"return {render_as(stmt.value, fn.result, scope)}", depth)
        else:
            raise NotImplementedError(f"{type(stmt).__name__} in {label} ({where(fn.origin)})")
    return lines


def _operation(
    info: ModelInfo,
    context: ir.Context,
    agg: ir.Aggregate,
    op: ir.Operation,
    types: TypeNames,
    imports: Imports,
    has_invariants: bool,
) -> list[str]:
    param_names = {p.name: naming.ident(p.name) for p in op.params}
    scope = Scope(
        imports=imports, enum_ref=types.enum_ref, params=dict(param_names), owner=agg.name
    )
    alloc = naming.NameAlloc({"self", *param_names.values()})
    params = ["self"] + [f"{param_names[p.name]}: {types.render(p.type)}" for p in op.params]
    lines = lay(Group(f"def {naming.ident(op.name)}(", params, ") -> None:"), 1)
    lines.append(f"        {docstring(f'operation {agg.name}.{op.name} ({where(op.origin)})')}")
    label = f"{agg.name}.{op.name}"
    if not op.extern:  # an extern's are in its `_before_…` method, which its callers run
        for cond, refusal in bound_checks(label, op.params, imports, params=True):
            lines += check(cond, refusal, imports, 2)
        lines += scaled_params(op.params, imports, 2)
    if op.requires is not None and not op.extern:
        lines += check(render(op.requires, scope), requires(label, op.requires), imports, 2)
    if op.when is not None:
        lines += check(render(op.when, scope), state_gate(label, op.when), imports, 2)
    fields = {f.name: f for f in agg.fields}

    def block(stmts: tuple[ir.Stmt, ...], depth: int, outer: frozenset[str]) -> list[str]:
        out: list[str] = []
        for stmt, later in zip(stmts, walk.reads_after(stmts), strict=True):
            out += statement(stmt, depth, later | outer)
        return out

    def statement(stmt: ir.Stmt, depth: int, later: set[str] | frozenset[str]) -> list[str]:
        if isinstance(stmt, ir.Precondition):
            refusal = precondition(label, stmt)
            return check(render(stmt.condition, scope), refusal, imports, depth)
        if isinstance(stmt, ir.Assign):
            target = fields[stmt.field]
            attr = f"self.{naming.ident(stmt.field)}"
            value = render_as(stmt.value, target.type, scope)
            if stmt.op != ":=" and target.type == ir.DECIMAL:
                # `balance += amount` on a decimal: exact (loom.runtime.decimals), or a 422
                imports.add("loom.runtime", "decimals")
                fn = "add" if stmt.op == "+=" else "sub"
                value = render(stmt.value, scope)
                return lay(f"{attr} = decimals.{fn}({attr}, {value})", depth)
            op_text = "=" if stmt.op == ":=" else stmt.op
            return lay(f"{attr} {op_text} {value}", depth)
        if isinstance(stmt, ir.Let):
            var = alloc.take(naming.local(stmt.name, stmt.name in later))
            scope.locals[stmt.name] = var
            return lay(f"{var} = {render(stmt.value, scope)}", depth)
        if isinstance(stmt, ir.Emit):
            event = info.event(stmt.context, stmt.event)
            cls_name = types.domain_name(stmt.context, naming.pascal(stmt.event))
            return lay(
                call("self._raise_event", [call(cls_name, event_args(event, stmt, scope))]), depth
            )
        if isinstance(stmt, ir.CallOwnOperation):
            callee = next(o for o in agg.operations if o.name == stmt.operation)
            args = [
                render_as(arg, p.type, scope)
                for arg, p in zip(stmt.args, callee.params, strict=True)
            ]
            return lay(call(f"self.{naming.ident(stmt.operation)}", args), depth)
        if isinstance(stmt, ir.If):
            return if_(stmt, depth, frozenset(later), "if")
        raise NotImplementedError(
            f"{type(stmt).__name__} in operation {label} ({where(op.origin)})"
        )

    def if_(stmt: ir.If, depth: int, later: frozenset[str], keyword: str) -> list[str]:
        pad = "    " * depth
        out = lay(f"{keyword} {render(stmt.condition, scope)}:", depth)
        out += block(stmt.then, depth + 1, later) or [f"{pad}    pass"]
        other = stmt.otherwise
        if len(other) == 1 and isinstance(other[0], ir.If):
            return out + if_(other[0], depth, later, "elif")
        if other:
            out.append(f"{pad}else:")
            out += block(other, depth + 1, later)
        return out

    lines += block(op.body, 2, frozenset())
    if has_invariants:
        lines.append("        self.check_invariants()")
    return lines


def event_args(event: ir.Event, stmt: ir.Emit, scope: Scope) -> list[str]:
    field_types = {f.name: f.type for f in event.fields}
    return [
        f"{naming.ident(name)}={render_as(expr, field_types[name], scope)}"
        for name, expr in stmt.args
    ]
