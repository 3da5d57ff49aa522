"""Aggregates' state machines, and `loom.state-unreachable` / `loom.state-dead-end`.

A state machine is an enum-typed field of an aggregate that its operations assign: its states are
the enum's members, its initial states the field's default and what the factory or a create assigns,
its transitions each operation's assignments of a member, from each state in which the operation's
`when` gate can hold. Whatever this cannot follow makes it give up on the field (no warning rather
than a wrong one): an assignment of something other than a member (`status := next`), a field a
client may set (a `crudish` aggregate's PATCH), an `extern` operation (its Python may assign
anything). The reading errs towards more transitions: every assignment in an operation's body
counts (an `if` around it is not followed), and a gate it cannot decide may hold.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from loom.lang.diagnostics import Sink
from loom.lang.flow.spans import Spans
from loom.model import ir, walk


@dataclass(frozen=True, slots=True)
class StateMachine:
    context: str
    aggregate: ir.Aggregate
    field: ir.Field
    enum: ir.Enum
    initial: frozenset[str]
    # per operation: the members it assigns to the field (every operation, assigning or not)
    moves: tuple[tuple[ir.Operation, frozenset[str]], ...]
    reachable: frozenset[str]

    def can_run(self, op: ir.Operation, state: str) -> bool:
        return op.when is None or may_hold(op.when, self.field.name, state) is not False

    def exits(self, state: str) -> frozenset[str]:
        """The states an operation can move `state` to."""
        out: set[str] = set()
        for op, targets in self.moves:
            if targets and self.can_run(op, state):
                out |= targets
        return frozenset(out)


def may_hold(e: ir.Expr, field: str, state: str) -> bool | None:
    """Whether condition `e` holds when the field is in `state`: True, False, or None when it
    depends on something else."""
    if isinstance(e, ir.Unary) and e.op == "!":
        inner = may_hold(e.operand, field, state)
        return None if inner is None else not inner
    if isinstance(e, ir.Literal_) and isinstance(e.value, bool):
        return e.value
    if not isinstance(e, ir.Binary):
        return None
    if e.op in ("&&", "||"):
        left, right = may_hold(e.left, field, state), may_hold(e.right, field, state)
        if e.op == "&&":
            return False if False in (left, right) else (True if left and right else None)
        return True if True in (left, right) else (False if left is right is False else None)
    if e.op in ("==", "!="):
        member = _compared(e.left, e.right, field) or _compared(e.right, e.left, field)
        if member is None:
            return None
        return (state == member) == (e.op == "==")
    if e.op == "in" and _is_field(e.left, field) and isinstance(e.right, ir.ListLiteral):
        members = [_member(i) for i in e.right.items]
        if None in members:
            return None
        return state in members
    return None


def _is_field(e: ir.Expr, field: str) -> bool:
    return isinstance(e, ir.SelfField) and e.name == field and e.kind == "field"


def _member(e: ir.Expr | None) -> str | None:
    return e.member if isinstance(e, ir.EnumMember) else None


def _compared(a: ir.Expr, b: ir.Expr, field: str) -> str | None:
    return _member(b) if _is_field(a, field) else None


def _members_of(e: ir.Expr | None) -> frozenset[str] | None:
    """The members an assigned value can be (a member, or a conditional between members); None
    when it can be anything."""
    if isinstance(e, ir.EnumMember):
        return frozenset((e.member,))
    if isinstance(e, ir.Conditional):
        then, other = _members_of(e.then), _members_of(e.otherwise)
        return None if then is None or other is None else then | other
    return None


def _assigned(stmts: tuple[ir.Stmt, ...], field: str) -> frozenset[str] | None:
    """The members `stmts` assign to the field; None when one assignment is not a member."""
    out: set[str] = set()
    for stmt in walk.body(stmts):
        if isinstance(stmt, ir.Assign) and stmt.field == field:
            members = _members_of(stmt.value) if stmt.op == ":=" else None
            if members is None:
                return None
            out |= members
    return frozenset(out)


def _created_with(model: ir.Model) -> dict[tuple[str, str], list[ir.CreateAggregate]]:
    """Every `Agg.create(…)` of the model, by (context, aggregate)."""
    out: dict[tuple[str, str], list[ir.CreateAggregate]] = {}
    for ctx in model.contexts:
        for stmt in walk.statements(ctx):
            if isinstance(stmt, ir.CreateAggregate):
                out.setdefault((ctx.name, stmt.aggregate), []).append(stmt)
    return out


def state_machines(model: ir.Model) -> list[StateMachine]:
    enums = {(c.name, e.name): e for c in model.contexts for e in c.enums}
    creates: dict[tuple[str, str], list[ir.CreateAggregate]] | None = None
    out: list[StateMachine] = []
    for ctx in model.contexts:
        for agg in ctx.aggregates:
            if any(op.extern for op in agg.operations):
                continue
            for f in agg.fields:
                if not isinstance(f.type, ir.EnumType) or (
                    agg.crudish and not (f.read_only or f.immutable)
                ):
                    continue
                enum = enums.get((f.type.context, f.type.name))
                moves = _moves(agg, f.name)
                if enum is None or moves is None or not any(t for _, t in moves):
                    continue
                if creates is None:
                    creates = _created_with(model)
                initial = _initial(agg, f, enum, creates.get((ctx.name, agg.name), []))
                if initial is None:
                    continue
                unexplored = StateMachine(ctx.name, agg, f, enum, initial, moves, frozenset())
                out.append(replace(unexplored, reachable=_reach(unexplored)))
    return out


def _moves(agg: ir.Aggregate, field: str) -> tuple[tuple[ir.Operation, frozenset[str]], ...] | None:
    out = []
    for op in agg.operations:
        targets = _assigned(op.body, field)
        if targets is None:
            return None
        out.append((op, targets))
    return tuple(out)


def _initial(
    agg: ir.Aggregate, f: ir.Field, enum: ir.Enum, creates: list[ir.CreateAggregate]
) -> frozenset[str] | None:
    everything = frozenset(enum.members)
    start: set[str] = set()
    if (default := _member(f.default)) is not None:
        start.add(default)
    if agg.factory is not None:
        assigned = _assigned(agg.factory.body, f.name)
        return None if assigned is None else frozenset(start | assigned) or None
    if agg.crudish and not f.read_only:
        return everything  # its POST takes the field
    for create in creates:
        for name, value in create.args:
            if name == f.name and value is not None:
                members = _members_of(value)
                if members is None:
                    return everything
                start |= members
    return frozenset(start) or None


def _reach(m: StateMachine) -> frozenset[str]:
    seen = set(m.initial)
    queue = deque(sorted(m.initial))
    while queue:
        for nxt in m.exits(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return frozenset(seen)


def check_states(machines: list[StateMachine], spans: Spans, sink: Sink) -> None:
    for m in machines:
        owner = f"`{m.aggregate.name}.{m.field.name}`"
        field_span = spans.word(m.field.origin, m.field.name)
        for state in m.enum.members:
            at = spans.member(m.enum.origin, state)
            if state not in m.reachable:
                sink.report(
                    "loom.state-unreachable",
                    f"{owner} can never be `{state}`: no operation moves it there from its "
                    f"initial state ({_names(m.initial)})",
                    at,
                    "unreachable",
                    secondary=[(field_span, "the state field")],
                    help=f"add an operation that assigns `{m.field.name} := {state}` from a state "
                    "it can reach (check the `when` gates), or remove the member",
                )
            elif state not in m.enum.terminal and not (m.exits(state) - {state}):
                sink.report(
                    "loom.state-dead-end",
                    f"once {owner} is `{state}`, no operation moves it on, and `{state}` is not "
                    "declared terminal",
                    at,
                    "no way out",
                    secondary=[(field_span, "the state field")],
                    help=f"if the flow ends there, say so: `{state} terminal` in enum "
                    f"`{m.enum.name}`; otherwise add an operation whose `when` admits `{state}` "
                    f"and assigns another state",
                )


def _names(states: frozenset[str]) -> str:
    return ", ".join(f"`{s}`" for s in sorted(states))
