"""`<context>/routes.py`: per aggregate, GET one, GET a page and POST one route per operation (not
for private or internal operations); a crudish aggregate also gets POST (create, 201 + Location),
PATCH (the mutable fields the body names; an immutable or unknown member is a 422 invalid-request)
and DELETE.

An operation route loads the aggregate, calls the domain method and saves, all in one transaction:
a refusal raises before the save, so nothing is written.
"""

from __future__ import annotations

from loom.codegen.python.checks import has_extern_checks, has_invariants
from loom.codegen.python.expressions import Scope, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import Group, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.repositories import call_args, find_method
from loom.codegen.python.route_docs import operation_rules, read_rule, route_doc
from loom.codegen.python.schemas import SchemaNames, field_to_domain, schema_names
from loom.codegen.python.type_names import TypeNames
from loom.codegen.python.wire import domain_to_wire
from loom.codegen.python.wire import wire_to_domain as _wire_to_domain
from loom.model import ir, naming, telemetry

# A route takes the app's Service as a parameter (`service: ServiceDep`, an async dependency:
# FastAPI solves it on the event loop, not in a worker thread).
SERVICE_PARAM = "service: ServiceDep"
# names every route module defines or imports
ROUTE_NAMES = {
    "router",
    "APIRouter",
    "LoomRoute",
    "ServiceDep",
    "PROBLEM_RESPONSES",
    "READ_PROBLEM_RESPONSES",
    "API_CALL_RESPONSES",
    "API_CALL_READ_RESPONSES",
    "Depends",
    "require_tenant",
}
# the locals a workflow or handler route defines, which the model's names must not shadow
ROUTE_LOCALS = frozenset(
    {"body", "request", "service", "work", "result", "self", "cls", "now", "require", "router"}
)


def route_imports(imports: Imports) -> None:
    imports.add("fastapi", "APIRouter")
    imports.add("loom.runtime", "LoomRoute", "ServiceDep")


def router_line(context: ir.Context, imports: Imports) -> str:
    """The module's router: a tenanted context's refuses a caller without a tenant (401 / 403)
    before any of its routes runs."""
    if not context.tenanted:
        return "router = APIRouter(route_class=LoomRoute)"
    imports.add("fastapi", "Depends")
    imports.add("loom.runtime", "require_tenant")
    return "router = APIRouter(route_class=LoomRoute, dependencies=[Depends(require_tenant)])"


def decorator(
    method: str,
    path: str,
    tag: str,
    op_id: str,
    imports: Imports,
    status: int | None = None,
    calls_api: bool = False,
) -> list[str]:
    """The route's decorator; `calls_api` (its body calls another context's handler) adds the 502
    / 504 answers to its OpenAPI responses. A GET route does not list 409 nor 413: it writes
    nothing, and reads no body."""
    args = [py_str(path)]
    if status is not None:
        args.append(f"status_code={status}")
    read = "READ_" if method == "get" else ""
    responses = f"API_CALL_{read}RESPONSES" if calls_api else f"{read}PROBLEM_RESPONSES"
    imports.add("loom.runtime", responses)
    args += [f"responses={responses}", f"tags=[{py_str(tag)}]", f"operation_id={py_str(op_id)}"]
    return lay(call(f"@router.{method}", args))


def emit_routes(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    types = TypeNames(info, context, imports, mode="domain")
    sn = schema_names(context)
    functions = naming.NameAlloc(
        ROUTE_NAMES
        | {"Annotated", "Query", "UUID", "Page", "PageLimit", "PageOffset", "key_not_found"}
    )
    blocks: list[list[str]] = [[router_line(context, imports)]]
    for agg in context.aggregates:
        repo = info.repository_class(context, agg.name)
        out = sn.out[agg.name]
        plural = naming.plural_snake(agg.name)
        var = naming.NameAlloc(
            {"id", "request", "service", "work", "body", "limit", "offset"}
        ).take(naming.snake(agg.name))
        tag = telemetry.route_tag(context.name, agg.name)
        imports.add(".repositories", repo)
        imports.add(".schemas", out)
        imports.add("uuid", "UUID")

        # GET one
        fn = functions.take(f"get_{naming.snake(agg.name)}")
        block = decorator(
            "get", f"/api/{plural}/{{id}}", tag, naming.operation_id(agg.name, "get"), imports
        )
        block += lay(Group(f"async def {fn}(", ["id: UUID", SERVICE_PARAM], f") -> {out}:"))
        reads = read_rule(context, agg.name)
        block += route_doc(
            f"Read one {agg.name} (aggregate {agg.name}, {where(agg.origin)})", reads
        )
        block.append("    async with service.autocommit() as work:")
        block += lay(f"{var} = await {repo}(work).get_by_id(id)", 2)
        block.append(f"    return {out}.from_aggregate({var})")
        blocks.append(block)

        # GET page
        imports.add("typing", "Annotated")
        imports.add("fastapi", "Query")
        imports.add("loom.runtime", "Page", "PageLimit", "PageOffset")
        fn = functions.take(f"list_{plural}")
        block = decorator(
            "get", f"/api/{plural}", tag, naming.operation_id(agg.name, "list"), imports
        )
        params = [
            SERVICE_PARAM,
            "limit: Annotated[PageLimit, Query()] = 50",
            "offset: Annotated[PageOffset, Query()] = 0",
        ]
        block += lay(Group(f"async def {fn}(", params, f") -> Page[{out}]:"))
        block += route_doc(
            f"Read a page of {agg.name} (aggregate {agg.name}, {where(agg.origin)})", reads
        )
        block.append("    async with service.autocommit() as work:")
        block.append(f"        page = await {repo}(work).page(limit, offset)")
        block += lay(f"return page.map({out}.from_aggregate)", 1)
        blocks.append(block)

        blocks += _find_routes(info, context, agg, out, var, functions, imports)

        if agg.crudish:
            blocks += _crudish(info, context, agg, sn, var, functions, imports)

        # POST operation
        for op in agg.operations:
            if not op.routed:
                continue
            fn = functions.take(f"{naming.snake(agg.name)}_{naming.snake(op.name)}")
            path = f"/api/{plural}/{{id}}/{naming.snake(op.name)}"
            status = 200 if op.extern and op.result is not None else 204
            block = decorator(
                "post", path, tag, naming.operation_id(agg.name, op.name), imports, status
            )
            params = ["id: UUID"]
            key = (agg.name, op.name)
            if key in sn.op_input:
                imports.add(".schemas", sn.op_input[key])
                params.append(f"body: {sn.op_input[key]}")
            params.append(SERVICE_PARAM)
            result_t, result = "None", "result"
            if status == 200 and op.result is not None:
                out_types = TypeNames(info, context, imports, mode="output")
                result_t = out_types.render(op.result)
                result = domain_to_wire("result", op.result, out_types)
            block += lay(Group(f"async def {fn}(", params, f") -> {result_t}:"))
            kind = "extern operation" if op.extern else "operation"
            summary = f"{kind} {agg.name}.{op.name} ({where(op.origin)})"
            block += route_doc(summary, reads + operation_rules(op))
            block.append("    async with service.transaction() as work:")
            repo_var = naming.NameAlloc({var, "id", "request", "service", "work", "body"}).take(
                plural
            )
            block.append(f"        {repo_var} = {repo}(work)")
            block.append(f"        {var} = await {repo_var}.get_by_id(id)")
            args = [
                wire_to_domain(f"body.{naming.schema_attr(p.name)}", p.type, types)
                for p in op.params
            ]
            if op.extern:
                protocol = naming.pascal(agg.name) + "Externs"
                imports.add(".externs", protocol)
                imports.add("typing", "cast")
                externs = f"cast({protocol}, service.externs[{py_str(protocol)}])"
                method = f"{externs}.{naming.ident(op.name)}"
                prefix = "result = " if status == 200 else ""
                if has_extern_checks(agg, op):
                    block += lay(call(f"{var}.{naming.extern_checks(op.name)}", args), 2)
                block += lay(call(method, [var, *args], prefix=prefix), 2)
                if has_invariants(agg):
                    block.append(f"        {var}.check_invariants()")
            else:
                block += lay(call(f"{var}.{naming.ident(op.name)}", args), 2)
            block.append(f"        await {repo_var}.save({var})")
            if status == 200:
                block += lay(f"return {result}", 1)
            blocks.append(block)
    if not context.aggregates:  # a context of events, workflows or projections only
        imports.discard("loom.runtime", "ServiceDep")
    head = header(info.files_of(context), f"Aggregate routes of context {context.name}.")
    return module_text(head, imports, blocks)


def _find_routes(
    info: ModelInfo,
    context: ir.Context,
    agg: ir.Aggregate,
    out: str,
    var: str,
    functions: naming.NameAlloc,
    imports: Imports,
) -> list[list[str]]:
    """GET /api/<plural>/find/<find_snake>?<params> per declared find of the aggregate's
    repository: one aggregate (a miss is the standard 404) or, for `Agg[]`, a list."""
    repo = context.repository_for(agg.name)
    if repo is None or not repo.finds:
        return []
    cls = info.repository_class(context, agg.name)
    plural = naming.plural_snake(agg.name)
    tag = telemetry.route_tag(context.name, agg.name)
    types = TypeNames(info, context, imports, mode="query")
    blocks = []
    for find in repo.finds:
        fn = functions.take(f"find_{plural}_{naming.snake(find.name)}")
        path = f"/api/{plural}/find/{naming.snake(find.name)}"
        block = decorator("get", path, tag, naming.operation_id(agg.name, find.name), imports)
        alloc = naming.NameAlloc({"request", "service", "work", var, "found", "key_not_found"})
        py = {p.name: alloc.take(naming.ident(p.name)) for p in find.params}
        params = []
        for p in find.params:
            query = "Query()" if py[p.name] == p.name else f"Query(alias={py_str(p.name)})"
            params.append(f"{py[p.name]}: Annotated[{types.render(p.type)}, {query}]")
        params.append(SERVICE_PARAM)
        result = f"list[{out}]" if find.cardinality == "many" else out
        imports.add("typing", "Annotated")
        imports.add("fastapi", "Query")
        block += lay(Group(f"async def {fn}(", params, f") -> {result}:"))
        doc = f"find {find.name} of {repo.name} ({where(find.origin)})"
        block += route_doc(doc, read_rule(context, agg.name))
        values = [py[p.name] for p in find.params]
        method = find_method(find)
        args = call_args(agg, method, [p.name for p in find.params], values)
        block.append("    async with service.autocommit() as work:")
        if find.cardinality == "optional":
            # the same 404 problem as the getBy form of this lookup, naming the fields matched
            block += lay(call(f"await {cls}(work).{method}", args, prefix=f"{var} = "), 2)
            imports.add("loom.runtime", "key_not_found")
            pairs = [f"{py_str(f)}: {a}" for f, a in zip(find.fields, values, strict=True)]
            block.append(f"    if {var} is None:")
            block += lay(call("raise key_not_found", [py_str(agg.name), Group("{", pairs, "}")]), 2)
            block.append(f"    return {out}.from_aggregate({var})")
        elif find.cardinality == "one":
            block += lay(call(f"await {cls}(work).{method}", args, prefix=f"{var} = "), 2)
            block.append(f"    return {out}.from_aggregate({var})")
        else:
            block += lay(call(f"await {cls}(work).{method}", args, prefix="found = "), 2)
            block.append(f"    return [{out}.from_aggregate(x) for x in found]")
        blocks.append(block)
    return blocks


def wire_to_domain(text: str, t: ir.Type, types: TypeNames) -> str:
    """A request value as the domain takes it. Schemas already use the domain's id NewTypes and
    enums; value objects and payloads are built from their request models (`to_domain()`)."""
    in_types = TypeNames(types.info, types.context, types.imports, mode="input")
    return _wire_to_domain(text, t, in_types)


def _create_value(f: ir.Field, in_types: TypeNames, domain: Scope) -> str:
    """What a crudish create gives field `f`: the body's member, or for a `readOnly` field, which
    the body never names, its default (None for an optional one without)."""
    if not f.read_only:
        return field_to_domain(f"body.{naming.schema_attr(f.name)}", f, in_types, domain)
    return render_as(f.default, f.type, domain) if f.default is not None else "None"


def _crudish(
    info: ModelInfo,
    context: ir.Context,
    agg: ir.Aggregate,
    sn: SchemaNames,
    var: str,
    functions: naming.NameAlloc,
    imports: Imports,
) -> list[list[str]]:
    """POST (201 + Location), PATCH (mutable fields only) and DELETE of a crudish aggregate."""
    repo = info.repository_class(context, agg.name)
    out = sn.out[agg.name]
    plural = naming.plural_snake(agg.name)
    tag = telemetry.route_tag(context.name, agg.name)
    cls = naming.pascal(agg.name)
    imports.add(".domain", cls)
    imports.add("fastapi", "Response")
    repo_var = naming.NameAlloc({var, "id", "request", "service", "work", "body", "response"}).take(
        plural
    )
    blocks = []

    fn = functions.take(f"create_{naming.snake(agg.name)}")
    create_in = sn.create_input[agg.name]
    imports.add(".schemas", create_in)
    block = decorator(
        "post", f"/api/{plural}", tag, naming.operation_id(agg.name, "create"), imports, 201
    )
    params = [f"body: {create_in}", "response: Response", SERVICE_PARAM]
    block += lay(Group(f"async def {fn}(", params, f") -> {out}:"))
    block.append(f"    {docstring(f'crudish create of {agg.name} ({where(agg.origin)})')}")
    types = TypeNames(info, context, imports, mode="domain")
    in_types = TypeNames(info, context, imports, mode="input")
    domain = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None)
    if agg.factory is not None:
        kwargs = [
            f"{naming.ident(p.name)}="
            + _wire_to_domain(f"body.{naming.schema_attr(p.name)}", p.type, in_types)
            for p in agg.factory.params
        ]
    else:
        kwargs = [
            f"{naming.ident(f.name)}=" + _create_value(f, in_types, domain) for f in agg.fields
        ]
    block.append("    async with service.autocommit() as work:")
    block += lay(call(f"{cls}.{naming.create_method(agg)}", kwargs, prefix=f"{var} = "), 2)
    block.append(f"        await {repo}(work).save({var})")
    block.append(f'    response.headers["Location"] = f"/api/{plural}/{{{var}.id}}"')
    block.append(f"    return {out}.from_aggregate({var})")
    blocks.append(block)

    fn = functions.take(f"update_{naming.snake(agg.name)}")
    update_in = sn.update_input[agg.name]
    imports.add(".schemas", update_in)
    block = decorator(
        "patch", f"/api/{plural}/{{id}}", tag, naming.operation_id(agg.name, "update"), imports
    )
    params = ["id: UUID", f"body: {update_in}", SERVICE_PARAM]
    block += lay(Group(f"async def {fn}(", params, f") -> {out}:"))
    doc = f"crudish update of {agg.name} ({where(agg.origin)}): the fields the body names"
    block += route_doc(doc, read_rule(context, agg.name))
    block.append("    async with service.transaction() as work:")
    block.append(f"        {repo_var} = {repo}(work)")
    block.append(f"        {var} = await {repo_var}.get_by_id(id)")
    for f in agg.updatable_fields:
        attr, field_attr = naming.schema_attr(f.name), naming.ident(f.name)
        block.append(f"        if {py_str(attr)} in body.model_fields_set:")
        if not isinstance(f.type, ir.OptionalType):
            imports.add("loom.runtime", "InvalidValue")
            block.append(f"            if body.{attr} is None:")
            message = py_str(f"{f.name} may not be null")
            path = py_str(f"body.{f.name}")
            block += lay(call("raise InvalidValue", [message, f"path={path}"]), 4)
        value = _wire_to_domain(f"body.{attr}", f.type, in_types)
        block += lay(f"{var}.{field_attr} = {value}", 3)
    if agg.invariants:
        block.append(f"        {var}.check_invariants()")
    block.append(f"        await {repo_var}.save({var})")
    block.append(f"    return {out}.from_aggregate({var})")
    blocks.append(block)

    fn = functions.take(f"delete_{naming.snake(agg.name)}")
    block = decorator(
        "delete",
        f"/api/{plural}/{{id}}",
        tag,
        naming.operation_id(agg.name, "delete"),
        imports,
        204,
    )
    block += lay(Group(f"async def {fn}(", ["id: UUID", SERVICE_PARAM], ") -> None:"))
    doc = f"crudish delete of {agg.name} ({where(agg.origin)})"
    block += route_doc(doc, read_rule(context, agg.name))
    block.append("    async with service.transaction() as work:")
    block.append(f"        {repo_var} = {repo}(work)")
    block.append(f"        await {repo_var}.delete(await {repo_var}.get_by_id(id))")
    blocks.append(block)
    return blocks
