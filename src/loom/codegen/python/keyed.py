"""Keyed rows: the instances of a correlated workflow (one per correlation key) and the rows of a
projection (one per key), and the names of what the generated service keeps them in."""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.literals import py_str
from loom.model import ir, naming
from loom.model.reserved import ENDED, ENDED_AT, EPISODE, STARTED_AT
from loom.model.telemetry import qualified

Keyed = ir.Workflow | ir.Projection


def state_class(wf: Keyed) -> str:
    """The dataclass of a correlated workflow's state, in domain.py: `FollowUpState`; of a
    projection's row: `TicketStatsRow`."""
    return naming.pascal(wf.name) + ("State" if isinstance(wf, ir.Workflow) else "Row")


def instances_class(wf: Keyed) -> str:
    """Its store, in repositories.py: `FollowUpInstances`, `TicketStatsRows`."""
    return naming.pascal(wf.name) + ("Instances" if isinstance(wf, ir.Workflow) else "Rows")


def instances_table_var(wf: Keyed) -> str:
    return naming.snake(wf.name) + ("_instances" if isinstance(wf, ir.Workflow) else "_rows")


def instance_out_class(wf: Keyed) -> str:
    return naming.pascal(wf.name) + ("InstanceOut" if isinstance(wf, ir.Workflow) else "Out")


def keyed_fields(wf: Keyed) -> tuple[ir.Field, ...]:
    """The stored fields: a workflow's state, a projection's fields (the key among them). A process
    workflow (timeouts, `complete`) also keeps `ended: bool = false`, set by `complete`, and its
    episode: `episode: int = 1`, `startedAt` and `endedAt` (`datetime?`, stamped by the runtime's
    `ProcessInstances`)."""
    if not isinstance(wf, ir.Workflow):
        return wf.fields
    if wf.process:
        false = ir.Literal_(False, ir.BOOL, "false")
        first = ir.Literal_(1, ir.INT, "1")
        when = ir.OptionalType(ir.DATETIME)  # optional, no default: none until stamped
        return (
            *wf.state,
            ir.Field(ENDED, ir.BOOL, false, False, wf.origin),
            ir.Field(EPISODE, ir.INT, first, False, wf.origin),
            ir.Field(STARTED_AT, when, None, False, wf.origin),
            ir.Field(ENDED_AT, when, None, False, wf.origin),
        )
    return wf.state


def process_name(wf: ir.Workflow) -> str:
    """The name a process workflow's timers are kept under: `<Context>.<Workflow>`."""
    return qualified(wf.context, wf.name)


def process_constant(wf: ir.Workflow, imports: Imports) -> str:
    """The module constant holding the workflow's process name, declared in `imports`' module
    (`CONFIRMATION_DEADLINE_PROCESS = "Scheduling.ConfirmationDeadline"`)."""
    name = f"{naming.snake(wf.name).upper()}_PROCESS"
    return imports.constant(name, py_str(process_name(wf)))


def key_of(wf: Keyed) -> str:
    """The field keying the rows: the correlation field, or the projection's key."""
    key = wf.correlation if isinstance(wf, ir.Workflow) else wf.key
    assert key is not None
    return key


def keyed(context: ir.Context) -> list[Keyed]:
    """Everything of a context that keeps keyed rows: correlated workflows, then projections."""
    return [*correlated(context), *context.projections]


def correlated(context: ir.Context) -> list[ir.Workflow]:
    """The workflows that keep instance rows."""
    return [wf for wf in context.workflows if wf.correlation is not None]
