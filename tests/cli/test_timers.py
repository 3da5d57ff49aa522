"""`loom timers list|fire`, run as a user runs it (a subprocess), on both databases: the pending
timeouts and context timers of a service's database, and making one due now, which the running
service's scheduler then fires, once."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import MetaData

from loom.runtime import Service, Work
from loom.runtime.processes import SqlProcessStore, Tick, Timeout, TimeoutDue
from tests.cli.test_dead_letters import audit_rows

LOOM = [sys.executable, "-m", "loom.cli"]
LATER = datetime(2100, 1, 1, tzinfo=UTC)


def loom(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOM, "timers", *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )


def service_of(url: str, fired: list[str]) -> Service:
    """A service with one process's timeouts and one context timer (as a generated one has)."""
    service = Service.from_url(url, MetaData(), processes=True)

    async def on_timeout(due: TimeoutDue, work: Work) -> None:
        fired.append(f"{due.name}:{due.key}")

    async def on_tick(tick: Tick, work: Work) -> None:
        fired.append(tick.name)

    service.timeouts.register("Cli.Reminder", on_timeout)
    service.recurring.register("Cli.sweep", timedelta(days=365 * 100), on_tick)
    return service


async def test_list_and_fire(database_url: str) -> None:
    fired: list[str] = []
    service = service_of(database_url, fired)
    db = ["--database-url", database_url]
    try:
        await service.create_schema()
        async with service.transaction() as work:
            job = await SqlProcessStore(service).arm(
                work, "Cli.Reminder", "k-1", Timeout("remind", at=LATER), datetime.now(UTC)
            )
        assert await service.scheduler.run_due() == 0  # nothing due for a long time

        listed = loom("list", *db)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert lines[0] == "2 pending timer(s); 1-2:"
        assert lines[1].startswith(f"timeout  {job}  Cli.Reminder.remind  key=k-1  due=2100-01-01")
        assert lines[2].startswith("timer    Cli.sweep  due=")
        page = json.loads(loom("list", *db, "--format", "json", "--offset", "1").stdout)
        assert [x["timer"] for x in page["items"]] == ["Cli.sweep"] and page["total"] == 2

        one = loom("fire", str(job), *db)
        assert one.returncode == 0, one.stderr
        assert one.stdout.strip() == f"timeout {job} is due now: the service's scheduler fires it"
        tick = loom("fire", "Cli.sweep", *db)
        assert tick.returncode == 0, tick.stderr
        assert await service.scheduler.run_due() == 2
        assert await service.scheduler.run_due() == 0
        assert fired == ["remind:k-1", "Cli.sweep"]  # each once

        gone = loom("fire", str(job), *db)  # consumed
        assert gone.returncode == 1
        assert gone.stderr.strip() == f"error: no pending timeout or context timer has the id {job}"
        assert loom("list", *db).stdout.splitlines()[0] == "1 pending timer(s); 1-1:"
        rows = await audit_rows(database_url)  # in the audit log the console shows
        assert [(r["action"], r["targets"], r["parameters"]) for r in rows] == [
            ("fire", [str(job)], {"kind": "timeout", "via": "cli"}),
            ("fire", ["Cli.sweep"], {"kind": "timer", "via": "cli"}),
        ]
    finally:
        await service.dispose()


async def test_a_database_without_timers(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}"
    service = Service.from_url(url, MetaData())
    await service.create_schema()  # no processes: no timer tables
    await service.dispose()
    r = loom("list", "--database-url", url)
    assert (r.returncode, r.stdout.strip()) == (0, "no timers")
    r = loom("fire", "Cli.sweep", "--database-url", url)
    assert r.returncode == 1, r.stdout


async def test_the_model_is_named_by_its_files_as_loom_run_takes_them(tmp_path: Path) -> None:
    """`loom run cli.loom more.loom` keeps `cli.db` beside them: FILE... (or their folder, or the
    current one) finds it."""
    (tmp_path / "cli.loom").write_text("context Cli { }\n")
    (tmp_path / "more.loom").write_text("context More { }\n")
    files = [str(tmp_path / "cli.loom"), str(tmp_path / "more.loom")]
    service = service_of(f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}", [])
    try:
        await service.create_schema()
        async with service.transaction() as work:
            job = await SqlProcessStore(service).arm(
                work, "Cli.Reminder", "k-1", Timeout("remind", at=LATER), datetime.now(UTC)
            )
    finally:
        await service.dispose()
    for args, cwd in (((*files,), None), ((str(tmp_path),), None), ((), tmp_path)):
        page = loom("list", *args, "--format", "json", cwd=cwd)
        assert page.returncode == 0, (args, page.stderr)
        assert [x.get("job_id") for x in json.loads(page.stdout)["items"]][:1] == [str(job)], (
            page.stdout
        )
    one = loom("fire", str(job), *files)
    assert one.returncode == 0, one.stderr
    r = loom("list", files[0], str(tmp_path / "missing.loom"))
    assert r.returncode == 2 and "missing.loom: no such file or folder" in r.stderr, r.stderr
