"""How model names become route segments and storage names.

These spellings are part of a generated service's public contract (its URLs and tables), so the front
end checks them for collisions and the back ends use them; both take them from here.
"""

from __future__ import annotations

import re

_BOUNDARY_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_BOUNDARY_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """`creditLimit` -> `credit_limit`, `HTTPServer` -> `http_server`, `looseTransfer` -> `loose_transfer`."""
    text = _BOUNDARY_1.sub(r"\1_\2", name)
    text = _BOUNDARY_2.sub(r"\1_\2", text)
    text = re.sub(r"[^0-9A-Za-z_]+", "_", text)
    return re.sub(r"_+", "_", text).lower()


def _plural_word(word: str) -> str:
    if not word:
        return word
    if word.endswith("y") and len(word) > 1 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return word + "es"
    return word + "s"


def plural_snake(name: str) -> str:
    """Route and table segment: `Customer` -> `customers`, `Category` -> `categories`,
    `Address` -> `addresses`, `Box` -> `boxes`, `OrderLine` -> `order_lines`."""
    parts = snake(name).split("_")
    parts[-1] = _plural_word(parts[-1])
    return "_".join(parts)
