"""The HS256 secret both sides of the API-call tests verify, and tokens signed with it."""

from __future__ import annotations

import time

import jwt

SECRET = "an-api-calls-test-secret-of-32-bytes!"


def token(sub: str, roles: list[str]) -> str:
    claims = {"sub": sub, "roles": roles, "exp": int(time.time()) + 600}
    return jwt.encode(claims, SECRET, algorithm="HS256")
