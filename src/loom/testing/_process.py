"""given / when / then for process-manager steps: pure, no store, no bus, no clock.

    given_process(None).when(lambda cur: Deadline.requested(booked, cur)) \\
        .then_state({"appointment": "a-1"}) \\
        .then_timeouts([Timeout("deadline", at=deadline)]) \\
        .then_commands([])

    given_process(watching).when(Deadline.confirmed).then_cancelled(["deadline"]).then_ended()
    given_process(None).when(Deadline.confirmed).then_ignored()

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
from typing import Any, Generic, TypeVar

from loom.runtime.processes import Decision, ProcessManager, Step, Timeout

S = TypeVar("S")


def given_process(state: S | None, *, process: ProcessManager[S] | None = None) -> Given[S]:
    """The state a step starts from (None: no instance yet). With `process`, the given state and
    the decided one must be states `process.is_state` recognises, as the runner requires."""
    if process is not None and state is not None and not process.is_state(state):
        raise AssertionError(f"the given state is not a {process.name} state: {state!r}")
    return Given(state, process)


class Given(Generic[S]):
    def __init__(self, state: S | None, process: ProcessManager[S] | None) -> None:
        self.state = state
        self.process = process

    def when(self, step: Step[S]) -> Then[S]:
        """Run the step once on the given state."""
        decision = step(self.state)
        if decision is not None and not isinstance(decision, Decision):
            raise AssertionError(f"a step answers a Decision or None, not {decision!r}")
        process = self.process
        if process is not None and decision is not None and not process.is_state(decision.state):
            raise AssertionError(
                f"the step decided a state {process.name}.is_state does not recognise: "
                f"{decision.state!r}"
            )
        return Then(decision)


class Then(Generic[S]):
    """What the step decided (`decision`, None when it ignored), with assertions that chain."""

    def __init__(self, decision: Decision[S] | None) -> None:
        self.decision = decision

    def _decided(self, what: str) -> Decision[S]:
        if self.decision is None:
            raise AssertionError(f"expected {what}, but the step ignored the event (None)")
        return self.decision

    def then_ignored(self) -> Then[S]:
        if self.decision is not None:
            raise AssertionError(
                f"expected the step to ignore the event, it decided {self.decision}"
            )
        return self

    def then_state(self, expected: S) -> Then[S]:
        state = self._decided("a state").state
        if state != expected:
            raise AssertionError(f"state: expected {expected!r}, decided {state!r}")
        return self

    def then_commands(self, expected: Sequence[Any]) -> Then[S]:
        commands = list(self._decided("commands").commands)
        if len(commands) != len(expected):
            raise AssertionError(
                f"commands: expected {len(expected)}, decided {len(commands)}: {commands!r}"
            )
        for i, (command, matcher) in enumerate(zip(commands, expected, strict=True)):
            problem = _match_command(command, matcher)
            if problem:
                raise AssertionError(f"command {i + 1}: {problem}")
        return self

    def then_timeouts(self, expected: Sequence[Timeout | str | Mapping[str, Any]]) -> Then[S]:
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

    def then_cancelled(self, expected: Sequence[str]) -> Then[S]:
        cancelled = list(self._decided("cancelled timeouts").cancel)
        if cancelled != list(expected):
            raise AssertionError(f"cancelled: expected {list(expected)!r}, decided {cancelled!r}")
        return self

    def then_ended(self, ended: bool = True) -> Then[S]:
        decision = self._decided("an ended process" if ended else "a running process")
        if decision.ended != ended:
            raise AssertionError(
                "expected the process to end" if ended else "expected the process not to end"
            )
        return self


_MISSING = object()


def _match_command(command: object, matcher: Any) -> str | None:
    """None when `command` matches, else why not."""
    if isinstance(matcher, tuple) and len(matcher) == 2 and isinstance(matcher[0], type):
        return _match_command(command, matcher[0]) or _match_command(command, matcher[1])
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
