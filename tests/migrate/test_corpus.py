"""A model's versions through the real path, on SQLite and PostgreSQL: data written through HTTP
by version N is read back through HTTP by version N+1 after `loom migrate new` and `loom migrate
apply`, value for value."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loom.cli.main import app
from loom.testing import serve
from tests.migrate.corpus import make_corpus


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return make_corpus(tmp_path_factory.mktemp("corpus"))


def _apply(model: Path, url: str) -> str:
    result = CliRunner().invoke(app, ["migrate", "apply", str(model), "--database-url", url])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_plans_written(corpus: list[Path]) -> None:
    scripts = sorted(p.name for p in (corpus[-1].parent / "migrations").glob("*.py"))
    # adding an enum member changes no table: `migrate new` wrote nothing for it
    assert scripts == [
        "0001_initial.py",
        "0002_add_an_optional_field.py",
        "0003_add_an_aggregate.py",
        "0004_remove_a_field.py",
        "0005_add_defaulted_fields.py",
        "0006_rename_a_field_and_an_enum_member.py",
        "0007_rename_an_aggregate.py",
        "0008_make_a_field_optional.py",
    ]
    text = (corpus[-1].parent / "migrations" / "0004_remove_a_field.py").read_text()
    assert "drop column store_customers.points (its values are lost)" in text
    assert 'batch.drop_column("points")' in text


def test_every_version_reads_what_the_previous_wrote(corpus: list[Path], database_url: str) -> None:
    # the commands run as a user runs them, each with its own event loop; so does each version's
    # service, in between
    v1, v2, v3, v4, v5, v6, v7, v8, v9 = corpus
    assert "applied 0001_initial" in _apply(v1, database_url)
    ann, bob = asyncio.run(_write_v1(v1, database_url))
    assert "applied 0002_add_an_optional_field" in _apply(v2, database_url)
    ann = asyncio.run(_read_v2(v2, database_url, ann))
    assert "applied 0003_add_an_aggregate" in _apply(v3, database_url)
    ann, order = asyncio.run(_read_v3(v3, database_url, ann))
    # a new enum member needs no migration: the database is already that of version 4
    assert "nothing to apply" in _apply(v4, database_url)
    ann = asyncio.run(_read_v4(v4, database_url, ann))
    assert "applied 0004_remove_a_field" in _apply(v5, database_url)
    ann = asyncio.run(_read_v5(v5, database_url, ann, order))
    assert "applied 0005_add_defaulted_fields" in _apply(v6, database_url)
    ann = asyncio.run(_read_v6(v6, database_url, ann))
    assert "applied 0006_rename_a_field_and_an_enum_member" in _apply(v7, database_url)
    ann = asyncio.run(_read_v7(v7, database_url, ann, bob))
    assert "applied 0007_rename_an_aggregate" in _apply(v8, database_url)
    asyncio.run(_read_v8(v8, database_url, ann, order))
    assert "applied 0008_make_a_field_optional" in _apply(v9, database_url)
    asyncio.run(_read_v9(v9, database_url, ann))


async def _write_v1(model: Path, url: str) -> tuple[dict[str, Any], dict[str, Any]]:
    async with serve([model], url) as http:
        r = await http.post("/api/customers", json={"name": "Ann", "points": 7, "tags": ["a"]})
        assert r.status_code == 201, r.text
        b = await http.post("/api/customers", json={"name": "Bob", "points": 1, "tier": "Gold"})
        assert b.status_code == 201, b.text
        return dict(r.json()), dict(b.json())


async def _read_v2(model: Path, url: str, ann: dict[str, Any]) -> dict[str, Any]:
    async with serve([model], url) as http:
        got = (await http.get(f"/api/customers/{ann['id']}")).json()
        assert got == {**ann, "note": None}
        r = await http.patch(f"/api/customers/{ann['id']}", json={"note": "hi"})
        assert r.status_code == 200, r.text
        return dict(r.json())


async def _read_v3(
    model: Path, url: str, ann: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    async with serve([model], url) as http:
        assert (await http.get(f"/api/customers/{ann['id']}")).json() == ann
        r = await http.post("/api/orders", json={"customer": ann["id"], "total": 30})
        assert r.status_code == 201, r.text
        return ann, dict(r.json())


async def _read_v4(model: Path, url: str, ann: dict[str, Any]) -> dict[str, Any]:
    async with serve([model], url) as http:
        assert (await http.get(f"/api/customers/{ann['id']}")).json() == ann
        r = await http.patch(f"/api/customers/{ann['id']}", json={"tier": "Platinum"})
        assert r.status_code == 200, r.text
        return dict(r.json())


async def _read_v5(
    model: Path, url: str, ann: dict[str, Any], order: dict[str, Any]
) -> dict[str, Any]:
    async with serve([model], url) as http:
        got = (await http.get(f"/api/customers/{ann['id']}")).json()
        assert got == {k: v for k, v in ann.items() if k != "points"}
        assert (await http.get(f"/api/orders/{order['id']}")).json() == order
        return dict(got)


async def _read_v6(model: Path, url: str, ann: dict[str, Any]) -> dict[str, Any]:
    async with serve([model], url) as http:
        got = (await http.get(f"/api/customers/{ann['id']}")).json()
        # the existing row got the new fields' defaults
        assert got == {**ann, "nickname": "", "vip": False}
        return dict(got)


async def _read_v7(
    model: Path, url: str, ann: dict[str, Any], bob: dict[str, Any]
) -> dict[str, Any]:
    async with serve([model], url) as http:
        got = (await http.get(f"/api/customers/{ann['id']}")).json()
        renamed = {("fullName" if k == "name" else k): v for k, v in ann.items()}
        assert got == renamed
        # the stored enum value of the renamed member was rewritten
        b = (await http.get(f"/api/customers/{bob['id']}")).json()
        assert (b["fullName"], b["tier"]) == ("Bob", "Premium")
        return dict(got)


async def _read_v8(model: Path, url: str, ann: dict[str, Any], order: dict[str, Any]) -> None:
    async with serve([model], url) as http:
        # the renamed aggregate kept its rows (under its new routes)
        assert (await http.get(f"/api/clients/{ann['id']}")).json() == ann
        assert (await http.get(f"/api/orders/{order['id']}")).json() == order
        assert len((await http.get("/api/clients")).json()["items"]) == 2


async def _read_v9(model: Path, url: str, ann: dict[str, Any]) -> None:
    async with serve([model], url) as http:
        assert (await http.get(f"/api/clients/{ann['id']}")).json() == ann
        r = await http.post("/api/clients", json={})
        assert r.status_code == 201, r.text
        assert r.json()["fullName"] is None
