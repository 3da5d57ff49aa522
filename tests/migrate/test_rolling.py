"""A rolling deploy of a field rename, end to end (docs/migrations.md#rolling-deploys): version N
served by one `loom run`, the expand applied under it, version N+1 started as a second process on
the same PostgreSQL database; both take writes and reads at once, each reading what the other
wrote under its own name of the field; then N stops, the contract is applied, and N+1 still serves
every value."""

from __future__ import annotations

import asyncio
import shutil
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from loom.cli.main import app
from tests.liveserver import free_port, refused_start, running

pytestmark = pytest.mark.postgres

V1 = """\
context Store {
  aggregate Customer with crudish {
    name: string
    points: int
  }

  repository Customers for Customer { }
}
"""
V2 = V1.replace("    name: string\n", "    fullName: string renamed from name\n")
ROUNDS = 40  # concurrent; each: 2 creates, 2 cross reads, 2 cross updates, 2 reads back


def _loom(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def _models(tmp_path: Path) -> tuple[Path, Path]:
    v1, v2 = tmp_path / "v1" / "store.loom", tmp_path / "v2" / "store.loom"
    for path, text in ((v1, V1), (v2, V2)):
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
    return v1, v2


async def _round(
    old: httpx.AsyncClient, new: httpx.AsyncClient, n: int, seen: Counter[str]
) -> list[tuple[str, str]]:
    """One round of traffic on both versions; the (id, name) pairs it leaves."""

    def count(r: httpx.Response, side: str) -> httpx.Response:
        seen[f"{side} {r.status_code // 100}xx"] += 1
        return r

    a, b = await asyncio.gather(
        old.post("/api/customers", json={"name": f"old-{n}", "points": n}),
        new.post("/api/customers", json={"fullName": f"new-{n}", "points": n}),
    )
    a, b = count(a, "N"), count(b, "N+1")
    assert (a.status_code, b.status_code) == (201, 201), a.text + b.text
    ida, idb = a.json()["id"], b.json()["id"]
    # each side reads what the other wrote, under its own name of the field
    ra, rb = await asyncio.gather(
        new.get(f"/api/customers/{ida}"), old.get(f"/api/customers/{idb}")
    )
    assert count(ra, "N+1").json()["fullName"] == f"old-{n}"
    assert count(rb, "N").json()["name"] == f"new-{n}"
    # and each updates what the other wrote; the other reads the update back
    ua, ub = await asyncio.gather(
        new.patch(f"/api/customers/{ida}", json={"fullName": f"old-{n}-by-new"}),
        old.patch(f"/api/customers/{idb}", json={"name": f"new-{n}-by-old"}),
    )
    assert (count(ua, "N+1").status_code, count(ub, "N").status_code) == (200, 200), (
        ua.text + ub.text
    )
    ga, gb = await asyncio.gather(
        old.get(f"/api/customers/{ida}"), new.get(f"/api/customers/{idb}")
    )
    assert count(ga, "N").json()["name"] == f"old-{n}-by-new"
    assert count(gb, "N+1").json()["fullName"] == f"new-{n}-by-old"
    return [(ida, f"old-{n}-by-new"), (idb, f"new-{n}-by-old")]


async def _traffic(old_base: str, new_base: str, seen: Counter[str]) -> list[tuple[str, str]]:
    async with (
        httpx.AsyncClient(base_url=old_base, timeout=30) as old,
        httpx.AsyncClient(base_url=new_base, timeout=30) as new,
    ):
        rounds = await asyncio.gather(*(_round(old, new, n, seen) for n in range(ROUNDS)))
    return [pair for r in rounds for pair in r]


def test_a_rename_rolls_out_with_both_versions_serving(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    v1, v2 = _models(tmp_path)
    url = ["--database-url", postgres_url]
    _loom("migrate", "new", str(v1))
    _loom("migrate", "apply", str(v1), *url)
    seen: Counter[str] = Counter()
    with ExitStack() as old_process:
        old_base = old_process.enter_context(running(str(v1), *url, port=free_port()))
        before = httpx.post(f"{old_base}/api/customers", json={"name": "Ann", "points": 1})
        assert before.status_code == 201, before.text
        ann = before.json()["id"]
        # the release of N+1: its migrations are N's plus the expand, applied while N serves
        shutil.copytree(v1.parent / "migrations", v2.parent / "migrations")
        planned = _loom("migrate", "new", str(v2), "--expand")
        assert "expand the rename of store_customers.name to full_name" in planned
        _loom("migrate", "apply", str(v2), *url)
        assert "expand open: contract pending" in _loom("migrate", "status", str(v2), *url)
        # the old version keeps serving, but a new replica of it does not start
        assert "0002_expand_the_rename" in refused_start(str(v1), *url)
        with running(str(v2), *url, port=free_port()) as new_base:
            assert httpx.get(f"{new_base}/api/customers/{ann}").json()["fullName"] == "Ann"
            written = asyncio.run(_traffic(old_base, new_base, seen))
            # every replica runs N+1 now: the contract, applied under it
            old_process.close()
            planned = _loom("migrate", "new", str(v2), "--contract")
            assert "contract: drop column store_customers.name" in planned
            _loom("migrate", "apply", str(v2), *url)
            status = _loom("migrate", "status", str(v2), *url)
            assert "expand open" not in status and "up to date" in status
            with httpx.Client(base_url=new_base, timeout=30) as http:
                for ident, name in [(ann, "Ann"), *written]:
                    r = http.get(f"/api/customers/{ident}")
                    seen[f"N+1 {r.status_code // 100}xx"] += 1
                    assert r.json()["fullName"] == name
                r = http.post("/api/customers", json={"fullName": "Bo", "points": 2})
                seen[f"N+1 {r.status_code // 100}xx"] += 1
                assert r.status_code == 201, r.text
    assert not any(k.endswith("5xx") for k in seen), seen
    with capsys.disabled():
        print(f"\nrolling deploy: {sum(seen.values())} requests, {dict(sorted(seen.items()))}")
