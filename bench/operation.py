"""Benchmark: an operation route of the generated service against a hand-written endpoint.

Both are served by real uvicorn subprocesses on the same database (bench/_serving.py): the
generated banking service answers `POST /api/accounts/{id}/deposit` (load the account, its state
gate, precondition and invariant, one version-checked update, one event dispatched after the
commit, 204), bench/reference.py `POST /accounts/{id}/deposit`. Rounds alternate; each caller
deposits into its own account. Figures: requests per second and server CPU per request,
generated / hand-written.

    .venv/bin/python bench/operation.py                     # SQLite and PostgreSQL, 1 and 16 connections
    .venv/bin/python bench/operation.py --db sqlite --connections 1 --requests 500 --rounds 3
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._load import LoadClient
from bench._serving import Accounts, Scenario, expect, main

BODY = {"amount": 1}


def scenario(accounts: Accounts) -> Scenario:
    gen, ref = accounts.generated, accounts.reference  # one account per caller

    async def generated(client: LoadClient, caller: int, n: int) -> int:
        return expect(await client.post(f"/api/accounts/{gen[caller]}/deposit", json=BODY), 204)

    async def reference(client: LoadClient, caller: int, n: int) -> int:
        return expect(await client.post(f"/accounts/{ref[caller]}/deposit", json=BODY), 204)

    return Scenario(generated, reference)


if __name__ == "__main__":
    main("operation route (POST /api/accounts/{id}/deposit)", scenario, accounts_per_caller=1)
