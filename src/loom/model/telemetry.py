"""The names a running service gives the model's elements in its telemetry: the `loom.*`
attributes of its spans (docs/observability.md#traces). One definition for the runtime that sets
them and for the tools that read them back (a diagram's node ids, a console's overlays); and how a
generated route's OpenAPI tag names the element it serves, which the runtime reads back."""

from __future__ import annotations

CONTEXT = "loom.context"
AGGREGATE = "loom.aggregate"
OPERATION = "loom.operation"
WORKFLOW = "loom.workflow"
HANDLER = "loom.handler"
PROJECTION = "loom.projection"
EVENT = "loom.event"
REACTOR = "loom.reactor"
PROCESS = "loom.process"
TIMEOUT = "loom.timeout"
TIMER = "loom.timer"
DEPLOYABLE = "loom.deployable"
TENANT = "loom.tenant"
CORRELATION_ID = "loom.correlation_id"
UNIT_OF_WORK = "loom.unit_of_work"

# the column of a workflow instance's table holding the trace context of its last step: no field
# of its state; a leading underscore, which no model name's column can have
TRACE_CONTEXT_COLUMN = "_trace_context"
# and the column holding its journal: the steps that moved it (`loom.runtime.storage.journal`)
STEPS_COLUMN = "_steps"
ISOLATION = "loom.isolation"


# the tag groups of routes that are no aggregate's (`route_tag`)
HANDLERS_TAG, PROJECTIONS_TAG, WORKFLOWS_TAG = "handlers", "projections", "workflows"
# the model attribute a route's owner is named by, per tag group (an aggregate's otherwise)
_OWNER_ATTRIBUTE = {
    HANDLERS_TAG: HANDLER,
    PROJECTIONS_TAG: PROJECTION,
    WORKFLOWS_TAG: WORKFLOW,
}


def route_tag(context: str, group: str) -> str:
    """The OpenAPI tag of a generated route: `Context: Aggregate` for an aggregate's routes,
    `Context: handlers`, `Context: projections` or `Context: workflows` for the others."""
    return f"{context}: {group}"


def route_element(tag: str, op_id: str) -> tuple[str, dict[str, str]] | None:
    """The model element a generated route serves, read back from its tag (`route_tag`) and
    operationId (`naming.operation_id`): the name of its span (`Account.deposit`, `Orders.placeOrder`)
    and its `loom.*` attributes (docs/observability.md#traces). None for a route Loom did not
    generate (no `Context: group` tag)."""
    context, sep, group = tag.partition(": ")
    if not sep or not context or not group:
        return None
    owner, sep, verb = op_id.partition("_")
    attributes = {CONTEXT: context}
    if group in (HANDLERS_TAG, WORKFLOWS_TAG) and not sep:  # a workflow's or handler's own route
        attributes[_OWNER_ATTRIBUTE[group]] = op_id
        return f"{context}.{op_id}", attributes
    if not sep:
        return None
    attributes[_OWNER_ATTRIBUTE.get(group, AGGREGATE)] = owner
    attributes[OPERATION] = verb
    return f"{owner}.{verb}", attributes


def qualified(context: str, name: str) -> str:
    """How the telemetry names a declaration of a context whose name another context may also
    give one: a process (`loom.process`, the `process` label), a channel (the `channel` label) or
    an event type (`loom.event`): `Orders.PaymentDeadline`, `Orders.Fulfilment`,
    `Orders.OrderPlaced`."""
    return f"{context}.{name}"
