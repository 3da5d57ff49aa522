"""`<context>/handlers.py` (only for a context with handlers): command and query handlers.

- `commandHandler Name(params) [: T] [transactional[(level)]]` -> `POST /api/commands/<snake>`, the
  JSON body holds the parameters; 204, or 200 with the value. It runs like a workflow create:
  `service.transaction(...)` when transactional, else `service.autocommit()`.
- `queryHandler Name(params): T` -> `GET /api/queries/<snake>?param=…` (list parameters repeat the
  key); 200 with the value. It runs in `service.autocommit()` and only reads.

Aggregates in a result cross the wire as their `<Aggregate>Out` JSON (lists as arrays, a missing
optional as `null`).
"""

from __future__ import annotations

from loom.codegen.python.bodies import BodyWriter, body_params
from loom.codegen.python.checks import entry_gate
from loom.codegen.python.expressions import Scope
from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import Group, lay
from loom.codegen.python.literals import py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.route_docs import body_read_rules, route_doc
from loom.codegen.python.routes import (
    ROUTE_LOCALS,
    ROUTE_NAMES,
    SERVICE_PARAM,
    decorator,
    route_imports,
    router_line,
)
from loom.codegen.python.schemas import SchemaNames, schema_names, sole_payload
from loom.codegen.python.type_names import TypeNames
from loom.codegen.python.wire import domain_to_wire
from loom.model import ir, naming, telemetry, walk


def emit_handlers(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    sn = schema_names(context)
    functions = naming.NameAlloc(
        ROUTE_NAMES | {"Annotated", "Query", "now", "require", "not_found", "Decimal"}
    )
    blocks: list[list[str]] = [[router_line(context, imports)]]
    for handler in context.handlers:
        blocks.append(_handler(info, context, handler, sn, imports, functions))
    head = header(info.files_of(context), f"Command and query handlers of context {context.name}.")
    return module_text(head, imports, blocks)


def wire_result(
    t: ir.Type, text: str, sn: SchemaNames, out_types: TypeNames, imports: Imports
) -> tuple[str, str]:
    """(return annotation, expression) of a value as the API answers it."""
    inner = t.inner if isinstance(t, ir.OptionalType) else t
    if isinstance(t, ir.ListType):
        inner = t.element
    if isinstance(inner, ir.AggregateType) and inner.name in sn.out:
        out = sn.out[inner.name]
        imports.add(".schemas", out)
        if isinstance(t, ir.ListType):
            return f"list[{out}]", f"[{out}.from_aggregate(item) for item in {text}]"
        if isinstance(t, ir.OptionalType):
            return f"{out} | None", f"None if {text} is None else {out}.from_aggregate({text})"
        return out, f"{out}.from_aggregate({text})"
    return out_types.render(t), domain_to_wire(text, t, out_types)


def _handler(
    info: ModelInfo,
    context: ir.Context,
    handler: ir.Handler,
    sn: SchemaNames,
    imports: Imports,
    functions: naming.NameAlloc,
) -> list[str]:
    domain_types = TypeNames(info, context, imports, mode="domain")
    command = handler.kind == "command"
    # a command's parameters come in a JSON body, a query's in the query string
    in_types = TypeNames(info, context, imports, mode="input" if command else "query")
    out_types = TypeNames(info, context, imports, mode="output")
    fn = functions.take(naming.ident(handler.name))
    tag = telemetry.route_tag(context.name, telemetry.HANDLERS_TAG)
    alloc = naming.NameAlloc(ROUTE_LOCALS)
    params: list[str] = []
    py: dict[str, str] = {}
    if command:
        path = f"/api/commands/{naming.snake(handler.name)}"
        status = 200 if handler.result is not None else 204
        op_id = naming.operation_id(None, handler.name)
        calls = walk.calls_api(handler.body)
        lines = decorator("post", path, tag, op_id, imports, status, calls)
        if handler.name in sn.handler_input:
            imports.add(".schemas", sn.handler_input[handler.name])
            params.append(f"body: {sn.handler_input[handler.name]}")
        elif handler.params:  # one payload parameter: the body is the payload
            params.append(f"body: {in_types.render(handler.params[0].type)}")
        py, built = body_params(handler.params, alloc, in_types)
        params.append(SERVICE_PARAM)
    else:
        if handler.params:  # a query handler without parameters has no query string
            imports.add("typing", "Annotated")
            imports.add("fastapi", "Query")
        path = f"/api/queries/{naming.snake(handler.name)}"
        op_id = naming.operation_id(None, handler.name)
        calls = walk.calls_api(handler.body)
        lines = decorator("get", path, tag, op_id, imports, None, calls)
        params.append(SERVICE_PARAM)
        optional: list[str] = []
        built = []
        whole = sole_payload(handler.params)
        for p in handler.params:
            var = alloc.take(naming.ident(p.name))
            py[p.name] = var
            if p is whole:  # one payload parameter: its fields are the query parameters
                params.append(f"{var}: Annotated[{in_types.render(p.type)}, Query()]")
                py[p.name] = alloc.take(var + "_")
                built += lay(f"{py[p.name]} = {var}.to_domain()", 1)
                continue
            query_args = [f"alias={py_str(p.name)}"] if var != p.name else []
            if isinstance(p.type, ir.ListType):
                # a query string cannot spell an empty list but by leaving its key out
                query_args.append("default_factory=list")
            query = f"Query({', '.join(query_args)})"
            item = f"{var}: Annotated[{in_types.render(p.type)}, {query}]"
            if isinstance(p.type, ir.OptionalType):
                optional.append(item + " = None")
            else:
                params.append(item)
        params += optional
    if handler.result is not None:
        result_t, result_expr = wire_result(handler.result, "result", sn, out_types, imports)
    else:
        result_t, result_expr = "None", ""
    lines += lay(Group(f"async def {fn}(", params, f") -> {result_t}:"))
    kind = "commandHandler" if command else "queryHandler"
    if not command:
        mode = "read-only"
    elif handler.transactional:
        mode = "transactional" + (f"({handler.isolation})" if handler.isolation else "")
    else:
        mode = "non-transactional: each save commits on its own"
    summary = f"{kind} {handler.name} ({where(handler.origin)}): {mode}"
    lines += route_doc(summary, body_read_rules(context, handler.body))
    lines += built

    scope = Scope(imports=imports, enum_ref=domain_types.enum_ref, self_name=None, params=py)
    lines += entry_gate(handler.requires, f"{kind} {handler.name}", scope)
    writer = BodyWriter(
        info,
        context,
        imports,
        domain_types,
        scope,
        f"{kind} {handler.name}",
        alloc.taken,
        result=handler.result,
        autocommit=not (command and handler.transactional),
    )
    result_agg = handler.result
    while isinstance(result_agg, ir.OptionalType | ir.ListType):
        result_agg = (
            result_agg.inner if isinstance(result_agg, ir.OptionalType) else result_agg.element
        )
    if isinstance(result_agg, ir.AggregateType):
        writer.default_miss = result_agg.name
    writer.prepare(handler.body)
    if isinstance(handler.result, ir.OptionalType):
        lines.append(f"    result: {domain_types.render(handler.result)} = None")
    as_work = " as work" if writer.uses_work(handler.body) else ""
    if not writer.autocommit:
        arg = f"isolation={py_str(handler.isolation)}" if handler.isolation else ""
        lines.append(f"    async with service.transaction({arg}){as_work}:")
    else:
        lines.append(f"    async with service.autocommit(){as_work}:")
    body = writer.repo_lines(2) + writer.block(handler.body, 2)
    lines += body or ["        pass"]
    if handler.result is not None:
        lines += lay(f"return {result_expr}", 1)
    return lines
