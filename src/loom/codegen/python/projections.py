"""`<context>/projections.py`: the read routes of the context's projections.

    GET /api/projections/<projection>/{key}          one row (404 until an event made it)
    GET /api/projections/<projection>?limit&offset   a page of rows, ordered by key

A projection is read only here: its rows change in its reactions (`reactions.py`), never through a
route, and a workflow cannot read them.
"""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import instance_out_class, instances_class
from loom.codegen.python.layout import Group, lay
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.route_docs import projection_rule, route_doc
from loom.codegen.python.routes import (
    ROUTE_NAMES,
    SERVICE_PARAM,
    decorator,
    route_imports,
    router_line,
)
from loom.model import ir, naming, telemetry


def _key_annotation(t: ir.Type, imports: Imports) -> str:
    if isinstance(t, ir.IdType):
        imports.add("uuid", "UUID")
        return "UUID"
    if t == ir.INT:
        imports.add("loom.runtime", "Int64")
        return "Int64"
    if t == ir.STRING:  # no NUL or lone surrogate: a 422 on every engine, as in a body
        imports.add("loom.runtime", "WireText")
        return "WireText"
    return "str"


def emit_projections(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    imports.add("typing", "Annotated")
    imports.add("fastapi", "Query")
    imports.add("loom.runtime", "Page", "PageLimit", "PageOffset")
    functions = naming.NameAlloc(
        ROUTE_NAMES | {"Annotated", "Query", "Page", "PageLimit", "PageOffset"}
    )
    blocks: list[list[str]] = [[router_line(context, imports)]]
    for p in context.projections:
        store, out = instances_class(p), instance_out_class(p)
        imports.add(".repositories", store)
        imports.add(".schemas", out)
        snake = naming.snake(p.name)
        tag = telemetry.route_tag(context.name, telemetry.PROJECTIONS_TAG)
        key = next(f for f in p.fields if f.name == p.key)

        fn = functions.take(f"get_{snake}")
        block = decorator(
            "get",
            f"/api/projections/{snake}/{{key}}",
            tag,
            naming.operation_id(p.name, "get"),
            imports,
        )
        params = [f"key: {_key_annotation(key.type, imports)}", SERVICE_PARAM]
        block += lay(Group(f"async def {fn}(", params, f") -> {out}:"))
        doc = f"Read the row of projection {p.name} keyed by its {p.key} ({where(p.origin)})"
        block += route_doc(doc, projection_rule(p))
        block.append("    async with service.autocommit() as work:")
        block.append(f"        row = await {store}(work).get(key)")
        block.append(f"    return {out}.from_state(row)")
        blocks.append(block)

        fn = functions.take(f"list_{snake}")
        block = decorator(
            "get", f"/api/projections/{snake}", tag, naming.operation_id(p.name, "list"), imports
        )
        params = [
            SERVICE_PARAM,
            "limit: Annotated[PageLimit, Query()] = 50",
            "offset: Annotated[PageOffset, Query()] = 0",
        ]
        block += lay(Group(f"async def {fn}(", params, f") -> Page[{out}]:"))
        doc = f"Read a page of projection {p.name}, ordered by {p.key} ({where(p.origin)})"
        block += route_doc(doc, projection_rule(p))
        block.append("    async with service.autocommit() as work:")
        block.append(f"        page = await {store}(work).page(limit, offset)")
        block += lay(f"return page.map({out}.from_state)", 1)
        blocks.append(block)
    head = header(info.files_of(context), f"Projection routes of context {context.name}.")
    return module_text(head, imports, blocks)
