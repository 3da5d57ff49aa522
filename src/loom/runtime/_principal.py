"""Who is acting: the principal of the current request or reaction.

Requests are anonymous until authentication is configured; the dispatcher and the relay run every
handler as `SYSTEM` (a reaction has no request, so no user: `is_system` is true, no claims).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_NO_CLAIMS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Principal:
    """The model's `currentUser`: `id`, `claims` and `isSystem`."""

    id: str | None
    claims: Mapping[str, Any] = field(default_factory=lambda: _NO_CLAIMS)
    is_system: bool = False


ANONYMOUS = Principal(id=None, claims=_NO_CLAIMS, is_system=False)
SYSTEM = Principal(id=None, claims=_NO_CLAIMS, is_system=True)

_current: ContextVar[Principal] = ContextVar("loom_principal", default=ANONYMOUS)


def current_principal() -> Principal:
    """The principal of the running request or reaction (ANONYMOUS outside both)."""
    return _current.get()


@contextmanager
def use_principal(principal: Principal) -> Iterator[Principal]:
    """Act as `principal` for the block (restores the previous one after)."""
    token = _current.set(principal)
    try:
        yield principal
    finally:
        _current.reset(token)
