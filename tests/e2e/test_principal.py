"""Principal and gates over HTTP, on SQLite and PostgreSQL (tests/e2e/models/principal.loom):

- an operation's `requires` gate refuses with 403 `forbidden`, before its `when` gate;
- a reaction (in-process, and through the outbox relay) calls a gated operation as the system
  principal, and passes `requires currentUser.isSystem || …`;
- without authentication every request is anonymous, and a bearer header is ignored;
- with JWT (LOOM_JWT_SECRET): a token with the role admin passes, a bad, expired or foreign token
  is a 401 `unauthenticated` with `WWW-Authenticate: Bearer`, a token without the role a 403;
- `currentUser` in command and query handler bodies;
- a principal without an id (anonymous, a token without `sub` or with an empty one) matches no id:
  `x == currentUser.id` and `x != currentUser.id` are false for it, "" and null included, and
  reading `currentUser.id` as a value (to store or return it) is a 401 that saves nothing;
- a `roles` claim that is not a list of strings is a 401, not read as one role;
- the dead-letter admin routes: open without authentication, `admin` only with it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, serve
from tests.e2e.tokens import SECRET, token

MODEL = [Path(__file__).resolve().parent / "models" / "principal.loom"]
CLOSE_RULE = 'Ticket.close: requires currentUser.isSystem || currentUser.hasRole("admin")'
ENV = ("LOOM_JWT_SECRET", "LOOM_JWT_PUBLIC_KEY", "LOOM_JWT_AUDIENCE", "LOOM_JWT_ISSUER")


ADMIN = {"roles": ["admin"]}


@pytest.fixture
async def open_desk(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    async with serve(MODEL, database_url) as client:
        yield client


@pytest.fixture
async def secured(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    async with serve(MODEL, database_url) as client:
        yield client


async def new_ticket(c: ServiceClient) -> str:
    r = await c.post("/api/tickets", json={})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


async def ticket(c: ServiceClient, t: str) -> dict[str, Any]:
    r = await c.get(f"/api/tickets/{t}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def problem(r: Any, status: int, kind: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = dict(r.json())
    assert body["type"] == f"urn:loom:problem:{kind}" and body["status"] == status, body
    return body


async def test_without_auth_requests_are_anonymous(open_desk: ServiceClient) -> None:
    c = open_desk
    t = await new_ticket(c)
    # The gate refuses the anonymous caller: 403, the rule named, nothing changed.
    body = problem(await c.post(f"/api/tickets/{t}/close", json={"by": "ann"}), 403, "forbidden")
    assert body["rule"] == CLOSE_RULE
    assert body["instance"] == f"/api/tickets/{t}/close"
    assert (await ticket(c, t))["status"] == "Open"
    # `requires` is checked before `when`: `archive` needs Closed, but the gate answers first.
    problem(await c.post(f"/api/tickets/{t}/archive", json={}), 403, "forbidden")
    # No authentication configured: a bearer header is ignored (no 401, still anonymous).
    r = await c.post(f"/api/tickets/{t}/close", json={"by": "ann"}, headers=token(**ADMIN))
    problem(r, 403, "forbidden")
    r = await c.get("/api/queries/who_am_i", headers={"Authorization": "Bearer not-a-jwt"})
    assert r.status_code == 200, r.text
    assert r.json() == {
        "id": "",
        "authenticated": False,
        "system": False,
        "roles": [],
        "email": "",
        "admin": False,
    }
    # A precondition over currentUser in a handler is a 422 like any precondition.
    problem(await c.post("/api/commands/take", json={"ticket": t}), 422, "precondition-failed")

    # A reaction runs as the system principal: AutoClose (in-process) passes the gate of
    # `close`, then AutoArchive (through the outbox relay) the `isSystem` gate of `archive`.
    r = await c.post("/api/commands/expire", json={"ticket": t})
    assert r.status_code == 204, r.text
    after = await ticket(c, t)
    assert (after["status"], after["closedBy"]) == ("Archived", "system")

    # The admin routes are open without authentication.
    r = await c.get("/api/admin/dead-letters")
    assert r.status_code == 200, r.text
    spec = (await c.get("/openapi.json")).json()
    responses = spec["paths"]["/api/tickets/{id}/close"]["post"]["responses"]
    assert {"401", "403"} <= responses.keys()
    assert "securitySchemes" not in spec.get("components", {})


async def test_jwt_bearer_tokens(secured: ServiceClient) -> None:
    c = secured
    t = await new_ticket(c)
    # A token with the role admin passes the gate.
    r = await c.post(f"/api/tickets/{t}/close", json={"by": "ann"}, headers=token(**ADMIN))
    assert r.status_code == 204, r.text
    assert (await ticket(c, t))["closedBy"] == "ann"

    t = await new_ticket(c)
    # A token that does not verify is a 401 with WWW-Authenticate, and the route never runs.
    for headers, says in [
        (token("another-secret-that-is-long-enough-for-hs256", **ADMIN), "signature"),
        (token(exp=int(time.time()) - 60, **ADMIN), "expired"),
        ({"Authorization": "Bearer not-a-jwt"}, "not valid"),
        ({"Authorization": "Basic YW5uOnNlY3JldA=="}, "bearer"),
    ]:
        r = await c.post(f"/api/tickets/{t}/close", json={"by": "x"}, headers=headers)
        body = problem(r, 401, "unauthenticated")
        assert says in body["detail"], body
        assert r.headers["www-authenticate"].startswith("Bearer"), r.headers
        assert r.headers["x-correlation-id"]
    assert (await ticket(c, t))["status"] == "Open"
    # Verified, but without the role: 403. No token at all: anonymous, 403.
    problem(
        await c.post(f"/api/tickets/{t}/close", json={"by": "x"}, headers=token()), 403, "forbidden"
    )
    problem(await c.post(f"/api/tickets/{t}/close", json={"by": "x"}), 403, "forbidden")

    # currentUser in the bodies a request runs, and in a gate over a parameter.
    ann = token(roles=["agent"], email="ann@example.test")
    r = await c.get("/api/queries/who_am_i", headers=ann)
    assert r.json() == {
        "id": "ann",
        "authenticated": True,
        "system": False,
        "roles": ["agent"],
        "email": "ann@example.test",
        "admin": False,
    }
    r = await c.post("/api/commands/take", json={"ticket": t}, headers=ann)
    assert r.status_code == 204, r.text
    assert (await ticket(c, t))["owner"] == "ann"
    r = await c.post("/api/workflows/open_ticket", json={}, headers=ann)
    assert r.status_code == 200, r.text
    assert (await ticket(c, r.json()))["owner"] == "ann"
    r = await c.post(f"/api/tickets/{t}/take", json={"who": "bob"}, headers=ann)
    problem(r, 403, "forbidden")

    # The reactions of ann's (non-admin) command still run as the system principal.
    r = await c.post("/api/commands/expire", json={"ticket": t}, headers=ann)
    assert r.status_code == 204, r.text
    assert (await ticket(c, t))["status"] == "Archived"

    # The admin routes need an authenticated principal with the role admin.
    r = await c.get("/api/admin/dead-letters")
    problem(r, 401, "unauthenticated")
    assert r.headers["www-authenticate"].startswith("Bearer")
    problem(await c.get("/api/admin/dead-letters", headers=ann), 403, "forbidden")
    r = await c.get("/api/admin/dead-letters", headers=token(**ADMIN))
    assert r.status_code == 200, r.text
    spec = (await c.get("/openapi.json")).json()
    assert spec["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


async def test_audience_and_issuer(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    monkeypatch.setenv("LOOM_JWT_AUDIENCE", "desk")
    monkeypatch.setenv("LOOM_JWT_ISSUER", "https://id.example.test")
    async with serve(MODEL, database_url) as c:
        t = await new_ticket(c)
        path = f"/api/tickets/{t}/close"
        right = {"aud": "desk", "iss": "https://id.example.test", **ADMIN}
        for wrong in ({"aud": "other"}, {"iss": "https://evil.example.test"}, {"aud": None}):
            claims = {k: v for k, v in {**right, **wrong}.items() if v is not None}
            r = await c.post(path, json={"by": "x"}, headers=token(**claims))
            problem(r, 401, "unauthenticated")
        r = await c.post(path, json={"by": "x"}, headers=token(**right))
        assert r.status_code == 204, r.text


async def tickets(c: ServiceClient) -> list[dict[str, Any]]:
    r = await c.get("/api/tickets", params={"limit": 100})
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


async def refused_without_an_id(c: ServiceClient, headers: dict[str, str]) -> None:
    """Every gate comparing with `currentUser.id` refuses a principal that has none."""
    t = await new_ticket(c)
    before = await ticket(c, t)
    for path, body in [
        ("assign", {"to": ""}),
        ("assign", {"to": "ann"}),
        ("watch", {}),  # the optional parameter left out: null
        ("watch", {"who": None}),
        ("watch", {"who": ""}),
        ("review", {}),  # `owner != currentUser.id`, owner "": also false without an id
    ]:
        r = await c.post(f"/api/tickets/{t}/{path}", json=body, headers=headers)
        problem(r, 403, "forbidden")
    assert await ticket(c, t) == before


async def test_an_anonymous_caller_matches_no_id(open_desk: ServiceClient) -> None:
    c = open_desk
    await refused_without_an_id(c, {})
    # Reading `currentUser.id` as a value needs an id: 401, and nothing is stored.
    count = len(await tickets(c))
    r = await c.post("/api/workflows/open_ticket", json={})
    body = problem(r, 401, "unauthenticated")
    assert "anonymous" in body["detail"] and "currentUser.id" in body["detail"], body
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert len(await tickets(c)) == count
    problem(await c.get("/api/queries/my_id"), 401, "unauthenticated")


async def test_a_token_without_a_subject_matches_no_id(secured: ServiceClient) -> None:
    c = secured
    for headers in (
        {},
        token(sub=None, roles=["agent"]),
        token(sub="", roles=["agent"]),
    ):
        await refused_without_an_id(c, headers)
    nameless = token(sub=None, roles=["agent"])
    r = await c.get("/api/queries/who_am_i", headers=nameless)
    assert r.status_code == 200, r.text
    assert (r.json()["id"], r.json()["authenticated"]) == ("", True)
    # Authenticated, but with no id to store or pass: 401 `invalid_token`, nothing saved.
    count = len(await tickets(c))
    for r in (
        await c.post("/api/workflows/open_ticket", json={}, headers=nameless),
        await c.get("/api/queries/my_id", headers=nameless),
    ):
        body = problem(r, 401, "unauthenticated")
        assert "`sub`" in body["detail"], body
        assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert len(await tickets(c)) == count
    t = await new_ticket(c)
    r = await c.post("/api/commands/take", json={"ticket": t}, headers=nameless)
    problem(r, 401, "unauthenticated")
    assert (await ticket(c, t))["owner"] == ""


async def test_a_subject_matches_its_own_id(secured: ServiceClient) -> None:
    c = secured
    ann, bob = token(), token(sub="bob")
    t = await new_ticket(c)
    problem(
        await c.post(f"/api/tickets/{t}/assign", json={"to": "bob"}, headers=ann), 403, "forbidden"
    )
    r = await c.post(f"/api/tickets/{t}/assign", json={"to": "ann"}, headers=ann)
    assert r.status_code == 204, r.text
    problem(await c.post(f"/api/tickets/{t}/watch", json={}, headers=ann), 403, "forbidden")
    r = await c.post(f"/api/tickets/{t}/watch", json={"who": "ann"}, headers=ann)
    assert r.status_code == 204, r.text
    # `owner != currentUser.id`: not the owner herself, but bob.
    problem(await c.post(f"/api/tickets/{t}/review", json={}, headers=ann), 403, "forbidden")
    r = await c.post(f"/api/tickets/{t}/review", json={}, headers=bob)
    assert r.status_code == 204, r.text
    after = await ticket(c, t)
    assert (after["owner"], after["watcher"], after["reviewed"]) == ("ann", "ann", True)
    r = await c.get("/api/queries/my_id", headers=bob)
    assert (r.status_code, r.json()) == (200, "bob")


async def test_a_roles_claim_must_be_a_list_of_strings(secured: ServiceClient) -> None:
    c = secured
    t = await new_ticket(c)
    for roles, says in [("admin", "not a string"), (["admin", 3], "non-string item")]:
        r = await c.post(f"/api/tickets/{t}/close", json={"by": "x"}, headers=token(roles=roles))
        body = problem(r, 401, "unauthenticated")
        assert "list of strings" in body["detail"] and says in body["detail"], body
        assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert (await ticket(c, t))["status"] == "Open"
