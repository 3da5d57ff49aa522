"""Scenario: many concurrent clients on one aggregate, through every kind of write route.

For each kind of route (an operation, a transactional and a non-transactional workflow, each with
and without a durable event) a fresh Counter takes the same number of bumps twice: from 1 client,
then from `clients` concurrent clients. Each bump adds one to `n` when it is acknowledged; a lost
race is a 409 and adds nothing. So `n` must equal the number of 2xx answers, and, for the routes
with a durable event, the Tally rows the reaction leaves must too. The wall time of the concurrent
run against the 1-client run shows whether throughput collapses under contention (a pool deadlock,
a lock convoy, timeouts) rather than merely turning most answers into 409s."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from .accounting import settle
from .load import ACKNOWLEDGED, Outcome, client, send, status_line
from .servers import get_all

# kind -> (route, whether each acknowledged bump commits a durable Bumped event)
# (an aggregate's event is raised by its operation; a workflow's by `emit` in the body)
ROUTES: dict[str, tuple[str, bool]] = {
    "operation": ("/api/counters/{id}/bump", False),
    "operation + durable event": ("/api/counters/{id}/bump_loud", True),
    "transactional workflow": ("/api/workflows/bump_tx", False),
    "transactional workflow + aggregate's durable event": ("/api/workflows/bump_tx_loud", True),
    "transactional workflow + emitted durable event": ("/api/workflows/bump_tx_emit", True),
    "non-transactional workflow": ("/api/workflows/bump_auto", False),
    "non-transactional workflow + aggregate's durable event": (
        "/api/workflows/bump_auto_loud",
        True,
    ),
    "non-transactional workflow + emitted durable event": ("/api/workflows/bump_auto_emit", True),
}


@dataclass(frozen=True)
class ContentionPlan:
    requests: int = 80  # per run: the 1-client run and the concurrent run send as many
    clients: int = 50
    request_timeout: float = 20.0
    settle_timeout: float = 30.0


@dataclass
class Run:
    counter: str
    clients: int
    seconds: float
    labels: Counter[str]
    acknowledged: int
    final: int = -1
    tallies: int = 0


@dataclass
class KindResult:
    kind: str
    loud: bool
    one: Run
    many: Run

    @property
    def ratio(self) -> float:
        return self.many.seconds / max(self.one.seconds, 1e-9)

    def line(self) -> str:
        return (
            f"  {self.kind}: 1 client {self.one.seconds:.2f}s ({status_line(self.one.labels)}), "
            f"{self.many.clients} clients {self.many.seconds:.2f}s "
            f"({status_line(self.many.labels)}); ratio {self.ratio:.2f}; n "
            f"{self.one.final}/{self.many.final} for {self.one.acknowledged}/"
            f"{self.many.acknowledged} acknowledged"
            + (f"; tallies {self.one.tallies}/{self.many.tallies}" if self.loud else "")
        )

    def problems(self) -> list[str]:
        found = []
        for run in (self.one, self.many):
            odd = {k: v for k, v in run.labels.items() if k[:1] != "2" and k != "409"}
            if odd:
                found.append(f"{self.kind}, {run.clients} client(s): answers {odd}")
            # a bump whose answer never came (a timeout, reported above) may have committed
            unknown = sum(n for k, n in run.labels.items() if not k.isdigit() or k == "503")
            if not run.acknowledged <= run.final <= run.acknowledged + unknown:
                found.append(
                    f"{self.kind}, {run.clients} client(s): n = {run.final} after "
                    f"{run.acknowledged} acknowledged bumps ({unknown} unanswered)"
                )
            if run.tallies != (run.final if self.loud else 0):
                found.append(
                    f"{self.kind}, {run.clients} client(s): {run.tallies} reactions applied "
                    f"for {run.final if self.loud else 0} committed events"
                )
        return found


@dataclass
class Contention:
    engine: str
    results: list[KindResult] = field(default_factory=list)
    aborted: str | None = None  # why the scenario could not go on: the service stopped answering

    def lines(self, plan: ContentionPlan) -> list[str]:
        head = (
            f"chaos: {plan.clients} clients vs 1 on one aggregate ({self.engine}), "
            f"{plan.requests} requests per run"
        )
        tail = [f"  aborted: {self.aborted}"] if self.aborted else []
        return [head, *(r.line() for r in self.results), *tail]

    def problems(self) -> list[str]:
        found = [p for r in self.results for p in r.problems()]
        return found + ([f"aborted: {self.aborted}"] if self.aborted else [])


async def _new_counter(http: httpx.AsyncClient, base: str) -> str:
    r = await http.post(f"{base}/api/counters", json={})
    r.raise_for_status()
    return str(r.json()["id"])


async def _bump(http: httpx.AsyncClient, base: str, route: str, counter: str) -> Outcome:
    if "{id}" in route:
        return await send(http, "POST", base + route.format(id=counter), json={})
    return await send(http, "POST", base + route, json={"counter": counter})


async def _run(base: str, route: str, requests: int, clients: int, timeout: float) -> Run:
    # a client of its own per run: a connection left idle past uvicorn's keep-alive (5 s) by an
    # earlier run may be closed by the server just as it is reused, a client-side ReadError
    async with client(timeout, connections=clients + 5) as http:
        return await _bumps(http, base, route, requests, clients)


async def _bumps(
    http: httpx.AsyncClient, base: str, route: str, requests: int, clients: int
) -> Run:
    counter = await _new_counter(http, base)
    outcomes: list[Outcome] = []
    shares = [requests // clients + (1 if i < requests % clients else 0) for i in range(clients)]

    async def one_client(share: int) -> None:
        for _ in range(share):
            outcomes.append(await _bump(http, base, route, counter))

    started = time.monotonic()
    await asyncio.gather(*(one_client(s) for s in shares))
    seconds = time.monotonic() - started
    labels = Counter(o.label for o in outcomes)
    acknowledged = sum(1 for o in outcomes if o.kind == ACKNOWLEDGED)
    return Run(counter, clients, seconds, labels, acknowledged)


async def contention(base: str, database_url: str, plan: ContentionPlan) -> Contention:
    result = Contention(database_url.split(":")[0])
    timeout = plan.request_timeout
    async with client(timeout) as http:
        for kind, (route, loud) in ROUTES.items():
            try:
                await _run(base, route, 5, 1, timeout)  # warm the route up: imports, plans
                one = await _run(base, route, plan.requests, 1, timeout)
                many = await _run(base, route, plan.requests, plan.clients, timeout)
            except httpx.HTTPError as exc:  # creating a Counter got no answer: a wedged service
                result.aborted = f"after {kind}: the service stopped answering ({exc!r})"
                return result
            result.results.append(KindResult(kind, loud, one, many))
        # retention `work` deletes a row once its reactions committed: an empty outbox means
        # every committed Bumped has been applied
        await settle(database_url, plan.settle_timeout)
        tallies = Counter(t["counter"] for t in await get_all(http, base, "/api/tallies"))
        for r in result.results:
            for run in (r.one, r.many):
                got = await http.get(f"{base}/api/counters/{run.counter}")
                got.raise_for_status()
                run.final = int(got.json()["n"])
                run.tallies = tallies[run.counter]
    return result
