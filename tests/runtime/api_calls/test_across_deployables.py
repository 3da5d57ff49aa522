"""Calls through `resource directory { kind: api  context: Directory  timeout: 2s  retries: 2 }`
across deployables: dispatch.loom + deployables.loom, `Desk` (Dispatch) calling `People`
(Directory) over HTTP at `LOOM_API_DIRECTORY`.

The caller is Desk's generated package served through the kit; the callee is either People as a
live `loom run` server (JWT on both sides), or a small HTTP server of this test standing in for a
callee that hangs, fails or records what it was sent (the caller's client is what is tested).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from loom.build.package import build_model, import_package
from loom.lang import compile_files
from loom.runtime import StartupRefused
from loom.testing import ServiceClient
from tests.liveserver import free_port, running
from tests.runtime.api_calls.auth import SECRET, token

HERE = Path(__file__).parent
FILES = [HERE / "dispatch.loom", HERE / "deployables.loom"]
TIMEOUT_S = 2.0  # the resource's `timeout: 2s`
MARGIN_S = 0.5


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    result = compile_files([str(f) for f in FILES])
    assert result.model is not None, [d.message for d in result.diagnostics]
    out = tmp_path_factory.mktemp("api") / "out"
    build_model(result.model, out)
    main = import_package(out / "desk")
    assert main.CONTEXTS == ("Dispatch",)
    return main


@asynccontextmanager
async def caller(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, directory: str | None
) -> AsyncIterator[ServiceClient]:
    monkeypatch.setenv("LOOM_JWT_SECRET", SECRET)
    if directory is None:
        monkeypatch.delenv("LOOM_API_DIRECTORY", raising=False)
    else:
        monkeypatch.setenv("LOOM_API_DIRECTORY", directory)
    app = desk.build_app(f"sqlite+aiosqlite:///{tmp_path / 'desk.db'}")
    async with app.router.lifespan_context(app), ServiceClient(app, desk) as client:
        yield client


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """People (Directory) as a live server, on its own SQLite file, verifying HS256 tokens."""
    folder = tmp_path_factory.mktemp("people")
    # copies: `loom run` keeps its build cache beside the model (`.loom/`), not in the tests
    files = [str(shutil.copy(f, folder / f.name)) for f in FILES]
    db = folder / "people.db"
    args = [*files, "--deployable", "People", "--database-url", f"sqlite:///{db}"]
    with running(*args, "--jwt-secret", SECRET, port=free_port()) as base:
        yield base


# --------------------------------------------------------------------------------------------------
# A stand-in callee: a plain HTTP/1.1 server on loopback answering by a script


# (status, JSON body), or (status, raw body, headers) for an answer that is no Loom route's
Answer = Callable[
    [str, str, dict[str, str]],
    Awaitable[tuple[int, Any] | tuple[int, str, dict[str, str]] | None],
]


class Stub:
    """Every request it got (method, target, headers); `answer` decides the response (None:
    never answer)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = head[0].split(" ", 2)
        headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
        length = int(headers.get("content-length", "0"))
        if length:
            await reader.readexactly(length)
        self.requests.append((method, target, headers))
        answered = await self.answer(method, target, headers)
        if answered is None:
            await asyncio.sleep(3600)  # hang: the caller gives up first
            return
        if len(answered) == 3:
            status, raw, extra = answered
            data = raw.encode()
        else:
            status, body = answered
            data = json.dumps(body).encode()
            kind = "application/problem+json" if status >= 400 else "application/json"
            extra = {"content-type": kind}
        fields = "".join(f"{k}: {v}\r\n" for k, v in extra.items())
        writer.write(
            f"HTTP/1.1 {status} X\r\n{fields}content-length: {len(data)}\r\n"
            "connection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        writer.close()


@asynccontextmanager
async def stub(answer: Answer) -> AsyncIterator[Stub]:
    s = Stub(answer)
    server = await asyncio.start_server(s.handle, "127.0.0.1", 0)
    s.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield s
    finally:
        server.close()


TECH = "0190f0e0-0000-7000-8000-000000000001"
VIEW = {"name": "Ada", "level": "Senior", "skills": [{"name": "general", "years": 3}]}


# --------------------------------------------------------------------------------------------------
# Against the live People server


async def test_the_answer_and_the_token_reach_the_live_callee(
    desk: ModuleType, people: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with caller(desk, tmp_path, monkeypatch, people) as client:
        lead = {"Authorization": f"Bearer {token('lee', ['lead'])}"}
        hired = await client.post("/api/commands/hire", json={"name": "Ada"}, headers=lead)
        assert hired.status_code == 200, hired.text
        tech = hired.json()
        # Directory's answer (a payload with an enum and value objects) is the caller's value
        found = await client.get("/api/queries/find", params={"name": "Ada"})
        assert (found.status_code, found.json()) == (200, tech)
        # the callee's gate sees the forwarded token: a lead may certify, a plain user may not
        plain = {"Authorization": f"Bearer {token('pat', [])}"}
        refused = await client.post(
            "/api/commands/certify_tech", json={"tech": tech}, headers=plain
        )
        body = refused.json()
        assert (refused.status_code, body["type"], body["upstream"]) == (
            403,
            "urn:loom:problem:forbidden",
            "Directory",
        )
        # without a token the callee's `currentUser.id` has no subject: its 401, relayed
        anonymous = await client.post("/api/commands/certify_tech", json={"tech": tech})
        assert anonymous.status_code == 401, anonymous.text
        assert anonymous.json()["type"] == "urn:loom:problem:unauthenticated"
        certified = await client.post(
            "/api/commands/certify_tech", json={"tech": tech}, headers=lead
        )
        assert certified.status_code == 204, certified.text
    async with httpx.AsyncClient(base_url=people) as direct:
        stored = (await direct.get(f"/api/technicians/{tech}", headers=lead)).json()
    assert (stored["name"], stored["level"], stored["certifiedBy"]) == ("Ada", "Senior", "lee")


async def test_a_404_and_a_422_of_the_live_callee_are_relayed(
    desk: ModuleType, people: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with caller(desk, tmp_path, monkeypatch, people) as client:
        missing = await client.get("/api/queries/find", params={"name": "nobody"})
        body = missing.json()
        assert missing.status_code == 404, body
        assert (body["type"], body["upstream"]) == ("urn:loom:problem:not-found", "Directory")
        # the query of an Assign names no technician: Directory's 404, before any order is read
        assigned = await client.post("/api/commands/assign", json={"order": TECH, "tech": TECH})
        assert assigned.status_code == 404, assigned.text
        assert assigned.json()["upstream"] == "Directory"
        lead = {"Authorization": f"Bearer {token('lee', ['lead'])}"}
        tech = (await client.post("/api/commands/hire", json={"name": "Eve"}, headers=lead)).json()
        retire = {"title": "", "tech": tech}
        first = await client.post("/api/commands/open_and_retire", json=retire)
        assert first.status_code == 204, first.text
        again = await client.post("/api/commands/open_and_retire", json=retire)
        body = again.json()
        assert again.status_code == 422, body
        assert (body["type"], body["upstream"]) == (
            "urn:loom:problem:state-gate-refused",
            "Directory",
        )
        assert body["rule"]  # the callee's members are relayed too


# --------------------------------------------------------------------------------------------------
# Against stand-in callees


async def test_the_correlation_id_and_token_are_forwarded(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def view(method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
        return 200, VIEW

    async with stub(view) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        bearer = f"Bearer {token('lee', ['lead'])}"
        r = await client.get(
            "/api/queries/find",
            params={"name": "Ada"},
            headers={"X-Correlation-Id": "corr-7", "Authorization": bearer},
        )
        # the stub answered a payload where an id is expected: the contract is broken -> 502
        assert r.status_code == 502, r.text
        assert r.json()["type"] == "urn:loom:problem:bad-gateway"
        method, target, headers = callee.requests[0]
        assert (method, target) == ("GET", "/api/queries/lookup?name=Ada")
        assert headers["x-correlation-id"] == "corr-7"
        assert headers["authorization"] == bearer
        print(f"forwarded: {headers['x-correlation-id']}, {headers['authorization'][:12]}…")


async def test_a_reaction_forwards_the_correlation_id_but_no_token(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def view(method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
        return 200, VIEW

    async with stub(view) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        r = await client.post(
            "/api/commands/open_for",
            json={"title": "pump", "tech": TECH},
            headers={"X-Correlation-Id": "corr-9", "Authorization": f"Bearer {token('lee', [])}"},
        )
        assert r.status_code == 200, r.text
        # the reaction to Opened (run as the system) called TechnicianInfo with the chain's id
        [(method, target, headers)] = callee.requests
        assert (method, target) == ("GET", f"/api/queries/technician_info?id={TECH}")
        assert headers["x-correlation-id"] == "corr-9"
        assert "authorization" not in headers
        order = (await client.get(f"/api/work_orders/{r.json()}")).json()
        assert order["tech"] == "Ada"


async def test_a_callee_that_hangs_is_a_504_within_the_timeout(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def never(method: str, target: str, headers: dict[str, str]) -> None:
        return None

    async with stub(never) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        started = time.monotonic()
        r = await client.get("/api/queries/find", params={"name": "Ada"})
        took = time.monotonic() - started
        print(f"hanging callee: {r.status_code} after {took:.2f}s, {len(callee.requests)} sent")
        assert r.status_code == 504, r.text
        body = r.json()
        assert (body["type"], body["upstream"]) == ("urn:loom:problem:gateway-timeout", "Directory")
        assert TIMEOUT_S - 0.1 <= took <= TIMEOUT_S + MARGIN_S


async def test_a_query_is_retried_until_it_answers(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def flaky(method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
        if len(callee.requests) <= 2:
            return 503, {"type": "urn:loom:problem:unavailable", "status": 503, "detail": "busy"}
        return 200, TECH

    async with stub(flaky) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        r = await client.get("/api/queries/find", params={"name": "Ada"})
        print(f"flaky callee: {r.status_code} after {len(callee.requests)} attempts")
        assert (r.status_code, r.json()) == (200, TECH)
        assert len(callee.requests) == 3  # twice 503, then the answer: retries: 2


async def test_a_command_is_sent_once(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def failing(method: str, target: str, headers: dict[str, str]) -> tuple[int, Any]:
        return 503, {"type": "urn:loom:problem:unavailable", "status": 503, "detail": "busy"}

    async with stub(failing) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        r = await client.post("/api/commands/hire", json={"name": "Ada"})
        print(f"failing callee, command: {r.status_code} after {len(callee.requests)} sent")
        assert r.status_code == 502, r.text
        assert r.json()["type"] == "urn:loom:problem:bad-gateway"
        assert [m for m, _, _ in callee.requests] == ["POST"]  # never retried


@pytest.mark.parametrize(
    "answered",
    [
        (302, "", {"location": "http://127.0.0.1:9/login"}),
        (307, "", {"location": "/api/commands/retire"}),
        (200, "<html>sign in</html>", {"content-type": "text/html"}),
        (200, "{}", {"content-type": "application/json"}),  # a 200 where the route gives 204
    ],
    ids=["302", "307", "html", "200-for-204"],
)
async def test_an_answer_that_is_not_the_routes_is_a_502_never_applied(
    desk: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    answered: tuple[int, str, dict[str, str]],
) -> None:
    async def other(method: str, target: str, headers: dict[str, str]) -> Any:
        return answered

    async with stub(other) as callee, caller(desk, tmp_path, monkeypatch, callee.url) as client:
        # Retire answers nothing (204): a redirect or a page must not pass for it
        done = await client.post("/api/commands/open_and_retire", json={"title": "", "tech": TECH})
        asked = await client.get("/api/queries/find", params={"name": "Ada"})
        hired = await client.post("/api/commands/hire", json={"name": "Ada"})
    for r in (done, asked, hired):
        body = r.json()
        assert r.status_code == 502, r.text
        assert (body["type"], body["upstream"]) == ("urn:loom:problem:bad-gateway", "Directory")
    assert "not followed" in done.json()["detail"] or answered[0] == 200
    # a redirect is not followed: every request went to the stub, each once (commands never retry)
    assert [m for m, _, _ in callee.requests if m == "POST"] == ["POST", "POST"]


async def test_a_callee_that_is_down_is_a_502(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    async with caller(desk, tmp_path, monkeypatch, nobody) as client:
        started = time.monotonic()
        r = await client.get("/api/queries/find", params={"name": "Ada"})
        took = time.monotonic() - started
        print(f"down callee: {r.status_code} after {took:.2f}s")
        body = r.json()
        assert r.status_code == 502, body
        assert (body["type"], body["upstream"]) == ("urn:loom:problem:bad-gateway", "Directory")
        assert "unreachable" in body["detail"]
        assert took < TIMEOUT_S


async def test_without_the_url_the_service_refuses_to_start(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(StartupRefused) as refused:
        async with caller(desk, tmp_path, monkeypatch, None):
            pass
    message = str(refused.value)
    assert "LOOM_API_DIRECTORY" in message and "--api Directory=URL" in message


async def test_only_routes_that_call_another_context_declare_502_and_504(
    desk: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with caller(desk, tmp_path, monkeypatch, "http://127.0.0.1:9") as client:
        r = await client.get("/openapi.json")
    assert r.status_code == 200
    calling: list[str] = []
    plain: list[str] = []
    for path, methods in r.json()["paths"].items():
        for method, operation in methods.items():
            codes = set(operation["responses"])
            (calling if {"502", "504"} <= codes else plain).append(f"{method} {path}")
            assert "500" in codes and ("502" in codes) == ("504" in codes), (path, codes)
    print(f"routes declaring 502/504: {sorted(calling)}; others: {len(plain)}")
    assert "get /api/queries/find" in calling
    assert all(not p.startswith("get /api/work_orders") for p in calling)
    assert plain
