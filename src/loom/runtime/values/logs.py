"""Structured event logs and the correlation id they carry.

Every lifecycle fact of an event is one JSON object on one line of the `loom.events` logger:
`{"event": <fact>, "level": ..., "handler": ..., "event_type": ..., "event_id": ...,
"correlation_id": ..., "causation_id": ..., "attempt": ..., "error": ..., "channel": ...,
"model_revision": ..., "reader_revision": ...}` (the members that apply, in that order; the two
revisions are those of the model that wrote the event and of the service reading it). The
correlation id lives in a context variable: the HTTP middleware sets it per request, the
dispatcher and the relay per delivery.
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
    logger.log(level, _ENCODE(line))


def _plain(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


# built once: `json.dumps` with options builds an encoder on every call (a line per event)
_ENCODE = json.JSONEncoder(default=_plain, ensure_ascii=False).encode


def install_default_handler() -> None:
    """Print Loom's JSON lines on stderr when the application configured no logging at all.

    `LOOM_LOG=off` disables this; `LOOM_LOG_LEVEL` (default INFO) picks the level. An app that
    configures logging itself (a root handler, or one on `loom`) is left alone."""
    if os.environ.get("LOOM_LOG", "").lower() == "off":
        return
    root, loom = logging.getLogger(), logging.getLogger("loom")
    if root.handlers or loom.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    loom.addHandler(handler)
    if loom.level == logging.NOTSET:
        level = os.environ.get("LOOM_LOG_LEVEL", "INFO").upper()
        loom.setLevel(logging.getLevelNamesMapping().get(level, logging.INFO))
