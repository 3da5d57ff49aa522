"""Two `loom migrate apply` at once on one PostgreSQL database (two real processes, as two
replicas starting together): the migration is applied once; the other finds it done."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import MetaData, text

from loom.runtime import Service
from tests.migrate.corpus import make_corpus

pytestmark = pytest.mark.postgres


async def _record(url: str) -> list[str]:
    service = Service.from_url(url, MetaData())
    try:
        async with service.engine.connect() as conn:
            rows = await conn.execute(text("SELECT name FROM __loom_migrations ORDER BY revision"))
            return [r[0] for r in rows]
    finally:
        await service.dispose()


def test_two_applies_at_once_apply_once(tmp_path: Path, postgres_url: str) -> None:
    [v1] = make_corpus(tmp_path / "corpus", 1)
    script = v1.parent / "migrations" / "0001_initial.py"
    # the first holds the lock a while, so the second surely waits on it
    script.write_text(script.read_text() + '    op.execute("SELECT pg_sleep(1)")\n')
    cmd = [
        sys.executable,
        "-m",
        "loom.cli",
        "migrate",
        "apply",
        str(v1),
        "--database-url",
        postgres_url,
    ]
    procs = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    said = sorted(out for out, _ in outs)
    assert sum("applied 0001_initial" in s for s in said) == 1, said
    assert sum("nothing to apply" in s for s in said) == 1, said
    assert asyncio.run(_record(postgres_url)) == ["0001_initial"]
