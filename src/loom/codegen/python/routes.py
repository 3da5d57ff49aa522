"""`<context>/routes.py`: per aggregate, GET one, GET a page and POST one route per operation.

An operation route loads the aggregate, calls the domain method and saves, all in one transaction:
a refusal raises before the save, so nothing is written.
"""

from __future__ import annotations

from loom.codegen.python import names
from loom.codegen.python._code import (
    Group,
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
from loom.codegen.python.schemas import schema_names
from loom.model import ir

SERVICE_PARAM = "service: Annotated[Service, Depends(get_service)]"


def route_imports(imports: Imports) -> None:
    imports.add("typing", "Annotated")
    imports.add("fastapi", "APIRouter", "Depends")
    imports.add("loom.runtime", "PROBLEM_RESPONSES", "LoomRoute", "Service", "get_service")


def decorator(method: str, path: str, tag: str, status: int | None = None) -> list[str]:
    args = [py_str(path)]
    if status is not None:
        args.append(f"status_code={status}")
    args += ["responses=PROBLEM_RESPONSES", f"tags=[{py_str(tag)}]"]
    return lay(call(f"@router.{method}", args))


def emit_routes(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    types = TypeNames(info, context, imports, mode="domain")
    sn = schema_names(context)
    functions = NameAlloc(
        {"router", "Annotated", "APIRouter", "Depends", "Query", "Service", "LoomRoute", "UUID"}
        | {"get_service", "PROBLEM_RESPONSES", "Page", "PageLimit", "PageOffset"}
    )
    blocks: list[list[str]] = [["router = APIRouter(route_class=LoomRoute)"]]
    for agg in context.aggregates:
        repo = info.repository_class(context, agg.name)
        out = sn.out[agg.name]
        plural = names.plural_snake(agg.name)
        var = NameAlloc({"id", "service", "work", "body", "limit", "offset"}).take(
            names.snake(agg.name)
        )
        tag = f"{context.name}: {agg.name}"
        imports.add(".repositories", repo)
        imports.add(".schemas", out)
        imports.add("uuid", "UUID")

        # GET one
        fn = functions.take(f"get_{names.snake(agg.name)}")
        block = decorator("get", f"/api/{plural}/{{id}}", tag)
        block += lay(Group(f"async def {fn}(", ["id: UUID", SERVICE_PARAM], f") -> {out}:"))
        block.append(
            f"    {docstring(f'Read one {agg.name} (aggregate {agg.name}, {where(agg.origin)})')}"
        )
        block.append("    async with service.autocommit() as work:")
        block += lay(f"{var} = await {repo}(work).get_by_id(id)", 2)
        block.append(f"    return {out}.from_aggregate({var})")
        blocks.append(block)

        # GET page
        imports.add("fastapi", "Query")
        imports.add("loom.runtime", "Page", "PageLimit", "PageOffset")
        fn = functions.take(f"list_{plural}")
        block = decorator("get", f"/api/{plural}", tag)
        params = [
            SERVICE_PARAM,
            "limit: Annotated[PageLimit, Query()] = 50",
            "offset: Annotated[PageOffset, Query()] = 0",
        ]
        block += lay(Group(f"async def {fn}(", params, f") -> Page[{out}]:"))
        block.append(
            f"    {docstring(f'Read a page of {agg.name} (aggregate {agg.name}, {where(agg.origin)})')}"
        )
        block.append("    async with service.autocommit() as work:")
        block.append(f"        page = await {repo}(work).page(limit, offset)")
        block += lay(f"return page.map({out}.from_aggregate)", 1)
        blocks.append(block)

        # POST operation
        for op in agg.operations:
            fn = functions.take(f"{names.snake(agg.name)}_{names.snake(op.name)}")
            path = f"/api/{plural}/{{id}}/{names.snake(op.name)}"
            block = decorator("post", path, tag, status=204)
            params = ["id: UUID"]
            key = (agg.name, op.name)
            if key in sn.op_input:
                imports.add(".schemas", sn.op_input[key])
                params.append(f"body: {sn.op_input[key]}")
            params.append(SERVICE_PARAM)
            block += lay(Group(f"async def {fn}(", params, ") -> None:"))
            block.append(f"    {docstring(f'operation {agg.name}.{op.name} ({where(op.origin)})')}")
            block.append("    async with service.transaction() as work:")
            repo_var = NameAlloc({var, "id", "service", "work", "body"}).take(plural)
            block.append(f"        {repo_var} = {repo}(work)")
            block.append(f"        {var} = await {repo_var}.get_by_id(id)")
            args = [wire_to_domain(f"body.{schema_attr(p.name)}", p.type, types) for p in op.params]
            block += lay(call(f"{var}.{names.ident(op.name)}", args), 2)
            block.append(f"        await {repo_var}.save({var})")
            blocks.append(block)
    head = header(info.files_of(context), f"Aggregate routes of context {context.name}.")
    return module_text(head, imports, blocks)


def wire_to_domain(text: str, t: ir.Type, types: TypeNames) -> str:
    """A request value as the domain takes it. Schemas already use the domain's id NewTypes and
    enums, so nothing needs converting today; kept as the one place to do it."""
    del types, t
    return text
