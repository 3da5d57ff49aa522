"""The text layout of the log lines (`--log-format text`, docs/observability.md#logs): one
readable line per record, for a terminal.

    12:03:04.123 INFO  event_handled Shop.Fulfil.start Shop.OrderPlaced id=01a2… corr=c-42 trace=4bf9…

The time (local, to the millisecond), the level, the fact, then what it is about (the handler,
the event type) without a key, then the other members as `key=value` in the JSON line's order
(`id`, `corr` and `cause` for the event's three ids), then the trace id. Left out, as the JSON
line keeps them: members without a value, the span id, and the model revisions unless the line
has two that differ (a service reading the events of another revision of the model). A record that is not a fact
(uvicorn's, a `loom.*` logger's plain message) is the time, the level and its message.

The layout reads the JSON line `log_fact` wrote rather than `log_fact` building a second shape:
the JSON path, the default and the one on every event, costs nothing more for this one.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, TextIO

from loom.runtime.values.tracing import current_ids

_LEVELS = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO ",
    logging.WARNING: "WARN ",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
}
# ANSI colours (SGR) of the levels and of the fact
_LEVEL_COLOURS = {"DEBUG": "2", "INFO ": "32", "WARN ": "33", "ERROR": "31", "FATAL": "1;31"}
_FACT_COLOUR = "1"
# the members named without a key, in this order: what the fact is about
_SUBJECTS = ("handler", "event_type")
_SHORT = {"event_id": "id", "correlation_id": "corr", "causation_id": "cause"}
_LEFT_OUT = frozenset({"event", "level", "span_id", "trace_id", *_SUBJECTS})
_REVISIONS = frozenset({"model_revision", "reader_revision"})


def wants_colour(stream: TextIO) -> bool:
    """Colour on `stream`: never with NO_COLOR set (no-color.org); always with FORCE_COLOR set
    (how `loom up`, whose children write to a pipe, passes on that its own output is a
    terminal); else when the stream is a terminal."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class TextLines(logging.Formatter):
    """The text layout; `colour`: the level and the fact in ANSI colours."""

    def __init__(self, colour: bool = False) -> None:
        super().__init__()
        self.colour = colour

    def format(self, record: logging.LogRecord) -> str:
        level = _LEVELS.get(record.levelno, record.levelname[:5].ljust(5))
        clock = time.strftime("%H:%M:%S", time.localtime(record.created))
        head = f"{clock}.{int(record.msecs):03d} {self._paint(level, _LEVEL_COLOURS.get(level))}"
        message = record.getMessage()
        fact = _fact(message) if record.name == "loom.events" else None
        if fact is not None:
            text = f"{head} {self._body(fact)}"
        else:
            ids = current_ids()  # a plain line written inside a span (uvicorn's access line)
            text = f"{head} {message}" + (f" trace={ids[0]}" if ids else "")
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text

    def _body(self, fact: dict[str, Any]) -> str:
        words = [self._paint(str(fact.get("event", "")), _FACT_COLOUR)]
        words += [_value(fact[k]) for k in _SUBJECTS if fact.get(k) is not None]
        left_out = _LEFT_OUT
        model, reader = fact.get("model_revision"), fact.get("reader_revision")
        if not (model and reader and model != reader):
            left_out = _LEFT_OUT | _REVISIONS  # they matter when a service reads another's
        words += [
            f"{_SHORT.get(key, key)}={_value(value)}"
            for key, value in fact.items()
            if key not in left_out and value is not None
        ]
        if fact.get("trace_id"):
            words.append(f"trace={fact['trace_id']}")
        return " ".join(words)

    def _paint(self, text: str, colour: str | None) -> str:
        return f"\033[{colour}m{text}\033[0m" if self.colour and colour else text


def _fact(message: str) -> dict[str, Any] | None:
    if not message.startswith("{"):
        return None
    try:
        found = json.loads(message)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _value(value: Any) -> str:
    """A member's value as one word: text as it is unless it has a space, a quote or an `=`
    (then quoted, as JSON), anything else as compact JSON."""
    if isinstance(value, str):
        plain = value and not any(c.isspace() or c in '"=' for c in value)
        return value if plain else json.dumps(value, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
