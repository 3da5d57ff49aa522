"""Names: how the model's spellings become route segments, storage names and Python identifiers.

The model keeps its own spelling (`creditLimit`, `looseTransfer`, `AccountKind`). Route segments and
table names are part of a generated service's public contract, so the front end checks them for
collisions and the back end uses them; both take them from here. Python code uses snake_case for
attributes, functions and modules, PascalCase for classes and UPPER_SNAKE for enum members. A name
that is a Python keyword (or one the generated code reserves) gets a trailing underscore (`from` ->
`from_`); the wire keeps the model's spelling through a pydantic alias.

This is the one module that knows casing and reserved words: nothing else spells a name by hand.
"""

from __future__ import annotations

import functools
import keyword
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the IR only as a type: `loom run` of a built model never loads it
    from loom.model import ir

_BOUNDARY_1 = re.compile(r"([A-Z]+)([A-Z][a-z])")
_BOUNDARY_2 = re.compile(r"([a-z0-9])([A-Z])")


# --------------------------------------------------------------------------------------------------
# Casing


_NOT_WORD = re.compile(r"[^0-9A-Za-z_]+")
_UNDERSCORES = re.compile(r"_+")


@functools.cache  # a model's few hundred names are cased again and again by the code generator
def snake(name: str) -> str:
    """`creditLimit` -> `credit_limit`, `HTTPServer` -> `http_server`, `looseTransfer` -> `loose_transfer`."""
    text = _BOUNDARY_1.sub(r"\1_\2", name)
    text = _BOUNDARY_2.sub(r"\1_\2", text)
    text = _NOT_WORD.sub("_", text)
    return _UNDERSCORES.sub("_", text).lower()


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


_SEPARATORS = re.compile(r"[_\W]+")


@functools.cache  # as `snake`: the same few hundred names, asked for tens of thousands of times
def pascal(name: str) -> str:
    """`registerCustomer` -> `RegisterCustomer`, `account_kind` -> `AccountKind`."""
    parts = [p for p in _SEPARATORS.split(name) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def upper_snake(name: str) -> str:
    """`Checking` -> `CHECKING`, `InProgress` -> `IN_PROGRESS` (enum members)."""
    return snake(name).upper()


# --------------------------------------------------------------------------------------------------
# Python identifiers and reserved words

# Names a generated package uses at its top level; a context module must not take them.
_TOP_LEVEL = {"main", "_metadata"}

# Attributes of pydantic's BaseModel (and of the generated wire models) a schema field must not
# shadow.
_PYDANTIC_RESERVED = {
    "construct",
    "copy",
    "dict",
    "from_orm",
    "json",
    "parse_file",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "update_forward_refs",
    "validate",
    "from_aggregate",
    "from_value",
    "to_domain",
}


def escape(name: str) -> str:
    """A Python keyword (or `self` / `cls`, which would read badly) gets a trailing underscore."""
    if keyword.iskeyword(name) or name in {"self", "cls"}:
        return name + "_"
    return name


@functools.cache
def ident(name: str) -> str:
    """The snake_case Python identifier for a model name (field, parameter, local, operation)."""
    return escape(snake(name))


def local(name: str, read: bool) -> str:
    """The variable of a `let`: its identifier, or `_name` when nothing reads it (a binding kept
    for its effect, which linters then leave alone)."""
    return ident(name) if read else "_" + snake(name)


def id_type(aggregate: str) -> str:
    """The NewType of an aggregate's identity: `Account` -> `AccountId`."""
    return pascal(aggregate) + "Id"


def extern_checks(operation: str) -> str:
    """The aggregate method that checks an extern operation's arguments (`string(N)`,
    `decimal(P, S)` parameters) and its `requires` gate before the user's code runs:
    `notify` -> `_before_notify`."""
    return f"_before_{snake(operation)}"


def context_module(context: ir.Context) -> str:
    """The package folder of a context: its snake_case name, unless the package's top level took
    it."""
    name = ident(context.name)
    return name + "_" if name in _TOP_LEVEL else name


def create_method(agg: ir.Aggregate) -> str:
    """The classmethod that builds a checked new aggregate: `create`, unless a member took it."""
    members = [f.name for f in agg.fields] + [d.name for d in agg.derived]
    taken = {ident(name) for name in members + [o.name for o in agg.operations]}
    return "create" if "create" not in taken else "create_"


def schema_attr(name: str) -> str:
    """The attribute of a pydantic model for a model name (the alias keeps the model's spelling)."""
    attr = ident(name)
    if attr in _PYDANTIC_RESERVED or attr.startswith("model_"):
        attr += "_"
    return attr


def column_name(name: str) -> str:
    """A field's column: its snake_case name (the runtime maps column `from` to field `from_`)."""
    return snake(name)


class NameAlloc:
    """Hands out Python identifiers unique within one scope."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)

    def take(self, preferred: str) -> str:
        # a keyword is never a usable variable (an aggregate `A` has the plural `as`)
        name = preferred + "_" if keyword.iskeyword(preferred) else preferred
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name


# the routes every aggregate (`get`, `list`; a crudish one also `create`, `update`, `delete`) and
# projection (`get`, `list`) has, in their operationIds; a workflow instance's are `getInstance`
# and `listEpisodes`
ROUTE_VERBS = ("get", "list", "create", "update", "delete", "getInstance", "listEpisodes")


def operation_id(owner: str | None, name: str) -> str:
    """The OpenAPI operationId of a generated route (docs/http.md#operation-ids): `Order_get`,
    `Order_markPaid`, `OrderProgress_list` for a route of an aggregate, projection or workflow
    instance (the owner's name, then a verb of `ROUTE_VERBS` or the operation's or find's name as
    the model spells it); a workflow's or handler's own name for its route (`placeOrder`)."""
    return name if owner is None else f"{owner}_{name}"
