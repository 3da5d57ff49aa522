"""What a `string` may hold: any Unicode text except NUL and lone surrogates.

PostgreSQL cannot store NUL (U+0000) in text, and a lone surrogate (`"\\ud800"` in JSON) is not a
character at all: UTF-8 cannot encode it, so SQLite cannot store it either. Both are refused where
they enter (the wire, `values.schemas.WireText`), so the two engines answer alike, with a 422.
"""

from __future__ import annotations

__all__ = ["text_error"]


def text_error(value: str) -> str | None:
    """Why `value` cannot be a `string`, or None when it can."""
    nul = value.find("\x00")
    if nul >= 0:
        return f"a string cannot contain NUL (U+0000); found at index {nul}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (
            f"a string cannot contain a lone surrogate (U+{ord(value[exc.start]):04X} at index "
            f"{exc.start}); send the whole character"
        )
    return None
