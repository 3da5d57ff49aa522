"""`<context>/schemas.py`: the Pydantic wire models.

Attributes are snake_case; a pydantic alias keeps the model's spelling on the wire (`openedAt`,
`fromAccount`, `from`). Request bodies forbid unknown members. `<Aggregate>Out` carries `id`,
`version`, every field and every derived value, and builds itself from an aggregate.

Each value object and payload `Money` has a request model `MoneyInput` (whose `to_domain()` builds
the domain value, checking its invariants) and a response model `MoneyOut` (`from_value(v)`); the
models that hold one nest them. A workflow or command handler whose only parameter is a payload
takes that payload's request model as its whole body.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.codegen.python.expressions import Scope, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import (
    Keyed,
    instance_out_class,
    key_of,
    keyed,
    keyed_fields,
    state_class,
)
from loom.codegen.python.layout import Group, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.type_names import TypeNames, record_classes
from loom.codegen.python.wire import domain_to_wire, record_of, wire_to_domain
from loom.model import ir, naming


@dataclass(frozen=True)
class SchemaNames:
    """Class names of one context's schemas."""

    out: dict[str, str]  # aggregate -> AccountOut
    op_input: dict[tuple[str, str], str]  # (aggregate, operation) -> AccountWithdrawInput
    workflow_input: dict[str, str]  # workflow -> TransferInput
    create_input: dict[str, str]  # crudish aggregate -> TicketCreateInput
    update_input: dict[str, str]  # crudish aggregate -> TicketUpdateInput
    handler_input: dict[str, str]  # command handler with parameters -> EscalateOpenInput
    records: dict[str, tuple[str, str]]  # value object / payload -> (MoneyInput, MoneyOut)


def http_create(wf: ir.Workflow) -> ir.WorkflowCreate | None:
    """The create a workflow's HTTP route runs: the first one not triggered by an event."""
    for create in wf.creates:
        if not any(isinstance(p.type, ir.EventType) for p in create.params):
            return create
    return None


def sole_payload(params: tuple[ir.Parameter, ...]) -> ir.Parameter | None:
    """The parameter, when it is the only one and typed by a payload: the body is that payload."""
    if len(params) == 1 and isinstance(params[0].type, ir.PayloadType):
        return params[0]
    return None


def schema_names(context: ir.Context) -> SchemaNames:
    records = record_classes(context)
    alloc = naming.NameAlloc({cls for pair in records.values() for cls in pair})
    out = {a.name: alloc.take(naming.pascal(a.name) + "Out") for a in context.aggregates}
    op_input = {
        (a.name, o.name): alloc.take(naming.pascal(a.name) + naming.pascal(o.name) + "Input")
        for a in context.aggregates
        for o in a.operations
        if o.params and o.routed
    }
    workflow_input = {}
    for wf in context.workflows:
        create = http_create(wf)
        if create is not None and create.params and sole_payload(create.params) is None:
            workflow_input[wf.name] = alloc.take(naming.pascal(wf.name) + "Input")
    crud = [a for a in context.aggregates if a.crudish]
    create_input = {a.name: alloc.take(naming.pascal(a.name) + "CreateInput") for a in crud}
    update_input = {a.name: alloc.take(naming.pascal(a.name) + "UpdateInput") for a in crud}
    handler_input = {
        h.name: alloc.take(naming.pascal(h.name) + "Input")
        for h in context.handlers
        if h.kind == "command" and h.params and sole_payload(h.params) is None
    }
    return SchemaNames(
        out, op_input, workflow_input, create_input, update_input, handler_input, records
    )


def _field_line(
    name: str,
    t: ir.Type,
    types: TypeNames,
    imports: Imports,
    is_input: bool,
    default: str | None = None,
    force_field: bool = False,
) -> str:
    """One attribute line of a wire model (laid out over several lines when too long)."""
    text = _field_text(name, t, types, imports, is_input, default, force_field)
    return "\n".join(lay(text.removeprefix("    "), 1))


def _field_text(
    name: str,
    t: ir.Type,
    types: TypeNames,
    imports: Imports,
    is_input: bool,
    default: str | None = None,
    force_field: bool = False,
) -> str:
    """`default` is a `default=…` or `default_factory=…` argument for an input field."""
    attr = naming.schema_attr(name)
    annotation = types.render(t)
    alias = attr != name
    if default is None and is_input and isinstance(t, ir.OptionalType):
        default = "default=None"
    if alias or force_field or (default is not None and not default.startswith("default=")):
        imports.add("pydantic", "Field")
        # Inputs are only ever validated from JSON, so they take the wire name as their alias.
        # Outputs are built in code by attribute name (which type checkers see) and only
        # serialised under the wire name.
        kind = "alias" if is_input else "serialization_alias"
        args = ([default] if default else []) + ([f"{kind}={py_str(name)}"] if alias else [])
        return f"    {attr}: {annotation} = Field({', '.join(args)})"
    if default is not None:
        return f"    {attr}: {annotation} = {default.removeprefix('default=')}"
    return f"    {attr}: {annotation}"


def _strip_optional(t: ir.Type) -> ir.Type:
    return t.inner if isinstance(t, ir.OptionalType) else t


def wire_default(f: ir.Field) -> bool:
    """A field holding value objects with a default other than `[]`: its request member is
    nullable and defaults to null, and null stands for the declared default (built in the domain:
    a wire model has no rendering of a domain default)."""
    if f.default is None or record_of(f.type) is None:
        return False
    return not (isinstance(f.default, ir.ListLiteral) and not f.default.items)


def input_field(f: ir.Field, types: TypeNames, imports: Imports) -> str:
    """The request member of a field that has a default (a crudish create, a value object's or a
    payload's request model)."""
    if wire_default(f):
        return _field_line(f.name, ir.OptionalType(_strip_optional(f.type)), types, imports, True)
    return _field_line(f.name, f.type, types, imports, True, input_default(f, types, imports))


def field_to_domain(text: str, f: ir.Field, in_types: TypeNames, domain: Scope) -> str:
    """The request member `text` of field `f` as the domain takes it (see `wire_default`)."""
    if not wire_default(f):
        return wire_to_domain(text, f.type, in_types)
    assert f.default is not None
    rec = record_of(f.type)
    assert rec is not None
    default = f"lambda: {render_as(f.default, f.type, domain)}"
    fn = f"{in_types.render(rec)}.to_domain"
    inner = _strip_optional(f.type)
    helper = "map_list_or" if isinstance(inner, ir.ListType) else "map_or"
    in_types.imports.add("loom.runtime.types", helper)
    return f"{helper}({text}, convert={fn}, default={default})"


def input_default(f: ir.Field, types: TypeNames, imports: Imports) -> str | None:
    """A create input's default: the field's declared default, as pydantic takes it."""
    if f.default is None:
        return None
    expr = f.default
    if isinstance(expr, ir.Now):
        imports.add("loom.runtime", "now")
        return "default_factory=now"
    if isinstance(expr, ir.ListLiteral) and not expr.items:
        return "default_factory=list"
    domain = TypeNames(types.info, types.context, imports, mode="domain")
    text = render_as(expr, f.type, Scope(imports=imports, enum_ref=domain.enum_ref))
    if isinstance(expr, ir.Literal_ | ir.EnumMember) or (
        isinstance(expr, ir.Unary) and isinstance(expr.operand, ir.Literal_)
    ):
        return f"default={text}"
    return f"default_factory=lambda: {text}"


def _create_class(cls: str, agg: ir.Aggregate, types: TypeNames, imports: Imports) -> list[str]:
    doc = f"The body of crudish create of {agg.name} ({where(agg.origin)})"
    if agg.factory is not None:
        lines = _input_head(cls, doc, {}, imports) + [""]
        return lines + [
            _field_line(p.name, p.type, types, imports, True) for p in agg.factory.params
        ]
    refused = {"read_only": [f.name for f in agg.fields if f.read_only]}
    lines = _input_head(cls, doc, refused, imports) + [""]
    return lines + [input_field(f, types, imports) for f in agg.fields if not f.read_only]


def _input_head(cls: str, doc: str, refused: dict[str, list[str]], imports: Imports) -> list[str]:
    """The head of a crudish body's class. With fields it refuses by name (`immutable`,
    `read_only`: a member naming one is refused as such, not as unknown), on `PatchInput`."""
    refused = {kind: names for kind, names in refused.items() if names}
    if not refused:
        imports.add("pydantic", "BaseModel", "ConfigDict")
        config = '    model_config = ConfigDict(extra="forbid")'
        return [f"class {cls}(BaseModel):", f"    {docstring(doc)}", "", config]
    imports.add("loom.runtime", "PatchInput")
    lines = [f"class {cls}(PatchInput):", f"    {docstring(doc)}", ""]
    for kind, names in refused.items():
        quoted = [py_str(name) for name in names]
        if len(quoted) == 1:
            lines.append(f"    {kind} = ({quoted[0]},)")
        else:
            lines += lay(Group(f"{kind} = (", quoted, ")"), 1)
    return lines


def _update_class(cls: str, agg: ir.Aggregate, types: TypeNames, imports: Imports) -> list[str]:
    doc = f"The body of crudish update of {agg.name}: any mutable fields ({where(agg.origin)})"
    refused = {
        "immutable": [f.name for f in agg.fields if f.immutable],
        "read_only": [f.name for f in agg.fields if f.read_only and not f.immutable],
    }
    lines = _input_head(cls, doc, refused, imports)
    # absent members keep their value (the route refuses `null` for a non-optional field)
    fields = [
        _field_line(
            f.name,
            f.type if isinstance(f.type, ir.OptionalType) else ir.OptionalType(f.type),
            types,
            imports,
            True,
        )
        for f in agg.updatable_fields
    ]
    return lines + ([""] + fields if fields else [])


def _input_class(
    cls: str, doc: str, params: tuple[ir.Parameter, ...], types: TypeNames, imports: Imports
) -> list[str]:
    lines = _input_head(cls, doc, {}, imports) + [""]
    return lines + [_field_line(p.name, p.type, types, imports, True) for p in params]


def _out_class(cls: str, agg: ir.Aggregate, out_types: TypeNames, imports: Imports) -> list[str]:
    imports.add("pydantic", "BaseModel")
    imports.add("typing", "Self")
    agg_cls = out_types.domain_name(agg.context, naming.pascal(agg.name))
    id_t = out_types.id_name(agg.context, agg.name)
    lines = [
        f"class {cls}(BaseModel):",
        f"    {docstring(f'{agg.name} as the API answers it (aggregate {agg.name}, {where(agg.origin)})')}",
        "",
        f"    id: {id_t}",
        "    version: int",
    ]
    members: list[tuple[str, ir.Type]] = [(f.name, f.type) for f in agg.fields]
    members += [(d.name, d.type) for d in agg.derived]
    lines += [_field_line(name, t, out_types, imports, False) for name, t in members]
    var = naming.NameAlloc({"cls"}).take(naming.snake(agg.name))
    lines += [
        "",
        "    @classmethod",
        f"    def from_aggregate(cls, {var}: {agg_cls}) -> Self:",
        f"        {docstring(f'The wire form of aggregate {agg.name}.')}",
    ]
    kwargs = [f"id={var}.id", f"version={var}.version"]
    kwargs += [
        f"{naming.schema_attr(name)}={domain_to_wire(f'{var}.{naming.ident(name)}', t, out_types)}"
        for name, t in members
    ]
    lines += lay(call("cls", kwargs, prefix="return "), 2)
    return lines


# a pending timeout of a process instance: the runtime's one schema (loom.runtime)
PENDING_TIMEOUT_OUT = "InstanceTimeoutOut"


def _instance_class(wf: Keyed, out_types: TypeNames, imports: Imports) -> list[str]:
    """`{"<correlation>": id, "version": n, <state fields>…}`; a projection's row alike."""
    imports.add("pydantic", "BaseModel")
    imports.add("typing", "Self")
    imports.add("loom.runtime", "instance_version")
    state = out_types.domain_name(wf.context, state_class(wf))
    cls = instance_out_class(wf)
    what = "an instance of workflow" if isinstance(wf, ir.Workflow) else "a row of projection"
    doc = f"{what} {wf.name} as the API answers it ({where(wf.origin)})"
    fields = keyed_fields(wf)
    key = next(f for f in fields if f.name == key_of(wf))
    members = [key] + [f for f in fields if f.name != key.name]
    lines = [f"class {cls}(BaseModel):", f"    {docstring(doc)}", ""]
    lines.append(_field_line(key.name, key.type, out_types, imports, False))
    lines.append("    version: int")
    lines += [_field_line(f.name, f.type, out_types, imports, False) for f in members[1:]]
    process = isinstance(wf, ir.Workflow) and wf.process
    params = f"cls, state: {state}"
    if process:
        imports.add("collections.abc", "Sequence")
        imports.add("loom.runtime.processes", "PendingTimeout")
        imports.add("loom.runtime", PENDING_TIMEOUT_OUT)
        lines.append(f"    timeouts: list[{PENDING_TIMEOUT_OUT}]")
        params += ", timeouts: Sequence[PendingTimeout] = ()"
    lines += [
        "",
        "    @classmethod",
        *lay(Group("def from_state(", params.split(", "), ") -> Self:"), 1),
        f"        {docstring(f'The wire form of {what} {wf.name}.')}",
    ]
    kwargs = [f"{naming.schema_attr(key.name)}=state.{naming.ident(key.name)}"]
    kwargs.append("version=instance_version(state)")
    kwargs += [
        f"{naming.schema_attr(f.name)}={domain_to_wire(f'state.{naming.ident(f.name)}', f.type, out_types)}"
        for f in members[1:]
    ]
    if process:
        item = f"{PENDING_TIMEOUT_OUT}.model_validate(t)"
        kwargs.append(f"timeouts=[{item} for t in timeouts]")
    lines += lay(call("cls", kwargs, prefix="return "), 2)
    return lines


def _record_order(context: ir.Context) -> list[ir.ValueObject | ir.Payload]:
    """Value objects and payloads, each after the value objects its fields hold (class bodies refer
    to the models they nest)."""
    by_name = {r.name: r for r in context.records}
    out: list[ir.ValueObject | ir.Payload] = []

    def visit(rec: ir.ValueObject | ir.Payload) -> None:
        if rec in out:
            return
        for f in rec.fields:
            dep = record_of(f.type)
            if dep is not None and dep.context == context.name and by_name.get(dep.name) is not rec:
                visit(by_name[dep.name])
        out.append(rec)

    for rec in by_name.values():
        visit(rec)
    return out


def _record_classes(
    rec: ir.ValueObject | ir.Payload,
    sn: SchemaNames,
    in_types: TypeNames,
    out_types: TypeNames,
    imports: Imports,
) -> list[list[str]]:
    """`<Name>Input` (with `to_domain()`) and `<Name>Out` (with `from_value(v)`) of a record."""
    imports.add("pydantic", "BaseModel", "ConfigDict")
    imports.add("typing", "Self")
    in_cls, out_cls = sn.records[rec.name]
    domain = TypeNames(in_types.info, in_types.context, imports, mode="domain")
    cls = domain.render(
        ir.ValueType(rec.name, rec.context)
        if isinstance(rec, ir.ValueObject)
        else ir.PayloadType(rec.name, rec.context, rec.kind)
    )
    what = f"value {rec.name}" if isinstance(rec, ir.ValueObject) else f"{rec.kind} {rec.name}"
    scope = Scope(imports=imports, enum_ref=domain.enum_ref, self_name=None)
    checked = " (its invariants checked)" if isinstance(rec, ir.ValueObject) else ""
    request = [
        f"class {in_cls}(BaseModel):",
        f"    {docstring(f'{what} as a request carries it ({where(rec.origin)})')}",
        "",
        '    model_config = ConfigDict(extra="forbid")',
    ]
    if rec.fields:
        request.append("")
    # a query payload is read from a query string (text), every other record from a JSON body
    member_types = in_types
    if isinstance(rec, ir.Payload) and rec.kind == "query":
        member_types = TypeNames(in_types.info, in_types.context, imports, "query", in_schemas=True)
    request += [input_field(f, member_types, imports) for f in rec.fields]
    kwargs = [
        f"{naming.ident(f.name)}="
        + field_to_domain(f"self.{naming.schema_attr(f.name)}", f, in_types, scope)
        for f in rec.fields
    ]
    request += [
        "",
        f"    def to_domain(self) -> {cls}:",
        f"        {docstring(f'The domain {what}{checked}.')}",
        *lay(call(cls, kwargs, prefix="return "), 2),
    ]
    response = [
        f"class {out_cls}(BaseModel):",
        f"    {docstring(f'{what} as the API answers it ({where(rec.origin)})')}",
    ]
    if rec.fields:
        response.append("")
    response += [_field_line(f.name, f.type, out_types, imports, False) for f in rec.fields]
    var = "value"
    kwargs = [
        f"{naming.schema_attr(f.name)}={domain_to_wire(f'{var}.{naming.ident(f.name)}', f.type, out_types)}"
        for f in rec.fields
    ]
    response += [
        "",
        "    @classmethod",
        f"    def from_value(cls, {var}: {cls}) -> Self:",
        f"        {docstring(f'The wire form of {what}.')}",
        *lay(call("cls", kwargs, prefix="return "), 2),
    ]
    return [request, response]


def emit_schemas(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    in_types = TypeNames(info, context, imports, mode="input", in_schemas=True)
    out_types = TypeNames(info, context, imports, mode="output", in_schemas=True)
    sn = schema_names(context)
    blocks: list[list[str]] = []
    for rec in _record_order(context):
        blocks += _record_classes(rec, sn, in_types, out_types, imports)
    for agg in context.aggregates:
        blocks.append(_out_class(sn.out[agg.name], agg, out_types, imports))
        if agg.name in sn.create_input:
            blocks.append(_create_class(sn.create_input[agg.name], agg, in_types, imports))
            blocks.append(_update_class(sn.update_input[agg.name], agg, in_types, imports))
        for op in agg.operations:
            key = (agg.name, op.name)
            if key in sn.op_input:
                doc = f"The body of operation {agg.name}.{op.name} ({where(op.origin)})"
                blocks.append(_input_class(sn.op_input[key], doc, op.params, in_types, imports))
    for wf in context.workflows:
        create = http_create(wf)
        if create is not None and wf.name in sn.workflow_input:
            doc = f"The body of workflow {wf.name} ({where(create.origin)})"
            blocks.append(
                _input_class(sn.workflow_input[wf.name], doc, create.params, in_types, imports)
            )
    for rows in keyed(context):
        blocks.append(_instance_class(rows, out_types, imports))
    for h in context.handlers:
        if h.name in sn.handler_input:
            doc = f"The body of commandHandler {h.name} ({where(h.origin)})"
            blocks.append(_input_class(sn.handler_input[h.name], doc, h.params, in_types, imports))
    head = header(info.files_of(context), f"Wire models of context {context.name}.")
    return module_text(head, imports, blocks)
