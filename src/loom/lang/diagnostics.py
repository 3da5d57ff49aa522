"""The `Diagnostic` value every stage reports, its `Span`, the `Sink` that collects them, and the
"did you mean" suggestions. The codes themselves, with their severities, are in `loom.lang.codes`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields

from loom.lang.codes import REGISTRY, Severity


@dataclass(frozen=True, slots=True)
class Span:
    """A source range. Lines and columns are 1-based; `end_column` is exclusive.

    `start`/`end` are character offsets into the file's text; they let the checker quote the exact
    source of an expression (the IR keeps it for error messages at run time).
    """

    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0
    end: int = 0

    def tail(self, length: int) -> Span:
        """The last `length` characters of the span (its last line's): `E` of `Ctx.E`."""
        return Span(
            self.file,
            self.end_line,
            self.end_column - length,
            self.end_line,
            self.end_column,
            self.end - length,
            self.end,
        )


def _span_init() -> Callable[..., None]:
    """`Span.__init__`, the same parameters setting the same fields. The parser makes one Span per
    token and per rule (some 90,000 for a model of 1,000 aggregates); a frozen dataclass's own
    `__init__` sets each field through `object.__setattr__`, twice as slow as calling the slots'
    own setters, as this one does."""
    set_file, set_line, set_column, set_end_line, set_end_column, set_start, set_end = (
        getattr(Span, f.name).__set__ for f in fields(Span)
    )

    def __init__(
        self: Span,
        file: str,
        line: int,
        column: int,
        end_line: int,
        end_column: int,
        start: int = 0,
        end: int = 0,
    ) -> None:
        set_file(self, file)
        set_line(self, line)
        set_column(self, column)
        set_end_line(self, end_line)
        set_end_column(self, end_column)
        set_start(self, start)
        set_end(self, end)

    __init__.__qualname__ = "Span.__init__"
    return __init__


Span.__init__ = _span_init()  # type: ignore[method-assign]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    label: str = ""
    secondary: tuple[tuple[Span, str], ...] = ()
    help: str | None = None
    severity: Severity = field(default="error")

    @staticmethod
    def make(
        code: str,
        message: str,
        span: Span,
        label: str = "",
        *,
        secondary: tuple[tuple[Span, str], ...] | list[tuple[Span, str]] = (),
        help: str | None = None,
        warning: bool = False,
    ) -> Diagnostic:
        # Severity comes from the registry, so an unregistered code fails loudly in tests (and is
        # turned into loom.internal-error at the compiler boundary in production). `warning`: the
        # milder form of a code that is an error in its other form (`loom.context-cycle`).
        info = REGISTRY[code]
        severity: Severity = "warning" if warning else info.severity
        return Diagnostic(code, message, span, label, tuple(secondary), help, severity)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.file, self.span.line, self.span.column, self.code)


class Sink:
    """Collects diagnostics for one compilation."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        label: str = "",
        *,
        secondary: tuple[tuple[Span, str], ...] | list[tuple[Span, str]] = (),
        help: str | None = None,
        warning: bool = False,
    ) -> None:
        self.items.append(
            Diagnostic.make(
                code, message, span, label, secondary=secondary, help=help, warning=warning
            )
        )

    @property
    def has_errors(self) -> bool:
        return any(d.severity == "error" for d in self.items)


# --------------------------------------------------------------------------------------------------
# "Did you mean" support, shared by every unknown-* rule.


def _osa_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance: Levenshtein plus adjacent transpositions (`cerate`)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate, if it is close enough to be a plausible typo of `name`."""
    best: tuple[int, str] | None = None
    limit = max(1, len(name) // 3)
    for cand in sorted(set(candidates)):
        if cand == name:
            continue
        if cand.lower() == name.lower():
            return cand
        d = _osa_distance(name.lower(), cand.lower())
        if d <= limit and (best is None or d < best[0]):
            best = (d, cand)
    return best[1] if best else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    s = suggest(name, candidates)
    return f"did you mean `{s}`?" if s else None
