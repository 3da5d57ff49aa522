"""Wire models and constrained scalars shared by generated schemas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Generic, TypeVar

from annotated_types import Interval
from pydantic import BaseModel, ConfigDict

T = TypeVar("T")
U = TypeVar("U")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

Int64 = Annotated[int, Interval(ge=INT64_MIN, le=INT64_MAX)]
"""An integer that fits a BIGINT column; larger values are a 422, not a database error."""
Int32 = Annotated[int, Interval(ge=INT32_MIN, le=INT32_MAX)]
"""An integer that fits an INTEGER column."""
PageLimit = Annotated[int, Interval(ge=1, le=500)]
"""`?limit=`: 1..500."""
PageOffset = Annotated[int, Interval(ge=0, le=INT64_MAX)]
"""`?offset=`: 0..2**63-1."""


class Page(BaseModel, Generic[T]):
    """One page of a list: `{"items": [...], "limit": n, "offset": n, "total": n}`."""

    items: list[T]
    limit: int
    offset: int
    total: int

    def map(self, fn: Callable[[Any], U]) -> Page[U]:
        """The same page with `fn` applied to every item (no validation)."""
        return Page.model_construct(
            items=[fn(x) for x in self.items],
            limit=self.limit,
            offset=self.offset,
            total=self.total,
        )


class ProblemError(BaseModel):
    path: str
    message: str


class Problem(BaseModel):
    """RFC 9457 problem details, with the Loom extension members."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    detail: str
    instance: str
    aggregate: str | None = None
    rule: str | None = None
    errors: list[ProblemError] | None = None
