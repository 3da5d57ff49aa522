"""`<context>/workflows.py`: one POST route per workflow.

`transactional` runs the body in `service.transaction(...)` (isolation only when pinned): every save
writes into one database transaction and events are dispatched after the commit. Otherwise the body
runs in `service.autocommit()`: each save commits on its own. Statements run in model order; the
saves lowering placed at the exit run last; a `return` value is answered after the block exits (so
after the commit).
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
    one_line,
    py_str,
    where,
)
from loom.codegen.python._shared import (
    ModelInfo,
    NameAlloc,
    TypeNames,
    create_method,
    schema_attr,
    used_locals,
)
from loom.codegen.python.domain import event_args
from loom.codegen.python.expressions import Scope, render, render_as
from loom.codegen.python.routes import SERVICE_PARAM, decorator, route_imports
from loom.codegen.python.schemas import http_create, schema_names
from loom.model import ir

_RESERVED = {"body", "service", "work", "result", "self", "cls", "now", "require", "router"}


def emit_workflows(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    sn = schema_names(context)
    functions = NameAlloc(
        {"router", "Annotated", "APIRouter", "Depends", "Service", "LoomRoute", "get_service"}
        | {"PROBLEM_RESPONSES", "now", "require", "Decimal"}
    )
    blocks: list[list[str]] = [["router = APIRouter(route_class=LoomRoute)"]]
    for wf in context.workflows:
        create = http_create(wf)
        if create is None:
            blocks.append([f"# workflow {wf.name} ({where(wf.origin)}) has no HTTP entry point"])
            continue
        blocks.append(
            _workflow(info, context, wf, create, sn.workflow_input.get(wf.name), imports, functions)
        )
    head = header(info.files_of(context), f"Workflow routes of context {context.name}.")
    return module_text(head, imports, blocks)


def _workflow(
    info: ModelInfo,
    context: ir.Context,
    wf: ir.Workflow,
    create: ir.WorkflowCreate,
    input_cls: str | None,
    imports: Imports,
    functions: NameAlloc,
) -> list[str]:
    domain_types = TypeNames(info, context, imports, mode="domain")
    out_types = TypeNames(info, context, imports, mode="output")
    fn = functions.take(names.ident(wf.name))
    path = f"/api/workflows/{names.snake(wf.name)}"
    status = 200 if create.result is not None else 204
    lines = decorator("post", path, f"{context.name}: workflows", status=status)
    params = []
    if input_cls is not None:
        imports.add(".schemas", input_cls)
        params.append(f"body: {input_cls}")
    params.append(SERVICE_PARAM)
    result_t = out_types.render(create.result) if create.result is not None else "None"
    lines += lay(Group(f"async def {fn}(", params, f") -> {result_t}:"))
    if wf.transactional:
        mode = "transactional" + (f"({wf.isolation})" if wf.isolation else "") + ", all-or-nothing"
    else:
        mode = "non-transactional: each save commits on its own"
    lines.append(f"    {docstring(f'workflow {wf.name} ({where(wf.origin)}): {mode}')}")

    scope = Scope(
        imports=imports,
        enum_ref=domain_types.enum_ref,
        self_name=None,
        params={p.name: f"body.{schema_attr(p.name)}" for p in create.params},
    )
    # Local names: the model's `let`s first, then one variable per repository the body uses.
    alloc = NameAlloc(_RESERVED)
    for stmt in create.body:
        if isinstance(stmt, ir.Let | ir.LoadById | ir.CreateAggregate):
            scope.locals[stmt.name] = alloc.take(names.ident(stmt.name))
    repos: dict[str, str] = {}  # aggregate -> variable
    for stmt in create.body:
        if isinstance(stmt, ir.LoadById | ir.Save) and stmt.aggregate not in repos:
            repos[stmt.aggregate] = alloc.take(names.plural_snake(stmt.aggregate))

    uses_work = bool(repos) or any(isinstance(s, ir.Emit) for s in create.body)
    as_work = " as work" if uses_work else ""
    if wf.transactional:
        arg = f"isolation={py_str(wf.isolation)}" if wf.isolation else ""
        lines.append(f"    async with service.transaction({arg}){as_work}:")
    else:
        lines.append(f"    async with service.autocommit(){as_work}:")
    body: list[str] = []
    for agg_name, var in repos.items():
        repo_cls = info.repository_class(context, agg_name)
        imports.add(".repositories", repo_cls)
        body.append(f"        {var} = {repo_cls}(work)")
    for i, stmt in enumerate(create.body):
        later = used_locals(create.body[i + 1 :])
        body += _statement(info, context, wf, stmt, scope, repos, later, domain_types, imports)
    if create.result is not None and not any(isinstance(s, ir.Return) for s in create.body):
        raise ValueError(f"workflow {wf.name} declares a result but never returns one")
    lines += body or ["        pass"]
    if create.result is not None:
        lines.append("    return result")
    return lines


def _statement(
    info: ModelInfo,
    context: ir.Context,
    wf: ir.Workflow,
    stmt: ir.Stmt,
    scope: Scope,
    repos: dict[str, str],
    later: set[str],
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    depth = 2
    if isinstance(stmt, ir.Precondition):
        imports.add("loom.runtime", "require")
        rule = f"workflow {wf.name}: precondition {one_line(stmt.condition.text)}"
        detail = stmt.message if stmt.message is not None else f"{rule} failed"
        args = [
            render(stmt.condition, scope),
            'kind="precondition"',
            f"rule={py_str(rule)}",
            f"detail={py_str(detail)}",
        ]
        return lay(call("require", args), depth)
    if isinstance(stmt, ir.Let):
        var = scope.locals[stmt.name]
        if stmt.name not in later:
            var = "_" + var.lstrip("_")
        return lay(f"{var} = {render(stmt.value, scope)}", depth)
    if isinstance(stmt, ir.LoadById):
        load = f"await {repos[stmt.aggregate]}.get_by_id({render(stmt.id, scope)})"
        if stmt.name not in later:
            return [f"{'    ' * depth}# {stmt.name}: must exist", *lay(load, depth)]
        return lay(f"{scope.locals[stmt.name]} = {load}", depth)
    if isinstance(stmt, ir.CreateAggregate):
        agg = info.aggregate(context.name, stmt.aggregate)
        cls = types.domain_name(context.name, names.pascal(agg.name))
        field_types = {f.name: f.type for f in agg.fields}
        kwargs = [
            f"{names.ident(name)}="
            + ("None" if expr is None else render_as(expr, field_types[name], scope))
            for name, expr in stmt.args
        ]
        return lay(
            call(f"{cls}.{create_method(agg)}", kwargs, prefix=f"{scope.locals[stmt.name]} = "),
            depth,
        )
    if isinstance(stmt, ir.CallOperation):
        op = info.operation(context.name, stmt.aggregate, stmt.operation)
        args = [render_as(a, p.type, scope) for a, p in zip(stmt.args, op.params, strict=True)]
        target = scope.locals[stmt.target]
        return lay(call(f"{target}.{names.ident(stmt.operation)}", args), depth)
    if isinstance(stmt, ir.Emit):
        event = info.event(stmt.context, stmt.event)
        cls = types.domain_name(stmt.context, names.pascal(stmt.event))
        return lay(call("work.emit", [call(cls, event_args(event, stmt, scope))]), depth)
    if isinstance(stmt, ir.Return):
        return lay(f"result = {render(stmt.value, scope)}", depth)
    if isinstance(stmt, ir.Save):
        return [f"{'    ' * depth}await {repos[stmt.aggregate]}.save({scope.locals[stmt.name]})"]
    raise NotImplementedError(f"{type(stmt).__name__} in workflow {wf.name} ({where(wf.origin)})")
