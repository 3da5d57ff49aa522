"""What the generated tables tell the migration engine about the model, as SQLAlchemy `info`:
`info={"loom": {...}}` on each table and on each column of a model field.

A table: `origin` (`Context.Aggregate`, `Context.Workflow`, `Context.Projection`), and for a renamed
aggregate `renamed_from`, the table name it had. A column: `field` (the model field), `renamed_from`
(the column it had), `default` (the JSON value of a constant default, or of the zero value an
instance row's state field gets) or `default_expr` (the source of a default that is not a
constant), `enum_renamed` ({old member: new member}) for an enum whose members were renamed, and
for a column holding one enum value, `enum` (`Context.Enum`) and `members` (the values it may
hold: a stored value outside them is refused by the migrations and by `loom run`). Keys are
written only when they apply, in that order.
"""

from __future__ import annotations

from decimal import Decimal

from loom.codegen.python.layout import Doc, Group
from loom.codegen.python.literals import py_str
from loom.codegen.python.model_info import ModelInfo
from loom.model import ir, naming

Json = None | bool | int | str | list["Json"] | dict[str, "Json"]

# The zero value an instance row's state field without a default holds (as the state dataclass
# gives it), by primitive type.
_ZERO: dict[str, Json] = {"int": 0, "string": "", "bool": False, "decimal": "0"}


def table_info(origin: str, renamed_from: str | None = None, *, tenanted: bool = False) -> Doc:
    entries: list[tuple[str, Json]] = [("origin", origin)]
    if renamed_from is not None:
        entries.append(("renamed_from", renamed_from))
    if tenanted:
        entries.append(("tenanted", True))
    return _info(entries)


def column_info(info: ModelInfo, f: ir.Field, zero: bool = False) -> Doc:
    """The `info=` of the column of field `f`; `zero`: an instance row's state field, whose
    column holds the zero value of its type when the field has no default."""
    entries: list[tuple[str, Json]] = [("field", f.name)]
    if f.renamed_from is not None:
        entries.append(("renamed_from", naming.column_name(f.renamed_from)))
    if f.default is not None:
        value = constant_json(f.default, f.type)
        if value is _NOT_CONSTANT:
            entries.append(("default_expr", f.default.text))
        else:
            entries.append(("default", value))  # type: ignore[arg-type]
    elif zero and (found := _zero(f.type)) is not _NOT_CONSTANT:
        entries.append(("default", found))  # type: ignore[arg-type]
    renamed = _enum_renames(info, f.type)
    if renamed:
        entries.append(("enum_renamed", dict(renamed)))
    core = f.type.inner if isinstance(f.type, ir.OptionalType) else f.type
    if isinstance(core, ir.EnumType):
        members: list[Json] = list(info.enum(core.context, core.name).members)
        entries += [("enum", f"{core.context}.{core.name}"), ("members", members)]
    return _info(entries)


class _NotConstant:
    """A default the migration engine cannot write as a value."""


_NOT_CONSTANT = _NotConstant()


def constant_json(x: ir.Expr, t: ir.Type) -> Json | _NotConstant:
    """The JSON value of a constant model expression of type `t` (a decimal as its text, an enum
    member as its name), or _NOT_CONSTANT."""
    core = t.inner if isinstance(t, ir.OptionalType) else t
    if isinstance(x, ir.Literal_):
        if core == ir.DECIMAL and x.value is not None and not isinstance(x.value, bool):
            return str(Decimal(str(x.value)))
        return x.value
    if isinstance(x, ir.Unary) and x.op == "-" and isinstance(x.operand, ir.Literal_):
        inner = constant_json(x.operand, t)
        if isinstance(inner, int) and not isinstance(inner, bool):
            return -inner
        if isinstance(inner, str):
            return str(-Decimal(inner))
        return _NOT_CONSTANT
    if isinstance(x, ir.EnumMember):
        return x.member
    if isinstance(x, ir.ListLiteral) and isinstance(core, ir.ListType):
        items = [constant_json(i, core.element) for i in x.items]
        if any(i is _NOT_CONSTANT for i in items):
            return _NOT_CONSTANT
        return items  # type: ignore[return-value]
    if isinstance(x, ir.Construct):
        # the stored form of a value object: its dataclass fields by name (runtime encode_value)
        out: dict[str, Json] = {}
        for arg in x.args:
            value = _NOT_CONSTANT if arg.value is None else constant_json(arg.value, arg.type)
            if isinstance(value, _NotConstant):
                return _NOT_CONSTANT
            out[naming.ident(arg.name)] = value
        return out
    return _NOT_CONSTANT


def _zero(t: ir.Type) -> Json | _NotConstant:
    if isinstance(t, ir.ListType):
        return []
    if isinstance(t, ir.PrimitiveType) and t.name in _ZERO:
        return _ZERO[t.name]
    return _NOT_CONSTANT


def _enum_renames(info: ModelInfo, t: ir.Type) -> list[tuple[str, str]]:
    """(old member, new member) of the enum a column stores, when its members were renamed."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    if not isinstance(t, ir.EnumType):
        return []
    enum = info.enum(t.context, t.name)
    return [(old, new) for new, old in enum.renamed_from]


def _info(entries: list[tuple[str, Json]]) -> Doc:
    return Group("info={", [Group('"loom": {', [_entry(k, v) for k, v in entries], "}")], "}")


def _entry(key: str, value: Json) -> Doc:
    head = f"{py_str(key)}: "
    doc = _literal(value)
    if isinstance(doc, str):
        return head + doc
    return Group(head + doc.head, doc.items, doc.tail)


def _literal(value: Json) -> Doc:
    if isinstance(value, dict):
        return Group("{", [_entry(k, v) for k, v in value.items()], "}")
    if isinstance(value, list):
        items = [_literal(v) for v in value]
        return Group("[", items, "]") if items else "[]"
    if isinstance(value, str):
        return py_str(value)
    return repr(value)  # None, bools and ints: their Python spelling
