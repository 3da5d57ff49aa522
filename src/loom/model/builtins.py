"""The built-in functions of expressions that compute on a value: calendar arithmetic
(`addMonths`, `addYears`), a duration as a number (`inDays` … `inSeconds`), the parts of a date
(`year`, `month`, `day`), the string functions (`length`, `contains`, `startsWith`, `lower`,
`upper`, `trim`), the list functions (`count`, `sum`) and `isPresent`. The one table the checker types them by, the code generator calls them by and
criteria translate them by. (The time functions `today()`, `days(n)`, `dateOf(t)` … are
`model.time`; `round` is `ir.Round`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from loom.model.ir import BuiltinCall


@dataclass(frozen=True, slots=True)
class Builtin:
    """One built-in: the primitive type names of its parameters (or `TIME`, `LIST`, `NUMBERS`,
    `OPTIONAL`), its result (`TIME`, `ELEMENT`: a type of its first argument), the function of
    `loom.runtime.builtins` that computes it, whether a criterion can compute it in SQL, and an
    example call for the help of a wrong call."""

    params: tuple[str, ...]
    result: str
    runtime: str
    sql: bool
    sample: str


TIME: Final = "time"
"""A parameter or result that is a `date` or a `datetime` (the result: the argument's type)."""
LIST: Final = "list"
"""A parameter that is a list of any element type."""
NUMBERS: Final = "numbers"
"""A parameter that is a list of `int`, `decimal` or `duration`."""
OPTIONAL: Final = "optional"
"""A parameter that is an optional value (`T?`) of any type."""
ELEMENT: Final = "element"
"""A result that is the element type of the (list) argument."""

SUMS: Final = {"int": "sum_ints", "decimal": "sum_decimals", "duration": "sum_durations"}
"""The function of `loom.runtime.builtins` that sums a list, by the name of its element type."""

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
    "count": Builtin((LIST,), "int", "count", False, "count(lines)"),
    "sum": Builtin((NUMBERS,), ELEMENT, "sum_ints", False, "sum(amounts)"),
    "isPresent": Builtin((OPTIONAL,), "bool", "is_present", True, "isPresent(settledAt)"),
}
"""The built-ins by their name in the language."""


def runtime_function(call: BuiltinCall) -> str:
    """The function of `loom.runtime.functions` computing `call` (`sum` has one per element type,
    which is its result's)."""
    if call.function == "sum":
        return SUMS[getattr(call.type, "name", "int")]
    return BUILTINS[call.function].runtime
