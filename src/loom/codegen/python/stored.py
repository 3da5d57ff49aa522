"""What a save checks of an aggregate besides its invariants: `_check_stored`, called by
`Repository.save` before it writes (`loom.runtime.AggregateRoot`). Every int the aggregate holds
fits 64 bits, and every derived value has one, so that a row that is stored can always be read
back and answered: the answer computes the derived values from the stored fields."""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import Doc, call, lay
from loom.codegen.python.literals import docstring, py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import where
from loom.model import ir, naming


def holds_int(t: ir.Type, info: ModelInfo, seen: frozenset[tuple[str, str]] = frozenset()) -> bool:
    """Whether a value of type `t` may hold an `int`: it is one, a list or optional of one, or a
    value object or payload with such a field."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    if isinstance(t, ir.PrimitiveType):
        return t.name == "int"
    if isinstance(t, ir.ValueType | ir.PayloadType):
        key = (t.context, t.name)
        if key in seen:
            return False
        record = info.context(t.context).record(t.name)
        return any(holds_int(f.type, info, seen | {key}) for f in record.fields)
    return False


def _fits_already(expr: ir.Expr) -> bool:
    """Whether the value of `expr` was checked to fit where it entered: a parameter (the wire, or
    the caller's own check), a literal, a field of an aggregate (its save checks it, and a body
    saves what it changed before it answers)."""
    if isinstance(expr, ir.Param):
        return True
    if isinstance(expr, ir.Literal_):
        # the checker lets a literal beyond 64 bits through: that one is refused when it runs
        value = expr.value
        return not isinstance(value, int) or isinstance(value, bool) or abs(value) < 2**63
    return (
        isinstance(expr, ir.Member)
        and expr.kind == "field"
        and isinstance(getattr(expr.obj, "type", None), ir.AggregateType)
    )


def int_fit(
    value: str, expr: ir.Expr, t: ir.Type, what: str, info: ModelInfo, imports: Imports
) -> str:
    """`value`, the Python of `expr`, checked to fit 64 bits where it leaves the domain when its
    type may hold an int (`ints.fit(a + b, "the result of queryHandler Sum")`); else `value`."""
    if _fits_already(expr) or not holds_int(t, info):
        return value
    imports.add("loom.runtime", "ints")
    return f"ints.fit({value}, {py_str(what)})"


def _scaled(t: ir.Type) -> tuple[int, int] | None:
    """(P, S) of a `decimal(P, S)`, `decimal(P, S)?` or `decimal(P, S)[]`."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    if isinstance(t, ir.PrimitiveType) and t.precision is not None and t.scale is not None:
        return t.precision, t.scale
    return None


def check_stored(info: ModelInfo, agg: ir.Aggregate, imports: Imports) -> list[str] | None:
    """The aggregate's `_check_stored` method; None when it has neither an int nor a derived
    value (the base class's, which checks nothing, is then right)."""
    body: list[str] = []
    for f in agg.fields:
        what = f"{agg.name}.{f.name}"
        if holds_int(f.type, info):
            imports.add("loom.runtime", "ints")
            body += lay(call("ints.fit", [f"self.{naming.ident(f.name)}", py_str(what)]), 2)
    for d in agg.derived:
        imports.add("loom.runtime", "derived")
        what = f"derived {agg.name}.{d.name}"
        value = call(
            "derived", ["self", f"attr={py_str(naming.ident(d.name))}", f"label={py_str(what)}"]
        )
        if holds_int(d.type, info):
            imports.add("loom.runtime", "ints")
            value = call("ints.fit", [value, py_str(what)])
        scaled = _scaled(d.type)
        if scaled is not None:
            imports.add("loom.runtime", "decimals")
            precision, scale = scaled
            fitted: list[Doc] = [
                value,
                f"precision={precision}",
                f"scale={scale}",
                f"what={py_str(what)}",
            ]
            value = call("decimals.fit_scaled", fitted)
        body += lay(value, 2)
    if not body:
        return None
    doc = f"what saving {agg.name} needs ({where(agg.origin)}): ints in range, derived values"
    return ["    def _check_stored(self) -> None:", f"        {docstring(doc)}", *body]
