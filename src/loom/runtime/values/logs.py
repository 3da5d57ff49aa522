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
from collections.abc import Iterator
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
    for key in _ORDER:
        if key in fields:
            line[key] = fields[key]
    for key, value in fields.items():
        line.setdefault(key, value)
    ids = current_ids()  # None at once when nothing in the process traces
    if ids is not None:
        line["trace_id"], line["span_id"] = ids
    logger.log(level, _ENCODE(line))


def _plain(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


# built once: `json.dumps` with options builds an encoder on every call (a line per event)
_ENCODE = json.JSONEncoder(default=_plain, ensure_ascii=False).encode


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
    handler = logging.StreamHandler(sys.stderr)
    if log_format() == "text":
        handler.setFormatter(TextLines(colour=wants_colour(sys.stderr)))
    else:
        handler.setFormatter(logging.Formatter("%(message)s"))
    loom.addHandler(handler)
    if loom.level == logging.NOTSET:
        level = os.environ.get("LOOM_LOG_LEVEL", "INFO").upper()
        loom.setLevel(logging.getLevelNamesMapping().get(level, logging.INFO))
