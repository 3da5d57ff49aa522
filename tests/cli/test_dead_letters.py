"""`loom dead-letters list|redrive`, run as a user runs it (a subprocess), on both databases."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID

from sqlalchemy import MetaData, select, text
from sqlalchemy.ext.asyncio import create_async_engine

from loom.runtime import Channel, DomainEvent, Service
from loom.runtime.http.audit import audit
from loom.runtime.values.principal import system_of, use_principal

LOOM = [sys.executable, "-m", "loom.cli"]


def loom(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOM, "dead-letters", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@dataclass(frozen=True, kw_only=True)
class Failed(DomainEvent):
    event_type: ClassVar[str] = "Cli.Failed"
    n: int


REVISION = "0123456789ab"


async def make_dead_letters(url: str, n: int, tenant: str | None = None) -> list[UUID]:
    """A database holding `n` dead letters, made the real way: a relay, a failing handler;
    raised in `tenant` (as a tenanted context's request raises them) when one is given."""
    service = Service.from_url(
        url, MetaData(), channels=[Channel("cli", ["Cli.Failed"], max_attempts=1)]
    )
    service.events.model_revision = REVISION  # as create_app sets the generated MODEL_REVISION

    async def broken(event: DomainEvent) -> None:
        raise ValueError("the handler is broken")

    service.events.subscribe(Failed, broken, name="Cli.Broken.on_failed")
    try:
        await service.create_schema()
        with use_principal(system_of(tenant)):
            async with service.transaction() as work:
                for i in range(n):
                    work.emit(Failed(n=i))
        await service.settle()
        return [d.event_id for d in await service.outbox.dead_letters()]
    finally:
        await service.dispose()


async def audit_rows(url: str) -> list[dict[str, Any]]:
    """The service's audit log, oldest first."""
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            rows = (await conn.execute(select(audit).order_by(audit.c.audit_id))).mappings()
            return [
                {
                    **row,
                    "targets": json.loads(row["targets"]),
                    "parameters": json.loads(row["parameters"]),
                }
                for row in rows
            ]
    finally:
        await engine.dispose()


async def counts(url: str) -> dict[str, int]:
    service = Service.from_url(url, MetaData())
    try:
        return await service.outbox.counts()
    finally:
        await service.dispose()


async def test_list_and_redrive(database_url: str) -> None:
    first, second = await make_dead_letters(database_url, 2)
    db = ["--database-url", database_url]

    listed = loom("list", *db)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == "2 dead letter(s); 1-2:"
    assert str(first) in listed.stdout and str(second) in listed.stdout
    assert "Cli.Failed  channel=cli  attempts=1" in listed.stdout
    assert f"revision={REVISION}" in listed.stdout  # the model revision that wrote the event
    assert "last error: Cli.Broken.on_failed: ValueError: the handler is broken" in listed.stdout

    page = json.loads(loom("list", *db, "--format", "json", "--limit", "1", "--offset", "1").stdout)
    assert (page["total"], page["limit"], page["offset"]) == (2, 1, 1)
    (item,) = page["items"]
    assert item["event_id"] == str(second) and item["payload"] == {"n": 1}
    assert item["model_revision"] == REVISION

    one = loom("redrive", str(first), *db)
    assert one.returncode == 0, one.stderr
    assert one.stdout.strip() == f"redriven {first}: the service's relay delivers it again"
    assert await counts(database_url) == {"pending": 1, "delivered": 0, "dead": 1}

    again = loom("redrive", str(first), *db)  # pending now, no longer dead
    assert again.returncode == 1
    assert again.stderr.strip() == f"error: no dead letter has the event id {first}"

    every = loom("redrive", "--all", *db)
    assert every.returncode == 0 and every.stdout.strip() == "redriven 1 dead letter(s)"
    assert loom("list", *db).stdout.strip() == "no dead letters"
    assert await counts(database_url) == {"pending": 2, "delivered": 0, "dead": 0}
    # in the audit log the console shows: this machine's user, through the command line
    rows = await audit_rows(database_url)
    print(*rows, sep="\n")
    assert [(r["action"], r["targets"], r["outcome"]) for r in rows] == [
        ("redrive", [str(first)], "redriven=1"),
        ("redrive", [], "redriven=1"),
    ]
    assert [r["parameters"] for r in rows] == [
        {"via": "cli"},
        {"all": True, "kind": "any", "via": "cli"},
    ]
    assert all(r["actor"].endswith(f"@{socket.gethostname()}") for r in rows)


async def test_each_dead_letter_shows_its_tenant(database_url: str) -> None:
    """The operator sees every tenant's dead letters, each with its tenant (none: no `tenant=`)."""
    (mine,) = await make_dead_letters(database_url, 1, tenant="acme")
    db = ["--database-url", database_url]
    listed = loom("list", *db)
    assert listed.returncode == 0, listed.stderr
    (line,) = [x for x in listed.stdout.splitlines() if str(mine) in x]
    assert line.endswith("  tenant=acme"), line
    page = json.loads(loom("list", *db, "--format", "json").stdout)
    assert [(i["event_id"], i["tenant"]) for i in page["items"]] == [(str(mine), "acme")]


async def test_the_default_database_is_the_one_loom_run_uses(tmp_path: Path) -> None:
    model = tmp_path / "shop.loom"
    model.write_text("context Shop { }\n")
    (dead,) = await make_dead_letters(f"sqlite+aiosqlite:///{tmp_path / 'shop.db'}", 1)
    for args, cwd in (((str(model),), None), ((str(tmp_path),), None), ((), tmp_path)):
        r = loom("list", *args, cwd=cwd)
        assert r.returncode == 0, r.stderr
        assert str(dead) in r.stdout
    r = loom("redrive", str(dead), str(model))
    assert r.returncode == 0, r.stderr
    assert loom("list", cwd=tmp_path).stdout.strip() == "no dead letters"


async def test_a_model_of_several_files_names_its_database_as_loom_run_does(
    tmp_path: Path,
) -> None:
    """`loom run orders.loom billing.loom` keeps `orders.db`: the same FILE... finds it."""
    files = [str(tmp_path / "orders.loom"), str(tmp_path / "billing.loom")]
    (tmp_path / "orders.loom").write_text("context Orders { }\n")
    (tmp_path / "billing.loom").write_text("context Billing { }\n")
    first, _ = await make_dead_letters(f"sqlite+aiosqlite:///{tmp_path / 'orders.db'}", 2)
    r = loom("list", *files)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "2 dead letter(s); 1-2:"
    r = loom("redrive", str(first), *files)
    assert r.returncode == 0, r.stderr
    r = loom("redrive", "--all", *files)
    assert (r.returncode, r.stdout.strip()) == (0, "redriven 1 dead letter(s)"), r.stderr
    assert loom("list", *files).stdout.strip() == "no dead letters"
    r = loom("list", files[0], str(tmp_path / "missing.loom"))
    assert r.returncode == 2 and "missing.loom: no such file or folder" in r.stderr, r.stderr


async def test_a_database_without_an_outbox_has_no_dead_letters(tmp_path: Path) -> None:
    (tmp_path / "plain.loom").write_text("context Plain { }\n")
    service = Service.from_url(f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}", MetaData())
    await service.create_schema()  # no channels: no outbox table
    await service.dispose()
    r = loom("list", cwd=tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "no dead letters")
    assert json.loads(loom("list", "--format", "json", cwd=tmp_path).stdout)["total"] == 0
    r = loom("redrive", "--all", cwd=tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "redriven 0 dead letter(s)")


def test_mistakes_get_a_sentence_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "never_run.loom").write_text("context X { }\n")
    cases = {
        ("list",): "no database at",
        ("list", str(tmp_path / "missing.loom")): "no such file or folder",
        ("redrive",): "name the dead letter's EVENT_ID, or pass --all",
        ("redrive", "not-a-uuid"): "EVENT_ID must be a UUID",
        ("list", "--database-url", "postgresql+asyncpg://nobody@127.0.0.1:1/none"): "cannot read",
    }
    for args, message in cases.items():
        r = loom(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = loom("list", cwd=empty)
    assert r.returncode == 2 and "no .loom file in" in r.stderr


def test_a_database_url_naming_no_sqlite_file_is_refused_never_created(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    url = f"sqlite+aiosqlite:///{typo}"
    commands = [
        ["dead-letters", "list", "--database-url", url],
        ["dead-letters", "redrive", "--all", "--database-url", url],
        ["timers", "list", "--database-url", url],
        ["timers", "list", "--database-url", "sqlite:///typo.db"],  # relative: the current folder
    ]
    for args in commands:
        r = subprocess.run(
            [*LOOM, *args], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False
        )
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert r.stderr.startswith(f"error: no database at {typo}"), (args, r.stderr)
        assert len(r.stderr.splitlines()) == 1 and not r.stdout, r.stderr
        assert not typo.exists(), args


async def test_a_database_from_before_the_audit_log_is_redriven_with_a_warning(
    database_url: str,
) -> None:
    (dead,) = await make_dead_letters(database_url, 1)
    engine = create_async_engine(database_url)
    async with engine.begin() as conn:
        await conn.execute(text("DROP TABLE __loom_audit"))
    await engine.dispose()
    done = loom("redrive", str(dead), "--database-url", database_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"redriven {dead}: the service's relay delivers it again"
    assert done.stderr.startswith("warning: not audited"), done.stderr
    assert await counts(database_url) == {"pending": 1, "delivered": 0, "dead": 0}
