"""Which values of an aggregate's enum field an operation's `when` gate lets it run in.

The gate is evaluated in three values (True, False, None: it depends on something else, a
parameter or another field) for the field holding each member of its enum in turn; the operation
may run in a state unless the gate is False there. Comparisons of the field with a member (`==`,
`!=`, `in [...]`), `!`, `&&`, `||` and derived values over them (`derived held: bool = status ==
AwaitingDeposit`, `when held`) are read; anything else is None.
"""

from __future__ import annotations

from loom.model import ir

# a derived value read by a gate, inlined at most this deep (a derived may read another)
_DEPTH = 8


def may_run(gate: ir.Expr | None, aggregate: ir.Aggregate, field: str, member: str) -> bool:
    """Whether an operation with `gate` may run while `field` holds `member`."""
    return gate is None or _value(gate, aggregate, field, member, _DEPTH) is not False


def _value(
    expr: ir.Expr, aggregate: ir.Aggregate, field: str, member: str, depth: int
) -> bool | None:
    def of(e: ir.Expr) -> bool | None:
        return _value(e, aggregate, field, member, depth)

    if isinstance(expr, ir.Literal_) and isinstance(expr.value, bool):
        return expr.value
    if isinstance(expr, ir.Unary) and expr.op == "!":
        inner = of(expr.operand)
        return None if inner is None else not inner
    if isinstance(expr, ir.SelfField) and expr.kind == "derived" and depth > 0:
        derived = next((d for d in aggregate.derived if d.name == expr.name), None)
        if derived is not None:
            return _value(derived.value, aggregate, field, member, depth - 1)
        return None
    if not isinstance(expr, ir.Binary):
        return None
    if expr.op in ("&&", "||"):
        left, right = of(expr.left), of(expr.right)
        decisive = expr.op == "||"  # the value that decides alone: True for ||, False for &&
        if decisive in (left, right):
            return decisive
        return None if None in (left, right) else not decisive
    return _comparison(expr, field, member)


def _comparison(expr: ir.Binary, field: str, member: str) -> bool | None:
    held = _member_of(expr.left, field) or _member_of(expr.right, field)
    if not held:
        return None
    other = expr.right if _member_of(expr.left, field) else expr.left
    if expr.op in ("==", "!=") and isinstance(other, ir.EnumMember):
        return (other.member == member) == (expr.op == "==")
    if expr.op == "in" and isinstance(other, ir.ListLiteral):
        listed = [i.member for i in other.items if isinstance(i, ir.EnumMember)]
        if len(listed) == len(other.items):
            return member in listed
    return None


def _member_of(expr: ir.Expr, field: str) -> bool:
    """Whether `expr` reads the aggregate's own `field`."""
    return isinstance(expr, ir.SelfField) and expr.kind == "field" and expr.name == field
