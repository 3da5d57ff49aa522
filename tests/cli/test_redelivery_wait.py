"""`loom run --redelivery-wait SECONDS`: a message a consumer replica fetched and never settled (the
replica was killed while its reaction ran) goes to another replica once that wait has passed since
its delivery, and not before. On the real brokers (NATS JetStream's consumer `ack_wait`, Redis
Streams' XAUTOCLAIM min-idle), with every process a real `loom run`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import pytest

from tests.cli.test_replicas import _stop
from tests.liveserver import free_port, refused_start

WAIT = 4.0  # the redelivery wait under test (the default is 30 s)

MODEL = """
channelSource Bus { kind: KIND }

context Orders {
  event OrderPlaced { order: Order id, dish: string }
  aggregate Order with crudish { dish: string }
  repository Orders for Order { }
  workflow placeOrder {
    create(dish: string): Order id {
      let o = Order.create({ dish: dish })
      emit OrderPlaced { order: o.id, dish: dish }
      return o.id
    }
  }
  channel Placed { carries: OrderPlaced  source: Bus  backoff: 10ms .. 40ms }
}

context Kitchen {
  aggregate Ticket with crudish {
    dish: string
    cook: string = ""
    internal extern operation prepare()
  }
  repository Tickets for Ticket { }
  workflow cookOrder {
    on(e: Orders.OrderPlaced) {
      let t = Ticket.create({ dish: e.dish })
      t.prepare()
    }
  }
}

deployable Front { contexts: Orders }
deployable Back { contexts: Kitchen }
"""
# Every run of the reaction is a line in the log (replica, time). The first one blocks, holding
# the message, until its replica is killed; a later one cooks.
EXTERNS = """
import os
import time


class TicketExterns:
    def prepare(self, ticket) -> None:
        log = os.environ["KITCHEN_LOG"]
        replica = os.environ["KITCHEN_REPLICA"]
        with open(log, "a") as out:
            out.write(f"{replica} {time.time()}\\n")
        try:
            os.close(os.open(log + ".held", os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            ticket.cook = replica
            return
        time.sleep(3600)  # holds the message (and blocks its replica) until it is killed
"""


@contextmanager
def loom_run(
    model: Path, deployable: str, url: str, env: dict[str, str], *args: str
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    port = free_port()
    log = model.parent / f"{deployable}-{env.get('KITCHEN_REPLICA', '')}.log"
    command = [sys.executable, "-m", "loom.cli", "run", str(model), "--deployable", deployable]
    command += ["--broker", f"Bus={url}", "--port", str(port), *args]
    with log.open("w") as out:
        proc = subprocess.Popen(
            command,
            cwd=model.parent,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not _answers(base):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"loom run {deployable} did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield proc, base
    finally:
        _stop(proc)


def _answers(base: str) -> bool:
    try:
        return httpx.get(f"{base}/openapi.json", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _runs(log: Path, want: int, within: float) -> list[tuple[str, float]]:
    """The reaction's runs (replica, time) once there are `want` of them, or after `within` s."""
    deadline = time.monotonic() + within
    while True:
        lines = log.read_text().split() if log.exists() else []
        runs = [(lines[i], float(lines[i + 1])) for i in range(0, len(lines) - 1, 2)]
        if len(runs) >= want or time.monotonic() > deadline:
            return runs
        time.sleep(0.05)


@pytest.mark.parametrize("kind", ["nats", "redis"])
def test_a_killed_consumers_message_comes_back_after_the_redelivery_wait(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(f"{kind}_server").url
    model = tmp_path / "kitchen.loom"
    model.write_text(MODEL.replace("KIND", kind))
    (tmp_path / "kitchen_externs.py").write_text(EXTERNS)
    runs_log = tmp_path / "runs.log"
    wait = ["--redelivery-wait", f"{WAIT:g}", "--extern", "kitchen_externs"]
    env = {"KITCHEN_LOG": str(runs_log)}
    with ExitStack() as stack:
        _, front = stack.enter_context(loom_run(model, "Front", url, {}))
        replicas = {
            name: stack.enter_context(
                loom_run(model, "Back", url, {**env, "KITCHEN_REPLICA": name}, *wait)
            )
            for name in ("A", "B")
        }
        r = httpx.post(f"{front}/api/workflows/place_order", json={"dish": "soup"})
        assert r.status_code == 200, r.text

        [(holder, delivered)] = _runs(runs_log, 1, within=60)
        replicas[holder][0].send_signal(signal.SIGKILL)  # killed while its reaction runs
        other = "B" if holder == "A" else "A"
        early = _runs(runs_log, 2, within=WAIT * 0.8)
        runs = _runs(runs_log, 2, within=WAIT * 3)
        assert len(runs) == 2, runs
        (again, redelivered) = runs[1]
        after = redelivered - delivered
        counts = {name: sum(1 for who, _ in runs if who == name) for name in ("A", "B")}
        print(
            f"{kind}: runs before {WAIT * 0.8:g} s: {len(early)}; redelivered to {again} "
            f"after {after:.2f} s (wait {WAIT:g} s); runs per replica {counts}"
        )
        assert len(early) == 1  # not before the wait
        assert again == other
        assert WAIT - 0.5 <= after <= WAIT + 2.5  # within the wait (and a fetch), not 30 s
        base = replicas[other][1]
        deadline = time.monotonic() + 30
        while not (tickets := httpx.get(f"{base}/api/tickets").json()["items"]):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert [t["cook"] for t in tickets] == [other]
        assert len(_runs(runs_log, 3, within=WAIT * 1.5)) == 2  # and never a third time


@pytest.mark.parametrize("value", ["0", "-3"])
def test_a_bad_redelivery_wait_is_one_line(tmp_path: Path, value: str) -> None:
    model = tmp_path / "kitchen.loom"
    model.write_text(MODEL.replace("KIND", "nats"))
    stderr = refused_start(
        str(model), "--deployable", "Back", "--redelivery-wait", value, "--port", str(free_port())
    )
    lines = stderr.strip().splitlines()
    assert lines == [
        f"error: LOOM_REDELIVERY_WAIT must be a number of seconds > 0, not '{value}'"
    ], stderr
