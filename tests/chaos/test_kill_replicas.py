"""Two real `loom run` replicas on one database, one killed with SIGKILL and restarted again and
again under concurrent durable commands: nothing acknowledged is lost, every committed event is
applied exactly once, nothing is left in the outbox, no dead letters (kill_replicas.py)."""

from __future__ import annotations

from pathlib import Path

from .conftest import Report
from .kill_replicas import KillPlan, kill_replicas
from .load import fivexx


async def test_kill_9_a_replica_under_durable_commands(
    database_url: str, tmp_path: Path, report: Report
) -> None:
    engine = database_url.split(":")[0]
    audit = await kill_replicas(tmp_path, database_url, KillPlan())
    report(audit.lines(f"chaos: kill -9 of replicas ({engine})"))

    assert not fivexx(audit.ledger.labels), audit.ledger.labels
    assert len(audit.acknowledged) > 0
    assert audit.problems() == []
