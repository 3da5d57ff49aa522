"""`loom.cross-context-access`: a body names an aggregate or a repository of another context
(`Notice.create(…)` with `Notice` declared elsewhere, `Reservations.Bookings.getById(…)`). The
answer names the context it belongs to and the two sanctioned crossings — its events, its API —
rather than advising to declare a repository or calling the context an unknown name."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast


def _crossings(other: str) -> str:
    return (
        f"react to `{other}`'s events (`on(e: {other}.SomeEvent)`) into an aggregate of this "
        f"context, or call its command and query handlers through its API: "
        f"`resource {other[:1].lower() + other[1:]} {{ kind: api  context: {other} }}`"
    )


def _report(ck: Checker, what: str, other: str, here: str, span: Span, declared: Span) -> None:
    ck.report(
        "loom.cross-context-access",
        f"{what} of context `{other}`, not of `{here}`: a context reads and changes only its own "
        "aggregates",
        span,
        f"belongs to context `{other}`",
        secondary=[(declared, f"declared in context `{other}`")],
        help=_crossings(other),
    )


def foreign_aggregate(ck: Checker, ctx: ContextSymbols, name: str, span: Span) -> bool:
    """Report `name` if it is an aggregate of another context (and not of this one)."""
    for other in ck.prog.contexts.values():
        if other.name != ctx.name and name in other.aggregates:
            what = f"`{name}` is an aggregate"
            _report(ck, what, other.name, ctx.name, span, other.aggregates[name].name_span)
            return True
    return False


def qualified(ck: Checker, ctx: ContextSymbols, recv: ast.Expr, names: set[str]) -> bool:
    """Report `Ctx.Name` as a call's receiver, when `Ctx` is another context (not a local) and
    `Name` its aggregate or repository."""
    if not (isinstance(recv, ast.MemberAccess) and isinstance(recv.obj, ast.Name)):
        return False
    other = ck.prog.contexts.get(recv.obj.name)
    if other is None or other.name == ctx.name or recv.obj.name in names:
        return False
    name = recv.name
    if name in other.repositories:
        what, declared = f"`{name}` is a repository", other.repositories[name].name_span
    elif name in other.aggregates:
        what, declared = f"`{name}` is an aggregate", other.aggregates[name].name_span
    else:
        return False
    _report(ck, what, other.name, ctx.name, recv.span, declared)
    return True
