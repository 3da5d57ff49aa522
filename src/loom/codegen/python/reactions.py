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
from loom.codegen.python._shared import ModelInfo, NameAlloc, TypeNames
from loom.codegen.python.bodies import BodyWriter
from loom.codegen.python.expressions import Scope
from loom.model import ir

_RESERVED = {"service", "work", "result", "self", "cls", "now", "require", "partial"}


def event_label(event: ir.EventType, here: str) -> str:
    """An event as the model names it from context `here`: bare in its own, else qualified."""
    return event.name if event.context == here else f"{event.context}.{event.name}"


def event_type(event: ir.EventType) -> str:
    """The event's stable type name (the generated class's `event_type`)."""
    return f"{event.context}.{event.name}"


def handler_name(context: ir.Context, owner: str, reaction: ir.Reaction) -> str:
    """The consumer name of a reaction: `Support.AskForRating.create(TicketResolved)`."""
    return f"{context.name}.{owner}.{reaction.kind}({event_label(reaction.event, context.name)})"


def has_reactions(context: ir.Context) -> bool:
    return any(wf.reactions for wf in context.workflows) or any(
        p.reactions for p in context.projections
    )


def emit_reactions(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("functools", "partial")
    imports.add("loom.runtime", "Service")
    types = TypeNames(info, context, imports, mode="domain")
    functions = NameAlloc({"subscribe", "partial", "Service", "log_unrouted", "require"})
    blocks: list[list[str]] = []
    subscriptions: list[tuple[str, str, str]] = []  # (event class, function, consumer name)
    owners: list[tuple[ir.Workflow | ir.Projection, ir.Reaction]] = [
        (wf, r) for wf in context.workflows for r in wf.reactions
    ] + [(p, r) for p in context.projections for r in p.reactions]
    for owner, reaction in owners:
        fn = functions.take(
            f"{names.snake(owner.name)}_{reaction.kind}_{names.snake(reaction.event.name)}"
        )
        name = handler_name(context, owner.name, reaction)
        blocks.append(_reaction(info, context, owner, reaction, fn, name, types, imports))
        cls = types.domain_name(reaction.event.context, names.pascal(reaction.event.name))
        subscriptions.append((cls, fn, name))
    blocks.append(_subscribe(context, subscriptions))
    head = header(info.files_of(context), f"Reactions to events of context {context.name}.")
    return module_text(head, imports, blocks)


def _reaction(
    info: ModelInfo,
    context: ir.Context,
    owner: ir.Workflow | ir.Projection,
    reaction: ir.Reaction,
    fn: str,
    name: str,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    event_cls = types.domain_name(reaction.event.context, names.pascal(reaction.event.name))
    alloc = NameAlloc(_RESERVED)
    param = alloc.take(names.ident(reaction.param))
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


def _subscribe(context: ir.Context, subscriptions: list[tuple[str, str, str]]) -> list[str]:
    lines = [
        "def subscribe(service: Service) -> None:",
        f"    {docstring(f'Subscribe every reaction of context {context.name} to its event.')}",
    ]
    if not subscriptions:
        return lines
    lines.append("    events = service.events")
    for cls, fn, name in subscriptions:
        args = [cls, f"partial({fn}, service)", f"name={py_str(name)}"]
        lines += lay(call("events.subscribe", args), 1)
    return lines
