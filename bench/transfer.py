"""Benchmark: the generated `transfer` workflow against a hand-written FastAPI + SQLAlchemy endpoint.

Both are served by real uvicorn subprocesses on the same database (bench/_serving.py): the
generated banking service answers `POST /api/workflows/transfer` (two loads, two guarded
operations, two version-checked updates, three events dispatched after the commit, the source
balance answered), bench/reference.py `POST /transfer`. Rounds alternate; each caller has its own
pair of accounts. Figures: requests per second and server CPU per request, generated / hand-written.

    .venv/bin/python bench/transfer.py                      # SQLite and PostgreSQL, 1 and 16 connections
    .venv/bin/python bench/transfer.py --db postgres --connections 16 --requests 2000
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import LoadClient
from bench._serving import Accounts, Scenario, expect, main


def scenario(accounts: Accounts) -> Scenario:
    def pairs(ids: list[str]) -> list[tuple[str, str]]:
        return list(zip(ids[::2], ids[1::2], strict=True))

    def payload(pairs: list[tuple[str, str]], caller: int, n: int) -> dict[str, object]:
        # The caller's own pair, its direction alternating so balances never run out.
        a, b = pairs[caller]
        if n % 2:
            a, b = b, a
        return {"fromAccount": a, "toAccount": b, "amount": 1}

    gen_pairs, ref_pairs = pairs(accounts.generated), pairs(accounts.reference)

    async def generated(client: LoadClient, caller: int, n: int) -> int:
        r = await client.post("/api/workflows/transfer", json=payload(gen_pairs, caller, n))
        return expect(r, 200)

    async def reference(client: LoadClient, caller: int, n: int) -> int:
        r = await client.post("/transfer", json=payload(ref_pairs, caller, n))
        return expect(r, 200)

    return Scenario(generated, reference)


if __name__ == "__main__":
    main("transfer workflow", scenario, accounts_per_caller=2)
