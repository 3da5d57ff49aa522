"""Names: how the model's spellings become Python identifiers, table names and route segments.

The model keeps its own spelling (`creditLimit`, `looseTransfer`, `AccountKind`); Python code uses
snake_case for attributes, functions and modules, PascalCase for classes and UPPER_SNAKE for enum
members. A name that is a Python keyword gets a trailing underscore (`from` -> `from_`); the wire keeps
the model's spelling through a pydantic alias.
"""

from __future__ import annotations

import keyword
import re

_BOUNDARY_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_BOUNDARY_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake(name: str) -> str:
    """`creditLimit` -> `credit_limit`, `HTTPServer` -> `http_server`, `looseTransfer` -> `loose_transfer`."""
    text = _BOUNDARY_1.sub(r"\1_\2", name)
    text = _BOUNDARY_2.sub(r"\1_\2", text)
    text = re.sub(r"[^0-9A-Za-z_]+", "_", text)
    return re.sub(r"_+", "_", text).lower()


def pascal(name: str) -> str:
    """`registerCustomer` -> `RegisterCustomer`, `account_kind` -> `AccountKind`."""
    parts = [p for p in re.split(r"[_\W]+", name) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def upper_snake(name: str) -> str:
    """`Checking` -> `CHECKING`, `InProgress` -> `IN_PROGRESS` (enum members)."""
    return snake(name).upper()


def escape(name: str) -> str:
    """A Python keyword (or soft keyword that would read badly) gets a trailing underscore."""
    if keyword.iskeyword(name) or name in {"self", "cls"}:
        return name + "_"
    return name


def ident(name: str) -> str:
    """The snake_case Python identifier for a model name (field, parameter, local, operation)."""
    return escape(snake(name))


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


def id_type(aggregate: str) -> str:
    """The domain NewType of an aggregate's identity: `Account` -> `AccountId`."""
    return pascal(aggregate) + "Id"
