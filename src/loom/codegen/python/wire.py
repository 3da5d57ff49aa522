"""Values crossing the wire: a request model's value objects and payloads built into domain values
(checking their invariants), and domain values into response models."""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.type_names import TypeNames
from loom.model import ir


def is_record(t: ir.Type) -> bool:
    return isinstance(t, ir.ValueType | ir.PayloadType)


def record_of(t: ir.Type) -> ir.ValueType | ir.PayloadType | None:
    """The value object or payload a type holds (`T`, `T?`, `T[]`, `T[]?`), if any."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return t if isinstance(t, ir.ValueType | ir.PayloadType) else None


def convert(text: str, t: ir.Type, fn: str, imports: Imports) -> str:
    """`text` (of type `t`) with the converter `fn` applied to each record it holds, through the
    `map_*` helpers of `loom.runtime.types` (calls, so a long one lays out like any call)."""
    if isinstance(t, ir.OptionalType) and isinstance(t.inner, ir.ListType):
        helper = "map_optional_list"
    elif isinstance(t, ir.OptionalType):
        helper = "map_optional"
    elif isinstance(t, ir.ListType):
        helper = "map_list"
    else:
        return f"{fn}({text})"
    imports.add("loom.runtime.types", helper)
    return f"{helper}({text}, {fn})"


def wire_to_domain(text: str, t: ir.Type, in_types: TypeNames) -> str:
    """A request value (a wire model, or a list / optional of them) as the domain takes it: the
    value objects and payloads it holds built through `to_domain()`, which checks invariants."""
    rec = record_of(t)
    if rec is None:
        return text
    if is_record(t):
        return f"{text}.to_domain()"
    return convert(text, t, f"{in_types.render(rec)}.to_domain", in_types.imports)


def domain_to_wire(text: str, t: ir.Type, out_types: TypeNames) -> str:
    """A domain value as a response model takes it (value objects through `<Name>Out`)."""
    rec = record_of(t)
    if rec is None:
        return text
    return convert(text, t, f"{out_types.render(rec)}.from_value", out_types.imports)
