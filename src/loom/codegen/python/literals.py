"""Python literals for text of the model: string literals (quoted the way ruff format leaves them)
and one-line docstrings."""

from __future__ import annotations


def py_str(text: str) -> str:
    """A Python string literal for `text`, quoted the way ruff format leaves it."""
    quote = "'" if text.count('"') > text.count("'") else '"'
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


def docstring(text: str) -> str:
    """A one-line docstring (the text never holds quotes or backslashes that would need care)."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'
