"""System tokens (loom.runtime.http.system_tokens): what verifies and what is refused. The calls
that carry them are tested end to end in tests/runtime/api_calls/test_tenanted.py."""

from __future__ import annotations

import time

import jwt
import pytest

from loom.runtime import SYSTEM, Unauthenticated
from loom.runtime.http.system_tokens import SystemTokens

SECRET = "a-service-secret-of-at-least-32-bytes"


def test_a_token_names_the_system_of_its_tenant() -> None:
    tokens = SystemTokens(SECRET, shared=True)
    acme = tokens.verify(tokens.issue("acme"))
    assert (acme.is_system, acme.tenant, acme.id, acme.roles) == (True, "acme", None, ())
    assert not acme.is_authenticated  # never a user: the admin routes stay refused
    assert tokens.verify(tokens.issue(None)) == SYSTEM


@pytest.mark.parametrize(
    "claims",
    [
        {"exp": int(time.time()) - 60},  # expired (past the leeway)
        {"aud": "someone-else"},
        {"sub": "ann"},  # a user's token signed with the secret is no system token
        {"tenant": 42},
    ],
    ids=["expired", "audience", "subject", "tenant"],
)
def test_a_token_that_is_not_a_valid_system_token_is_refused(claims: dict[str, object]) -> None:
    body: dict[str, object] = {"sub": "loom-system", "aud": "loom-system", "tenant": "acme"}
    body["exp"] = int(time.time()) + 60
    body.update(claims)
    with pytest.raises(Unauthenticated) as refused:
        SystemTokens(SECRET, shared=True).verify(jwt.encode(body, SECRET, algorithm="HS256"))
    assert "LOOM_SERVICE_SECRET" in refused.value.detail


def test_another_secret_does_not_verify_and_the_refusal_says_what_to_set() -> None:
    own = SystemTokens.from_env({})  # none configured: this process's own
    assert not own.shared
    other = SystemTokens(SECRET, shared=True)
    with pytest.raises(Unauthenticated) as refused:
        own.verify(other.issue("acme"))
    assert "has no LOOM_SERVICE_SECRET" in refused.value.detail
    with pytest.raises(Unauthenticated) as refused:
        other.verify(own.issue("acme"))
    assert "every deployable must have the same LOOM_SERVICE_SECRET" in refused.value.detail


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32"):
        SystemTokens.from_env({"LOOM_SERVICE_SECRET": "short"})
    assert SystemTokens.from_env({"LOOM_SERVICE_SECRET": SECRET}).shared
