"""The `then_*` assertions of `given_process` (docs/processes.md, "Testing"), on what a step
decided: a hand-written step's `Decision`, or what a modelled step did (`_step.Stepped`).

Every `then_*` returns the same object, so they chain; each raises AssertionError with what the
step decided when it does not hold. Matchers:

- `then_commands([...])`, in order, one matcher per command: a class (isinstance), a dict of the
  properties that matter, a `(class, dict)` pair, a predicate (any other callable), or a value
  compared with ==;
- `then_timeouts([...])`, in order: a `Timeout` (==), a name, or a dict of the fields that matter
  (`name`, `at`, `after`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, Self, TypeVar

from loom.runtime import DomainEvent
from loom.runtime.processes import Timeout

S = TypeVar("S")
S_co = TypeVar("S_co", covariant=True)


class Decided(Protocol[S_co]):
    """What a step decided: a `Decision` has these, and so has what a modelled step did."""

    @property
    def state(self) -> S_co: ...

    @property
    def commands(self) -> Sequence[DomainEvent]: ...

    @property
    def timeouts(self) -> Sequence[Timeout]: ...

    @property
    def cancel(self) -> Sequence[str]: ...

    @property
    def ended(self) -> bool: ...


class Then(Generic[S]):
    """What the step decided (`decision`, None when it ignored), with assertions that chain."""

    def __init__(self, decision: Decided[S] | None) -> None:
        self.decision = decision

    def _decided(self, what: str) -> Decided[S]:
        if self.decision is None:
            raise AssertionError(f"expected {what}, but the step ignored the event (None)")
        return self.decision

    def then_ignored(self) -> Self:
        if self.decision is not None:
            raise AssertionError(
                f"expected the step to ignore the event, it decided {self.decision}"
            )
        return self

    def then_state(self, expected: S) -> Self:
        state = self._decided("a state").state
        if state != expected:
            raise AssertionError(f"state: expected {expected!r}, decided {state!r}")
        return self

    def then_commands(self, expected: Sequence[Any]) -> Self:
        commands = list(self._decided("commands").commands)
        match_each("command", commands, expected, match_value, commands)
        return self

    def then_timeouts(self, expected: Sequence[Timeout | str | Mapping[str, Any]]) -> Self:
        armed = list(self._decided("timeouts").timeouts)
        if len(armed) != len(expected):
            raise AssertionError(f"timeouts: expected {list(expected)!r}, decided {armed!r}")
        for timeout, matcher in zip(armed, expected, strict=True):
            if isinstance(matcher, Timeout):
                ok = timeout == matcher
            elif isinstance(matcher, str):
                ok = timeout.name == matcher
            else:
                ok = all(getattr(timeout, k, _MISSING) == v for k, v in matcher.items())
            if not ok:
                raise AssertionError(f"timeouts: expected {list(expected)!r}, decided {armed!r}")
        return self

    def then_cancelled(self, expected: Sequence[str]) -> Self:
        cancelled = list(self._decided("cancelled timeouts").cancel)
        if cancelled != list(expected):
            raise AssertionError(f"cancelled: expected {list(expected)!r}, decided {cancelled!r}")
        return self

    def then_ended(self, ended: bool = True) -> Self:
        decision = self._decided("an ended process" if ended else "a running process")
        if decision.ended != ended:
            raise AssertionError(
                "expected the process to end" if ended else "expected the process not to end"
            )
        return self


_MISSING = object()
T = TypeVar("T")


def match_each(
    what: str,
    decided: Sequence[T],
    expected: Sequence[Any],
    match: Callable[[T, Any], str | None],
    shown: object,
) -> None:
    """One matcher per decided `what` (a command, a call), in order; `shown` is what a count that
    differs shows of them."""
    if len(decided) != len(expected):
        raise AssertionError(
            f"{what}s: expected {len(expected)}, decided {len(decided)}: {shown!r}"
        )
    for i, (value, matcher) in enumerate(zip(decided, expected, strict=True)):
        problem = match(value, matcher)
        if problem:
            raise AssertionError(f"{what} {i + 1}: {problem}")


def match_value(command: object, matcher: Any) -> str | None:
    """None when `command` matches, else why not."""
    if isinstance(matcher, tuple) and len(matcher) == 2 and isinstance(matcher[0], type):
        return match_value(command, matcher[0]) or match_value(command, matcher[1])
    if isinstance(matcher, type):
        if isinstance(command, matcher):
            return None
        return f"expected a {matcher.__name__}, decided {command!r}"
    if isinstance(matcher, Mapping):
        wrong = {
            k: getattr(command, k, _MISSING)
            for k, v in matcher.items()
            if getattr(command, k, _MISSING) != v
        }
        if not wrong:
            return None
        shown = {k: ("<missing>" if v is _MISSING else v) for k, v in wrong.items()}
        return f"expected {dict(matcher)!r}, but {command!r} has {shown!r}"
    if callable(matcher):
        predicate: Callable[[object], bool] = matcher
        return None if predicate(command) else f"the predicate refused {command!r}"
    return None if command == matcher else f"expected {matcher!r}, decided {command!r}"
