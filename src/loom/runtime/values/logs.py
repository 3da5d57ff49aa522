"""Structured event logs and the correlation id they carry.

Every lifecycle fact of an event is one JSON object on one line of the `loom.events` logger:
`{"event": <fact>, "level": ..., "handler": ..., "event_type": ..., "event_id": ...,
"correlation_id": ..., "causation_id": ..., "attempt": ..., "error": ..., "channel": ...,
"model_revision": ..., "reader_revision": ..., ..., "trace_id": ..., "span_id": ...}` (the members
that apply, in that order; the two revisions are those of the model that wrote the event and of
the service reading it; the trace and span ids those of the current span, on a line written inside
one). The correlation id lives in a context variable: the HTTP middleware sets it per request, the
dispatcher and the relay per delivery.

`install_default_handler` prints them as they are (`LOOM_LOG_FORMAT=json`, the default) or one
readable line each (`text`: `values/log_text.py`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from loom.runtime.values.log_text import TextLines, wants_colour
from loom.runtime.values.tracing import current_ids

logger = logging.getLogger("loom.events")

_LEVELS = {
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
}
# the member order of every line, after `event` and `level`
_ORDER = (
    "handler",
    "event_type",
    "event_id",
    "correlation_id",
    "causation_id",
    "attempt",
    "error",
    "channel",
    "model_revision",
    "reader_revision",
)

FORMAT_VARIABLE = "LOOM_LOG_FORMAT"
FORMATS = ("json", "text")
DEFAULT_FORMAT = "json"

_correlation: ContextVar[str | None] = ContextVar("loom_correlation_id", default=None)


def current_correlation_id() -> str | None:
    """The correlation id of the running request or delivery, else None."""
    return _correlation.get()


@contextmanager
def use_correlation_id(correlation_id: str | None) -> Iterator[None]:
    token = _correlation.set(correlation_id)
    try:
        yield
    finally:
        _correlation.reset(token)


def log_fact(fact: str, level: int, fields: dict[str, Any]) -> None:
    """Write one JSON line for `fact` (cheap when the level is disabled)."""
    if not logger.isEnabledFor(level):
        return
    line: dict[str, Any] = {"event": fact, "level": _LEVELS.get(level, "info")}
    shape = tuple(fields)
    keys = _SHAPES.get(shape, _UNSEEN)
    if keys is _UNSEEN:
        keys = _member_order(shape)
    if keys is None:  # given in the line's order (the common case): copied as they are
        line.update(fields)
    else:
        line.update(zip(keys, map(fields.__getitem__, keys), strict=True))
    ids = current_ids()  # None at once when nothing in the process traces
    if ids is not None:
        line["trace_id"], line["span_id"] = ids
    text = _ENCODE(line)
    if not _plain_line(text, level):
        logger.handle(_record(level, text))


def _record(level: int, text: str) -> logging.LogRecord:
    """What `logger.log` makes, less its walk up the stack for the caller, which is always
    `log_fact`: the record names it (a handler's `%(funcName)s`, `%(pathname)s`)."""
    return logger.makeRecord(_NAME, level, _FILE, _LINE, text, (), None, _FUNC)


def _plain_line(text: str, level: int) -> bool:
    """Write `text` straight to the stream of the handler `install_default_handler` put in place
    for JSON lines, when that handler is the only one a record of `loom.events` would reach and
    nothing would change what it writes (no filter, no record factory, its own formatter): the
    very bytes it would write, without building a record for it. False (nothing written) when
    the logging configuration is any other."""
    handler = _default_json
    if (
        handler is None
        or logger.handlers
        or logger.filters
        or not logger.propagate
        or _loom.handlers != [handler]
        or _loom.filters
        or (_loom.propagate and _root.handlers)
        or handler.filters
        or handler.formatter is not _JSON_FORMAT
        or level < handler.level
        or logging.getLogRecordFactory() is not logging.LogRecord
    ):
        return False
    handler.acquire()
    try:
        stream = handler.stream
        stream.write(text + handler.terminator)
        stream.flush()
    except Exception:  # noqa: BLE001 - as the handler would: reported, never raised
        handler.handleError(_record(level, text))
    finally:
        handler.release()
    return True


# the member order of each set of fields seen, in the order given, None when it is that order (a
# fact's fields are few shapes: worked out once each, not once a line); bounded, as a caller could
# vary its keys
_SHAPES: dict[tuple[str, ...], tuple[str, ...] | None] = {}
_UNSEEN = ("",)
_NAME, _FILE, _FUNC = logger.name, log_fact.__code__.co_filename, log_fact.__name__
_LINE = log_fact.__code__.co_firstlineno
_loom, _root = logging.getLogger("loom"), logging.getLogger()
# the handler `install_default_handler` added for JSON lines, and its formatter (None: none added)
_default_json: logging.StreamHandler[Any] | None = None
_JSON_FORMAT = logging.Formatter("%(message)s")


def _member_order(shape: tuple[str, ...]) -> tuple[str, ...] | None:
    """`shape`'s keys in a line's order, None when they are in it already: those of `_ORDER`
    first, in that order, then the others as given (never `event` nor `level`, which the line
    has already)."""
    rest = (k for k in shape if k not in _ORDER and k not in ("event", "level"))
    keys = (*(k for k in _ORDER if k in shape), *rest)
    found = None if keys == shape else keys
    if len(_SHAPES) < 512:
        _SHAPES[shape] = found
    return found


def _plain(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _line_encoder(make: Any) -> Callable[[dict[str, Any]], str]:
    """The JSON text of a line, as `json.JSONEncoder(default=_plain, ensure_ascii=False).encode`
    writes it. That method makes the standard library's C encoder anew on every call (a tenth of
    a line's cost, two lines per event); this makes it once, and falls back to the method where
    the C encoder's maker (`make`: the standard library's, None where it has none) is missing or
    does not write the very same text."""
    plain = json.JSONEncoder(default=_plain, ensure_ascii=False).encode
    if make is None:
        return plain
    try:  # its arguments, as `JSONEncoder.iterencode` passes them (no check for cycles)
        chunks = make(
            None, _plain, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
        )
    except TypeError:  # another Python's signature
        return plain

    def encode(line: dict[str, Any]) -> str:
        return "".join(chunks(line, 0))

    flat = {"event": 'caf\u00e9 "\n', "n": -1, "x": 1.5, "none": None, "at": datetime(2026, 1, 1)}
    sample = {**flat, "nested": [flat, True]}
    try:
        same = encode(sample) == plain(sample)
    except Exception:  # noqa: BLE001 - any failure: the method, which is known to work
        same = False
    return encode if same else plain


_ENCODE = _line_encoder(getattr(json.encoder, "c_make_encoder", None))


def log_format() -> str:
    """The layout `LOOM_LOG_FORMAT` asks for, `json` or `text`; ValueError for any other."""
    given = os.environ.get(FORMAT_VARIABLE, "").strip()
    if not given:
        return DEFAULT_FORMAT
    if given.lower() not in FORMATS:
        raise ValueError(f"{FORMAT_VARIABLE} must be json or text, not {given!r}")
    return given.lower()


def install_default_handler() -> None:
    """Print Loom's lines on stderr when the application configured no logging at all: JSON, or
    the text layout with `LOOM_LOG_FORMAT=text`.

    `LOOM_LOG=off` disables this; `LOOM_LOG_LEVEL` (default INFO) picks the level. An app that
    configures logging itself (a root handler, or one on `loom`) is left alone, and gets the JSON
    lines as the messages of its records."""
    if os.environ.get("LOOM_LOG", "").lower() == "off":
        return
    root, loom = logging.getLogger(), logging.getLogger("loom")
    if root.handlers or loom.handlers:
        return
    global _default_json
    handler = logging.StreamHandler(sys.stderr)
    if log_format() == "text":
        handler.setFormatter(TextLines(colour=wants_colour(sys.stderr)))
    else:
        handler.setFormatter(_JSON_FORMAT)
        _default_json = handler
    loom.addHandler(handler)
    if loom.level == logging.NOTSET:
        level = os.environ.get("LOOM_LOG_LEVEL", "INFO").upper()
        loom.setLevel(logging.getLevelNamesMapping().get(level, logging.INFO))
