"""The built-in functions of expressions that compute on a value: calendar arithmetic
(`addMonths`, `addYears`), a duration as a number (`inDays` … `inSeconds`), the parts of a date
(`year`, `month`, `day`) and the string functions (`length`, `contains`, `startsWith`, `lower`,
`upper`, `trim`). The one table the checker types them by, the code generator calls them by and
criteria translate them by. (The time functions `today()`, `days(n)`, `dateOf(t)` … are
`model.time`; `round` is `ir.Round`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class Builtin:
    """One built-in: the primitive type names of its parameters (`time`: a `date` or a
    `datetime`), its result (`time`: the type of its first argument), the function of
    `loom.runtime.builtins` that computes it, whether a criterion can compute it in SQL, and an
    example call for the help of a wrong call."""

    params: tuple[str, ...]
    result: str
    runtime: str
    sql: bool
    sample: str


TIME: Final = "time"
"""A parameter or result that is a `date` or a `datetime` (the result: the argument's type)."""

BUILTINS: Final[dict[str, Builtin]] = {
    "addMonths": Builtin((TIME, "int"), TIME, "add_months", False, "addMonths(validFrom, 1)"),
    "addYears": Builtin((TIME, "int"), TIME, "add_years", False, "addYears(validFrom, 1)"),
    "inDays": Builtin(("duration",), "int", "in_days", False, "inDays(validTo - validFrom)"),
    "inHours": Builtin(("duration",), "int", "in_hours", False, "inHours(end - start)"),
    "inMinutes": Builtin(("duration",), "int", "in_minutes", False, "inMinutes(end - start)"),
    "inSeconds": Builtin(("duration",), "int", "in_seconds", False, "inSeconds(end - start)"),
    "year": Builtin((TIME,), "int", "year", True, "year(validFrom)"),
    "month": Builtin((TIME,), "int", "month", True, "month(validFrom)"),
    "day": Builtin((TIME,), "int", "day", True, "day(validFrom)"),
    "length": Builtin(("string",), "int", "length", True, "length(name)"),
    "contains": Builtin(("string", "string"), "bool", "contains", True, 'contains(name, "x")'),
    "startsWith": Builtin(
        ("string", "string"), "bool", "starts_with", True, 'startsWith(code, "EU-")'
    ),
    "lower": Builtin(("string",), "string", "lower", True, "lower(email)"),
    "upper": Builtin(("string",), "string", "upper", True, "upper(code)"),
    "trim": Builtin(("string",), "string", "trim", True, "trim(name)"),
}
"""The built-ins by their name in the language."""
