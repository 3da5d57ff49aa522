# ruff: noqa: B008  (FastAPI dependencies as defaults)
"""Admin HTTP endpoints for dead letters (tag "admin"):

GET  /api/admin/dead-letters?limit&offset            -> {items, limit, offset, total}
POST /api/admin/dead-letters/{event_id}/redrive      -> 204, or a 404 problem
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel

from ._errors import NotFound
from ._problems import PROBLEM_RESPONSES
from ._schemas import Page, PageLimit, PageOffset
from ._service import Service


class DeadLetterOut(BaseModel):
    event_id: UUID
    event_type: str
    channel: str
    attempts: int
    last_error: str | None
    occurred_at: datetime
    correlation_id: str
    payload: dict[str, Any]


def admin_router(route_class: Any, get_service: Callable[..., Service]) -> APIRouter:
    """The dead-letter routes; `get_service` is the app's service dependency."""
    router = APIRouter(route_class=route_class, tags=["admin"])

    @router.get(
        "/api/admin/dead-letters",
        response_model=Page[DeadLetterOut],
        responses={k: v for k, v in PROBLEM_RESPONSES.items() if k in (422, 500)},
    )
    async def list_dead_letters(
        limit: PageLimit = 50, offset: PageOffset = 0, service: Service = Depends(get_service)
    ) -> Page[DeadLetterOut]:
        """Durable events whose delivery failed `max_attempts` times, oldest first."""
        items = await service.outbox.dead_letters(limit, offset)
        total = (await service.outbox.counts())["dead"]
        out = [DeadLetterOut.model_validate(d, from_attributes=True) for d in items]
        return Page[DeadLetterOut](items=out, limit=limit, offset=offset, total=total)

    @router.post(
        "/api/admin/dead-letters/{event_id}/redrive",
        status_code=204,
        response_class=Response,
        responses={k: v for k, v in PROBLEM_RESPONSES.items() if k in (404, 422, 500)},
    )
    async def redrive_dead_letter(event_id: UUID, service: Service = Depends(get_service)) -> None:
        """Put a dead letter back in the queue: the relay delivers it again from attempt 1."""
        if not await service.outbox.redrive(event_id):
            raise NotFound("DeadLetter", event_id, f"no dead letter has the event id {event_id}")

    return router
