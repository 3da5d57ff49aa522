"""The HTTP benches' load client: HTTP/1.1 over kept-alive sockets, with as little work a request
as a client can do, so the server is what a round measures.

An httpx client was the load client until 2026-12-06. It spends 1.4-3.3 ms of CPU a request in
this process (connection pool, URL and header models, response decoding), as much as the servers
it loads: with 16 connections it was the busiest process of a round (94-100 % of a core, the
generated service's main thread at 50-60 %), so a round measured the client, not the server. Like
wrk or h2load, this one writes each request as bytes and reads the status line, the headers it
needs (`content-length`, `transfer-encoding`, `connection`) and the body. It is not a general
client: no redirects, no compression, no TLS, no HTTP/2.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

_END_OF_HEAD = b"\r\n\r\n"
_NO_BODY = frozenset({204, 304})


class Sent:
    """What a response answers: its method and URL, for error messages."""

    __slots__ = ("method", "url")

    def __init__(self, method: str, url: str) -> None:
        self.method = method
        self.url = url


class Response:
    """A response's status, headers (names in lower case) and body."""

    __slots__ = ("content", "headers", "request", "status_code")

    def __init__(self, request: Sent, status: int, headers: dict[str, str], content: bytes) -> None:
        self.request = request
        self.status_code = status
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)


class ProtocolError(Exception):
    """The server's answer is not HTTP/1.1 this client reads."""


_Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class LoadClient:
    """Requests to `base_url` ("http://host:port") over at most `connections` kept-alive
    connections, opened when needed; a request takes an idle one. Use it with `async with`."""

    def __init__(self, base_url: str, connections: int, timeout: float = 60) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"expected http://host:port, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._host, self._port = parts.hostname, parts.port
        self._host_line = f"Host: {parts.hostname}:{parts.port}\r\n"
        self._slots = asyncio.Semaphore(connections)
        self._idle: list[_Stream] = []
        self._open: set[asyncio.StreamWriter] = set()
        self._timeout = timeout

    async def __aenter__(self) -> LoadClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._idle.clear()
        for writer in self._open:
            writer.close()
        self._open.clear()

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Response:
        return await self.request("GET", path, None, headers)

    async def post(
        self, path: str, json: object = None, headers: dict[str, str] | None = None
    ) -> Response:
        body = None if json is None else jsonlib.dumps(json, separators=(",", ":")).encode()
        return await self.request("POST", path, body, headers)

    async def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str] | None = None
    ) -> Response:
        head = f"{method} {path} HTTP/1.1\r\n{self._host_line}"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        if headers:
            head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        data = (head + "\r\n").encode("latin-1") + (body or b"")
        sent = Sent(method, self.base_url + path)
        async with self._slots:
            reader, writer = await self._take()
            try:
                writer.write(data)
                async with asyncio.timeout(self._timeout):
                    status, answer, content = await _read_response(reader, method)
            except BaseException:
                self._drop(writer)
                raise
            if answer.get("connection", "").lower() == "close":
                self._drop(writer)
            else:
                self._idle.append((reader, writer))
        return Response(sent, status, answer, content)

    async def _take(self) -> _Stream:
        """An idle connection the server has not closed meanwhile (uvicorn closes one idle for
        5 s), else a new one."""
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof():
                return reader, writer
            self._drop(writer)
        return await self._connect()

    async def _connect(self) -> _Stream:
        reader, writer = await asyncio.open_connection(self._host, self._port)
        self._open.add(writer)
        return reader, writer

    def _drop(self, writer: asyncio.StreamWriter) -> None:
        self._open.discard(writer)
        writer.close()


async def _read_response(
    reader: asyncio.StreamReader, method: str
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of the next response on `reader`."""
    try:
        head = await reader.readuntil(_END_OF_HEAD)
    except asyncio.IncompleteReadError as err:
        raise ProtocolError("the server closed the connection before answering") from err
    lines = head[: -len(_END_OF_HEAD)].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    if not version.startswith("HTTP/1.") or not rest[:3].isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0]!r}")
    status = int(rest[:3])
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon:
            raise ProtocolError(f"not a header line: {line!r}")
        headers[name.strip().lower()] = value.strip()
    if version == "HTTP/1.0" and "connection" not in headers:
        headers["connection"] = "close"
    if method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
        return status, headers, b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, headers, await _read_chunked(reader)
    length = headers.get("content-length")
    if length is not None:
        return status, headers, await reader.readexactly(int(length))
    headers["connection"] = "close"  # the body ends with the connection
    return status, headers, await reader.read()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size_line = await reader.readuntil(b"\r\n")
        size = int(size_line.split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":  # trailer fields, then a blank line
                pass
            return b"".join(chunks)
        chunks.append((await reader.readexactly(size + 2))[:-2])
