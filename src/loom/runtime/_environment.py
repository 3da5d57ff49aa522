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
