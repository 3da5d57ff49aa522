"""Who is acting: the principal of the current request or reaction.

Requests are anonymous until authentication is configured (`http/auth.py`: a verified bearer token
becomes the request's principal); the dispatcher and the relay run every handler as `SYSTEM` (a
reaction has no request, so no user: `is_system` is true, no claims, no roles), an in-process
reaction to an event raised in a tenant as the system principal of that tenant (`system_of`).

Only a token's subject is an id. ANONYMOUS, SYSTEM and a verified token without `sub` have none, and
an absent id must never match what a client sends: `currentUser.id == x` (and `!=`) is false for
them whatever `x` is, also a null, and reading the id as a value (to store or pass it) is a 401.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from loom.runtime.values.errors import Forbidden, LoomError, Unauthenticated

_NO_CLAIMS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Principal:
    """The model's `currentUser`.

    `id` is the token's subject (`sub`), None for ANONYMOUS, SYSTEM and a token without one (""
    counts as none); `claims` every claim of the verified token; `roles` its `roles` claim (a list
    of strings); `authenticated` whether a verified token named this principal. Generated code reads
    it through the members below, which mirror the model's: `currentUser.id` is `subject` (and
    `x == currentUser.id` is `id_is(x)`, `!=` `id_is_not(x)`), `.isSystem` `is_system`,
    `.isAuthenticated` `is_authenticated`, `.roles` `roles`, `.hasRole(r)` `has_role(r)`,
    `.claim(c)` `claim(c)`; `.tenant` is `current_tenant()` below.
    """

    id: str | None
    claims: Mapping[str, Any] = field(default_factory=lambda: _NO_CLAIMS)
    is_system: bool = False
    roles: tuple[str, ...] = ()
    authenticated: bool = True
    #: the token's tenant claim (`tenant` unless LOOM_TENANT_CLAIM names another), None without
    #: one: a request to a tenanted context's route needs it (`http.tenants.require_tenant`)
    tenant: str | None = None

    @property
    def subject(self) -> str:
        """`currentUser.id` read as a value: the subject. A principal without one cannot supply
        it, so the request is refused (401) rather than storing or passing an empty id."""
        if self.id:
            return self.id
        if self.is_system:
            raise Unauthenticated(
                "`currentUser.id` is read, but a reaction runs as the system, which has no id"
            )
        if self.authenticated:
            raise Unauthenticated(
                "`currentUser.id` is read, but the bearer token names no subject (`sub`): "
                "use a token issued to a user",
                error="invalid_token",
            )
        raise Unauthenticated(
            "`currentUser.id` is read, but the request is anonymous: send a bearer token"
        )

    def id_is(self, value: str | None) -> bool:
        """`value == currentUser.id`: false when the principal has no id, whatever `value` is."""
        return bool(self.id) and value == self.id

    def id_is_not(self, value: str | None) -> bool:
        """`value != currentUser.id`: also false when the principal has no id (a comparison with
        an absent id never holds, so neither form admits an anonymous caller)."""
        return bool(self.id) and value != self.id

    @property
    def is_authenticated(self) -> bool:
        """`currentUser.isAuthenticated`: a verified token named this principal (never SYSTEM)."""
        return self.authenticated and not self.is_system

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


TENANT_CLAIM = "tenant"
TENANT_RULE = "tenanted context: the bearer token names a tenant"


def tenant_refusal(principal: Principal, claim: str = TENANT_CLAIM) -> LoomError:
    """Why a principal without a tenant cannot reach a tenanted context: anonymous is a 401, an
    authenticated caller (or the system) without a tenant a 403."""
    if principal.is_authenticated:
        return Forbidden(
            TENANT_RULE,
            "this route belongs to a tenanted context, and the bearer token names no tenant: "
            f"its `{claim}` claim must be a non-empty string",
        )
    if principal.is_system:
        return Forbidden(
            TENANT_RULE, "the system principal has no tenant to scope tenanted rows to"
        )
    return Unauthenticated(
        f"this route belongs to a tenanted context: send a bearer token with a `{claim}` claim"
    )


ANONYMOUS = Principal(id=None, claims=_NO_CLAIMS, is_system=False, authenticated=False)
SYSTEM = Principal(id=None, claims=_NO_CLAIMS, is_system=True, authenticated=False)


def system_of(tenant: str | None) -> Principal:
    """The system principal a reaction runs as: of the tenant its event was raised in (so it
    reads and writes that tenant's rows of a tenanted context), plain SYSTEM for none."""
    if tenant is None:
        return SYSTEM
    return Principal(None, _NO_CLAIMS, is_system=True, authenticated=False, tenant=tenant)


_current: ContextVar[Principal] = ContextVar("loom_principal", default=ANONYMOUS)
# the request's `Authorization` header as sent: an API call forwards it (`http/api_calls.py`), so the
# callee authenticates the same caller; a reaction has none
_authorization: ContextVar[str | None] = ContextVar("loom_authorization", default=None)


def current_tenant() -> str:
    """The tenant of the running request (`currentUser.tenant`), which a tenanted context's rows
    are scoped to; a principal without one is refused (`tenant_refusal`)."""
    principal = _current.get()
    tenant = principal.tenant
    if tenant:
        return tenant
    raise tenant_refusal(principal)


def current_authorization() -> str | None:
    """The `Authorization` header of the request being served: None outside one, without one, and
    in a reaction (which runs as the system, even when a request's commit dispatched it)."""
    if _current.get().is_system:
        return None
    return _authorization.get()


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
