"""The time functions of expressions: `today()`, the computed durations `seconds(n)`,
`minutes(n)`, `hours(n)`, `days(n)`, and the conversions `dateOf(t)` / `startOf(d)`.

(`now()` is `ir.Now`; duration, date and datetime literals are `ir.Literal_`: a duration's value is
its microseconds, a date's and a datetime's the ISO text. Arithmetic on times is `ir.Binary`, typed
by the checker: datetime ± duration, datetime - datetime, date ± whole days, date - date,
duration ± duration, duration * int, comparisons of like with like.)
"""

from __future__ import annotations

from typing import Final

SPANS: Final = {"seconds": 1, "minutes": 60, "hours": 3_600, "days": 86_400}
"""The computed durations and their unit in seconds."""

ARITHMETIC: Final[dict[tuple[str, str, str], tuple[str, str | None, bool]]] = {
    ("datetime", "+", "duration"): ("datetime", "datetime_plus", False),
    ("duration", "+", "datetime"): ("datetime", "datetime_plus", True),
    ("datetime", "-", "duration"): ("datetime", "datetime_minus", False),
    ("datetime", "-", "datetime"): ("duration", None, False),
    ("date", "+", "duration"): ("date", "date_plus", False),
    ("duration", "+", "date"): ("date", "date_plus", True),
    ("date", "-", "duration"): ("date", "date_minus", False),
    ("date", "-", "date"): ("duration", "days_between", False),
    ("duration", "+", "duration"): ("duration", "duration_plus", False),
    ("duration", "-", "duration"): ("duration", "duration_minus", False),
    ("duration", "*", "int"): ("duration", "times", False),
    ("int", "*", "duration"): ("duration", "times", True),
}
"""The arithmetic on times, by the primitive types of (left, op, right): the result's type, the
`loom.runtime.times` function that computes it (None: Python's operator, which cannot fail), and
whether that function takes the operands swapped (`d + t` is `datetime_plus(t, d)`)."""
