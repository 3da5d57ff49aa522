"""`loom run --reload`, as its user runs it: a real `loom run --reload` in a child process over a copy
of the banking example, driven over HTTP. An edit of the model (a field with a default, a new
operation) is served on the same port with the data kept; a model with errors is reported and the
previous service goes on answering; fixing it reloads. On SQLite (the file beside the model) and
PostgreSQL."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.liveserver import LOOM, free_port, running
from tests.liveserver import stop as stop_server
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
BANKING = ROOT / "examples/banking/banking.loom"
DEADLINE = 60.0  # seconds a rebuild and a restart get, on a loaded machine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_args(request: pytest.FixtureRequest) -> list[str]:
    """No option on SQLite (the file `loom run` keeps beside the model), a URL on PostgreSQL."""
    if request.param == "sqlite":
        return []
    return ["--database-url", str(request.getfixturevalue("postgres_url"))]


@pytest.fixture
def served(tmp_path: Path, database_args: list[str]) -> Iterator[tuple[Path, str, Path]]:
    """The model's copy, the base URL of `loom run --reload` serving it, and its output."""
    model = tmp_path / "banking.loom"
    shutil.copy(BANKING, model)
    log = tmp_path / "run.log"
    with running(str(model), "--reload", *database_args, port=free_port(), log_path=log) as base:
        yield model, base, log


def edit(model: Path, old: str, new: str) -> None:
    text = model.read_text()
    assert old in text
    model.write_text(text.replace(old, new, 1))


def served_after(model: Path, old: str, new: str, url: str, body: dict[str, str]) -> int:
    """Edit the model, wait until the POST of `body` to `url` is served, and answer its status."""
    edit(model, old, new)
    r = wait_until(lambda: answers(url, body), timeout=DEADLINE, what=f"{url} served")
    return r.status_code


def answers(url: str, body: dict[str, str]) -> httpx.Response | None:
    """The answer of a POST, or None while its route is not served (404) or nothing answers."""
    try:
        r = httpx.post(url, json=body, timeout=5)
    except httpx.TransportError:
        return None
    return None if r.status_code == 404 else r


def test_an_edit_is_served_with_the_data_kept_and_an_error_keeps_the_previous_service(
    served: tuple[Path, str, Path], database_args: list[str]
) -> None:
    model, base, log = served
    r = httpx.post(f"{base}/api/workflows/register_customer", json={"name": "Ada"})
    assert r.status_code == 200, r.text
    ada = r.json()

    # a field with a default and a new operation
    renamed = served_after(
        model,
        "    email: string?\n",
        '    email: string?\n    nickname: string = "none"\n\n'
        "    public operation rename(newName: string) { name := newName }\n",
        f"{base}/api/customers/{ada}/rename",
        {"newName": "Bea"},
    )
    assert renamed == 204
    # once the new build answered, the previous one takes no connection: every read, each on a
    # new connection, is the new build's (the socket is handed over, not shared for a while)
    reads = [httpx.get(f"{base}/api/customers/{ada}").json() for _ in range(40)]
    stale = [got for got in reads if "nickname" not in got]
    print(f"reads after the reload: {len(reads)}, by the previous build: {len(stale)}")
    assert stale == []
    got = reads[-1]
    assert (got["name"], got["nickname"]) == ("Bea", "none")  # Ada's row, kept and migrated
    # the database the command line named, or the file beside the model
    assert (model.parent / "banking.db").is_file() is not bool(database_args)

    # a model with an error: said, and the service built before goes on answering
    edit(model, 'nickname: string = "none"', 'nickname: strin = "none"')
    wait_until(
        lambda: "still serving the previous service" in log.read_text(),
        timeout=DEADLINE,
        what="the reload refused",
    )
    said = log.read_text()
    assert "error[loom.unknown-type]: unknown type `strin`" in said
    assert "Traceback" not in said
    assert httpx.get(f"{base}/api/customers/{ada}").json()["name"] == "Bea"

    # fixed, with one more operation: reloaded
    done = served_after(
        model,
        'nickname: strin = "none"',
        'nickname: string = "none"\n'
        "    public operation nickname_as(text: string) { nickname := text }",
        f"{base}/api/customers/{ada}/nickname_as",
        {"text": "Addy"},
    )
    assert done == 204
    got = httpx.get(f"{base}/api/customers/{ada}").json()
    assert (got["name"], got["nickname"], got["version"]) == ("Bea", "Addy", 3)


def test_no_request_fails_while_the_service_is_replaced(tmp_path: Path) -> None:
    # one request after another, each on a new connection, all through a reload: the socket is
    # held by `loom run --reload`, so a connection is taken by the old service or the new one
    model = tmp_path / "banking.loom"
    shutil.copy(BANKING, model)
    log = tmp_path / "run.log"
    failures: list[str] = []
    stop = threading.Event()

    def hammer(base: str) -> None:
        while not stop.is_set():
            try:
                r = httpx.get(f"{base}/api/customers", timeout=10)
                if r.status_code != 200:
                    failures.append(f"{r.status_code} {r.text}")
            except httpx.HTTPError as exc:
                failures.append(repr(exc))

    with running(str(model), "--reload", port=free_port(), log_path=log) as base:
        first = _pids(log)
        worker = threading.Thread(target=hammer, args=(base,))
        worker.start()
        try:
            edit(model, "    email: string?\n", '    email: string?\n    note: string = ""\n')
            wait_until(
                lambda: "note" in httpx.get(f"{base}/openapi.json").text,
                timeout=DEADLINE,
                what="the new field served",
            )
            # the replaced service finished and ended
            wait_until(
                lambda: all(f"Finished server process [{p}]" in log.read_text() for p in first),
                timeout=DEADLINE,
                what="the previous service ended",
            )
        finally:
            stop.set()
            worker.join()
        served = _pids(log)
    assert failures == []
    # Ctrl-C of `loom run --reload` stopped the service it ran
    wait_until(
        lambda: not any(_alive(pid) for pid in served), timeout=DEADLINE, what=f"{served} ended"
    )


def _pids(log: Path) -> list[int]:
    return [int(p) for p in re.findall(r"Started server process \[(\d+)\]", log.read_text())]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is ended: it waits only for its parent to read its status
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def test_a_model_with_errors_at_the_start_is_served_once_fixed(tmp_path: Path) -> None:
    model = tmp_path / "banking.loom"
    model.write_text(BANKING.read_text().replace("email: string?", "email: strin?", 1))
    port = free_port()
    log = tmp_path / "run.log"
    with (
        log.open("w") as out,
        subprocess.Popen(
            [*LOOM, "run", str(model), "--reload", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc,
    ):
        try:
            wait_until(
                lambda: "waiting for a change" in log.read_text(),
                timeout=DEADLINE,
                what="the errors reported",
            )
            assert "unknown type `strin`" in log.read_text()
            model.write_text(BANKING.read_text())
            base = f"http://127.0.0.1:{port}"
            r = wait_until(
                lambda: answers(f"{base}/api/workflows/register_customer", {"name": "Ada"}),
                timeout=DEADLINE,
                what="the fixed model served",
            )
            assert r.status_code == 200, r.text
        finally:
            stop_server(proc)
    assert proc.returncode == 0
    assert "Traceback" not in log.read_text()


def test_a_port_in_use_is_one_sentence(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = subprocess.run(
            [*LOOM, "run", str(BANKING), "--reload", "--port", str(port)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_a_service_that_died_is_said_and_started_again_on_the_next_change(tmp_path: Path) -> None:
    model = tmp_path / "banking.loom"
    shutil.copy(BANKING, model)
    log = tmp_path / "run.log"
    with running(str(model), "--reload", port=free_port(), log_path=log) as base:
        (pid,) = _pids(log)
        os.kill(pid, signal.SIGKILL)
        wait_until(
            lambda: "reload: the service exited (-9); waiting for a change" in log.read_text(),
            timeout=DEADLINE,
            what="the death said",
        )
        r = served_after(
            model,
            "    email: string?\n",
            '    email: string?\n    note: string = ""\n',
            f"{base}/api/workflows/register_customer",
            {"name": "Ada"},
        )
        assert r == 200


def test_an_edit_of_the_extern_module_is_served(tmp_path: Path) -> None:
    """The extern module (`--extern`) beside the model is watched with it: an edit of its code
    is served by the next build, on the same port, with the data kept."""
    for name in ("support.loom", "support_externs.py"):
        shutil.copy(ROOT / "examples/support" / name, tmp_path / name)
    model, code = tmp_path / "support.loom", tmp_path / "support_externs.py"
    log = tmp_path / "run.log"
    args = (str(model), "--reload", "--extern", "support_externs")
    with running(*args, port=free_port(), log_path=log) as base:
        body = {"code": "T-1", "customer": "acme", "dueAt": "2099-01-01T09:00:00Z"}
        r = httpx.post(f"{base}/api/tickets", json=body, timeout=10)
        assert r.status_code == 201, r.text
        ticket = f"{base}/api/tickets/{r.json()['id']}"

        def notified() -> str:
            r = httpx.post(f"{ticket}/notify", json={"channel": "sms"}, timeout=10)
            assert r.status_code == 204, r.text
            return str(httpx.get(ticket, timeout=10).json()["lastNotified"])

        assert notified() == "sms"
        edit(code, "ticket.last_notified = channel", 'ticket.last_notified = channel + "!"')
        wait_until(lambda: notified() == "sms!", timeout=DEADLINE, what="the edited extern served")
    assert "support_externs.py changed; rebuilding" in log.read_text()
