"""The JSON schema of a `decimal(P, S)` answer, one definition for the generated service's
response models (`loom.runtime.values.scaled`) and the documents the code generator writes (AsyncAPI)."""

from __future__ import annotations

from typing import Any

__all__ = ["decimal_schema"]


def decimal_schema(precision: int, scale: int) -> dict[str, Any]:
    """A string of at most P - S digits before the point and at most S after it: an answer has
    exactly S (`"12.50"`), an event's payload the digits the value has (`"12.5"`)."""
    whole = precision - scale
    point = rf"(\.[0-9]{{1,{scale}}})?" if scale else ""
    return {
        "type": "string",
        "pattern": rf"^-?[0-9]{{1,{max(whole, 1)}}}{point}$",
        "x-loom-decimal": {"precision": precision, "scale": scale},
    }
