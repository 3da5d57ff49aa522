"""The banking example over HTTP, on SQLite and PostgreSQL: the workflow semantics of the language
(exit saves, transactional vs not, refusals, post-commit events) observed from outside."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from sqlalchemy import select

from loom.testing import ServiceClient

PROBLEM_KEYS = {"type", "title", "status", "detail", "instance"}


async def register(c: ServiceClient, name: str = "Ada") -> str:
    r = await c.post("/api/workflows/register_customer", json={"name": name, "email": None})
    assert r.status_code == 200, r.text
    return str(r.json())


async def open_account(c: ServiceClient, owner: str, number: str, balance: int = 0) -> str:
    r = await c.post("/api/workflows/open_account", json={"owner": owner, "number": number})
    assert r.status_code == 200, r.text
    account_id = r.json()
    if balance:
        r = await c.post(f"/api/accounts/{account_id}/deposit", json={"amount": balance})
        assert r.status_code == 204, r.text
    return str(account_id)


async def account(c: ServiceClient, account_id: str) -> dict[str, Any]:
    r = await c.get(f"/api/accounts/{account_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


async def two_accounts(c: ServiceClient, balance: int = 100) -> tuple[str, str]:
    owner = await register(c)
    return (await open_account(c, owner, "A-1", balance), await open_account(c, owner, "A-2"))


def assert_problem(r: Any, status: int, kind: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = dict(r.json())
    assert body.keys() >= PROBLEM_KEYS
    assert body["status"] == status
    assert body["type"] == f"urn:loom:problem:{kind}"
    return body


async def test_open_account_answers_the_raw_id_and_reads_back(bank: ServiceClient) -> None:
    owner = await register(bank)
    r = await bank.post("/api/workflows/open_account", json={"owner": owner, "number": "A-1"})
    assert r.status_code == 200
    account_id = r.json()
    assert isinstance(account_id, str) and uuid.UUID(account_id)
    body = await account(bank, account_id)
    assert body["id"] == account_id
    assert body["owner"] == owner
    assert body["number"] == "A-1"
    assert body["balance"] == 0
    assert body["kind"] == "Checking"
    assert body["tags"] == []
    assert body["frozen"] is False
    assert body["overdrawn"] is False
    assert body["version"] == 1
    assert "openedAt" in body


async def test_transfer_answers_the_source_balance_after_commit(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank)
    r = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert r.status_code == 200, r.text
    assert r.json() == 70
    assert (await account(bank, src))["balance"] == 70
    assert (await account(bank, dst))["balance"] == 30


async def test_workflow_without_result_answers_204(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank)
    r = await bank.post(
        "/api/workflows/loose_transfer", json={"fromAccount": src, "toAccount": dst, "amount": 10}
    )
    assert r.status_code == 204, r.text
    assert r.content == b""
    assert (await account(bank, src))["balance"] == 90


@pytest.mark.parametrize("workflow", ["transfer", "loose_transfer"])
async def test_second_step_refused_leaves_both_balances(bank: ServiceClient, workflow: str) -> None:
    src, dst = await two_accounts(bank)
    assert (await bank.post(f"/api/accounts/{dst}/freeze")).status_code == 204
    r = await bank.post(
        f"/api/workflows/{workflow}", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    body = assert_problem(r, 422, "state-gate-refused")
    assert "deposit" in body["rule"]
    assert (await account(bank, src))["balance"] == 100
    assert (await account(bank, dst))["balance"] == 0


async def test_first_step_refused_names_the_precondition(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank, balance=10)
    r = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    body = assert_problem(r, 422, "precondition-failed")
    assert body["detail"] == "insufficient funds"
    assert "withdraw" in body["rule"] and "balance >= amount" in body["rule"]


async def test_workflow_precondition_refuses_before_any_read(bank: ServiceClient) -> None:
    src, _ = await two_accounts(bank)
    r = await bank.post(
        "/api/workflows/audited_transfer", json={"fromAccount": src, "toAccount": src, "amount": 1}
    )
    body = assert_problem(r, 422, "precondition-failed")
    assert body["detail"] == "a transfer needs two accounts"


async def test_failed_second_save_keeps_the_first_without_transaction(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank)
    bank.service.faults.fail_save(2)
    r = await bank.post(
        "/api/workflows/loose_transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert_problem(r, 500, "internal")
    assert (await account(bank, src))["balance"] == 70  # the first exit save committed alone
    assert (await account(bank, dst))["balance"] == 0


async def test_failed_second_save_undoes_everything_in_a_transaction(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank)
    bank.service.faults.fail_save(2)
    r = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert_problem(r, 500, "internal")
    assert (await account(bank, src))["balance"] == 100
    assert (await account(bank, dst))["balance"] == 0
    assert (await account(bank, src))["version"] == 2  # open + deposit; the transfer left no trace


async def test_missing_ids_answer_the_same_404_everywhere(bank: ServiceClient) -> None:
    missing = str(uuid.uuid4())
    direct = assert_problem(await bank.get(f"/api/accounts/{missing}"), 404, "not-found")
    src, _ = await two_accounts(bank)
    via_workflow = assert_problem(
        await bank.post(
            "/api/workflows/transfer", json={"fromAccount": src, "toAccount": missing, "amount": 1}
        ),
        404,
        "not-found",
    )
    via_operation = assert_problem(
        await bank.post(f"/api/accounts/{missing}/deposit", json={"amount": 1}), 404, "not-found"
    )
    for body in (via_workflow, via_operation):
        assert body.keys() == direct.keys()
        assert (body["title"], body["detail"]) == (direct["title"], direct["detail"])
    assert missing in direct["detail"] and "Account" in direct["detail"]
    assert direct["instance"] == f"/api/accounts/{missing}"
    assert (await account(bank, src))["balance"] == 100


async def test_unknown_routes_and_methods_are_loom_problems(bank: ServiceClient) -> None:
    nowhere = assert_problem(await bank.get("/api/nowhere"), 404, "no-such-route")
    assert nowhere["detail"] == "no route GET /api/nowhere"
    r = await bank.delete("/api/workflows/transfer")
    refused = assert_problem(r, 405, "method-not-allowed")
    assert r.headers["allow"] == "POST"
    assert refused["detail"] == "DELETE is not allowed on /api/workflows/transfer; allowed: POST"


async def test_malformed_requests_name_the_bad_field(bank: ServiceClient) -> None:
    src, dst = await two_accounts(bank)
    bad_type = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": "lots"}
    )
    body = assert_problem(bad_type, 422, "invalid-request")
    assert any(e["path"].endswith("amount") for e in body["errors"])
    missing = await bank.post("/api/workflows/transfer", json={"fromAccount": src})
    paths = {e["path"] for e in assert_problem(missing, 422, "invalid-request")["errors"]}
    assert any(p.endswith("toAccount") for p in paths), paths
    not_json = await bank.post(
        "/api/workflows/transfer",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert_problem(not_json, 422, "invalid-request")
    assert_problem(await bank.get("/api/accounts/not-a-uuid"), 422, "invalid-request")
    huge = await bank.post(f"/api/accounts/{src}/deposit", json={"amount": 10**30})
    assert_problem(huge, 422, "invalid-request")


async def test_state_gate_on_a_single_operation(bank: ServiceClient) -> None:
    src, _ = await two_accounts(bank, balance=5)
    body = assert_problem(await bank.post(f"/api/accounts/{src}/close"), 422, "state-gate-refused")
    assert "close" in body["rule"]
    r = await bank.post(f"/api/accounts/{src}/withdraw", json={"amount": 5})
    assert r.status_code == 204
    assert (await bank.post(f"/api/accounts/{src}/close")).status_code == 204
    assert (await account(bank, src))["tags"] == ["closed"]


async def test_concurrent_operations_lose_no_update(bank: ServiceClient) -> None:
    src, _ = await two_accounts(bank, balance=0)

    async def deposit() -> int:
        r = await bank.post(f"/api/accounts/{src}/deposit", json={"amount": 1})
        if r.status_code == 409:
            assert r.json()["type"] == "urn:loom:problem:concurrency-conflict"
        return r.status_code

    statuses = await asyncio.gather(*(deposit() for _ in range(20)))
    assert set(statuses) <= {204, 409}, statuses
    applied = statuses.count(204)
    assert applied >= 1
    final = await account(bank, src)
    assert final["balance"] == applied
    assert final["version"] == 1 + applied


async def test_events_are_dispatched_after_commit_only(bank: ServiceClient) -> None:
    domain = bank.module("banking.domain")
    seen: list[tuple[str, int | None]] = []

    async def record(event: Any) -> None:
        # Read through a connection of our own: the write that raised the event must be committed.
        accounts = bank.module("banking.tables").accounts
        account_id = getattr(event, "account", None) or event.from_
        async with bank.service.engine.connect() as conn:
            value = await conn.scalar(select(accounts.c.balance).where(accounts.c.id == account_id))
        seen.append((type(event).__name__, value))

    for name in ("MoneyWithdrawn", "MoneyDeposited", "TransferMade"):
        bank.service.events.subscribe(getattr(domain, name), record)

    src, dst = await two_accounts(bank)
    seen.clear()
    r = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert r.status_code == 200
    # Aggregate events in save order, then the workflow's own; each sees the committed balances.
    assert seen == [("MoneyWithdrawn", 70), ("MoneyDeposited", 30), ("TransferMade", 70)]

    seen.clear()
    await bank.post(f"/api/accounts/{dst}/freeze")
    r = await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert r.status_code == 422
    assert seen == []  # refused: nothing was written, nothing is announced

    await bank.post(f"/api/accounts/{src}/deposit", json={"amount": 0})  # refused, no event
    assert seen == []


async def test_rolled_back_events_are_discarded(bank: ServiceClient) -> None:
    domain = bank.module("banking.domain")
    seen: list[str] = []

    async def record(event: Any) -> None:
        seen.append(type(event).__name__)

    bank.service.events.subscribe(domain.MoneyWithdrawn, record)
    bank.service.events.subscribe(domain.MoneyDeposited, record)
    src, dst = await two_accounts(bank)
    seen.clear()

    bank.service.faults.fail_save(2)
    await bank.post(
        "/api/workflows/transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert seen == []  # the transaction rolled back: no consumer hears of the withdrawal

    bank.service.faults.fail_save(2)
    await bank.post(
        "/api/workflows/loose_transfer", json={"fromAccount": src, "toAccount": dst, "amount": 30}
    )
    assert seen == ["MoneyWithdrawn"]  # committed on its own, so announced; the deposit was not


async def test_paged_list(bank: ServiceClient) -> None:
    owner = await register(bank)
    ids = [await open_account(bank, owner, f"N-{i}") for i in range(5)]
    r = await bank.get("/api/accounts", params={"limit": 2, "offset": 1})
    assert r.status_code == 200
    page = r.json()
    assert page["total"] == 5 and page["limit"] == 2 and page["offset"] == 1
    assert [a["id"] for a in page["items"]] == ids[1:3]
    assert_problem(await bank.get("/api/accounts", params={"limit": 0}), 422, "invalid-request")


async def test_openapi_and_docs(bank: ServiceClient) -> None:
    spec = (await bank.get("/openapi.json")).json()
    assert "/api/workflows/transfer" in spec["paths"]
    assert "/api/accounts/{id}/withdraw" in spec["paths"]
    assert "/api/accounts/{id}" in spec["paths"]
    transfer = spec["paths"]["/api/workflows/transfer"]["post"]
    assert "200" in transfer["responses"] and "404" in transfer["responses"]
    assert (await bank.get("/docs")).status_code == 200


async def test_docs_pages_load_nothing_from_another_host(bank: ServiceClient) -> None:
    """/docs (Swagger UI) and /redoc reference only the service's own URLs, and it serves each
    asset they load (offline, they still work)."""
    for page in ("/docs", "/redoc"):
        r = await bank.get(page)
        assert r.status_code == 200, r.text
        assert "http://" not in r.text and "https://" not in r.text and "//cdn" not in r.text
        urls = re.findall(r"""(?:src|href|url)\s*[=:]\s*['"]([^'"]+)['"]""", r.text)
        assert "/openapi.json" in urls, urls
        assets = [u for u in urls if u.startswith("/docs/assets/")]
        assert len(assets) >= (3 if page == "/docs" else 2), urls
        assert set(urls) - set(assets) == {"/openapi.json"}, urls
        for url in assets:
            asset = await bank.get(url)
            assert asset.status_code == 200, url
            assert len(asset.content) > 1000, url
            kind = asset.headers["content-type"]
            assert kind.startswith(
                ("text/javascript", "application/javascript", "text/css", "image/png")
            ), (url, kind)
