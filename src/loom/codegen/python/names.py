"""Names: how the model's spellings become Python identifiers, table names and route segments.

The model keeps its own spelling (`creditLimit`, `looseTransfer`, `AccountKind`); Python code uses
snake_case for attributes, functions and modules, PascalCase for classes and UPPER_SNAKE for enum
members. A name that is a Python keyword gets a trailing underscore (`from` -> `from_`); the wire keeps
the model's spelling through a pydantic alias.
"""

from __future__ import annotations

import keyword
import re

from loom.model.naming import plural_snake, snake

__all__ = [
    "escape",
    "extern_gate",
    "id_type",
    "ident",
    "pascal",
    "plural_snake",
    "snake",
    "upper_snake",
]


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


def id_type(aggregate: str) -> str:
    """The domain NewType of an aggregate's identity: `Account` -> `AccountId`."""
    return pascal(aggregate) + "Id"


def extern_gate(operation: str) -> str:
    """The aggregate method that checks an extern operation's `requires` gate before the user's
    code runs: `notify` -> `_requires_notify`."""
    return f"_requires_{snake(operation)}"
