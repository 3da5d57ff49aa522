"""A span per database statement (docs/observability.md#traces), when asked with LOOM_OTEL_SQL=1:
many spans per request, so off by default.

SQLAlchemy's cursor events run on the sync side of its async engine, in the greenlet it spawns
for the statement, which sees the caller's context variables: the statement's span is a child of
the unit of work (or COMMIT) span that runs it. A statement outside every span (the relay's
polls, the scheduler's claims) gets none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

if TYPE_CHECKING:
    from loom.runtime.values.traces import Tracer


def trace_statements(engine: AsyncEngine, tracer: Tracer) -> None:
    """Open a CLIENT span around each statement `engine` runs inside a traced unit of work."""
    sync = engine.sync_engine
    system = sync.dialect.name

    def before(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        span = tracer.statement(system, statement)
        if span is not None:
            context._loom_span = span

    def after(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        span = getattr(context, "_loom_span", None)
        if span is not None:
            span.end()

    def failed(exception_context: Any) -> None:
        context = exception_context.execution_context
        span = getattr(context, "_loom_span", None) if context is not None else None
        if span is not None:
            tracer.statement_failed(span, exception_context.original_exception)

    event.listen(sync, "before_cursor_execute", before)
    event.listen(sync, "after_cursor_execute", after)
    event.listen(sync, "handle_error", failed)
