"""Type references, as written (`string(100)`, `Orders.Order id`, `Line[]`)."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.diagnostics import Span


@dataclass(eq=False)
class TypeArg:
    """One argument of a type, `100` in `string(100)`, as written (the checker judges it)."""

    text: str
    span: Span


@dataclass(eq=False)
class TypeRef:
    name: str
    name_span: Span
    is_id: bool
    is_list: bool
    is_optional: bool
    span: Span
    # `Orders.OrderPlaced` / `Orders.Order id`: the context a qualified name names
    qualifier: str | None = None
    qualifier_span: Span | None = None
    # `string(100)`: the arguments in parentheses (None without parentheses), and their span
    args: list[TypeArg] | None = None
    args_span: Span | None = None
