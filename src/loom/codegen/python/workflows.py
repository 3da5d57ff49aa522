"""`<context>/workflows.py`: one POST route per workflow.

`transactional` runs the body in `service.transaction(...)` (isolation only when pinned): every save
writes into one database transaction and events are dispatched after the commit. Otherwise the body
runs in `service.autocommit()`: each save commits on its own. Statements run in model order; the
saves lowering placed at the exit run last; a `return` value is answered after the block exits (so
after the commit).
"""

from __future__ import annotations

from loom.codegen.python.bodies import BodyWriter, apply_function, assign_state, body_params
from loom.codegen.python.checks import entry_gate
from loom.codegen.python.domain import function_body
from loom.codegen.python.expressions import Scope, workflow_function
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import (
    correlated,
    instance_out_class,
    instances_class,
    process_constant,
    state_class,
)
from loom.codegen.python.layout import Group, call, lay
from loom.codegen.python.literals import docstring, py_str
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
from loom.codegen.python.schemas import http_create, schema_names
from loom.codegen.python.type_names import TypeNames
from loom.model import ir, naming, telemetry, walk
from loom.model.reserved import EPISODES


def emit_workflows(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    route_imports(imports)
    sn = schema_names(context)
    functions = naming.NameAlloc(ROUTE_NAMES | {"now", "require", "Decimal"})
    blocks: list[list[str]] = [[router_line(context, imports)]]
    types = TypeNames(info, context, imports, mode="domain")
    functions.taken |= helper_names(context)
    for wf in context.workflows:
        for fn in wf.functions:
            blocks.append(_function(wf, fn, types, imports))
        for apply in wf.applies if wf.correlation is not None else ():
            blocks.append(_apply(wf, apply, types, imports))
    for wf in context.workflows:
        create = http_create(wf)
        if create is None:
            blocks.append([f"# workflow {wf.name} ({where(wf.origin)}) has no HTTP entry point"])
            continue
        blocks.append(
            _workflow(info, context, wf, create, sn.workflow_input.get(wf.name), imports, functions)
        )
    for wf in correlated(context):
        blocks.append(_instance_route(context, wf, imports, functions))
        if wf.process:
            blocks.append(_episodes_route(context, wf, imports, functions))
    if len(blocks) == 1 or all(b[0].startswith("#") for b in blocks[1:]):  # no route after all
        imports.discard("loom.runtime", "ServiceDep")
    head = header(info.files_of(context), f"Workflow routes of context {context.name}.")
    return module_text(head, imports, blocks)


def helper_names(context: ir.Context) -> set[str]:
    """The module-level helpers this module defines: every workflow function and `apply` fold of
    the context. Other modules rendering workflow bodies (reactions) import them, so no name of
    their own may take one."""
    names = {workflow_function(wf.name, fn.name) for wf in context.workflows for fn in wf.functions}
    for wf in context.workflows:
        names |= {apply_function(wf, a) for a in (wf.applies if wf.correlation is not None else ())}
    return names


def _function(wf: ir.Workflow, fn: ir.Function, types: TypeNames, imports: Imports) -> list[str]:
    """A workflow function: pure, over its parameters, at module scope."""
    params = {p.name: naming.ident(p.name) for p in fn.params}
    scope = Scope(
        imports=imports,
        enum_ref=types.enum_ref,
        self_name=None,
        params=dict(params),
        workflows_module=None,
    )
    items = [f"{params[p.name]}: {types.render(p.type)}" for p in fn.params]
    name = workflow_function(wf.name, fn.name)
    lines = lay(Group(f"def {name}(", items, f") -> {types.render(fn.result)}:"))
    lines.append(f"    {docstring(f'function {wf.name}.{fn.name} ({where(fn.origin)})')}")
    return lines + function_body(fn, scope, 1, f"workflow {wf.name}: function {fn.name}")


def _apply(wf: ir.Workflow, apply: ir.Apply, types: TypeNames, imports: Imports) -> list[str]:
    """`apply(e: Event) { … }`: fold one emitted event into the instance."""
    event_cls = types.domain_name(wf.context, naming.pascal(apply.event))
    state_cls = types.domain_name(wf.context, state_class(wf))
    param = naming.NameAlloc({"state"}).take(naming.ident(apply.param))
    scope = Scope(
        imports=imports,
        enum_ref=types.enum_ref,
        self_name=None,
        params={apply.param: param},
        state="state",
        workflows_module=None,
    )
    head = f"def {apply_function(wf, apply)}("
    lines = lay(Group(head, [f"state: {state_cls}", f"{param}: {event_cls}"], ") -> None:"))
    doc = f"apply({apply.param}: {apply.event}) of workflow {wf.name} ({where(apply.origin)})"
    lines.append(f"    {docstring(doc)}")
    for stmt in apply.body:
        if not isinstance(stmt, ir.AssignState):
            raise NotImplementedError(f"{type(stmt).__name__} in {doc}")
        lines += assign_state(wf, stmt, scope, 1)
    return lines or ["    pass"]


def _instance_route(
    context: ir.Context, wf: ir.Workflow, imports: Imports, functions: naming.NameAlloc
) -> list[str]:
    """`GET /api/workflows/<snake>/instances/{id}`: the instance keyed by the correlation id."""
    imports.add("uuid", "UUID")
    store, out = instances_class(wf), instance_out_class(wf)
    imports.add(".repositories", store)
    imports.add(".schemas", out)
    fn = functions.take(f"get_{naming.snake(wf.name)}_instance")
    path = f"/api/workflows/{naming.snake(wf.name)}/instances/{{id}}"
    tag = telemetry.route_tag(context.name, telemetry.WORKFLOWS_TAG)
    lines = decorator("get", path, tag, naming.operation_id(wf.name, "getInstance"), imports)
    lines += lay(Group(f"async def {fn}(", ["id: UUID", SERVICE_PARAM], f") -> {out}:"))
    doc = f"an instance of workflow {wf.name} ({where(wf.origin)}), by its {wf.correlation}"
    lines.append(f"    {docstring(doc)}")
    lines.append("    async with service.autocommit() as work:")
    lines.append(f"        instance = await {store}(work).get(id)")
    if not wf.process:
        lines.append(f"    return {out}.from_state(instance)")
        return lines
    # a process: its timeouts that have not fired, earliest first
    args = [process_constant(wf, imports), "id", "work=work"]
    lines += lay(call("service.processes.pending", args, prefix="timeouts = await "), 2)
    lines.append(f"    return {out}.from_state(instance, timeouts)")
    return lines


def _episodes_route(
    context: ir.Context, wf: ir.Workflow, imports: Imports, functions: naming.NameAlloc
) -> list[str]:
    """`GET /api/workflows/<snake>/instances/{id}/episodes`: every episode of a process
    instance, oldest first, the current one last (404 for an unknown key)."""
    imports.add("loom.runtime", "Episode")
    store = instances_class(wf)
    fn = functions.take(f"get_{naming.snake(wf.name)}_{EPISODES}")
    path = f"/api/workflows/{naming.snake(wf.name)}/instances/{{id}}/{EPISODES}"
    tag = telemetry.route_tag(context.name, telemetry.WORKFLOWS_TAG)
    lines = decorator("get", path, tag, naming.operation_id(wf.name, "listEpisodes"), imports)
    lines += lay(Group(f"async def {fn}(", ["id: UUID", SERVICE_PARAM], ") -> list[Episode]:"))
    doc = f"the episodes of an instance of workflow {wf.name} ({where(wf.origin)}), oldest first"
    lines.append(f"    {docstring(doc)}")
    lines.append("    async with service.autocommit() as work:")
    lines.append(f"        return await {store}(work).{EPISODES}(id)")
    return lines


def _workflow(
    info: ModelInfo,
    context: ir.Context,
    wf: ir.Workflow,
    create: ir.WorkflowCreate,
    input_cls: str | None,
    imports: Imports,
    functions: naming.NameAlloc,
) -> list[str]:
    domain_types = TypeNames(info, context, imports, mode="domain")
    out_types = TypeNames(info, context, imports, mode="output")
    fn = functions.take(naming.ident(wf.name))
    path = f"/api/workflows/{naming.snake(wf.name)}"
    status = 200 if create.result is not None else 204
    tag = telemetry.route_tag(context.name, telemetry.WORKFLOWS_TAG)
    op_id = naming.operation_id(None, wf.name)
    lines = decorator("post", path, tag, op_id, imports, status, walk.calls_api(create.body))
    in_types = TypeNames(info, context, imports, mode="input")
    params = []
    if input_cls is not None:
        imports.add(".schemas", input_cls)
        params.append(f"body: {input_cls}")
    elif create.params:  # one payload parameter: the body is the payload
        params.append(f"body: {in_types.render(create.params[0].type)}")
    params.append(SERVICE_PARAM)
    result_t = out_types.render(create.result) if create.result is not None else "None"
    lines += lay(Group(f"async def {fn}(", params, f") -> {result_t}:"))
    if wf.transactional:
        mode = "transactional" + (f"({wf.isolation})" if wf.isolation else "") + ", all-or-nothing"
    elif wf.process:
        mode = "a process step: one transaction with its timers, like its reactions"
    else:
        mode = "non-transactional: each save commits on its own"
    summary = f"workflow {wf.name} ({where(wf.origin)}): {mode}"
    lines += route_doc(summary, body_read_rules(context, create.body))

    alloc = naming.NameAlloc(ROUTE_LOCALS)
    py_params, built = body_params(create.params, alloc, in_types)
    lines += built
    scope = Scope(
        imports=imports,
        enum_ref=domain_types.enum_ref,
        self_name=None,
        params=py_params,
        workflows_module=None,
    )
    lines += entry_gate(create.requires, f"workflow {wf.name}", scope)
    writer = BodyWriter(
        info,
        context,
        imports,
        domain_types,
        scope,
        f"workflow {wf.name}",
        alloc.taken,
        workflow=wf,
        result=create.result,
        autocommit=not (wf.transactional or wf.process),
    )
    writer.prepare(create.body)
    if isinstance(create.result, ir.OptionalType):
        lines.append(f"    result: {domain_types.render(create.result)} = None")
    as_work = " as work" if writer.uses_work(create.body) else ""
    if not writer.autocommit:
        arg = f"isolation={py_str(wf.isolation)}" if wf.isolation else ""
        lines.append(f"    async with service.transaction({arg}){as_work}:")
    else:
        lines.append(f"    async with service.autocommit(){as_work}:")
    body = writer.repo_lines(2) + writer.block(create.body, 2)
    if create.result is not None and not any(
        isinstance(s, ir.Return) for s in walk.body(create.body)
    ):
        raise ValueError(f"workflow {wf.name} declares a result but never returns one")
    lines += body or ["        pass"]
    if create.result is not None:
        lines.append("    return result")
    return lines
