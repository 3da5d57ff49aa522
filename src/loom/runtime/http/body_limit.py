"""The request body limit: a declared Content-Length over it is answered 413 before the app runs;
a body sent without one (chunked) is cut off with 413 as soon as it grows over the limit. Both
answers are `urn:loom:problem:payload-too-large` problems.

Applied by the request edge (`http/edge.py`); this module holds the setting.
"""

from __future__ import annotations

from loom.runtime.values.environment import env_number

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
ENV = "LOOM_MAX_BODY_BYTES"


def resolve_max_body_bytes(value: int | None) -> int:
    """`value`, else LOOM_MAX_BODY_BYTES, else 1 MiB; a limit that is not a whole number of
    bytes >= 0 stops the start with a clear error."""
    if value is None:
        value = env_number(ENV, int, "a number of bytes >= 0", lambda n: n >= 0)
        if value is None:
            return DEFAULT_MAX_BODY_BYTES
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_body_bytes must be a number of bytes >= 0, not {value!r}")
    return value
