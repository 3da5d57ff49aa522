"""Typing of time: the arithmetic and comparisons of `datetime`, `date` and `duration`, and the
time functions (`today()`, `seconds(n)` … `days(n)`, `dateOf(t)`, `startOf(d)`, and the literals
`date("2026-03-01")` / `datetime("2026-03-01T12:00:00Z")`).

The rules (docs/language.md, "Time"): datetime ± duration → datetime, datetime - datetime →
duration, date ± duration → date (whole days only: a part of a day is `loom.date-part-of-day` when
the checker can see it, a 422 at run time otherwise), date - date → duration, duration ± duration,
duration * int; like compares with like, and a date with a datetime only through `dateOf` /
`startOf`. A number never stands for a duration: it has no unit.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, is_error, is_numeric, show
from loom.model import ir, walk
from loom.model.time import ARITHMETIC, SPANS

TIMES = (ir.DATETIME, ir.DATE, ir.DURATION)
FUNCTIONS = (
    "today",
    "seconds",
    "minutes",
    "hours",
    "days",
    "dateOf",
    "startOf",
    "date",
    "datetime",
)
_DAY_MICROS = 86_400 * 1_000_000
_CONVERT = (
    "convert one side: `dateOf(t)` is the date of a datetime, `startOf(d)` the datetime at 00:00 "
    "UTC of a date (and `today()` is `dateOf(now())`)"
)


def binary(ck: Checker, e: ast.Binary, left: ir.Expr, right: ir.Expr, text: str) -> ir.Expr | None:
    """The typed `left op right` when a side is a time (None: not a time operation)."""
    lt, rt, op = left.type, right.type, e.op
    if is_error(lt) or is_error(rt) or (lt not in TIMES and rt not in TIMES):
        return None
    if op in ("==", "!=", "<", "<=", ">", ">="):
        if {lt, rt} != {ir.DATE, ir.DATETIME}:
            return None  # like with like: the ordinary rules
        _refuse(ck, e, lt, rt, f"cannot compare {a(lt)} with {a(rt)} using `{op}`", _CONVERT)
        return ir.Binary(op, left, right, ir.BOOL, text)  # type: ignore[arg-type]
    result = _arithmetic(lt, op, rt)
    if result is None:
        _refuse(ck, e, lt, rt, *_why(lt, op, rt, ck.text(e.left.span), ck.text(e.right.span)))
        return ir.Binary(op, left, right, ERROR, text)  # type: ignore[arg-type]
    if result == ir.DATE and ir.DURATION in (lt, rt):
        day, span = (left, e.right) if rt == ir.DURATION else (right, e.left)
        _whole_days(ck, right if rt == ir.DURATION else left, span, day.text)
    return ir.Binary(op, left, right, result, text)  # type: ignore[arg-type]


def _arithmetic(lt: AnyType, op: str, rt: AnyType) -> ir.Type | None:
    if not isinstance(lt, ir.PrimitiveType) or not isinstance(rt, ir.PrimitiveType):
        return None
    found = ARITHMETIC.get((lt.name, op, rt.name))
    return None if found is None else ir.PrimitiveType(found[0])  # type: ignore[arg-type]


def _why(lt: AnyType, op: str, rt: AnyType, left: str, right: str) -> tuple[str, str]:
    if is_numeric(rt) and lt in (ir.DATETIME, ir.DATE) and op in ("+", "-"):
        unit = "days" if lt == ir.DATE else "seconds"
        suffix = "d" if lt == ir.DATE else "s"
        verb = "add" if op == "+" else "subtract"
        msg = f"cannot {verb} {a(rt)} {'to' if op == '+' else 'from'} {a(lt)}: a number has no unit"
        hlp = (
            f"say which unit: write `{left} {op} {unit}({right})`, or `{left} {op} {right}{suffix}`"
        )
        return msg, hlp
    if {lt, rt} == {ir.DATE, ir.DATETIME}:
        return f"`{op}` of {a(lt)} and {a(rt)}", _CONVERT
    if lt in (ir.DATETIME, ir.DATE) and lt == rt and op == "+":
        return (
            f"cannot add two {show(lt)}s",
            "subtract them for the duration between, or add a `duration`",
        )
    if ir.DURATION in (lt, rt) and op in ("*", "/", "%"):
        return (
            f"`{op}` of {a(lt)} and {a(rt)}",
            "a duration is multiplied by an `int` only (`15m * n`); to compute with the number "
            "it holds, count it first: `inDays(d)`, `inHours(d)`, `inMinutes(d)`, `inSeconds(d)` "
            "(an `int`, truncated toward zero)",
        )
    return (
        f"`{op}` is not defined on {a(lt)} and {a(rt)}",
        "a datetime or date moves by a `duration`, two datetimes (or dates) subtract to a duration",
    )


def _refuse(ck: Checker, e: ast.Binary, lt: AnyType, rt: AnyType, msg: str, hlp: str) -> None:
    ck.report(
        "loom.type-mismatch",
        msg,
        e.span,
        f"{a(lt)} {e.op} {a(rt)}",
        secondary=[(e.left.span, f"this is {a(lt)}")],
        help=hlp,
    )


def _whole_days(ck: Checker, x: ir.Expr, node: ast.Expr, day: str) -> None:
    """`loom.date-part-of-day` for a duration the checker can evaluate that is not whole days."""
    micros = _constant_micros(x)
    if micros is not None and micros % _DAY_MICROS:
        ck.report(
            "loom.date-part-of-day",
            f"a date moves by whole days only, and `{x.text}` is not a whole number of days",
            node.span,
            "a part of a day",
            help="move by days (`1d`, `days(n)`), or compute with a datetime: "
            f"`startOf({day}) + {x.text}`",
        )


def _constant_micros(x: ir.Expr) -> int | None:
    if isinstance(x, ir.Literal_) and isinstance(x.value, int) and x.type == ir.DURATION:
        return x.value
    if isinstance(x, ir.TimeCall) and x.function in SPANS and isinstance(x.args[0], ir.Literal_):
        n = x.args[0].value
        return n * SPANS[x.function] * 1_000_000 if isinstance(n, int) else None
    return None


def call(ck: Checker, e: ast.Call, scope: Scope, name: str, text: str) -> ir.Expr:
    """A call of one of `FUNCTIONS`."""
    args = [arg.value for arg in e.args if isinstance(arg, ast.Arg)]
    want = 0 if name == "today" else 1
    if len(e.args) != want or len(args) != want:
        for v in args:
            ck.expr(v, scope)
        sample = "today()" if want == 0 else f"{name}({_SAMPLE[name]})"
        ck.report(
            "loom.argument-count",
            f"`{name}` takes {'no arguments' if want == 0 else 'one argument'}, got {len(e.args)}",
            e.span,
            f"{want} expected",
            help=f"write `{sample}`",
        )
        return ck.poison(e)
    if name == "today":
        return ir.TimeCall("today", (), ir.DATE, text)
    if name in ("date", "datetime"):
        return _literal(ck, e, args[0], name, text)
    param, result = _SIGNATURES[name]
    x = ck.expr(args[0], scope, param)
    if not ck.mismatch(x, args[0], param, f"`{name}` takes {a(param)}, not {a(x.type)}"):
        return ck.poison(e)
    return ir.TimeCall(name, (x,), result, text)  # type: ignore[arg-type]


_SIGNATURES: dict[str, tuple[ir.Type, ir.Type]] = {
    **dict.fromkeys(SPANS, (ir.INT, ir.DURATION)),
    "dateOf": (ir.DATETIME, ir.DATE),
    "startOf": (ir.DATE, ir.DATETIME),
}
_SAMPLE = {
    **dict.fromkeys(SPANS, "n"),
    "dateOf": "now()",
    "startOf": "d",
    "date": '"2026-03-01"',
    "datetime": '"2026-03-01T12:00:00Z"',
}


def _literal(ck: Checker, e: ast.Call, arg: ast.Expr, name: str, text: str) -> ir.Expr:
    """`date("2026-03-01")` / `datetime("2026-03-01T12:00:00Z")`: a literal, checked here."""
    value = arg.value if isinstance(arg, ast.Literal) and arg.kind == "string" else None
    parsed = _parse(str(value), name) if value is not None else None
    if parsed is None:
        what = (
            "a date as YYYY-MM-DD" if name == "date" else "a UTC datetime as YYYY-MM-DDTHH:MM:SSZ"
        )
        ck.report(
            "loom.bad-time-literal",
            f"`{ck.text(e.span)}` is not a {name} literal: it takes a string of {what}"
            + ("" if value is None else ", a real day of the calendar"),
            arg.span,
            "not a literal" if value is None else "not a valid value",
            help=f"write e.g. `{name}({_SAMPLE[name]})`",
        )
        return ck.poison(e)
    return ir.Literal_(parsed, ir.DATE if name == "date" else ir.DATETIME, text)


def _parse(value: str, name: str) -> str | None:
    """The canonical ISO text of a literal's value, or None when it is not one."""
    try:
        if name == "date":
            return date.fromisoformat(value).isoformat() if len(value) == 10 else None
        t = datetime.fromisoformat(value)
    except ValueError:
        return None
    if t.tzinfo is None or "T" not in value:
        return None  # a datetime says its offset: `Z` (or `+02:00`), never the server's zone
    return t.astimezone(UTC).isoformat().replace("+00:00", "Z")


# ---- criteria: SQL compares stored times, it does not compute them (SQLite stores text)


def computed(x: ir.Expr) -> bool:
    """A time the generated code computes: a time function, or arithmetic giving a time."""
    if isinstance(x, ir.TimeCall):
        return True
    return isinstance(x, ir.Binary) and x.op in ("+", "-", "*") and x.type in TIMES


def reads_field(x: ir.Expr) -> bool:
    return any(isinstance(e, ir.SelfField) for e in walk.expressions(x))
