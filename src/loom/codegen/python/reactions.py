"""`<context>/reactions.py`: the context's reactions to events, and `subscribe(service)`.

One async function per event-triggered `create`, per `on` of a workflow and per `on` of a projection,
taking the service and the event. Each runs its body in `service.reaction()`: one transaction of its
own, whatever the workflow's `transactional` says (for a durable delivery it also records the inbox
row, so a redelivered event is skipped), so a failed reaction leaves nothing behind. The runtime
runs them after the commit that raised the event, as the system principal:

    create(e: E) by e.k    instance = await store.bind(e.k)       load or allocate
    on(e: E) by e.k        instance = await store.find(e.k)       none: log_unrouted(…), return
    on(e: E) (projection)  row = await rows.bind(e.k)             load or allocate the row

`subscribe(service)` subscribes each one to its event class under a stable consumer name, the one
logs and the inbox use: `<Context>.<Workflow or projection>.<create|on>(<Event>)`, the event
qualified when it belongs to another context (`Orders.settleOrder.on(Payment.PaymentSucceeded)`).
"""

from __future__ import annotations

from loom.codegen.python.bodies import BodyWriter, duration, duration_text, log_fact
from loom.codegen.python.expressions import Scope
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import instances_class, instances_table_var, process_constant
from loom.codegen.python.layout import Doc, Group, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.type_names import TypeNames
from loom.codegen.python.workflows import helper_names
from loom.model import ir, naming
from loom.model.deployables import consumer_name
from loom.model.reserved import ENDED

_RESERVED = {"service", "work", "result", "self", "cls", "now", "require", "partial"}


def event_label(event: ir.EventType, here: str) -> str:
    """An event as the model names it from context `here`: bare in its own, else qualified."""
    return event.name if event.context == here else f"{event.context}.{event.name}"


def event_type(event: ir.EventType) -> str:
    """The event's stable type name (the generated class's `event_type`)."""
    return f"{event.context}.{event.name}"


def has_reactions(context: ir.Context) -> bool:
    """Whether the context needs a reactions.py: reactions, `on timeout` handlers, timers."""
    return (
        any(wf.reactions or wf.timeouts for wf in context.workflows)
        or any(p.reactions for p in context.projections)
        or bool(context.timers)
    )


def emit_reactions(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("functools", "partial")
    imports.add("loom.runtime", "Service")
    types = TypeNames(info, context, imports, mode="domain")
    # the workflow helpers its bodies import take their names first
    helpers = helper_names(context)
    functions = naming.NameAlloc(
        {"subscribe", "partial", "Service", "log_unrouted", "require"} | helpers
    )
    blocks: list[list[str]] = []
    subscriptions: list[tuple[str, str, str]] = []  # (event class, function, consumer name)
    owners: list[tuple[ir.Workflow | ir.Projection, ir.Reaction]] = [
        (wf, r) for wf in context.workflows for r in wf.reactions
    ] + [(p, r) for p in context.projections for r in p.reactions]
    for owner, reaction in owners:
        fn = functions.take(
            f"{naming.snake(owner.name)}_{reaction.kind}_{naming.snake(reaction.event.name)}"
        )
        name = consumer_name(context.name, owner.name, reaction)
        blocks.append(_reaction(info, context, owner, reaction, fn, name, types, imports, helpers))
        cls = types.domain_name(reaction.event.context, naming.pascal(reaction.event.name))
        subscriptions.append((cls, fn, name))
    registrations: list[Doc] = []
    for wf in context.workflows:
        if not wf.timeouts:
            continue
        fns: list[tuple[str, str]] = []
        for t in wf.timeouts:
            fn = functions.take(f"{naming.snake(wf.name)}_timeout_{naming.snake(t.name)}")
            blocks.append(_timeout(info, context, wf, t, fn, types, imports, helpers))
            fns.append((t.name, fn))
        dispatch = functions.take(f"{naming.snake(wf.name)}_timeouts")
        blocks.append(_dispatch(wf, dispatch, fns, imports))
        registrations.append(
            call(
                "service.timeouts.register",
                [process_constant(wf, imports), f"partial({dispatch}, service)"],
            )
        )
        imports.add(".repositories", instances_class(wf))
        registrations.append(
            call("service.processes.track", [process_constant(wf, imports), instances_class(wf)])
        )
    for tm in context.timers:
        fn = functions.take(f"{naming.snake(tm.name)}_timer")
        blocks.append(_timer(info, context, tm, fn, types, imports))
        imports.add("datetime", "timedelta")
        every = duration(tm.every_ms)
        args = [
            py_str(f"{context.name}.{tm.name}"),
            f"every={every}",
            f"handler=partial({fn}, service)",
        ]
        if context.tenanted:  # once per tenant with rows, as that tenant's system principal
            args.append(f"tenanted={py_str(context.name)}")
        registrations.append(call("service.recurring.register", args))
    blocks.append(_subscribe(context, subscriptions, registrations))
    head = header(info.files_of(context), f"Reactions to events of context {context.name}.")
    return module_text(head, imports, blocks)


def _timeout(
    info: ModelInfo,
    context: ir.Context,
    wf: ir.Workflow,
    timeout: ir.OnTimeout,
    fn: str,
    types: TypeNames,
    imports: Imports,
    helpers: set[str],
) -> list[str]:
    """`on timeout NAME { … }`: run by the scheduler, in its unit of work, as the system
    principal, on the instance that armed the timeout, only while it is the armed job."""
    imports.add("loom.runtime", "Work")
    imports.add("loom.runtime.processes", "TimeoutDue")
    imports.add("uuid", "UUID")
    alloc = naming.NameAlloc(_RESERVED | helpers | {"due"})
    lines = lay(
        Group(
            f"async def {fn}(", ["service: Service", "due: TimeoutDue", "work: Work"], ") -> None:"
        )
    )
    doc = f"workflow {wf.name}: on timeout {timeout.name} ({where(timeout.origin)})"
    lines.append(f"    {docstring(doc)}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params={})
    writer = BodyWriter(
        info, context, imports, types, scope, f"workflow {wf.name}", alloc.taken, workflow=wf
    )
    writer.prepare(timeout.body)
    writer.instance_var = writer.alloc.take("instance")
    writer.store_var = writer.alloc.take(instances_table_var(wf))
    scope.state = writer.instance_var
    key_field = next(f for f in wf.state if f.name == wf.correlation)
    key = f"{types.render(key_field.type)}(UUID(due.key))"
    inst, process = writer.instance_var, process_constant(wf, imports)
    fields: list[Doc] = [f'"process": {process}', '"key": due.key', '"timeout": due.name']
    body = writer.repo_lines(1)
    body += lay(f"{inst} = await {writer.store_var}.find({key})", 1)
    body.append(f"    if {inst} is None or {inst}.{ENDED}:  # no instance, or it ended: dropped")
    body += lay(log_fact("process_ignored_ended", fields, imports), 2)
    body.append("        return")
    body.append("    if not await service.processes.armed(work, due):  # disarmed or re-armed")
    body += lay(log_fact("timeout_stale", fields, imports), 2)
    body.append("        return")
    body += writer.block(timeout.body, 1)
    return lines + body


def _dispatch(
    wf: ir.Workflow, fn: str, handlers: list[tuple[str, str]], imports: Imports
) -> list[str]:
    """The one timeout handler of a process workflow, registered under its process name: it
    runs the `on timeout` of the due timeout's name."""
    imports.add("loom.runtime", "Work")
    imports.add("loom.runtime.processes", "TimeoutDue")
    lines = lay(
        Group(
            f"async def {fn}(", ["service: Service", "due: TimeoutDue", "work: Work"], ") -> None:"
        )
    )
    lines.append(f"    {docstring(f'The timeouts of workflow {wf.name}, by name.')}")
    for i, (name, handler) in enumerate(handlers):
        lines.append(f"    {'if' if i == 0 else 'elif'} due.name == {py_str(name)}:")
        lines.append(f"        await {handler}(service, due, work)")
    lines.append("    else:  # armed by another version of the model: retried, then dead-lettered")
    message = f"workflow {wf.name} has no timeout {{due.name!r}}"
    lines.append(f'        raise ValueError(f"{message}")')
    return lines


def _timer(
    info: ModelInfo,
    context: ir.Context,
    tm: ir.Timer,
    fn: str,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    """`timer NAME every D { … }`: one tick, in the scheduler's unit of work, as the system
    principal (once per tick across replicas; missed ticks coalesce into one run)."""
    imports.add("loom.runtime", "Work")
    imports.add("loom.runtime.processes", "Tick")
    alloc = naming.NameAlloc(_RESERVED | {"tick"})
    params = ["service: Service", "tick: Tick", "work: Work"]
    lines = lay(Group(f"async def {fn}(", params, ") -> None:"))
    doc = f"timer {tm.name} every {duration_text(tm.every_ms)} ({where(tm.origin)})"
    lines.append(f"    {docstring(doc)}")
    scope = Scope(imports=imports, enum_ref=types.enum_ref, self_name=None, params={})
    writer = BodyWriter(info, context, imports, types, scope, f"timer {tm.name}", alloc.taken)
    writer.prepare(tm.body)
    body = writer.repo_lines(1) + writer.block(tm.body, 1)
    return lines + (body or ["    pass"])


def _reaction(
    info: ModelInfo,
    context: ir.Context,
    owner: ir.Workflow | ir.Projection,
    reaction: ir.Reaction,
    fn: str,
    name: str,
    types: TypeNames,
    imports: Imports,
    helpers: set[str],
) -> list[str]:
    event_cls = types.domain_name(reaction.event.context, naming.pascal(reaction.event.name))
    alloc = naming.NameAlloc(_RESERVED | helpers)  # no local hides an imported helper
    param = alloc.take(naming.ident(reaction.param))
    lines = lay(
        Group(f"async def {fn}(", ["service: Service", f"{param}: {event_cls}"], ") -> None:")
    )
    what = "workflow" if isinstance(owner, ir.Workflow) else "projection"
    label = event_label(reaction.event, context.name)
    by = f" by {reaction.by.text}" if reaction.by is not None else ""
    doc = (
        f"{what} {owner.name}: {reaction.kind}({reaction.param}: {label}){by} "
        f"({where(reaction.origin)})"
    )
    lines.append(f"    {docstring(doc)}")
    scope = Scope(
        imports=imports,
        enum_ref=types.enum_ref,
        self_name=None,
        params={reaction.param: param},
    )
    writer = BodyWriter(
        info,
        context,
        imports,
        types,
        scope,
        f"{what} {owner.name}",
        alloc.taken,
        workflow=owner if isinstance(owner, ir.Workflow) else None,
        keyed=owner if isinstance(owner, ir.Projection) else None,
        unrouted=(event_type(reaction.event), name),
    )
    writer.prepare(reaction.body)
    as_work = " as work" if writer.uses_work(reaction.body) else ""
    lines.append(f"    async with service.reaction(){as_work}:")
    body = writer.repo_lines(2) + writer.block(reaction.body, 2)
    return lines + (body or ["        pass"])


def _subscribe(
    context: ir.Context,
    subscriptions: list[tuple[str, str, str]],
    registrations: list[Doc] | None = None,
) -> list[str]:
    doc = f"Subscribe every reaction of context {context.name} to its event."
    if registrations:
        doc = (
            f"Subscribe every reaction of context {context.name} to its event; register its "
            "timeout handlers and timers."
        )
    lines = [
        "def subscribe(service: Service) -> None:",
        f"    {docstring(doc)}",
    ]
    if subscriptions:
        lines.append("    events = service.events")
    for cls, fn, name in subscriptions:
        args = [cls, f"partial({fn}, service)", f"name={py_str(name)}"]
        lines += lay(call("events.subscribe", args), 1)
    for reg in registrations or []:
        lines += lay(reg, 1)
    return lines
