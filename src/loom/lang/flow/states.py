"""`loom.state-unreachable` and `loom.state-dead-end`, on the aggregates' state machines as
`loom.model.states` reads them (the `states` diagram draws the same machines)."""

from __future__ import annotations

from loom.lang.diagnostics import Sink
from loom.lang.flow.spans import Spans
from loom.model.states import StateMachine


def check_states(machines: list[StateMachine], spans: Spans, sink: Sink) -> None:
    for m in machines:
        owner = f"`{m.aggregate.name}.{m.field.name}`"
        for state in m.enum.members:
            if state not in m.reachable:
                code, label = "loom.state-unreachable", "unreachable"
                message = (
                    f"{owner} can never be `{state}`: no operation moves it there from its "
                    f"initial state ({_names(m.initial)})"
                )
                fix = (
                    f"add an operation that assigns `{m.field.name} := {state}` from a state it "
                    "can reach (check the `when` gates), or remove the member"
                )
            elif state not in m.enum.terminal and not (m.exits(state) - {state}):
                code, label = "loom.state-dead-end", "no way out"
                message = (
                    f"once {owner} is `{state}`, no operation moves it on, and `{state}` is not "
                    "declared terminal"
                )
                fix = (
                    f"if the flow ends there, say so: `{state} terminal` in enum `{m.enum.name}`; "
                    f"otherwise add an operation whose `when` admits `{state}` and assigns "
                    "another state"
                )
            else:
                continue
            sink.report(
                code,
                message,
                spans.member(m.enum.origin, state),
                label,
                secondary=[(spans.word(m.field.origin, m.field.name), "the state field")],
                help=fix,
            )


def _names(states: frozenset[str]) -> str:
    return ", ".join(f"`{s}`" for s in sorted(states))
