"""50 concurrent clients on one aggregate against a real `loom run`, through every kind of write
route: only 2xx or 409, the final state is the sum of the acknowledged changes, every committed
event is applied once, and throughput does not collapse (contention.py)."""

from __future__ import annotations

from pathlib import Path

from .conftest import Report
from .contention import ContentionPlan, contention
from .servers import CHAOS_MODEL, Server, copy_model, serving

# The concurrent run may take at most this many times the 1-client run's wall time for the same
# number of requests. Most concurrent bumps lose the race and answer 409, which costs no less than
# a win, so a healthy service stays near 1x; only a collapse (a pool deadlock, a lock convoy,
# requests queueing into their timeouts) comes near 3x.
MAX_RATIO = 3.0


async def test_fifty_clients_on_one_aggregate(
    database_url: str, tmp_path: Path, report: Report
) -> None:
    server = Server(copy_model(tmp_path / "model", [CHAOS_MODEL]), database_url, log_dir=tmp_path)
    plan = ContentionPlan()
    with serving(server):
        server.start()
        await server.wait_ready()
        result = await contention(server.base, database_url, plan)
    report(result.lines(plan))

    assert result.problems() == [], server.log_tail()
    slow = {r.kind: round(r.ratio, 2) for r in result.results if r.ratio > MAX_RATIO}
    assert not slow, f"throughput collapsed under contention (ratio > {MAX_RATIO}): {slow}"
