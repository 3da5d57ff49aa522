"""System tokens: how a call of another context's handler made by the system (a reaction, an `on
timeout`, a context timer) carries the system principal, of the event's tenant, to the callee.

A request's own call forwards the caller's `Authorization` (`http/api_calls.py`); a reaction has
none, and an anonymous call of a tenanted context's handler could only be refused. So a call made
as the system sends `Loom-System-Token: <JWT>` instead: HS256, signed with the service secret,
claims `sub: "loom-system"`, `tenant` (the event's tenant, or null), `aud: "loom-system"`, `iat`
and an `exp` a minute later. The callee's edge (`http/edge.py`) verifies it and serves the call as
`system_of(tenant)`: the principal the caller ran as.

The secret is `LOOM_SERVICE_SECRET` (at least 32 bytes); without it each process draws its own at
start, so the calls it serves in process work and no other process can make its tokens. Across
deployables every deployable must have the same one (`loom up` gives its deployables one it draws);
a token that does not verify is a 401 naming the setting (docs/deployables.md#calls-made-by-the-system).
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from typing import Any, Final

from loom.runtime.values.errors import Unauthenticated
from loom.runtime.values.principal import Principal, system_of

ENV_SERVICE_SECRET: Final = "LOOM_SERVICE_SECRET"
HEADER: Final = "Loom-System-Token"
HEADER_KEY: Final = b"loom-system-token"  # as ASGI gives header names: lower case
_AUDIENCE: Final = "loom-system"
_SUBJECT: Final = "loom-system"
_LIFETIME_S: Final = 60
_LEEWAY_S: Final = 5  # clock skew between two deployables' machines
_MIN_SECRET_BYTES: Final = 32  # RFC 7518 §3.2, as for LOOM_JWT_SECRET


class SystemTokens:
    """Issues and verifies system tokens with one secret; `shared` whether it was configured
    (LOOM_SERVICE_SECRET) rather than drawn by this process."""

    def __init__(self, secret: str, shared: bool) -> None:
        if len(secret.encode()) < _MIN_SECRET_BYTES:
            raise ValueError(
                f"{ENV_SERVICE_SECRET} is {len(secret.encode())} bytes long; it needs at least "
                f"{_MIN_SECRET_BYTES}: use a longer random secret (e.g. `openssl rand -hex 32`)"
            )
        self._secret = secret
        self.shared = shared

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SystemTokens:
        env = os.environ if environ is None else environ
        secret = env.get(ENV_SERVICE_SECRET, "").strip()
        if secret:
            return cls(secret, shared=True)
        return cls(secrets.token_urlsafe(32), shared=False)

    def issue(self, tenant: str | None) -> str:
        import jwt

        now = int(time.time())
        claims: dict[str, Any] = {
            "sub": _SUBJECT,
            "aud": _AUDIENCE,
            "tenant": tenant,
            "iat": now,
            "exp": now + _LIFETIME_S,
        }
        return jwt.encode(claims, self._secret, algorithm="HS256")

    def verify(self, token: str) -> Principal:
        """The system principal a token names; `Unauthenticated` when it does not verify."""
        import jwt

        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=["HS256"],
                audience=_AUDIENCE,
                leeway=_LEEWAY_S,
                options={"require": ["exp", "sub", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(self._refusal(str(exc)), error="invalid_token") from None
        tenant = claims.get("tenant")
        if claims.get("sub") != _SUBJECT or not (tenant is None or isinstance(tenant, str)):
            raise Unauthenticated(self._refusal("not a system token"), error="invalid_token")
        return system_of(tenant or None)

    def _refusal(self, why: str) -> str:
        setting = (
            f"every deployable must have the same {ENV_SERVICE_SECRET}"
            if self.shared
            else f"this service has no {ENV_SERVICE_SECRET}, so it trusts only its own tokens: "
            "set the same one on every deployable"
        )
        return f"the {HEADER} header does not verify ({why}): {setting}"
