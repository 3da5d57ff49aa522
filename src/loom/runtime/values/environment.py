"""Numbers read from environment variables (LOOM_MAX_BODY_BYTES, LOOM_IDEMPOTENCY_TTL,
LOOM_RELAY_LEASE): a value that is not one stops the start with an error naming the variable,
what it must be and what it was."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TypeVar

N = TypeVar("N", int, float)


def env_number(
    name: str,
    parse: Callable[[str], N],
    what: str,
    valid: Callable[[N], bool] = lambda _: True,
) -> N | None:
    """The number in the environment variable `name`, read by `parse` (`int` or `float`); None
    when it is unset or blank. ValueError "`name` must be `what`, not '…'" when it does not parse,
    is not finite, or is not `valid`."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or not valid(value):
        raise ValueError(f"{name} must be {what}, not {text!r}")
    return value


def pool_settings() -> dict[str, int | float]:
    """The database connection pool's settings a replica's environment gives: LOOM_POOL_SIZE
    (connections kept open, >= 1), LOOM_POOL_OVERFLOW (more opened under load and closed after,
    >= 0) and LOOM_POOL_TIMEOUT (seconds a unit of work waits for a connection before its request
    answers 503, > 0). Each unset one keeps SQLAlchemy's default (5, 10 and 30 s)."""
    found: dict[str, int | float | None] = {
        "pool_size": env_number("LOOM_POOL_SIZE", int, "a whole number >= 1", lambda n: n >= 1),
        "max_overflow": env_number(
            "LOOM_POOL_OVERFLOW", int, "a whole number >= 0", lambda n: n >= 0
        ),
        "pool_timeout": env_number(
            "LOOM_POOL_TIMEOUT", float, "a number of seconds > 0", lambda n: n > 0
        ),
    }
    return {name: value for name, value in found.items() if value is not None}
