"""The request edge under authentication, over HTTP on SQLite and PostgreSQL
(tests/e2e/models/edge_auth.loom):

- an `Idempotency-Key` is kept per subject: a token without `sub` cannot send one (it would share
  the anonymous scope and replay its answers to every caller without a subject), and no recorded
  answer replays across subjects, tenants or to an anonymous caller;
- a `roles` claim that is `null`, and a claim holding NUL or a lone surrogate, refuse the token
  (401) alike on both databases, before anything is stored;
- `HEAD` answers every GET route as its GET does, without the body;
- a query string's `int` is digits, its `bool` `true` / `false`, and a list parameter left out is
  the empty list (docs/http.md#values, #handlers).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import column, func, select, table

from loom.testing import ServiceClient, serve
from tests.e2e.tokens import SECRET, token, use_secret

MODEL = [Path(__file__).resolve().parent / "models" / "edge_auth.loom"]
SECRET_CALL = "/api/commands/secret"


def signed(**claims: Any) -> dict[str, str]:
    """The Authorization header of a token with exactly these claims (and an `exp`): `token()`
    takes `secret` as its signing key, and these tokens carry a claim of that name."""
    body = {"exp": int(time.time()) + 86400, **claims}
    return {"Authorization": "Bearer " + jwt.encode(body, SECRET, algorithm="HS256")}


ANN = signed(sub="ann", roles=["admin"], secret="ann's")
NO_SUB = signed(roles=["admin"], secret="s3cr3t")


@pytest.fixture
async def edge(database_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url) as client:
        yield client


def keyed(who: dict[str, str], key: str) -> dict[str, str]:
    return {**who, "Idempotency-Key": key}


def problem(r: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json", r.headers
    body = dict(r.json())
    assert body["type"] == f"urn:loom:problem:{kind}", body
    return body


def raw_token(claims: str) -> dict[str, str]:
    """A token over claims given as JSON text, exactly as written (`"\\ud800"` stays an escape
    that decodes to a lone surrogate, which a JSON encoder would not write)."""

    def part(data: bytes) -> bytes:
        return base64.urlsafe_b64encode(data).rstrip(b"=")

    signing = part(b'{"alg":"HS256","typ":"JWT"}') + b"." + part(claims.encode())
    signature = part(hmac.new(SECRET.encode(), signing, hashlib.sha256).digest())
    return {"Authorization": "Bearer " + (signing + b"." + signature).decode()}


async def recorded(c: ServiceClient) -> int:
    async with c.service.engine.connect() as conn:
        count = select(func.count()).select_from(table("__loom_idempotency", column("key")))
        return int((await conn.execute(count)).scalar_one())


# -- idempotency scopes ------------------------------------------------------------------------


async def test_a_token_without_sub_cannot_send_a_key_so_its_answers_never_replay(
    edge: ServiceClient,
) -> None:
    refused = problem(
        await edge.post(SECRET_CALL, headers=keyed(NO_SUB, "job-1")), 422, "invalid-request"
    )
    assert refused["errors"][0]["path"] == "header.Idempotency-Key", refused
    assert "`sub`" in refused["detail"], refused
    assert await recorded(edge) == 0  # refused before anything ran or was kept
    # the anonymous caller with the same key runs its own request: refused by the gate, no secret
    r = await edge.post(SECRET_CALL, headers=keyed({}, "job-1"))
    problem(r, 422, "precondition-failed")
    assert "idempotent-replayed" not in r.headers and "s3cr3t" not in r.text
    # another token without `sub` is refused alike; without a key the request runs as usual
    other = signed(roles=["admin"], secret="other")
    problem(await edge.post(SECRET_CALL, headers=keyed(other, "job-1")), 422, "invalid-request")
    r = await edge.post(SECRET_CALL, headers=NO_SUB)
    assert (r.status_code, r.json()) == (200, "s3cr3t"), r.text
    empty_sub = signed(sub="", roles=["admin"], secret="empty")  # "" names no subject either
    problem(await edge.post(SECRET_CALL, headers=keyed(empty_sub, "job-2")), 422, "invalid-request")


async def test_no_recorded_answer_replays_to_another_principal(edge: ServiceClient) -> None:
    first = await edge.post(SECRET_CALL, headers=keyed(ANN, "job-1"))
    assert (first.status_code, first.json()) == (200, "ann's"), first.text
    others = {
        "anonymous": {},
        "bob": signed(sub="bob", roles=["admin"], secret="bob's"),
        "ann in a tenant": signed(sub="ann", roles=["admin"], secret="acme's", tenant="acme"),
        "ann in another": signed(sub="ann", roles=["admin"], secret="globex's", tenant="globex"),
    }
    for who, headers in others.items():
        r = await edge.post(SECRET_CALL, headers=keyed(headers, "job-1"))
        assert "idempotent-replayed" not in r.headers, (who, r.text)
        assert "ann's" not in r.text, (who, r.text)
    # ann herself, with a renewed token (another `exp`), gets her recorded answer
    renewed = signed(sub="ann", roles=["admin"], secret="changed", exp=int(time.time()) + 7200)
    again = await edge.post(SECRET_CALL, headers=keyed(renewed, "job-1"))
    assert again.headers["idempotent-replayed"] == "true", again.text
    assert again.content == first.content


# -- claims the token may not carry ------------------------------------------------------------


@pytest.mark.parametrize(
    "roles",
    [None, "admin", ["admin", 1], {"admin": True}],
    ids=["null", "string", "mixed", "object"],
)
async def test_a_roles_claim_that_is_not_a_list_of_strings_is_401(
    edge: ServiceClient, roles: Any
) -> None:
    headers = raw_token(json.dumps({"sub": "ann", "roles": roles}))
    body = problem(await edge.post(SECRET_CALL, headers=headers), 401, "unauthenticated")
    assert "`roles` claim must be a list of strings" in body["detail"], body
    r = await edge.get("/api/queries/echo", headers=headers)  # a read too: the token is refused
    assert r.status_code == 401 and "invalid_token" in r.headers["www-authenticate"], r.text


@pytest.mark.parametrize(
    "claims",
    [
        '{"sub": "an\\u0000n", "team": "red"}',
        '{"sub": "ann", "team": "r\\u0000d"}',
        '{"sub": "ann", "team": "red", "extra": {"deep": ["ok", "n\\u0000"]}}',
        '{"sub": "ann", "team": "red", "extra": {"k\\u0000": 1}}',
        '{"sub": "ann", "team": "red", "t\\u0000am": "x"}',
        '{"sub": "\\ud800", "team": "red"}',
        '{"sub": "ann", "team": "\\udfff"}',
        '{"sub": "ann", "team": "red", "\u00e9quipe\u65e5": "a\\u0000"}',
    ],
    ids=[
        "sub",
        "claim",
        "nested",
        "nested-name",
        "claim-name",
        "surrogate-sub",
        "surrogate",
        "non-latin-name",
    ],
)
async def test_a_claim_holding_nul_or_a_lone_surrogate_is_401_and_nothing_is_stored(
    edge: ServiceClient, claims: str
) -> None:
    r = await edge.post("/api/commands/jot", headers=raw_token(claims))
    body = problem(r, 401, "unauthenticated")
    assert "claim is not valid text" in body["detail"], body
    assert r.headers["www-authenticate"].isascii(), r.headers
    assert (await edge.get("/api/notes")).json()["total"] == 0
    # the same token without the bad text stores the note
    r = await edge.post("/api/commands/jot", headers=token(team="red"))
    assert r.status_code == 200, r.text
    note = (await edge.get(f"/api/notes/{r.json()}")).json()
    assert (note["author"], note["team"]) == ("ann", "red")


# -- HEAD --------------------------------------------------------------------------------------


async def test_head_answers_every_get_route_as_its_get_without_the_body(
    edge: ServiceClient,
) -> None:
    id = (await edge.post("/api/commands/jot", headers=token(team="red"))).json()
    for path in (
        f"/api/notes/{id}",
        "/api/notes?limit=5",
        "/api/queries/echo?codes=a&codes=b",
        "/api/queries/pick?n=3&flag=true",
        "/openapi.json",
    ):
        got = await edge.get(path)
        head = await edge.head(path)
        assert (head.status_code, head.content) == (200, b""), (path, head.text)
        for name in ("content-type", "content-length"):
            assert head.headers[name] == got.headers[name], (path, name)
        assert head.headers["x-correlation-id"]
    # a refusal is the GET's refusal, without its body
    for path, status in (
        (f"/api/notes/{uuid.uuid4()}", 404),
        ("/api/queries/pick?n=1.0&flag=true", 422),
    ):
        got = await edge.get(path)
        head = await edge.head(path)
        assert (head.status_code, head.content) == (got.status_code, b""), path
        assert (
            head.status_code == status
            and head.headers["content-length"] == got.headers["content-length"]
        )
    missing = await edge.head(
        f"/api/notes/{id}", headers=raw_token('{"sub": "ann", "roles": null}')
    )
    assert (missing.status_code, missing.content) == (401, b"")
    # a path with no GET route answers HEAD as GET: 405, with the methods it has
    post_only = await edge.head("/api/commands/jot")
    assert (post_only.status_code, post_only.content) == (405, b"")
    assert post_only.headers["allow"] == "POST"


# -- query strings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n",
    ["1.0", "1_000", "%201", "1%20", "+1", "1e3", "0x1", "%D9%A3", "", "-", "99999999999999999999"],
)
async def test_a_query_int_is_digits_only(edge: ServiceClient, n: str) -> None:
    body = problem(await edge.get(f"/api/queries/pick?n={n}&flag=true"), 422, "invalid-request")
    assert [e["path"] for e in body["errors"]] == ["query.n"], body


@pytest.mark.parametrize(("n", "value"), [("42", 42), ("-7", -7), ("007", 7), ("0", 0)])
async def test_a_query_int_in_digits_is_read(edge: ServiceClient, n: str, value: int) -> None:
    r = await edge.get(f"/api/queries/pick?n={n}&flag=true")
    assert (r.status_code, r.json()) == (200, value), r.text


@pytest.mark.parametrize("flag", ["yes", "on", "1", "0", "True", "FALSE", "t", "", "%20true"])
async def test_a_query_bool_is_true_or_false_only(edge: ServiceClient, flag: str) -> None:
    body = problem(await edge.get(f"/api/queries/pick?n=2&flag={flag}"), 422, "invalid-request")
    assert [e["path"] for e in body["errors"]] == ["query.flag"], body
    assert (await edge.get("/api/queries/pick?n=2&flag=true")).json() == 2
    assert (await edge.get("/api/queries/pick?n=2&flag=false")).json() == -2


async def test_page_limits_and_list_elements_are_digits_too(edge: ServiceClient) -> None:
    for query in ("limit=1.0", "limit=%205", "offset=1_0"):
        problem(await edge.get(f"/api/notes?{query}"), 422, "invalid-request")
    assert (await edge.get("/api/notes?limit=5&offset=0")).status_code == 200
    body = problem(await edge.get("/api/queries/sizes?sizes=1&sizes=2.0"), 422, "invalid-request")
    assert [e["path"] for e in body["errors"]] == ["query.sizes.1"], body
    body = problem(await edge.get("/api/queries/sizes?flags=yes"), 422, "invalid-request")
    assert [e["path"] for e in body["errors"]] == ["query.flags.0"], body


async def test_a_list_parameter_left_out_is_the_empty_list(edge: ServiceClient) -> None:
    for query, value in (
        ("", []),
        ("?codes=", [""]),  # a key without a value is one empty string
        ("?codes=a&codes=b", ["a", "b"]),
    ):
        r = await edge.get(f"/api/queries/echo{query}")
        assert (r.status_code, r.json()) == (200, value), (query, r.text)
    r = await edge.get("/api/queries/sizes")
    assert (r.status_code, r.json()) == (200, []), r.text
    assert (await edge.get("/api/queries/sizes?sizes=3&sizes=-1")).json() == [3, -1]
    # the OpenAPI document says so: not required
    params = (await edge.get("/openapi.json")).json()["paths"]["/api/queries/echo"]["get"]
    codes = next(p for p in params["parameters"] if p["name"] == "codes")
    assert codes["required"] is False, codes
