"""`<context>/schemas.py`: the Pydantic wire models.

Attributes are snake_case; a pydantic alias keeps the model's spelling on the wire (`openedAt`,
`fromAccount`, `from`). Request bodies forbid unknown members. `<Aggregate>Out` carries `id`,
`version`, every field and every derived value, and builds itself from an aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.codegen.python import names
from loom.codegen.python._code import (
    Imports,
    call,
    docstring,
    header,
    lay,
    module_text,
    py_str,
    where,
)
from loom.codegen.python._shared import ModelInfo, NameAlloc, TypeNames, schema_attr
from loom.model import ir


@dataclass(frozen=True)
class SchemaNames:
    """Class names of one context's schemas."""

    out: dict[str, str]  # aggregate -> AccountOut
    op_input: dict[tuple[str, str], str]  # (aggregate, operation) -> AccountWithdrawInput
    workflow_input: dict[str, str]  # workflow -> TransferInput


def http_create(wf: ir.Workflow) -> ir.WorkflowCreate | None:
    """The create a workflow's HTTP route runs: the first one not triggered by an event."""
    for create in wf.creates:
        if not any(isinstance(p.type, ir.EventType) for p in create.params):
            return create
    return None


def schema_names(context: ir.Context) -> SchemaNames:
    alloc = NameAlloc()
    out = {a.name: alloc.take(names.pascal(a.name) + "Out") for a in context.aggregates}
    op_input = {
        (a.name, o.name): alloc.take(names.pascal(a.name) + names.pascal(o.name) + "Input")
        for a in context.aggregates
        for o in a.operations
        if o.params
    }
    workflow_input = {}
    for wf in context.workflows:
        create = http_create(wf)
        if create is not None and create.params:
            workflow_input[wf.name] = alloc.take(names.pascal(wf.name) + "Input")
    return SchemaNames(out, op_input, workflow_input)


def _field_line(
    name: str, t: ir.Type, types: TypeNames, imports: Imports, is_input: bool
) -> str:
    attr = schema_attr(name)
    annotation = types.render(t)
    alias = attr != name
    default = is_input and isinstance(t, ir.OptionalType)
    if alias:
        imports.add("pydantic", "Field")
        # Inputs are only ever validated from JSON, so they take the wire name as their alias.
        # Outputs are built in code by attribute name (which type checkers see) and only
        # serialised under the wire name.
        kind = "alias" if is_input else "serialization_alias"
        args = (["default=None"] if default else []) + [f"{kind}={py_str(name)}"]
        return f"    {attr}: {annotation} = Field({', '.join(args)})"
    if default:
        return f"    {attr}: {annotation} = None"
    return f"    {attr}: {annotation}"


def _input_class(
    cls: str, doc: str, params: tuple[ir.Parameter, ...], types: TypeNames, imports: Imports
) -> list[str]:
    imports.add("pydantic", "BaseModel", "ConfigDict")
    lines = [
        f"class {cls}(BaseModel):",
        f"    {docstring(doc)}",
        "",
        '    model_config = ConfigDict(extra="forbid")',
        "",
    ]
    lines += [_field_line(p.name, p.type, types, imports, True) for p in params]
    return lines


def _out_class(cls: str, agg: ir.Aggregate, out_types: TypeNames, imports: Imports) -> list[str]:
    imports.add("pydantic", "BaseModel")
    imports.add("typing", "Self")
    agg_cls = out_types.domain_name(agg.context, names.pascal(agg.name))
    id_t = out_types.domain_name(agg.context, names.id_type(agg.name))
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
    var = NameAlloc({"cls"}).take(names.snake(agg.name))
    lines += [
        "",
        "    @classmethod",
        f"    def from_aggregate(cls, {var}: {agg_cls}) -> Self:",
        f"        {docstring(f'The wire form of aggregate {agg.name}.')}",
    ]
    kwargs = [f"id={var}.id", f"version={var}.version"]
    kwargs += [f"{schema_attr(name)}={var}.{names.ident(name)}" for name, _ in members]
    lines += lay(call("cls", kwargs, prefix="return "), 2)
    return lines


def emit_schemas(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    in_types = TypeNames(info, context, imports, mode="input")
    out_types = TypeNames(info, context, imports, mode="output")
    sn = schema_names(context)
    blocks: list[list[str]] = []
    for agg in context.aggregates:
        blocks.append(_out_class(sn.out[agg.name], agg, out_types, imports))
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
    head = header(info.files_of(context), f"Wire models of context {context.name}.")
    return module_text(head, imports, blocks)
