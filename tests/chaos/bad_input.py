"""Scenario: the bad-input corpus (corpus.py) against every route of a real `loom run` of an
example: no answer may be a 5xx. Counts every request and every status."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .corpus import Case, Spec, cases
from .load import client, send, status_line
from .servers import EXAMPLES, Server, copy_model, serving


@dataclass(frozen=True)
class Example:
    name: str
    files: tuple[str, ...]
    extra: tuple[str, ...] = ()  # files copied beside the model (an extern module)
    extern: str | None = None


SUPPORT = Example(
    "support", ("support/support.loom",), ("support/support_externs.py",), "support_externs"
)
SHOP = Example("shop", ("shop/shop.loom",))
BANKING = Example("banking", ("banking/banking.loom",))
SALES = Example("sales", ("sales/sales.loom", "sales/onboarding.loom"))
SCHEDULING = Example("scheduling", ("scheduling/scheduling.loom",))


@dataclass
class Findings:
    example: str
    engine: str
    routes: int = 0
    seconds: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    # route, case, status: a 5xx, or no answer at all (a timeout, a dropped connection)
    server_errors: list[tuple[str, str, str]] = field(default_factory=list)
    unsent: int = 0  # cases the deadline left unsent
    restarts: int = 0  # servers restarted after a request wedged them

    def lines(self) -> list[str]:
        lines = [
            f"chaos: bad-input corpus against {self.example} ({self.engine})",
            (
                f"  routes {self.routes}, requests {sum(self.statuses.values())} in "
                f"{self.seconds:.1f}s: {status_line(self.statuses)}"
            ),
        ]
        if self.unsent or self.restarts:
            lines.append(
                f"  left unsent at the deadline {self.unsent}; server restarted after a hang "
                f"{self.restarts} time(s)"
            )
        for route, name, status in self.server_errors[:40]:
            lines.append(f"  {status} {route} [{name}]")
        if len(self.server_errors) > 40:
            lines.append(f"  ... and {len(self.server_errors) - 40} more 5xx")
        return lines


async def seed(http: httpx.AsyncClient, base: str, spec: Spec) -> dict[str, str]:
    """One stored row per crudish collection (POST /api/<aggregates> answering 201), so that
    path ids reach real rows and a wrong body meets the operation, not a 404."""
    ids: dict[str, str] = {}
    paths = spec.document["paths"]
    for path, ops in paths.items():
        if "{" in path or "post" not in ops or "get" not in ops:
            continue
        schema = ops["post"].get("requestBody", {}).get("content", {}).get("application/json")
        if not schema:
            continue
        r = await http.post(base + path, json=spec.sample(schema["schema"]))
        if r.status_code == 201:
            ids[path] = str(r.json()["id"])
    return ids


async def _send(http: httpx.AsyncClient, base: str, case: Case) -> str:
    headers = {"content-type": case.content_type} if case.content_type else {}
    outcome = await send(http, case.method, base + case.url, content=case.content, headers=headers)
    return outcome.label


class Target:
    """The server under the corpus. A request that gets no answer in time may have wedged it
    (one CPU-bound request blocks every other one), so the server is restarted before the corpus
    goes on: the run stays bounded whatever a defect does."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.restarts = 0
        self._lock = asyncio.Lock()

    async def recover(self) -> None:
        async with self._lock:
            async with httpx.AsyncClient(timeout=2) as probe:
                if (await send(probe, "GET", f"{self.server.base}/openapi.json")).label == "200":
                    return
            self.server.kill()
            self.server.start()
            await self.server.wait_ready()
            self.restarts += 1


async def bad_input(
    workdir: Path,
    example: Example,
    database_url: str,
    *,
    concurrency: int = 4,
    rounds: int = 1,
    request_timeout: float = 5.0,
    deadline: float = 240.0,
    every_token: bool = False,
) -> Findings:
    files = copy_model(
        workdir / "model",
        [EXAMPLES / f for f in example.files],
        *(EXAMPLES / f for f in example.extra),
    )
    server = Server(files, database_url, name=example.name, extern=example.extern, log_dir=workdir)
    target = Target(server)
    findings = Findings(example.name, database_url.split(":")[0])
    with serving(server):
        server.start()
        await server.wait_ready()
        async with client(request_timeout, connections=concurrency) as http:
            document = (await http.get(f"{server.base}/openapi.json")).json()
            spec = Spec(document, await seed(http, server.base, Spec(document, {})))
            routes = spec.routes()
            findings.routes = len(routes)
            queue: asyncio.Queue[Case] = asyncio.Queue()
            for c in [c for r in routes for c in cases(spec, r, every_token=every_token)] * rounds:
                queue.put_nowait(c)
            suspects: list[Case] = []
            started = time.monotonic()

            def note(case: Case, status: str) -> None:
                findings.statuses[status] += 1
                if not status.isdigit() or status[0] == "5":
                    findings.server_errors.append((case.route, case.name, status))

            async def worker() -> None:
                while not queue.empty() and time.monotonic() - started < deadline:
                    case = queue.get_nowait()
                    status = await _send(http, server.base, case)
                    if status.isdigit():
                        note(case, status)
                    else:  # no answer: this case, or another in flight, may have wedged it
                        suspects.append(case)
                        await target.recover()

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            # Each request that got no answer is sent again alone, to name the culprit.
            for case in suspects:
                status = await _send(http, server.base, case)
                note(case, status)
                if not status.isdigit():
                    await target.recover()
            findings.unsent = queue.qsize()
            findings.restarts = target.restarts
            findings.seconds = time.monotonic() - started
        findings.server_errors.sort()
    return findings


def examples(names: Sequence[str]) -> list[Example]:
    known = {e.name: e for e in (SUPPORT, SHOP, BANKING, SALES, SCHEDULING)}
    return [known[n] for n in names]
