"""What every admin route shares: the router with the `admin` role check, the tenant an admin is
confined to, and the documented problem answers."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from loom.runtime.http.auth import require_admin
from loom.runtime.http.problems import PROBLEM_RESPONSES
from loom.runtime.values.principal import current_principal


def admin_tenant() -> str | None:
    """The tenant an admin request is confined to: its token's tenant claim, when it has one (a
    tenant's own administrator), else None (the operator, who sees every tenant)."""
    return current_principal().tenant


def admin_routes(route_class: Any) -> APIRouter:
    """A router of admin routes (tag "admin")."""
    # With authentication configured, every admin route needs the role `admin` (401 / 403).
    return APIRouter(route_class=route_class, tags=["admin"], dependencies=[Depends(require_admin)])


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented problem answers of a route."""
    return {k: v for k, v in PROBLEM_RESPONSES.items() if k in statuses}
