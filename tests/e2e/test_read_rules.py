"""Read rules over HTTP, on SQLite and PostgreSQL (tests/e2e/models/read_rules.loom): hostile
callers.

`filter VisibleToCaller` of `Claims` (tenanted) admits the system, an assessor, and the claim's
claimant. Two tenants, each with three callers: the owner (`ann`, who files claims), the staff
(`sam`, role `assessor`) and a stranger (`bob`). Every caller tries every route kind on every
claim of both tenants: by id, the page (walked one row at a time, then the counts), the declared
finds, the body reads (by key, by retrieval, by criterion), the operations, PATCH, DELETE, a
command by id, an idempotency key replayed, and the admin routes. A claim the caller may not see
must be a 404 exactly like an unknown id (never 403, never 200) and be in no list; each attempt is
counted, and the rows leaked printed (0). The reaction to `ClaimSubmitted` reads its claim as the
system principal; `Board` (untenanted) shows what an anonymous caller reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, serve
from tests.e2e.tokens import token, use_secret

MODEL = [Path(__file__).resolve().parent / "models" / "read_rules.loom"]
TENANTS = ("acme", "globex")


@dataclass(frozen=True)
class Caller:
    name: str
    tenant: str
    sub: str
    roles: tuple[str, ...] = ()

    @property
    def headers(self) -> dict[str, str]:
        return token(sub=self.sub, tenant=self.tenant, roles=list(self.roles))


def callers(tenant: str) -> list[Caller]:
    return [
        Caller("owner", tenant, "ann"),
        Caller("staff", tenant, "sam", ("assessor",)),
        Caller("stranger", tenant, "bob"),
    ]


@dataclass
class Claim:
    id: str
    number: str
    tenant: str
    claimant: str
    amount: int

    def visible_to(self, who: Caller) -> bool:
        if who.tenant != self.tenant:
            return False
        return "assessor" in who.roles or who.sub == self.claimant


@dataclass
class Probe:
    """Counts the attempts on rows the caller may not see, and what any of them let through."""

    attempts: int = 0
    leaked: list[tuple[str, str, int, str]] = field(default_factory=list)

    def absent(self, what: str, who: Caller, r: Any) -> None:
        self.attempts += 1
        if r.status_code != 404 or r.json().get("type") != "urn:loom:problem:not-found":
            self.leaked.append((what, who.name, r.status_code, r.text))

    def listed(self, what: str, who: Caller, hidden: list[Claim], r: Any) -> None:
        self.attempts += 1
        if r.status_code != 200 or any(c.id in r.text for c in hidden):
            self.leaked.append((what, who.name, r.status_code, r.text))


@pytest.fixture
async def claims(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ServiceClient]:
    use_secret(monkeypatch)
    async with serve(MODEL, database_url) as client:
        yield client


async def file(c: ServiceClient, who: Caller, number: str, amount: int) -> Claim:
    body = {"number": number, "claimant": who.sub, "amount": amount, "notes": "medical"}
    r = await c.post("/api/claims", json=body, headers=who.headers)
    assert r.status_code == 201, r.text
    return Claim(str(r.json()["id"]), number, who.tenant, who.sub, amount)


async def test_no_caller_reads_a_claim_the_rule_hides(claims: ServiceClient) -> None:
    c = claims
    rows: list[Claim] = []
    for tenant in TENANTS:
        owner, _, stranger = callers(tenant)
        for n in range(3):
            rows.append(await file(c, owner, f"{tenant}-{n}", 50 + 50 * n))
        rows.append(await file(c, stranger, f"{tenant}-b", 500))
    probe = Probe()
    everyone = [who for tenant in TENANTS for who in callers(tenant)]

    for who in everyone:
        h = who.headers
        seen = [x for x in rows if x.visible_to(who)]
        hidden = [x for x in rows if not x.visible_to(who)]

        # the page: only visible rows, with their count, walked one row at a time
        page = (await c.get("/api/claims?limit=200", headers=h)).json()
        assert page["total"] == len(seen), (who, page)
        assert sorted(i["id"] for i in page["items"]) == sorted(x.id for x in seen)
        walked = []
        for offset in range(len(seen) + 1):
            r = await c.get(f"/api/claims?limit=1&offset={offset}", headers=h)
            one = r.json()
            assert one["total"] == len(seen) and len(one["items"]) == (offset < len(seen))
            walked += [i["id"] for i in one["items"]]
        assert walked == [i["id"] for i in page["items"]]
        probe.listed("page", who, hidden, r)

        lists: dict[str, Callable[[Claim], bool]] = {
            "/api/claims/find/by_claimant?claimant=ann": lambda x: x.claimant == "ann",
            "/api/queries/large_ones": lambda x: x.amount >= 100,
            "/api/queries/open_ones": lambda x: True,
        }
        for route, selects in lists.items():
            r = await c.get(route, headers=h)
            got = sorted(i["id"] for i in r.json())
            assert got == sorted(x.id for x in seen if selects(x)), (who, route, r.text)
            probe.listed(route, who, hidden, r)

        for x in seen:  # what the caller may read, it reads
            r = await c.get(f"/api/claims/{x.id}", headers=h)
            assert r.status_code == 200 and r.json()["notes"] == "medical", r.text

        for x in hidden:
            probe.absent("GET by id", who, await c.get(f"/api/claims/{x.id}", headers=h))
            probe.absent(
                "find by number",
                who,
                await c.get(f"/api/claims/find/by_number?number={x.number}", headers=h),
            )
            probe.absent(
                "query by key",
                who,
                await c.get(f"/api/queries/by_number?number={x.number}", headers=h),
            )
            probe.absent(
                "operation",
                who,
                await c.post(f"/api/claims/{x.id}/annotate", json={"text": "x"}, headers=h),
            )
            probe.absent(
                "operation with a `when`",
                who,
                await c.post(f"/api/claims/{x.id}/submit", json={}, headers=h),
            )
            probe.absent(
                "operation with a `requires`",
                who,
                await c.post(f"/api/claims/{x.id}/settle", json={}, headers=h),
            )
            probe.absent(
                "PATCH", who, await c.patch(f"/api/claims/{x.id}", json={"notes": ""}, headers=h)
            )
            probe.absent("DELETE", who, await c.delete(f"/api/claims/{x.id}", headers=h))
            probe.absent(
                "command by id",
                who,
                await c.post(
                    "/api/commands/annotate", json={"claim": x.id, "text": "x"}, headers=h
                ),
            )

        # the admin routes are the operator's: a 403, whatever the caller may read
        for r in (
            await c.get("/api/admin/dead-letters", headers=h),
            await c.post(f"/api/admin/dead-letters/{rows[0].id}/redrive", headers=h),
        ):
            probe.attempts += 1
            if r.status_code != 403:
                probe.leaked.append(("admin route", who.name, r.status_code, r.text))

    # the owner's idempotency key, replayed by the stranger of the same tenant on the owner's
    # claim: not the owner's recorded answer, but the stranger's own 404
    owner, _, stranger = callers("acme")
    mine = next(x for x in rows if x.tenant == "acme" and x.claimant == "ann")
    key = {"Idempotency-Key": "the-owners-key"}
    path = f"/api/claims/{mine.id}/annotate"
    r = await c.post(path, json={"text": "mine"}, headers={**owner.headers, **key})
    assert r.status_code == 204, r.text
    r = await c.post(path, json={"text": "mine"}, headers={**stranger.headers, **key})
    probe.absent("idempotency key replayed", stranger, r)
    if "Idempotent-Replayed" in r.headers:
        probe.leaked.append(("idempotency key replayed", stranger.name, r.status_code, r.text))
    r = await c.post(path, json={"text": "mine"}, headers={**owner.headers, **key})
    assert r.headers.get("Idempotent-Replayed") == "true", r.text

    print(f"read-rule attempts: {probe.attempts}, rows leaked: {len(probe.leaked)}")
    assert probe.leaked == [], "\n".join(map(str, probe.leaked))
    # per tenant: the owner 5 hidden rows, the staff 4, the stranger 7; 9 attempts each, the
    # page, 3 lists and 2 admin routes per caller; and the replay
    assert probe.attempts == 2 * (9 * (5 + 4 + 7) + 3 * 6) + 1

    # nothing a refused caller did was written: the owner's claims are as filed
    for x in rows:
        if x.claimant == "ann":
            who = callers(x.tenant)[0]
            got = (await c.get(f"/api/claims/{x.id}", headers=who.headers)).json()
            assert got["status"] == "Open" and got["version"] == (2 if x is mine else 1), got


async def test_the_system_reads_what_the_rule_admits_it(claims: ServiceClient) -> None:
    """The reaction to ClaimSubmitted loads the claim as the system principal of its tenant."""
    c = claims
    owner = callers("acme")[0]
    x = await file(c, owner, "C-1", 10)
    r = await c.post(f"/api/claims/{x.id}/submit", json={}, headers=owner.headers)
    assert r.status_code == 204, r.text
    got = (await c.get(f"/api/claims/{x.id}", headers=owner.headers)).json()
    assert (got["status"], got["acknowledged"]) == ("Submitted", True), got
    # the gates of a row the caller reads: `requires` a 403, `when` a 422
    staff = callers("acme")[1]
    r = await c.post(f"/api/claims/{x.id}/settle", json={}, headers=owner.headers)
    assert r.status_code == 403 and r.json()["type"] == "urn:loom:problem:forbidden", r.text
    r = await c.post(f"/api/claims/{x.id}/settle", json={}, headers=staff.headers)
    assert r.status_code == 204, r.text
    r = await c.post(f"/api/claims/{x.id}/settle", json={}, headers=staff.headers)
    assert r.status_code == 422, r.text
    assert r.json()["type"] == "urn:loom:problem:state-gate-refused", r.text


async def test_no_caller_reads_a_projection_row_the_rule_hides(claims: ServiceClient) -> None:
    """`filter currentUser.hasRole("assessor") || claimant == currentUser.id` of projection
    SubmittedClaims, whose rows the system folds: by key and the page, for every caller."""
    c = claims
    rows: list[Claim] = []
    for tenant in TENANTS:
        owner, _, stranger = callers(tenant)
        for who, n in ((owner, 0), (owner, 1), (stranger, 2)):
            x = await file(c, who, f"{tenant}-{n}", 100 + n)
            r = await c.post(f"/api/claims/{x.id}/submit", json={}, headers=who.headers)
            assert r.status_code == 204, r.text
            rows.append(x)
    probe = Probe()
    base = "/api/projections/submitted_claims"
    for who in (who for tenant in TENANTS for who in callers(tenant)):
        h = who.headers
        seen = [x for x in rows if x.visible_to(who)]
        listed = await c.get(f"{base}?limit=100", headers=h)
        page = listed.json()
        assert page["total"] == len(seen), (who, page)
        assert sorted(i["claim"] for i in page["items"]) == sorted(x.id for x in seen)
        for offset in range(len(seen) + 1):
            one = (await c.get(f"{base}?limit=1&offset={offset}", headers=h)).json()
            assert one["total"] == len(seen) and len(one["items"]) == (offset < len(seen))
        probe.listed("projection page", who, [x for x in rows if x not in seen], listed)
        for x in rows:
            r = await c.get(f"{base}/{x.id}", headers=h)
            if x in seen:
                assert r.status_code == 200 and r.json()["amount"] == x.amount, r.text
            else:
                probe.absent("projection by key", who, r)
    print(f"projection attempts: {probe.attempts}, rows leaked: {len(probe.leaked)}")
    assert probe.leaked == [], "\n".join(map(str, probe.leaked))
    # per tenant: the owner 4 hidden rows, the staff 3, the stranger 5, and a page each
    assert probe.attempts == 2 * (4 + 3 + 5 + 3)
    paths = (await c.get("/openapi.json")).json()["paths"]
    text = " ".join(paths[base]["get"]["description"].split())
    assert 'Read rule (filter: currentUser.hasRole("assessor") || claimant ==' in text, text


async def test_an_anonymous_caller_reads_what_the_rule_gives_anonymous(
    claims: ServiceClient,
) -> None:
    """`published || author == currentUser.id`: anonymous reads the published posts only (its
    absent id matches no author, not even an empty one)."""
    c = claims
    ann = token(sub="ann")
    posted = {}
    for title, author, published in (
        ("out", "ann", True),
        ("draft", "ann", False),
        ("blank", "", False),
    ):
        body = {"author": author, "title": title, "published": published}
        r = await c.post("/api/posts", json=body, headers=ann)
        assert r.status_code == 201, r.text
        posted[title] = r.json()["id"]
    page = (await c.get("/api/posts")).json()
    assert [i["title"] for i in page["items"]] == ["out"] and page["total"] == 1
    for hidden in ("draft", "blank"):
        r = await c.get(f"/api/posts/{posted[hidden]}")
        assert r.status_code == 404, r.text
    page = (await c.get("/api/posts", headers=ann)).json()
    assert [i["title"] for i in page["items"]] == ["out", "draft"] and page["total"] == 2
    page = (await c.get("/api/posts", headers=token(sub="bob"))).json()
    assert page["total"] == 1


async def test_the_openapi_document_states_the_rules(claims: ServiceClient) -> None:
    """Each route's description states its read rule, and an operation's `requires` and `when`."""
    paths = (await claims.get("/openapi.json")).json()["paths"]
    rule = 'currentUser.isSystem || currentUser.hasRole("assessor") || claimant == currentUser.id'
    for path, method in (
        ("/api/claims/{id}", "get"),
        ("/api/claims", "get"),
        ("/api/claims/{id}", "patch"),
        ("/api/claims/{id}", "delete"),
        ("/api/claims/find/by_number", "get"),
        ("/api/claims/{id}/settle", "post"),
        ("/api/queries/large_ones", "get"),
        ("/api/commands/annotate", "post"),
    ):
        text = " ".join(paths[path][method]["description"].split())
        assert f"Read rule (filter VisibleToCaller: {rule})" in text, (path, method, text)
    settle = " ".join(paths["/api/claims/{id}/settle"]["post"]["description"].split())
    assert 'Requires: currentUser.hasRole("assessor") (else 403 forbidden).' in settle
    assert "When: status == Submitted (else 422 state-gate-refused)." in settle
    assert "Read rule" not in paths["/api/posts"]["post"]["description"]


async def test_a_rule_with_not_equal_to_the_callers_id(claims: ServiceClient) -> None:
    """`author != currentUser.id`: false for a caller without an id; an absent author differs
    from an id (as in memory)."""
    c = claims
    ann = token(sub="ann", roles=["editor"])
    ids = {}
    for text, author in (("by ann", "ann"), ("by bob", "bob"), ("by nobody", None)):
        r = await c.post("/api/reviews", json={"author": author, "text": text}, headers=ann)
        assert r.status_code == 201, r.text
        ids[text] = r.json()["id"]
    page = (await c.get("/api/reviews", headers=ann)).json()
    assert sorted(i["text"] for i in page["items"]) == ["by bob", "by nobody"]
    assert page["total"] == 2
    assert (await c.get(f"/api/reviews/{ids['by ann']}", headers=ann)).status_code == 404
    bob = token(sub="bob", roles=["editor"])
    assert (await c.get("/api/reviews", headers=bob)).json()["total"] == 2
    # the role is needed, and an anonymous caller has neither it nor an id
    assert (await c.get("/api/reviews", headers=token(sub="cy"))).json()["total"] == 0
    assert (await c.get("/api/reviews")).json()["total"] == 0
