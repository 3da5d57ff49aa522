"""Tenants: the tenant a tenanted context's rows and routes are scoped to (docs/language.md#tenants).

A tenanted context's tables have a `tenant` column (marked `{"loom": {"tenant": True}}` in its
info, `storage.mapping.tenant_column`); `Repository` stamps it on every insert and adds
`tenant = current_tenant()` to every read and write, so another tenant's row is not found: a 404
exactly like an unknown id, never a 403 that would tell it exists. The tenant is the principal's
(`Principal.tenant`, the token's tenant claim); a request to a tenanted route without one is
refused before the route runs (`require_tenant`): anonymous with a 401, authenticated without a
tenant with a 403.
"""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request

from loom.runtime.http.auth import AuthConfigError, Authenticator
from loom.runtime.values.principal import TENANT_CLAIM, current_principal, tenant_refusal


def require_tenant(request: Request) -> None:
    """FastAPI dependency of every route of a tenanted context: the caller must be authenticated
    (else 401) and have a tenant (else 403) before anything is read."""
    principal = current_principal()
    if not principal.tenant:
        auth = getattr(request.app.state, "loom_auth", None)
        raise tenant_refusal(principal, getattr(auth, "tenant_claim", TENANT_CLAIM))


def check_tenanted_auth(tenanted: Sequence[str], auth: Authenticator | None) -> None:
    """A tenanted context cannot serve without authentication (every request would be anonymous,
    every route a 401): the service refuses to start instead, naming the settings."""
    if tenanted and auth is None:
        names = ", ".join(tenanted)
        raise AuthConfigError(
            f"context {names} is tenanted, and no authentication is configured: set "
            "LOOM_JWT_SECRET or LOOM_JWT_PUBLIC_KEY (`loom run --jwt-secret …`); the tenant "
            "of a request is its token's tenant claim"
        )
