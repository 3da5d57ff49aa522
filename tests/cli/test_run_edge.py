"""`loom run` under hostile clients, over raw sockets: a head over its limits is answered 414 / 431
with a problem and the connection closed; a head that does not arrive in time (slow loris), an
idle connection and an idle keep-alive connection are closed; a well-behaved client is answered
meanwhile; the log never holds a long URL whole."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from loom.runtime.http.edge_limits import LOGGED_URL_CHARS, EdgeLimits
from tests.liveserver import free_port, refused_start, running

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "examples/banking/banking.loom"
# the server's limits: the timeouts short, for a fast test
MAX_URL, MAX_COUNT, MAX_BYTES = 4096, 20, 16384
TIMEOUT = 1.0
# how long past a timeout a close may come on a loaded machine
SLACK = 4.0


@dataclass
class Server:
    port: int
    base: str
    log: Path


@contextmanager
def _serving(folder: Path, *args: str) -> Iterator[Server]:
    """`loom run` of the banking model in `folder`, with the limits above and `args`."""
    model = folder / "banking.loom"
    model.write_text(MODEL.read_text())
    port, log = free_port(), folder / "server.log"
    limits = [
        *("--max-url-bytes", str(MAX_URL), "--max-header-count", str(MAX_COUNT)),
        *("--max-header-bytes", str(MAX_BYTES), "--header-timeout", str(TIMEOUT)),
        *("--keep-alive-timeout", str(TIMEOUT)),
    ]
    with running(str(model), *limits, *args, port=port, log_path=log) as base:
        yield Server(port, base, log)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with _serving(tmp_path_factory.mktemp("edge")) as server:
        yield server
        # stopping while a refused connection lingers (the server still reads it) is clean
        sock = _connect(server)
        sock.sendall(b"GET /" + b"a" * (MAX_URL + 1) + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 414 ")
    sock.close()
    log = server.log.read_text(encoding="utf-8")
    assert "Finished server process" in log and "Traceback" not in log, log


@dataclass
class Ending:
    """What a connection received before the server closed it, and when it closed."""

    data: bytes
    seconds: float

    def answer(self) -> tuple[int, dict[str, str], dict[str, object]]:
        head, _, body = self.data.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        return int(status_line.split(" ")[1]), headers, json.loads(body)


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def _send(sock: socket.socket, data: bytes) -> None:
    """Send `data` as a client that does not wait for answers: the server may close first."""
    try:
        for start in range(0, len(data), 65536):
            sock.sendall(data[start : start + 65536])
    except OSError:
        pass


def _until_closed(sock: socket.socket, *, within: float, trickle: bool = False) -> Ending:
    """Read until the server closes the connection (fail after `within` seconds); `trickle`:
    meanwhile send one more byte of a header value every 0.1 s, as a slow loris does."""
    started = time.monotonic()
    data = b""
    sock.settimeout(0.1)
    with sock:
        while time.monotonic() - started < within:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                if trickle:
                    _send(sock, b"z")
                continue
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        else:
            pytest.fail(f"the connection was still open after {within} s (got {data[:200]!r})")
    return Ending(data, time.monotonic() - started)


def _refused(server: Server, request: bytes) -> tuple[int, dict[str, str], dict[str, object]]:
    sock = _connect(server)
    _send(sock, request)
    status, headers, body = _until_closed(sock, within=SLACK).answer()
    assert headers["content-type"] == "application/problem+json", headers
    assert headers["connection"] == "close"
    assert body["status"] == status
    assert "instance" not in body  # the URL is never echoed
    return status, headers, body


def test_an_over_long_url_is_answered_414(server: Server) -> None:
    for length in (MAX_URL + 1, 100_000):  # read whole by the parser; over its buffer
        request = b"GET /" + b"a" * length + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        status, _, body = _refused(server, request)
        assert status == 414
        assert body["type"] == "urn:loom:problem:uri-too-long"
        assert body["max_bytes"] == MAX_URL


def test_a_huge_header_is_answered_431(server: Server) -> None:
    request = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * (1 << 20) + b"\r\n\r\n"
    status, _, body = _refused(server, request)
    assert status == 431
    assert body["type"] == "urn:loom:problem:header-fields-too-large"
    assert body["max_bytes"] == MAX_BYTES


def test_too_many_headers_are_answered_431(server: Server) -> None:
    lines = b"".join(b"X-H%d: 1\r\n" % i for i in range(MAX_COUNT))
    status, _, body = _refused(server, b"GET / HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
    assert status == 431
    assert body["type"] == "urn:loom:problem:header-fields-too-large"
    assert body["max_count"] == MAX_COUNT
    assert body["detail"] == f"the request has {MAX_COUNT + 1} header lines; send at most 20"


def test_a_malformed_head_is_a_400_problem_that_quotes_nothing(server: Server) -> None:
    status, _, body = _refused(server, b"NONSENSE-secret\r\n\r\n")
    assert status == 400
    assert body["type"] == "urn:loom:problem:malformed-request"
    assert "secret" not in json.dumps(body)


def test_a_slow_loris_is_answered_408_and_closed_within_the_timeout(server: Server) -> None:
    sock = _connect(server)
    _send(sock, b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    ending = _until_closed(sock, within=TIMEOUT + SLACK, trickle=True)
    print(f"slow loris closed after {ending.seconds:.2f} s")
    assert ending.seconds >= TIMEOUT * 0.8  # the trickle did not reset the deadline, nor end it
    status, _, body = ending.answer()
    assert status == 408
    assert body["type"] == "urn:loom:problem:request-timeout"


def test_idle_connections_are_closed(server: Server) -> None:
    fresh = _until_closed(_connect(server), within=TIMEOUT + SLACK)
    assert fresh.data == b""  # nothing asked, nothing answered

    kept = _connect(server)
    kept.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
    ending = _until_closed(kept, within=TIMEOUT + SLACK)
    head, _, body = ending.data.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert b"connection: close" not in head.lower()  # kept alive, then closed when idle
    assert json.loads(body)["openapi"]
    print(f"idle: fresh closed after {fresh.seconds:.2f} s, keep-alive {ending.seconds:.2f} s")


def test_a_good_client_is_answered_while_hostile_connections_are_open(server: Server) -> None:
    _good_client_among_hostile_ones(server)


@pytest.mark.postgres
def test_a_good_client_is_answered_among_hostile_ones_on_postgres(
    tmp_path: Path, postgres_url: str
) -> None:
    with _serving(tmp_path, "--database-url", postgres_url) as server:
        _good_client_among_hostile_ones(server)


def _good_client_among_hostile_ones(server: Server) -> None:
    hostile = 12
    with ThreadPoolExecutor(max_workers=hostile) as pool:
        lorises = []
        for i in range(hostile // 2):
            sock = _connect(server)
            _send(sock, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow-%d: " % i)
            lorises.append(pool.submit(_until_closed, sock, within=TIMEOUT + SLACK, trickle=True))
        idle = [
            pool.submit(_until_closed, _connect(server), within=TIMEOUT + SLACK)
            for _ in range(hostile - len(lorises))
        ]
        opened = time.monotonic()
        answered, in_time = [], 0
        with httpx.Client(base_url=server.base, timeout=10) as client:
            for n in range(20):
                r = client.post("/api/workflows/register_customer", json={"name": f"Ada {n}"})
                answered.append(r.status_code)
                in_time += time.monotonic() - opened < TIMEOUT * 0.8
        endings = [f.result() for f in lorises + idle]
    timed_out = sum(e.answer()[0] == 408 for e in endings[: len(lorises)])
    silent = sum(e.data == b"" for e in endings[len(lorises) :])
    print(
        f"good client: {answered.count(200)}/{len(answered)} answered 200, {in_time} while the "
        f"{hostile} hostile connections were surely open; slow lorises answered 408: "
        f"{timed_out}/{len(lorises)}; idle closed silently: {silent}/{len(idle)}"
    )
    assert answered == [200] * 20
    assert in_time >= 1
    assert timed_out == len(lorises)
    assert silent == len(idle)


def test_the_log_never_holds_a_long_url_whole(server: Server) -> None:
    served = "/api/customers/" + "c" * 3000  # under the limit: served (a 422), and logged
    refused = "/" + "r" * 100_000
    assert httpx.get(server.base + served).status_code == 422
    _refused(server, f"GET {refused} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    deadline = time.monotonic() + SLACK
    while served[:LOGGED_URL_CHARS] + "…" not in server.log.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the access log line did not appear"
        time.sleep(0.05)
    log = server.log.read_text(encoding="utf-8")
    assert served not in log
    assert "r" * (LOGGED_URL_CHARS + 1) not in log
    assert "request refused (414)" in log


def test_the_limits_default_to_8_kib_100_headers_32_kib_10_s_and_5_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("URL_BYTES", "HEADER_COUNT", "HEADER_BYTES"):
        monkeypatch.delenv(f"LOOM_MAX_{name}", raising=False)
    for name in ("HEADER_TIMEOUT", "KEEP_ALIVE_TIMEOUT"):
        monkeypatch.delenv(f"LOOM_{name}", raising=False)
    assert EdgeLimits.from_environment() == EdgeLimits(8192, 100, 32768, 10.0, 5.0)


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("LOOM_MAX_URL_BYTES", "0", "LOOM_MAX_URL_BYTES must be a whole number >= 1, not '0'"),
        ("LOOM_MAX_HEADER_COUNT", "1.5", "LOOM_MAX_HEADER_COUNT must be a whole number >= 1"),
        ("LOOM_MAX_HEADER_BYTES", "32KiB", "LOOM_MAX_HEADER_BYTES must be a whole number >= 1"),
        (
            "LOOM_KEEP_ALIVE_TIMEOUT",
            "-1",
            "LOOM_KEEP_ALIVE_TIMEOUT must be a number of seconds > 0",
        ),
    ],
)
def test_a_bad_edge_limit_is_a_sentence(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, says: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=says):
        EdgeLimits.from_environment()


def test_run_refuses_a_bad_edge_limit(tmp_path: Path) -> None:
    model = tmp_path / "banking.loom"
    model.write_text(MODEL.read_text())
    stderr = refused_start(str(model), "--header-timeout", "0")
    assert "LOOM_HEADER_TIMEOUT must be a number of seconds > 0, not '0'" in stderr, stderr
