"""The HTTP benches' load client (bench/_load.py) against a real uvicorn server: what it reads of
an answer, and that it keeps its connections, since the benches' figures rest on both."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from bench._load import LoadClient, ProtocolError
from tests.liveserver import free_port
from tests.waiting import until


async def _echo(request: Request) -> Response:
    return JSONResponse(
        {
            "body": await request.json(),
            "who": request.headers.get("x-who"),
            "type": request.headers.get("content-type"),
        },
        status_code=201,
    )


async def _port(request: Request) -> Response:
    assert request.client is not None
    return JSONResponse(request.client.port)


async def _empty(_request: Request) -> Response:
    return Response(status_code=204)


async def _stream(_request: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        for part in (b"one ", b"", b"two ", b"three" * 1000):
            yield part

    return StreamingResponse(parts(), media_type="text/plain")


async def _closing(_request: Request) -> Response:
    return Response("bye", headers={"connection": "close"})


APP = Starlette(
    routes=[
        Route("/echo", _echo, methods=["POST"]),
        Route("/port", _port),
        Route("/empty", _empty),
        Route("/stream", _stream),
        Route("/closing", _closing),
    ]
)


@contextlib.asynccontextmanager
async def _uvicorn(keep_alive: float = 5) -> AsyncIterator[str]:
    """APP served by uvicorn on this loop, idle connections closed after `keep_alive` seconds."""
    port = free_port()
    config = uvicorn.Config(APP, port=port, log_level="warning", lifespan="off")
    config.timeout_keep_alive = keep_alive  # type: ignore[assignment]  # uvicorn takes a float here
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await until(lambda: server.started or task.done(), timeout=10, what="uvicorn started")
        if task.done():
            task.result()  # it failed to start: raise its error
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def served() -> AsyncIterator[str]:
    async with _uvicorn() as url:
        yield url


async def test_a_post_sends_its_json_and_headers_and_reads_the_answer(served: str) -> None:
    async with LoadClient(served, 1) as client:
        r = await client.post("/echo", json={"amount": 1, "name": "ü"}, headers={"X-Who": "sam"})
    assert r.status_code == 201
    assert r.headers["content-type"] == "application/json"
    answer = r.json()
    assert answer["body"] == {"amount": 1, "name": "ü"}
    assert (answer["who"], answer["type"]) == ("sam", "application/json")
    assert r.request.method == "POST" and r.request.url == f"{served}/echo"


async def test_an_answer_without_a_body_and_a_chunked_one(served: str) -> None:
    async with LoadClient(served, 1) as client:
        empty = await client.get("/empty")
        streamed = await client.get("/stream")
        after = await client.get("/empty")  # the connection is still in step
    assert (empty.status_code, empty.content) == (204, b"")
    assert streamed.headers["transfer-encoding"] == "chunked"
    assert streamed.text == "one two " + "three" * 1000
    assert after.status_code == 204


async def test_its_connections_are_kept_and_never_more_than_asked(served: str) -> None:
    async with LoadClient(served, 4) as client:
        answers = await asyncio.gather(*(client.get("/port") for _ in range(64)))
    ports = {r.json() for r in answers}
    print(f"64 requests, 16 at a time at most 4: {len(ports)} connections")
    assert 1 <= len(ports) <= 4
    async with LoadClient(served, 1) as client:
        ports = {(await client.get("/port")).json() for _ in range(20)}
    assert len(ports) == 1


async def test_a_connection_the_server_closes_is_not_used_again(served: str) -> None:
    async with LoadClient(served, 1) as client:
        first = (await client.get("/port")).json()
        bye = await client.get("/closing")
        second = (await client.get("/port")).json()
    assert (bye.status_code, bye.text) == (200, "bye")
    assert first != second


async def test_a_connection_the_server_closed_while_idle_is_replaced() -> None:
    async with _uvicorn(keep_alive=0.1) as url, LoadClient(url, 1) as client:
        first = (await client.get("/port")).json()
        ((reader, _),) = client._idle
        await until(reader.at_eof, timeout=10, what="uvicorn hung up the idle connection")
        second = await client.get("/port")
    assert second.status_code == 200 and second.json() != first


async def test_an_answer_that_is_not_http_is_an_error_not_a_figure() -> None:
    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        await writer.drain()
        writer.close()

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    for handler, message in ((garbage, "not an HTTP/1.x status line"), (hang_up, "closed")):
        server = await asyncio.start_server(handler, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with server, LoadClient(f"http://127.0.0.1:{port}", 1) as client:
            with pytest.raises(ProtocolError, match=message):
                await client.get("/")


async def test_a_silent_server_times_out() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # never answers

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, LoadClient(f"http://127.0.0.1:{port}", 1, timeout=0.2) as client:
        with pytest.raises(TimeoutError):
            await client.get("/")


def test_only_a_plain_http_address_is_taken() -> None:
    for url in ("https://127.0.0.1:1", "http://127.0.0.1", "127.0.0.1:80"):
        with pytest.raises(ValueError, match="expected http://host:port"):
            LoadClient(url, 1)
