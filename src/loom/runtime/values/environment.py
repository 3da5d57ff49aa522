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


# A replica's connection pool, sized for its concurrency and kept: its requests in flight, the
# reactions its consumers run, its relay and its scheduler each hold at most one connection at a
# time (a unit of work never holds two), and more of them queue for one rather than open another.
# SQLAlchemy's own default (5 kept, 10 more opened under load and closed on return) opened and
# closed a connection every few requests under 16 clients: 9 % of a mixed load's server time.
DEFAULT_POOL_SIZE = 15
DEFAULT_POOL_OVERFLOW = 0
DEFAULT_POOL_TIMEOUT = 30.0


def env_flag(name: str) -> bool:
    """A flag's variable (`LOOM_NO_METRICS=true`): true as the settings read a flag (`1`, `true`,
    `yes`, `on`, any case), else false, unset included."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def pool_settings() -> dict[str, int | float]:
    """The database connection pool's settings: LOOM_POOL_SIZE (connections kept open, >= 1,
    default `DEFAULT_POOL_SIZE`), LOOM_POOL_OVERFLOW (more opened under load and closed after,
    >= 0, default none) and LOOM_POOL_TIMEOUT (seconds a unit of work waits for a connection
    before its request answers 503, > 0, default 30)."""
    defaults = {
        "pool_size": DEFAULT_POOL_SIZE,
        "max_overflow": DEFAULT_POOL_OVERFLOW,
        "pool_timeout": DEFAULT_POOL_TIMEOUT,
    }
    found: dict[str, int | float | None] = {
        "pool_size": env_number("LOOM_POOL_SIZE", int, "a whole number >= 1", lambda n: n >= 1),
        "max_overflow": env_number(
            "LOOM_POOL_OVERFLOW", int, "a whole number >= 0", lambda n: n >= 0
        ),
        "pool_timeout": env_number(
            "LOOM_POOL_TIMEOUT", float, "a number of seconds > 0", lambda n: n > 0
        ),
    }
    return {name: defaults[name] if value is None else value for name, value in found.items()}
