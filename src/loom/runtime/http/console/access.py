"""Who may use the console, and the guard of its forms (docs/console.md#access).

- With a token verifier configured (`--jwt-secret`, `--jwt-public-key`): the role `admin`. A
  browser has no `Authorization` header to send, so the console's login form takes the bearer
  token, verifies it, and keeps it in the cookie `loom_console` (HttpOnly: no script reads it;
  SameSite=Strict: no other site's page sends it; Path=/_loom: no model route sees it). A
  request that carries `Authorization: Bearer` (a proxy that adds it) needs no cookie. A token
  that names a tenant is that tenant's administrator: every screen shows its tenant's rows only.
- Without a verifier: only from a loopback address, unless `--console-public`.
- Forms: every POST carries a CSRF token (an HMAC of the session under a key the replicas
  share, `_form_key`) and a browser's cross-site POST (`Sec-Fetch-Site: cross-site`) is refused as well.
  The cookie alone would stop a cross-site POST, but without a verifier there is no cookie: a
  page on another site could post to the loopback console of the developer reading it.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass

from starlette.requests import Request

from loom.runtime.http.auth import ADMIN_ROLE, Authenticator
from loom.runtime.values.environment import env_flag
from loom.runtime.values.errors import Forbidden, Unauthenticated
from loom.runtime.values.principal import Principal, current_principal

COOKIE = "loom_console"
PREFIX = "/_loom"
# a browser's page on another site (or another subdomain of it) posting to the console
_FOREIGN = frozenset({"cross-site", "same-site"})


@dataclass(frozen=True)
class Viewer:
    """The console's user: `tenant` confines every screen (None: the operator, every tenant)."""

    name: str
    tenant: str | None
    read_only: bool
    csrf: str
    signed_in: bool  # through the login form (a cookie): it can sign out


class NotSignedIn(Exception):
    """No token yet: the console answers with its login form."""


@dataclass(frozen=True)
class ConsoleAccess:
    authenticator: Authenticator | None
    public: bool
    read_only: bool
    key: bytes

    @classmethod
    def from_env(cls, authenticator: Authenticator | None) -> ConsoleAccess:
        return cls(
            authenticator,
            public=env_flag("LOOM_CONSOLE_PUBLIC"),
            read_only=env_flag("LOOM_CONSOLE_READ_ONLY"),
            key=_form_key(),
        )

    def viewer(self, request: Request) -> Viewer:
        """The request's viewer; NotSignedIn, or a Forbidden / Unauthenticated refusal."""
        cookie = request.cookies.get(COOKIE)
        if self.authenticator is None:
            if not self.public and not _loopback(request):
                raise Forbidden(
                    "console: loopback only",
                    "the console answers loopback addresses only when no bearer tokens are "
                    "verified: browse it on the service's machine, or start the service with "
                    "--console-public (or a token verifier, --jwt-secret)",
                )
            return Viewer("local", None, self.read_only, self._csrf(""), signed_in=False)
        principal = current_principal()
        signed_in = False
        if not principal.is_authenticated:
            if not cookie:
                raise NotSignedIn
            try:
                principal = self.authenticator.authenticate(cookie)
            except Unauthenticated:  # expired, or signed by a key no longer used: again
                raise NotSignedIn from None
            signed_in = True
        admin(principal)
        name = principal.id or "admin"
        csrf = self._csrf(cookie or "")
        return Viewer(name, principal.tenant, self.read_only, csrf, signed_in)

    def check_form(self, request: Request, viewer: Viewer, token: str) -> None:
        """A POST of the console's own page: its CSRF token, and no other site's page; and
        none at all when the console is read-only."""
        if viewer.read_only:
            raise read_only()
        if request.headers.get("sec-fetch-site", "") in _FOREIGN:
            raise Forbidden("console: same origin", "the console takes no other site's forms")
        if not hmac.compare_digest(token.encode(), viewer.csrf.encode()):
            raise Forbidden(
                "console: CSRF token",
                "the form's CSRF token is missing or stale: reload the console's page and retry",
            )

    def _csrf(self, session: str) -> str:
        return hmac.new(self.key, session.encode(), hashlib.sha256).hexdigest()


def read_only() -> Forbidden:
    """The refusal of an action (or of a page that leads to one) by a read-only console."""
    return Forbidden(
        "console: read-only", "the console is read-only (--console-read-only): it takes no action"
    )


def admin(principal: Principal) -> None:
    """The console's principal has the role admin (else 403)."""
    if not principal.has_role(ADMIN_ROLE):
        raise Forbidden(
            f'console: requires currentUser.hasRole("{ADMIN_ROLE}")',
            f"the console needs a token with the role `{ADMIN_ROLE}`",
        )


def sign_in(access: ConsoleAccess, token: str) -> Principal:
    """The principal of a token typed in the login form: verified, with the role admin."""
    if access.authenticator is None:
        raise Unauthenticated("this service verifies no tokens: the console needs no login")
    principal = access.authenticator.authenticate(token.strip())
    admin(principal)
    return principal


def _form_key() -> bytes:
    """The key of the CSRF tokens: drawn from a secret the replicas of a deployable share (its
    service secret, else its JWT secret), so that a form one replica served posts to another;
    without either, drawn at random (one replica: a restart asks to reload the page)."""
    for name in ("LOOM_SERVICE_SECRET", "LOOM_JWT_SECRET"):
        secret = os.environ.get(name)
        if secret:
            return hashlib.sha256(b"loom console forms\0" + secret.encode()).digest()
    return secrets.token_bytes(32)


def _loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
