"""`loom.gate-admits-anonymous`: a `requires` gate that a caller without a token can satisfy.

The gate is evaluated under the anonymous principal, in three-valued logic: `currentUser` is known
(not authenticated, not the system, no roles, no id, every claim ""), while the parameters, fields
and functions are unknown — any value a client could bring about. The gate is warned when it reads
`currentUser` and comes out true or unknown: then some request without a token passes it. It
follows what the generated code does: a comparison with `currentUser.id` is false for a principal
without an id (`==` and `!=` alike), and reading the id as a value refuses the request (401), which
admits no one either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal

from loom.lang.check.checker import Checker
from loom.lang.check.entry_gates import entry_gates
from loom.lang.check.principal import NAME, expr_nodes, reads_principal
from loom.lang.syntax import ast
from loom.lang.types import is_error
from loom.model import ir


class _Unknown:
    """A value that depends on what the client sends or what is stored."""


class _Refused:
    """Reading `currentUser.id` as a value without an id: the request is refused (401)."""


UNKNOWN = _Unknown()
REFUSED = _Refused()
Value = bool | int | str | Decimal | tuple[object, ...] | None | _Unknown | _Refused

# What each member of `currentUser` is for an anonymous caller (`id`: read as a value, REFUSED).
_ANONYMOUS: dict[str, Value] = {
    "isSystem": False,
    "isAuthenticated": False,
    "roles": (),
    "hasRole": False,
    "claim": "",
    "id": REFUSED,
    "tenant": REFUSED,  # a tenanted route refuses an anonymous caller (401) before it runs
}
# ... and for the system principal a reaction, timeout or timer runs as (a tenanted context's has
# the event's, the instance's or the swept tenant: some string)
SYSTEM: dict[str, Value] = {**_ANONYMOUS, "isSystem": True, "tenant": UNKNOWN}
_SHOWN = {"isSystem": "false", "isAuthenticated": "false", "roles": "[]", "hasRole": "false"}


def truth(x: ir.Expr, who: Mapping[str, Value] = _ANONYMOUS) -> bool | None:
    """Is the gate true for an anonymous caller (or `who`): True, False, or None (it depends)."""
    v = value(x, who)
    if isinstance(v, bool):
        return v
    return False if v is REFUSED else None


def value(x: ir.Expr, who: Mapping[str, Value] = _ANONYMOUS) -> Value:
    """The value of `x` for an anonymous caller (or the principal whose members are `who`),
    UNKNOWN where it depends on anything else."""
    if isinstance(x, ir.CurrentUser):
        return who[x.member]
    if isinstance(x, ir.Literal_):
        return UNKNOWN if x.value is None else x.value  # None: a node that had an error
    if isinstance(x, ir.ListLiteral):
        items = tuple(value(i, who) for i in x.items)
        if any(i is REFUSED for i in items):
            return REFUSED
        return UNKNOWN if any(i is UNKNOWN for i in items) else items
    if isinstance(x, ir.Unary):
        inner = value(x.operand, who)
        if inner is REFUSED:
            return REFUSED
        return not inner if x.op == "!" and isinstance(inner, bool) else UNKNOWN
    if isinstance(x, ir.Binary):
        return _logical(x, who) if x.op in ("&&", "||") else _comparison(x, who)
    if isinstance(x, ir.Conditional):
        c = value(x.condition, who)
        if c is REFUSED:
            return REFUSED
        if c is True:
            return value(x.then, who)
        if c is False:
            return value(x.otherwise, who)
        then, other = value(x.then, who), value(x.otherwise, who)
        return then if _known(then) and _known(other) and then == other else UNKNOWN
    return UNKNOWN


def _logical(x: ir.Binary, who: Mapping[str, Value]) -> Value:
    """Kleene's `&&` / `||`, evaluated left to right as Python does: a refusal on the left refuses
    the request; on the right it admits no one, so it counts as false there."""
    left = value(x.left, who)
    if left is REFUSED:
        return REFUSED
    right = value(x.right, who)
    lt = left if isinstance(left, bool) else None
    rt = False if right is REFUSED else (right if isinstance(right, bool) else None)
    if x.op == "&&":
        if lt is False or rt is False:
            return False
        return True if lt is True and rt is True else UNKNOWN
    if lt is True or rt is True:
        return True
    return False if lt is False and rt is False else UNKNOWN


def _comparison(x: ir.Binary, who: Mapping[str, Value]) -> Value:
    if x.op in ("==", "!=") and (_is(x.left, "id") or _is(x.right, "id")):
        return False  # an absent id matches nothing, with either operator
    left, right = value(x.left, who), value(x.right, who)
    if left is REFUSED or right is REFUSED:
        return REFUSED
    if not (_known(left) and _known(right)):
        return UNKNOWN
    if x.op == "==":
        return left == right
    if x.op == "!=":
        return left != right
    if x.op in ("<", "<=", ">", ">=") and type(left) is type(right):
        if isinstance(left, str) and isinstance(right, str):
            return _order(x.op, (left > right) - (left < right))
        if isinstance(left, int | Decimal) and isinstance(right, int | Decimal):
            return _order(x.op, (left > right) - (left < right))
    return UNKNOWN  # arithmetic and mixed types: not needed to decide a gate


def _order(op: str, sign: int) -> bool:
    return {"<": sign < 0, "<=": sign <= 0, ">": sign > 0, ">=": sign >= 0}[op]


def _known(v: Value) -> bool:
    return v is not UNKNOWN and v is not REFUSED


def _is(x: ir.Expr, member: str) -> bool:
    return isinstance(x, ir.CurrentUser) and x.member == member


def _is_principal_read(n: ast.Expr) -> bool:
    target = n.callee if isinstance(n, ast.Call) else n
    return (
        isinstance(target, ast.MemberAccess)
        and isinstance(target.obj, ast.Name)
        and target.obj.name == NAME
    )


def _principal_reads(e: ast.Expr) -> Iterator[ast.Expr]:
    """The `currentUser.…` reads of a gate's syntax, in source order."""
    stack: list[ast.Expr] = [e]
    found: list[ast.Expr] = []
    while stack:
        n = stack.pop()
        if _is_principal_read(n):
            found.append(n)
        elif isinstance(n, ast.Unary):
            stack.append(n.operand)
        elif isinstance(n, ast.Binary):
            stack += [n.left, n.right]
        elif isinstance(n, ast.Ternary):
            stack += [n.condition, n.then, n.otherwise]
        elif isinstance(n, ast.MemberAccess):
            stack.append(n.obj)
        elif isinstance(n, ast.Call):
            stack += [a.value for a in n.args if isinstance(a, ast.Arg)]
        elif isinstance(n, ast.ListLit):
            stack += n.items
    yield from sorted(found, key=lambda n: n.span.start)


def _anonymous_label(e: ast.Expr) -> str:
    member = ""
    if isinstance(e, ast.MemberAccess):
        member = e.name
    elif isinstance(e, ast.Call) and isinstance(e.callee, ast.MemberAccess):
        member = e.callee.name
    if member == "id":
        return "no id for an anonymous caller: it matches nothing"
    if member == "claim":
        return '`""` for an anonymous caller, a value a client can send'
    return f"`{_SHOWN.get(member, '?')}` for an anonymous caller"


def check_anonymous_gates(ck: Checker) -> None:
    """`loom.gate-admits-anonymous` on every `requires` gate an anonymous caller can satisfy."""
    for ctx in ck.prog.contexts.values():
        gates = [
            (f"{agg.name}.{op.name}", op.requires)
            for agg in ctx.aggregates.values()
            for op in agg.operations
        ]
        gates += [(e.label, e.gate) for e in entry_gates(ck, ctx)]
        for label, gate in gates:
            x = ck.facts.exprs.get(gate) if gate is not None else None
            if gate is None or x is None or not reads_principal(x):
                continue
            if x.type != ir.BOOL or any(is_error(e.type) for e in expr_nodes(x)):
                continue  # already reported
            if truth(x) is False or _on_purpose(x):
                continue
            text = ck.text(gate.span)
            how = (
                "is true for every caller without a token"
                if truth(x) is True
                else "can be true for a caller without a token"
            )
            wrapped = text if _binds_tighter_than_or(gate) else f"({text})"
            ck.report(
                "loom.gate-admits-anonymous",
                f"the `requires` gate of `{label}` {how}: with no token, "
                f"`{NAME}` has no id, no roles and no claims, and is neither authenticated "
                "nor the system, yet the gate holds"
                + ("" if truth(x) is True else " for some values of what else it reads"),
                gate.span,
                "admits anonymous callers",
                secondary=[(r.span, _anonymous_label(r)) for r in _principal_reads(gate)],
                help=f"require a signed-in caller: `requires {NAME}.isAuthenticated && "
                f"{wrapped}`; if anonymous callers are meant to pass, say so: "
                f"`requires !{NAME}.isAuthenticated || …`",
            )


def _on_purpose(x: ir.Expr) -> bool:
    """Does the gate read `!currentUser.isAuthenticated`: let anonymous callers in, deliberately?"""
    return any(
        isinstance(e, ir.Unary) and e.op == "!" and _is(e.operand, "isAuthenticated")
        for e in expr_nodes(x)
    )


def _binds_tighter_than_or(gate: ast.Expr) -> bool:
    """Can `currentUser.isAuthenticated && <gate>` be written without parentheses?"""
    return not (isinstance(gate, ast.Ternary) or (isinstance(gate, ast.Binary) and gate.op == "||"))
