"""The HTTP connection's own limits, kept before a request reaches the app (docs/http.md#limits).

uvicorn's h11 protocol, left to itself, buffers a request head up to h11's 16 KiB and answers a
longer one with a plain-text 400, serves (and logs) a URL of any length below that, and never
closes a connection that has not sent a whole request head: a client sending its head a byte at
a time (slow loris), or nothing at all, holds its connection for as long as it likes.
`EdgeProtocol` is that protocol with

- limits on the head: a URL (request target) of at most `max_url_bytes` (else 414), at most
  `max_header_count` header lines of at most `max_header_bytes` bytes together (else 431);
- a deadline for the head: `header_timeout` seconds from the connection's opening or from its
  previous answer, whatever the client trickles meanwhile; then a partial head is answered 408,
  and an idle connection is just closed;
- `keep_alive_timeout` for an idle connection between requests (uvicorn's keep-alive timer);
- a malformed head answered 400;

each refusal an RFC 9457 problem with `Connection: close`, the connection closed after it. The
URL is never echoed (no `instance`) nor logged whole: `ShortUrls` cuts it in the access log.

`loom run` names this protocol to uvicorn rather than letting it pick httptools when that is
installed: one parser, one set of limits.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn.config import LOGGING_CONFIG, Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from loom.runtime.http.edge import CORRELATION_HEADER
from loom.runtime.http.problems import PROBLEM_MEDIA_TYPE, problem_json
from loom.runtime.values.environment import env_number
from loom.runtime.values.ids import new_id_text
from loom.runtime.values.log_text import TextLines, wants_colour
from loom.runtime.values.logs import log_format
from loom.runtime.values.problem_types import problem_type

LOGGED_URL_CHARS = 200
# room for the method, the version and the line ends around a URL of the longest allowed size
_REQUEST_LINE_ROOM = 1024
# how long a refused client's further bytes are read and dropped before the connection closes
_LINGER = 2.0


@dataclass(frozen=True)
class Refusal:
    """A request head refused before the app: its problem type (of the catalogue, which gives
    its status and title) and detail."""

    type: str
    detail: str
    extensions: dict[str, int] = field(default_factory=dict)

    @property
    def status(self) -> int:
        return problem_type(self.type).status

    def answer(self, default_headers: Sequence[tuple[bytes, bytes]]) -> bytes:
        """The whole HTTP/1.1 answer, ending the connection."""
        kind = problem_type(self.type)
        phrase = kind.title
        body = problem_json(kind.status, kind.uri, phrase, self.detail, None, **self.extensions)
        headers = [
            *default_headers,
            (b"content-type", PROBLEM_MEDIA_TYPE.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (CORRELATION_HEADER.encode(), new_id_text().encode()),
        ]
        head = [f"HTTP/1.1 {self.status} {phrase}\r\n".encode()]
        head += [name + b": " + value + b"\r\n" for name, value in headers]
        return b"".join([*head, b"\r\n", body])


@dataclass(frozen=True)
class EdgeLimits:
    """The limits of `loom run`'s connections (docs/http.md#limits)."""

    max_url_bytes: int = 8 * 1024
    max_header_count: int = 100
    max_header_bytes: int = 32 * 1024
    header_timeout: float = 10.0
    keep_alive_timeout: float = 5.0

    @classmethod
    def from_environment(cls) -> EdgeLimits:
        """The limits LOOM_MAX_URL_BYTES, LOOM_MAX_HEADER_COUNT, LOOM_MAX_HEADER_BYTES,
        LOOM_HEADER_TIMEOUT and LOOM_KEEP_ALIVE_TIMEOUT give, the default for each unset one;
        ValueError naming the variable for a value that is not one."""
        default = cls()

        def whole(name: str, fallback: int) -> int:
            value = env_number(name, int, "a whole number >= 1", lambda n: n >= 1)
            return fallback if value is None else value

        def seconds(name: str, fallback: float) -> float:
            value = env_number(name, float, "a number of seconds > 0", lambda n: n > 0)
            return fallback if value is None else value

        return cls(
            max_url_bytes=whole("LOOM_MAX_URL_BYTES", default.max_url_bytes),
            max_header_count=whole("LOOM_MAX_HEADER_COUNT", default.max_header_count),
            max_header_bytes=whole("LOOM_MAX_HEADER_BYTES", default.max_header_bytes),
            header_timeout=seconds("LOOM_HEADER_TIMEOUT", default.header_timeout),
            keep_alive_timeout=seconds("LOOM_KEEP_ALIVE_TIMEOUT", default.keep_alive_timeout),
        )

    def url_too_long(self) -> Refusal:
        n = self.max_url_bytes
        detail = f"the URL is longer than {n} bytes; send at most {n}"
        return Refusal("uri-too-long", detail, {"max_bytes": n})

    def headers_too_large(self, count: int | None = None) -> Refusal:
        if count is not None:
            n = self.max_header_count
            detail = f"the request has {count} header lines; send at most {n}"
            return Refusal("header-fields-too-large", detail, {"max_count": n})
        n = self.max_header_bytes
        detail = f"the request's header lines are longer than {n} bytes together; send at most {n}"
        return Refusal("header-fields-too-large", detail, {"max_bytes": n})

    def refusal(self, target: bytes, headers: Sequence[tuple[bytes, bytes]]) -> Refusal | None:
        """Why a whole request head breaks the limits, or None."""
        if len(target) > self.max_url_bytes:
            return self.url_too_long()
        if len(headers) > self.max_header_count:
            return self.headers_too_large(len(headers))
        # each line as sent: `name: value` and its line end
        if sum(len(name) + len(value) + 4 for name, value in headers) > self.max_header_bytes:
            return self.headers_too_large()
        return None

    def overflow(self, buffered: bytes) -> Refusal:
        """Why a head that outgrew h11's buffer (a URL and headers at their largest, and room)
        is refused: its URL when the request line is not over yet or too long, else its headers."""
        line, ended, _ = buffered.partition(b"\n")
        target = line.split(b" ")[1:2]
        if not ended or (target and len(target[0]) > self.max_url_bytes):
            return self.url_too_long()
        return self.headers_too_large()

    def protocol(self) -> type[EdgeProtocol]:
        """`EdgeProtocol` keeping these limits, for uvicorn's `http`."""
        return type("EdgeProtocol", (EdgeProtocol,), {"limits": self})

    def malformed(self, why: str) -> Refusal:
        # h11's words, without the client's bytes some of them quote after a colon
        detail = f"the request is not valid HTTP/1.1: {why.partition(':')[0][:100]}"
        return Refusal("malformed-request", detail)


class _LimitedConnection(h11.Connection):
    """h11's server connection, which also refuses a request head over the limits, and keeps
    what it refused (uvicorn only hears "invalid request" and calls `send_400_response`)."""

    def __init__(self, limits: EdgeLimits) -> None:
        # h11 stops buffering a head once it outgrows the largest allowed: a streamed 1 MiB
        # header is refused after some 40 KiB, not read whole
        size = limits.max_url_bytes + limits.max_header_bytes + _REQUEST_LINE_ROOM
        super().__init__(h11.SERVER, max_incomplete_event_size=size)
        self.limits = limits
        self.refusal: Refusal | None = None

    def next_event(self) -> Any:  # h11's own annotation is a union of its event types
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            if exc.error_status_hint == 431:  # "Receive buffer too long"
                self.refusal = self.limits.overflow(self.trailing_data[0])
            else:
                self.refusal = self.limits.malformed(str(exc))
            raise
        if isinstance(event, h11.Request):
            refusal = self.limits.refusal(event.target, event.headers)
            if refusal is not None:
                self.refusal = refusal
                raise h11.RemoteProtocolError(refusal.detail, error_status_hint=refusal.status)
        return event


class EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol under `limits` (the module's docstring says what it adds)."""

    limits: ClassVar[EdgeLimits] = EdgeLimits()
    conn: _LimitedConnection

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.conn = _LimitedConnection(self.limits)
        # uvicorn's keep-alive timer reads it (a whole number of seconds in its config)
        self.timeout_keep_alive = self.limits.keep_alive_timeout  # type: ignore[assignment]
        self._head_timer: asyncio.TimerHandle | None = None
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # the rest of a refused request, read only so that the answer arrives
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is read (or refused)
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()

    def shutdown(self) -> None:
        if self._refused:  # answered already; h11 is in no state to say goodbye again
            self.transport.close()
        else:
            super().shutdown()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a head h11 refused (`msg` is h11's word for it): the refusal's
        problem instead of a plain-text 400."""
        self._refuse(self.conn.refusal or self.limits.malformed(msg))

    def _refuse(self, refusal: Refusal) -> None:
        self._stop_head_timer()
        client = f"{self.client[0]}:{self.client[1]} - " if self.client else ""
        self.logger.warning("%srequest refused (%d): %s", client, refusal.status, refusal.detail)
        self.transport.write(refusal.answer(self.server_state.default_headers))
        # Closing a socket with unread bytes makes the kernel reset the connection, and a reset
        # can discard the answer before the client reads it: a client still sending (a 1 MiB
        # header) would see "connection reset" instead of the 431. So: the answer, then the end
        # of what is sent (FIN), then whatever still comes is read and dropped until the client
        # closes its side (`eof_received`) or for `_LINGER` seconds.
        self._refused = True
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(_LINGER, self.transport.close)
        else:
            self.transport.close()

    def _await_head(self) -> None:
        self._stop_head_timer()
        timeout = self.limits.header_timeout
        self._head_timer = self.loop.call_later(timeout, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0].strip():
            seconds = f"{self.limits.header_timeout:g}"
            detail = f"the request head did not arrive whole within {seconds} s"
            self._refuse(Refusal("request-timeout", detail))
        else:  # nothing sent: closed as the keep-alive timer closes an idle connection
            self._unset_keepalive_if_required()
            self.transport.close()


class ShortUrls(logging.Filter):
    """Cuts the URL of uvicorn's access log line to `LOGGED_URL_CHARS` characters and "…": a
    log line is no place for a client's 8 KiB of query string."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        # uvicorn's access line: (client, method, path and query, HTTP version, status)
        if (
            isinstance(args, tuple)
            and len(args) == 5
            and isinstance(args[2], str)
            and len(args[2]) > LOGGED_URL_CHARS
        ):
            record.args = (*args[:2], args[2][:LOGGED_URL_CHARS] + "…", *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration, with `ShortUrls` on its access log. With
    `LOOM_LOG_FORMAT=text` its lines take the text layout of Loom's own (the time, the level, the
    message; the trace id of an access line written inside a span), so a terminal shows one
    layout; with `json` they stay uvicorn's, which names no event and no trace (ValueError for a
    bad LOOM_LOG_FORMAT)."""
    config = copy.deepcopy(LOGGING_CONFIG)
    short: Callable[[], logging.Filter] = ShortUrls
    config.setdefault("filters", {})["short_urls"] = {"()": short}
    config["handlers"]["access"]["filters"] = ["short_urls"]
    if log_format() == "text":
        text: Callable[..., logging.Formatter] = TextLines
        for name, stream in (("default", sys.stderr), ("access", sys.stdout)):
            config["formatters"][name] = {"()": text, "colour": wants_colour(stream)}
    return config
