"""Bearer-token authentication: who the principal of a request is.

`create_app(auth=...)` takes an `Authenticator` (a `JwtAuth`, or anything with
`authenticate(token) -> Principal`), `False` for none, or None (the default) to configure JWT from
the environment:

    LOOM_JWT_SECRET       an HMAC secret (HS256), at least 32 bytes
    LOOM_JWT_PUBLIC_KEY   a PEM public key, or the path of a file holding one: RS256 for an RSA
                          key, ES256 for an EC P-256 key
    LOOM_JWT_AUDIENCE     optional: the `aud` a token must carry
    LOOM_JWT_ISSUER       optional: the `iss` a token must carry
    LOOM_TENANT_CLAIM     optional: the claim naming the caller's tenant (default `tenant`)

Per request (in `http.edge.EdgeMiddleware`):

- no `Authorization` header: the request is anonymous (`ANONYMOUS`);
- `Authorization: Bearer <token>` that verifies: the principal of its claims (`sub` -> id,
  `roles` -> roles, the tenant claim -> tenant, every claim readable through `claim()`); a
  `roles` claim that is not a list of strings (`null` included), or a claim holding NUL or a lone
  surrogate, is a 401 like a token that does not verify; a tenant claim that is not a non-empty
  string is no tenant;
- any other `Authorization` header (a token that does not verify, expired, for another audience
  or issuer, malformed, or another scheme): 401 `urn:loom:problem:unauthenticated` with
  `WWW-Authenticate: Bearer …`, and the route never runs;
- with no authentication configured every request is anonymous, and an `Authorization` header is
  ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Protocol

from starlette.requests import Request

from loom.runtime.values.errors import Forbidden, Unauthenticated
from loom.runtime.values.principal import TENANT_CLAIM, Principal, current_principal
from loom.runtime.values.text import text_error

ADMIN_ROLE = "admin"
ENV_TENANT_CLAIM = "LOOM_TENANT_CLAIM"
_MIN_SECRET_BYTES = 32  # RFC 7518 §3.2: an HS256 key is at least as long as the hash


class Authenticator(Protocol):
    """Turns a bearer token into the request's principal; raises `Unauthenticated` when the token
    does not verify."""

    def authenticate(self, token: str) -> Principal: ...


class AuthConfigError(ValueError):
    """The authentication settings cannot work (a short secret, an unreadable key)."""


@dataclass(frozen=True, slots=True)
class JwtAuth:
    """Verifies JWTs with one key. `key` is an HMAC secret or a PEM public key; `algorithms` the
    ones a token may be signed with. `exp` and `nbf` are checked when the token has them; `aud`
    and `iss` when `audience` / `issuer` are set. `leeway` (seconds) absorbs clock skew."""

    key: str
    algorithms: tuple[str, ...]
    audience: str | None = None
    issuer: str | None = None
    leeway: float = 0
    roles_claim: str = "roles"
    tenant_claim: str = TENANT_CLAIM

    def __post_init__(self) -> None:
        # A service that verifies tokens loads PyJWT (and cryptography) as it starts, not on its
        # first request; one that verifies none never does (`authenticate` imports it).
        import jwt  # noqa: F401

    @classmethod
    def hs256(
        cls,
        secret: str,
        *,
        audience: str | None = None,
        issuer: str | None = None,
        leeway: float = 0,
    ) -> JwtAuth:
        """A shared secret (HS256)."""
        if len(secret.encode()) < _MIN_SECRET_BYTES:
            raise AuthConfigError(
                f"the JWT secret is {len(secret.encode())} bytes long; HS256 needs at least "
                f"{_MIN_SECRET_BYTES} (RFC 7518 §3.2): use a longer random secret"
            )
        return cls(secret, ("HS256",), audience, issuer, leeway)

    @classmethod
    def public_key(
        cls,
        pem: str,
        *,
        audience: str | None = None,
        issuer: str | None = None,
        leeway: float = 0,
    ) -> JwtAuth:
        """A PEM public key: RS256 for an RSA key, ES256 for an EC P-256 key."""
        from cryptography.hazmat.primitives.asymmetric import ec, rsa
        from cryptography.hazmat.primitives.serialization import load_pem_public_key

        try:
            loaded = load_pem_public_key(pem.encode())
        except ValueError as exc:
            raise AuthConfigError(f"the JWT public key is not a PEM public key: {exc}") from None
        if isinstance(loaded, rsa.RSAPublicKey):
            algorithm = "RS256"
        elif isinstance(loaded, ec.EllipticCurvePublicKey) and loaded.curve.name == "secp256r1":
            algorithm = "ES256"
        else:
            raise AuthConfigError(
                "the JWT public key must be an RSA key (RS256) or an EC P-256 key (ES256)"
            )
        return cls(pem, (algorithm,), audience, issuer, leeway)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> JwtAuth | None:
        """The JWT settings of the environment (module docstring), or None when neither
        LOOM_JWT_SECRET nor LOOM_JWT_PUBLIC_KEY is set."""
        env = os.environ if environ is None else environ
        secret = env.get("LOOM_JWT_SECRET") or None
        public = env.get("LOOM_JWT_PUBLIC_KEY") or None
        audience = env.get("LOOM_JWT_AUDIENCE") or None
        issuer = env.get("LOOM_JWT_ISSUER") or None
        if secret and public:
            raise AuthConfigError("set LOOM_JWT_SECRET or LOOM_JWT_PUBLIC_KEY, not both")
        tenant_claim = env.get(ENV_TENANT_CLAIM) or TENANT_CLAIM
        if secret:
            return replace(
                cls.hs256(secret, audience=audience, issuer=issuer), tenant_claim=tenant_claim
            )
        if public:
            if "-----BEGIN" not in public:
                try:
                    public = Path(public).read_text(encoding="utf-8")
                except OSError as exc:
                    raise AuthConfigError(
                        "LOOM_JWT_PUBLIC_KEY is neither a PEM key nor a readable file: "
                        f"{exc.strerror or exc}"
                    ) from None
            return replace(
                cls.public_key(public, audience=audience, issuer=issuer), tenant_claim=tenant_claim
            )
        return None

    def authenticate(self, token: str) -> Principal:
        import jwt  # loaded by __post_init__: a module looked up, not imported

        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self.key,
                algorithms=list(self.algorithms),
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options={"verify_aud": self.audience is not None},
            )
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("the bearer token has expired", error="invalid_token") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated(
                "the bearer token is not valid yet", error="invalid_token"
            ) from None
        except (jwt.InvalidAudienceError, jwt.InvalidIssuerError) as exc:
            what = "audience" if isinstance(exc, jwt.InvalidAudienceError) else "issuer"
            raise Unauthenticated(
                f"the bearer token is not for this service (its {what} does not match)",
                error="invalid_token",
            ) from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated(
                "the bearer token's signature does not verify", error="invalid_token"
            ) from None
        except jwt.PyJWTError as exc:
            raise Unauthenticated(
                f"the bearer token is not valid: {exc}", error="invalid_token"
            ) from None
        return principal_of(claims, self.roles_claim, self.tenant_claim)


def principal_of(
    claims: Mapping[str, Any], roles_claim: str = "roles", tenant_claim: str = TENANT_CLAIM
) -> Principal:
    """The principal of verified claims: `sub` is the id (none when absent or empty: such a token
    is authenticated but matches no id), `roles_claim` the roles. The roles claim must be a list of
    strings when present; anything else (a single string or `null` included: neither is read as
    roles) refuses the token with a 401 rather than guessing, and so does a claim holding NUL or a
    lone surrogate (`_check_text`)."""
    sub = claims.get("sub")
    if sub is not None and not isinstance(sub, str):
        raise Unauthenticated(
            "the bearer token's `sub` claim is not a string", error="invalid_token"
        )
    _check_text(claims)
    # an absent roles claim is no roles; a present one, `null` included, must be a list
    raw = claims.get(roles_claim)
    if roles_claim not in claims:
        roles: tuple[str, ...] = ()
    elif isinstance(raw, list) and all(isinstance(r, str) for r in raw):
        roles = tuple(raw)
    else:
        raise Unauthenticated(
            f"the bearer token's `{roles_claim}` claim must be a list of strings, "
            f'e.g. ["admin"], not {_json_kind(raw)}',
            error="invalid_token",
        )
    # a tenant is a name: a number, a list or "" names none (the request is then refused by a
    # tenanted route, not read as the tenant "42")
    tenant = claims.get(tenant_claim)
    return Principal(
        id=sub or None,
        claims=MappingProxyType(dict(claims)),
        roles=roles,
        tenant=tenant if isinstance(tenant, str) and tenant else None,
    )


def _check_text(claims: Mapping[str, Any]) -> None:
    """Refuse a token holding text no `string` may (NUL, a lone surrogate) in any claim name or
    value: its claims may become stored values (`currentUser.id`, `claim(…)`), and PostgreSQL
    cannot store NUL, so the token is refused here alike on both engines, not the save later."""
    pending: list[tuple[str, Any]] = list(claims.items())
    while pending:  # a loop, not recursion: a claim may nest deeper than the stack
        name, value = pending.pop()
        problem = text_error(name)
        if problem is None and isinstance(value, str):
            problem = text_error(value)
        if problem is not None:
            raise Unauthenticated(
                f"the bearer token's `{_printable(name)}` claim is not valid text: {problem}",
                error="invalid_token",
            )
        if isinstance(value, dict):
            pending += [(name, k) for k in value]  # a nested object's keys are text too
            pending += [(name, v) for v in value.values()]
        elif isinstance(value, list):
            pending += [(name, item) for item in value]


def _printable(name: str) -> str:
    # ASCII: the detail is also the WWW-Authenticate header's error_description (Latin-1 only)
    return name.encode("ascii", "backslashreplace").decode("ascii")


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list with a non-string item"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an object" if isinstance(value, dict) else "another value"


def resolve_auth(auth: Authenticator | Literal[False] | None) -> Authenticator | None:
    """`create_app(auth=…)`: None reads the environment, False turns authentication off."""
    if auth is False:
        return None
    if auth is None:
        return JwtAuth.from_env()
    return auth


def bearer_token(header: str) -> str:
    """The token of an `Authorization: Bearer <token>` header; `Unauthenticated` otherwise."""
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise Unauthenticated(
            "only bearer tokens are accepted (`Authorization: Bearer <token>`)",
            error="invalid_request",
        )
    token = token.strip()
    if not token:
        raise Unauthenticated("the bearer token is empty", error="invalid_request")
    return token


def require_admin(request: Request) -> None:
    """FastAPI dependency of the admin endpoints: with authentication configured, the caller must
    be authenticated (else 401) and have the role `admin` (else 403); without, they are open."""
    if getattr(request.app.state, "loom_auth", None) is None:
        return
    principal = current_principal()
    if not principal.is_authenticated:
        raise Unauthenticated(
            f"the admin endpoints need a bearer token with the role `{ADMIN_ROLE}`"
        )
    if not principal.has_role(ADMIN_ROLE):
        raise Forbidden(
            f'admin: requires currentUser.hasRole("{ADMIN_ROLE}")',
            f"the admin endpoints need the role `{ADMIN_ROLE}`",
        )


def add_bearer_scheme(app: Any) -> None:
    """Declare the optional bearer authentication in the app's OpenAPI document."""
    base_openapi = app.openapi

    def openapi() -> dict[str, Any]:
        cached: dict[str, Any] | None = app.openapi_schema
        if cached is not None:
            return cached
        schema: dict[str, Any] = base_openapi()
        schemes = schema.setdefault("components", {}).setdefault("securitySchemes", {})
        schemes.setdefault("bearer", {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"})
        schema.setdefault("security", [{"bearer": []}, {}])  # a token, or none (anonymous)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi
