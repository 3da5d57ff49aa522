"""Bearer tokens for the tests of models served with JWT authentication (LOOM_JWT_SECRET)."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest

SECRET = "a-test-secret-that-is-long-enough-for-hs256"


def token(secret: str = SECRET, /, **claims: Any) -> dict[str, str]:
    """The Authorization header of an HS256 token for `ann` (claims override; a claim given as
    None is left out, `sub=None`: a token without a subject). It expires in a day: tests make
    some at import, and a whole suite may run before they are used. `secret` is positional only,
    so that claims spread from a dict (`**ADMIN`) are claims to mypy too."""
    body = {"sub": "ann", "exp": int(time.time()) + 86400, **claims}
    body = {k: v for k, v in body.items() if v is not None}
    return {"Authorization": "Bearer " + jwt.encode(body, secret, algorithm="HS256")}


def bearer(headers: dict[str, str]) -> str:
    """The token of an Authorization header `token` made (what a user pastes in a form)."""
    return headers["Authorization"].removeprefix("Bearer ")


def use_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    """Serve with SECRET as the only JWT setting, whatever the environment says."""
    for name in (
        "LOOM_JWT_PUBLIC_KEY",
        "LOOM_JWT_AUDIENCE",
        "LOOM_JWT_ISSUER",
        "LOOM_TENANT_CLAIM",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
