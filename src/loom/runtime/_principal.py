"""Who is acting: the principal of the current request or reaction.

Requests are anonymous until authentication is configured (`_auth.py`: a verified bearer token
becomes the request's principal); the dispatcher and the relay run every handler as `SYSTEM` (a
reaction has no request, so no user: `is_system` is true, no claims, no roles).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

_NO_CLAIMS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Principal:
    """The model's `currentUser`.

    `id` is the token's subject (`sub`), None for ANONYMOUS and SYSTEM; `claims` every claim of the
    verified token; `roles` its `roles` claim (a list of strings). Generated code reads it through
    the members below, which mirror the model's: `currentUser.id` is `subject`, `.isSystem`
    `is_system`, `.isAuthenticated` `is_authenticated`, `.roles` `roles`, `.hasRole(r)`
    `has_role(r)`, `.claim(c)` `claim(c)`.
    """

    id: str | None
    claims: Mapping[str, Any] = field(default_factory=lambda: _NO_CLAIMS)
    is_system: bool = False
    roles: tuple[str, ...] = ()

    @property
    def subject(self) -> str:
        """`currentUser.id`: the subject, "" when anonymous (and for the system)."""
        return self.id or ""

    @property
    def is_authenticated(self) -> bool:
        """`currentUser.isAuthenticated`: a verified token named this principal (never SYSTEM)."""
        return self.id is not None and not self.is_system

    def has_role(self, role: str) -> bool:
        """`currentUser.hasRole(role)`."""
        return role in self.roles

    def claim(self, name: str) -> str:
        """`currentUser.claim(name)`: a string claim as it is, any other claim as its JSON text
        (`42`, `true`, `["a","b"]`), "" when absent (or null)."""
        value = self.claims.get(name)
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


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
