"""The names a running service gives the model's elements in its telemetry: the `loom.*`
attributes of its spans (docs/observability.md#traces). One definition for the runtime that sets
them and for the tools that read them back (a diagram's node ids, a console's overlays)."""

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
ISOLATION = "loom.isolation"
