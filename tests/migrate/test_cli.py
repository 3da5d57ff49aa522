"""`loom migrate new|apply|status` as a user runs them (a subprocess): every exit code, and a
sentence (never a traceback) for every refusal."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from loom.testing import serve
from tests.migrate.corpus import VERSIONS

LOOM = [sys.executable, "-m", "loom.cli"]


def loom(*args: str | Path) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(
        [*LOOM, *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in r.stderr, r.stderr
    return r


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "store.loom"
    path.write_text(VERSIONS[0][1], encoding="utf-8")
    return path


def test_new_writes_then_says_no_changes(model: Path) -> None:
    r = loom("migrate", "new", model)
    assert r.returncode == 0, r.stderr
    assert "2. create table store_customers (6 columns)" in r.stdout
    assert sorted(p.name for p in (model.parent / "migrations").iterdir()) == [
        "0001_initial_schema.json",
        "0001_initial_schema.py",
    ]
    again = loom("migrate", "new", model)
    assert again.returncode == 0
    assert "no changes" in again.stdout
    assert len(list((model.parent / "migrations").iterdir())) == 2


def test_new_refuses_data_loss_without_the_flag(model: Path) -> None:
    assert loom("migrate", "new", model).returncode == 0
    model.write_text(VERSIONS[0][1].replace("    points: int\n", ""), encoding="utf-8")
    r = loom("migrate", "new", model, "-m", "drop points")
    assert r.returncode == 1
    assert "warning[loom.migrate-drops-data]" in r.stdout
    assert "pass --allow-data-loss" in r.stderr
    assert not list((model.parent / "migrations").glob("0002_*"))
    r = loom("migrate", "new", model, "-m", "drop points", "--allow-data-loss")
    assert r.returncode == 0, r.stderr
    assert (model.parent / "migrations" / "0002_drop_points.py").is_file()


def test_new_refuses_a_change_existing_rows_cannot_take(model: Path) -> None:
    assert loom("migrate", "new", model).returncode == 0
    model.write_text(
        VERSIONS[0][1].replace("    points: int\n", "    points: int\n    rank: int\n")
    )
    r = loom("migrate", "new", model)
    assert r.returncode == 1
    assert "error[loom.migrate-required-without-default]" in r.stdout
    assert "give the field a constant default" in r.stdout
    assert "cannot be applied to the existing rows" in r.stderr
    assert not list((model.parent / "migrations").glob("0002_*"))


def test_new_on_a_model_with_errors(model: Path) -> None:
    model.write_text("context X { aggregate A { n: Nope } }", encoding="utf-8")
    r = loom("migrate", "new", model)
    assert r.returncode == 1
    assert "loom.unknown-type" in r.stderr
    assert not (model.parent / "migrations").exists()


def test_apply_and_status(model: Path) -> None:
    for command in ("apply", "status"):
        r = loom("migrate", command, model)
        assert r.returncode == 1 and "no migrations in" in r.stderr
    assert loom("migrate", "new", model).returncode == 0
    r = loom("migrate", "status", model)
    assert r.returncode == 1 and "pending  0001_initial_schema" in r.stdout
    r = loom("migrate", "apply", model)  # the default database: the one `loom run` uses
    assert r.returncode == 0, r.stderr
    assert "applied 0001_initial_schema" in r.stdout
    assert model.with_suffix(".db").is_file()
    r = loom("migrate", "apply", model)
    assert r.returncode == 0 and "nothing to apply" in r.stdout
    r = loom("migrate", "status", model)
    assert r.returncode == 0, r.stdout
    assert "applied  0001_initial_schema" in r.stdout and "up to date" in r.stdout


@pytest.mark.parametrize(
    "url, says",
    [
        ("nosuchdriver://x/y", "cannot use the database URL"),
        ("postgresql://nobody@127.0.0.1:1/none", "cannot connect to the database"),
    ],
)
def test_a_bad_database_is_one_line_and_exit_2(model: Path, url: str, says: str) -> None:
    assert loom("migrate", "new", model).returncode == 0
    for command in ("apply", "status"):
        r = loom("migrate", command, model, "--database-url", url)
        assert r.returncode == 2, r.stdout + r.stderr
        assert says in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_broken_migrations_folder_is_exit_2(model: Path) -> None:
    assert loom("migrate", "new", model).returncode == 0
    (model.parent / "migrations" / "0003_gap.py").write_text("")
    r = loom("migrate", "status", model)
    assert r.returncode == 2 and "expected migration 0002 next" in r.stderr


def test_apply_refuses_a_database_no_snapshot_matches(model: Path, tmp_path: Path) -> None:
    assert loom("migrate", "new", model).returncode == 0
    # a database `loom run` made from another version of the model, before migrations
    other = tmp_path / "other" / "store.loom"
    other.parent.mkdir()
    other.write_text(VERSIONS[1][1], encoding="utf-8")
    url = f"sqlite+aiosqlite:///{tmp_path / 'made.db'}"
    asyncio.run(_create(other, url))
    r = loom("migrate", "apply", model, "--database-url", url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "closest: 0001_initial_schema" in r.stderr
    assert "column store_customers.note is in the database, not in the model" in r.stderr


async def _create(model: Path, url: str) -> None:
    async with serve([model], url):
        pass


def test_loom_check_loads_no_migration_engine(model: Path) -> None:
    # `loom migrate` is mounted on the CLI; `loom check` must not pay for its engine
    r = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "loom.cli", "check", str(model)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines()}
    assert not {m for m in imported if m.startswith(("sqlalchemy", "alembic"))}
    assert "loom.migrate.database" not in imported
