"""Python literals for text of the model: string literals (quoted the way ruff format leaves them),
decimal literals and one-line docstrings."""

from __future__ import annotations

import functools
import re
from decimal import Decimal

# what py_str escapes, besides the quote: backslash, control characters, lone surrogates
_ESCAPED = re.compile("[\\\\\x00-\x1f\x7f\ud800-\udfff]")


@functools.cache  # the same names and messages are quoted again and again across a package
def py_str(text: str) -> str:
    """A Python string literal for `text`, quoted the way ruff format leaves it."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    if quote not in text and not _ESCAPED.search(text):  # most texts: nothing to escape
        return quote + text + quote
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def decimal_literal(text: str) -> str:
    """`Decimal("1.50")` for a decimal literal of the model, `Decimal(2)` when the text is a whole
    number that an int gives exactly (ruff's FURB157: no string for an integer), so `-0` and
    `2.0` keep theirs."""
    digits = text.removeprefix("-")
    if digits.isascii() and digits.isdigit() and str(Decimal(int(text))) == str(Decimal(text)):
        return f"Decimal({int(text)})"
    return f"Decimal({py_str(text)})"


def docstring(text: str) -> str:
    """A one-line docstring (the text never holds quotes or backslashes that would need care)."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'
