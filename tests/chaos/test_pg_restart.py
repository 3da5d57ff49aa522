"""`pg_ctl restart -m immediate` under load on a real `loom run` (pg_restart.py): clients see only
200, 409 or 503, never a 500 or a hang; nothing acknowledged is lost; the service answers again
and delivers every committed event once."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Report
from .load import fivexx
from .pg_restart import ALLOWED, RestartPlan, pg_restart
from .servers import CrashableCluster


@pytest.mark.postgres
async def test_postgres_restart_immediate_under_load(
    own_cluster: CrashableCluster, tmp_path: Path, report: Report
) -> None:
    plan = RestartPlan()
    audit, recoveries = await pg_restart(tmp_path, own_cluster, plan, "chaos_restart")
    report(audit.lines("chaos: pg_ctl restart -m immediate under load (postgresql+asyncpg)"))

    assert None not in recoveries, "the service did not answer again after a restart"
    unexpected = {k: v for k, v in audit.ledger.labels.items() if k not in ALLOWED}
    assert not unexpected, f"answers other than {sorted(ALLOWED)}: {unexpected}"
    assert not [s for s in fivexx(audit.ledger.labels) if s != "503"]
    assert len(audit.acknowledged) > 0
    assert audit.problems() == []
