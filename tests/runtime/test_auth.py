"""Bearer-token authentication and the principal (`loom.runtime.http.auth`, `_principal`), without a
database: key configuration, token verification, claims to principal, the problems."""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from sqlalchemy import MetaData

from loom.runtime import (
    ANONYMOUS,
    SYSTEM,
    AuthConfigError,
    Forbidden,
    JwtAuth,
    Principal,
    Unauthenticated,
    authorize,
    create_app,
)
from loom.runtime.http.auth import principal_of

SECRET = "a-test-secret-that-is-long-enough-for-hs256"


def _claims(**extra: Any) -> dict[str, Any]:
    return {"sub": "ann", "exp": int(time.time()) + 600, **extra}


def _pem(public: Any) -> str:
    return str(
        public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()
    )


def test_principal_members() -> None:
    p = Principal(id="ann", claims={"email": "a@x", "n": 42, "ok": True, "l": ["b", "a"]})
    assert (p.subject, p.is_authenticated, p.is_system) == ("ann", True, False)
    assert p.claim("email") == "a@x"
    assert (p.claim("n"), p.claim("ok"), p.claim("l")) == ("42", "true", '["b","a"]')
    assert p.claim("missing") == ""
    assert p.id_is("ann") and not p.id_is("bob") and not p.id_is(None)
    assert p.id_is_not("bob") and p.id_is_not(None) and not p.id_is_not("ann")
    for nobody in (ANONYMOUS, SYSTEM):
        assert (nobody.id, nobody.is_authenticated, nobody.roles) == (None, False, ())
        assert not nobody.has_role("admin") and nobody.claim("sub") == ""
        # An absent id matches nothing, "" and null included, with `==` or `!=`.
        for value in ("", None, "ann"):
            assert not nobody.id_is(value) and not nobody.id_is_not(value)
        with pytest.raises(Unauthenticated, match=r"currentUser.id"):
            nobody.subject  # noqa: B018 - the read is what raises
    assert SYSTEM.is_system and not ANONYMOUS.is_system


def test_claims_to_principal() -> None:
    assert principal_of({"sub": "ann", "roles": ["admin", "agent"]}).roles == ("admin", "agent")
    assert principal_of({"sub": "ann"}).roles == ()
    # A roles claim that is not a list of strings refuses the token: never read as one role.
    for roles, says in [("admin", "a string"), (["admin", 3], "non-string"), ({"a": 1}, "object")]:
        with pytest.raises(Unauthenticated, match="list of strings") as err:
            principal_of({"sub": "ann", "roles": roles})
        assert says in err.value.detail
    for claims in ({"scope": "x"}, {"sub": ""}):  # verified, but naming no subject
        nameless = principal_of(claims)
        assert (nameless.id, nameless.is_authenticated) == (None, True)
        assert not nameless.id_is("") and not nameless.id_is_not("")
        with pytest.raises(Unauthenticated, match="`sub`"):
            nameless.subject  # noqa: B018


def test_hs256() -> None:
    auth = JwtAuth.hs256(SECRET)
    p = auth.authenticate(jwt.encode(_claims(roles=["admin"]), SECRET, algorithm="HS256"))
    assert (p.id, p.roles, p.claims["sub"]) == ("ann", ("admin",), "ann")
    with pytest.raises(AuthConfigError, match="at least 32"):
        JwtAuth.hs256("short")
    cases = [
        (jwt.encode(_claims(), "x" * 40, algorithm="HS256"), "signature"),
        (jwt.encode(_claims(exp=int(time.time()) - 5), SECRET, algorithm="HS256"), "expired"),
        (
            jwt.encode(_claims(nbf=int(time.time()) + 600), SECRET, algorithm="HS256"),
            "not valid yet",
        ),
        (jwt.encode(_claims(), SECRET * 2, algorithm="HS512"), "not valid"),  # not HS256
        ("garbage", "not valid"),
    ]
    for token, says in cases:
        with pytest.raises(Unauthenticated, match=says) as err:
            auth.authenticate(token)
        assert err.value.status == 401
        headers = err.value.headers()
        assert headers is not None
        assert headers["WWW-Authenticate"].startswith('Bearer realm="loom", error="invalid_token"')


def test_audience_is_checked_only_when_configured() -> None:
    token = jwt.encode(_claims(aud="other"), SECRET, algorithm="HS256")
    assert JwtAuth.hs256(SECRET).authenticate(token).id == "ann"
    with pytest.raises(Unauthenticated, match="audience"):
        JwtAuth.hs256(SECRET, audience="desk").authenticate(token)
    with pytest.raises(Unauthenticated, match="issuer"):
        JwtAuth.hs256(SECRET, issuer="me").authenticate(
            jwt.encode(_claims(iss="you"), SECRET, algorithm="HS256")
        )


def test_public_keys_from_the_environment(tmp_path: Any) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rs = JwtAuth.from_env({"LOOM_JWT_PUBLIC_KEY": _pem(rsa_key.public_key())})
    assert rs is not None and rs.algorithms == ("RS256",)
    assert rs.authenticate(jwt.encode(_claims(), rsa_key, algorithm="RS256")).id == "ann"
    pem_file = tmp_path / "es.pem"
    pem_file.write_text(_pem(ec_key.public_key()))
    es = JwtAuth.from_env({"LOOM_JWT_PUBLIC_KEY": str(pem_file), "LOOM_JWT_AUDIENCE": "desk"})
    assert es is not None and es.algorithms == ("ES256",) and es.audience == "desk"
    assert es.authenticate(jwt.encode(_claims(aud="desk"), ec_key, algorithm="ES256")).id == "ann"
    with pytest.raises(Unauthenticated):  # an RSA token where the key is EC
        es.authenticate(jwt.encode(_claims(aud="desk"), rsa_key, algorithm="RS256"))
    with pytest.raises(AuthConfigError, match="P-256"):
        JwtAuth.public_key(_pem(ec.generate_private_key(ec.SECP384R1()).public_key()))
    with pytest.raises(AuthConfigError, match="not a PEM"):
        JwtAuth.public_key("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")
    with pytest.raises(AuthConfigError, match="readable file"):
        JwtAuth.from_env({"LOOM_JWT_PUBLIC_KEY": str(tmp_path / "missing.pem")})
    with pytest.raises(AuthConfigError, match="not both"):
        JwtAuth.from_env({"LOOM_JWT_SECRET": SECRET, "LOOM_JWT_PUBLIC_KEY": "x"})
    assert JwtAuth.from_env({}) is None


def test_create_app_auth_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    from_env = create_app(title="t", metadata=MetaData(), routers=[])
    assert isinstance(from_env.state.loom_auth, JwtAuth)
    off = create_app(title="t", metadata=MetaData(), routers=[], auth=False)
    assert off.state.loom_auth is None
    given = JwtAuth.hs256(SECRET, audience="x")
    assert (
        create_app(title="t", metadata=MetaData(), routers=[], auth=given).state.loom_auth is given
    )
    monkeypatch.setenv("LOOM_JWT_SECRET", "short")
    with pytest.raises(AuthConfigError):
        create_app(title="t", metadata=MetaData(), routers=[])


def test_authorize() -> None:
    authorize(True, rule="r", detail="d")
    with pytest.raises(Forbidden) as err:
        authorize(False, rule="Ticket.close: requires x", detail="no")
    assert (err.value.status, err.value.type) == (403, "urn:loom:problem:forbidden")
    assert err.value.extensions() == {"rule": "Ticket.close: requires x"}
    assert err.value.headers() is None
