"""Aggregates' state machines, read from the IR: what the flow checks judge
(`loom.state-unreachable`, `loom.state-dead-end`) and the `states` diagram draws, one reading.

A state machine is an enum-typed field of an aggregate that its operations assign: its states are
the enum's members, its initial states the field's default and what the factory or a create assigns,
its transitions each operation's assignments of a member (its own, and those of the operations of
its aggregate it calls), from each state in which the operation's `when` gate can hold. Whatever
this cannot follow makes it give up on the field (no finding rather than a wrong one): an
assignment of something other than a member (`status := next`), a field a client may set (a
`crudish` aggregate's PATCH), an `extern` operation (its Python may assign anything). The reading
errs towards more transitions: every assignment in an operation's body counts (an `if` around it
is not followed), and a gate it cannot decide may hold. A gate is read through the derived values
it names (`derived held: bool = status == Held`, `when held`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from loom.model import ir
from loom.model.flow import Flow, UnitKey

# a derived value a gate reads, inlined at most this deep (a derived may read another)
_DEPTH = 8


@dataclass(frozen=True, slots=True)
class StateMachine:
    context: str
    aggregate: ir.Aggregate
    field: ir.Field
    enum: ir.Enum
    initial: frozenset[str]
    # per operation: the members it assigns to the field (every operation, assigning or not)
    moves: tuple[tuple[ir.Operation, frozenset[str]], ...]
    # per state: the operations (by name) whose `when` can hold in it
    runnable: Mapping[str, frozenset[str]]
    # per state: the states an operation can move it to
    edges: Mapping[str, frozenset[str]]
    reachable: frozenset[str]
    # per state: each operation that can move it from there, with the states it can move it to
    # (its own gate and those of the operations of its own it calls read in that state)
    transitions: Mapping[str, tuple[tuple[ir.Operation, frozenset[str]], ...]]

    def can_run(self, op: ir.Operation, state: str) -> bool:
        return op.name in self.runnable[state]

    def exits(self, state: str) -> frozenset[str]:
        """The states an operation can move `state` to."""
        return self.edges[state]


def may_hold(
    e: ir.Expr, field: str, state: str, aggregate: ir.Aggregate | None = None, depth: int = _DEPTH
) -> bool | None:
    """Whether condition `e` holds when the field is in `state`: True, False, or None when it
    depends on something else. With `aggregate`, a derived value `e` names is read too."""
    if isinstance(e, ir.Unary) and e.op == "!":
        inner = may_hold(e.operand, field, state, aggregate, depth)
        return None if inner is None else not inner
    if isinstance(e, ir.Literal_) and isinstance(e.value, bool):
        return e.value
    if isinstance(e, ir.SelfField) and e.kind == "derived" and aggregate is not None and depth:
        derived = next((d for d in aggregate.derived if d.name == e.name), None)
        return (
            None if derived is None else may_hold(derived.value, field, state, aggregate, depth - 1)
        )
    if not isinstance(e, ir.Binary):
        return None
    if e.op in ("&&", "||"):
        left = may_hold(e.left, field, state, aggregate, depth)
        right = may_hold(e.right, field, state, aggregate, depth)
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


_Assigned = dict[str, frozenset[str] | None]
"""Per field, the members a body assigns to it; None when one assignment is not a member."""


def _assigned(flat: tuple[ir.Stmt, ...]) -> _Assigned:
    out: dict[str, set[str] | None] = {}
    for stmt in flat:
        if isinstance(stmt, ir.Assign):
            members = _members_of(stmt.value) if stmt.op == ":=" else None
            known = out.setdefault(stmt.field, set())
            if members is None or known is None:
                out[stmt.field] = None
            else:
                known |= members
    return {f: None if m is None else frozenset(m) for f, m in out.items()}


def state_machines(flow: Flow) -> list[StateMachine]:
    model = flow.model
    enums = {(c.name, e.name): e for c in model.contexts for e in c.enums}
    out: list[StateMachine] = []
    for ctx in model.contexts:
        for agg in ctx.aggregates:
            fields = [
                f
                for f in agg.fields
                if isinstance(f.type, ir.EnumType)
                and (f.read_only or f.immutable or not agg.crudish)  # else a PATCH may set it
            ]
            if not fields or any(op.extern for op in agg.operations):
                continue
            ops = [(op, _assigned(_with_calls(flow, ctx.name, agg, op))) for op in agg.operations]
            factory = _assigned(_flat(flow, ("factory", ctx.name, agg.name)))
            for f in fields:
                assert isinstance(f.type, ir.EnumType)
                enum = enums.get((f.type.context, f.type.name))
                moves = tuple((op, assigned.get(f.name, frozenset())) for op, assigned in ops)
                if enum is None or not any(targets for _, targets in moves):
                    continue  # not a state machine: no operation moves it
                if any(targets is None for _, targets in moves):
                    continue  # an assignment this cannot follow
                creates = flow.creates.get((ctx.name, agg.name), [])
                initial = _initial(agg, f, enum, factory, creates)
                if initial is None:
                    continue
                known = tuple((op, targets) for op, targets in moves if targets is not None)
                out.append(_machine(flow, ctx.name, agg, f, enum, initial, known))
    return out


def _flat(flow: Flow, unit: UnitKey) -> tuple[ir.Stmt, ...]:
    body = flow.units.get(unit)
    return body.flat if body is not None else ()


def _with_calls(
    flow: Flow, context: str, agg: ir.Aggregate, op: ir.Operation
) -> tuple[ir.Stmt, ...]:
    """The statements `op` runs: its own, and those of the operations of its aggregate it calls
    (a private operation moves the machine inside its callers)."""
    out: list[ir.Stmt] = []
    seen: set[str] = set()
    todo = [op.name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        flat = _flat(flow, ("op", context, agg.name, name))
        out += flat
        todo += [s.operation for s in flat if isinstance(s, ir.CallOwnOperation)]
    return tuple(out)


def _initial(
    agg: ir.Aggregate,
    f: ir.Field,
    enum: ir.Enum,
    factory: _Assigned,
    creates: list[ir.CreateAggregate],
) -> frozenset[str] | None:
    everything = frozenset(enum.members)
    start: set[str] = set()
    if (default := _member(f.default)) is not None:
        start.add(default)
    if agg.factory is not None:
        assigned = factory.get(f.name, frozenset())
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


def _machine(
    flow: Flow,
    context: str,
    agg: ir.Aggregate,
    f: ir.Field,
    enum: ir.Enum,
    initial: frozenset[str],
    moves: tuple[tuple[ir.Operation, frozenset[str]], ...],
) -> StateMachine:
    """The machine with its gates read once per state and operation, and its reachable states."""
    runnable = {
        state: frozenset(
            op.name
            for op, _ in moves
            if op.when is None or may_hold(op.when, f.name, state, agg) is not False
        )
        for state in enum.members
    }
    transitions = {
        state: tuple(
            (op, found)
            for op, _ in moves
            if (found := _targets(flow, context, agg, op, f.name, state, frozenset()))
        )
        for state in enum.members
    }
    edges = {
        state: frozenset(t for _, targets in transitions[state] for t in targets)
        for state in enum.members
    }
    seen = set(initial)
    queue = deque(sorted(initial))
    while queue:
        for nxt in edges.get(queue.popleft(), frozenset()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return StateMachine(
        context, agg, f, enum, initial, moves, runnable, edges, frozenset(seen), transitions
    )


def _targets(
    flow: Flow,
    context: str,
    agg: ir.Aggregate,
    op: ir.Operation,
    field: str,
    state: str,
    calling: frozenset[str],
) -> frozenset[str]:
    """The members `op` may assign to `field` when it runs in `state`: none when its gate refuses
    it there; its own assignments, and those of the operations of its own it calls, each read
    with its own gate (its assignments are members: `state_machines` gave up otherwise)."""
    if op.when is not None and may_hold(op.when, field, state, agg) is False:
        return frozenset()
    out: set[str] = set()
    for stmt in _flat(flow, ("op", context, agg.name, op.name)):
        if isinstance(stmt, ir.Assign) and stmt.field == field:
            out |= _members_of(stmt.value) or frozenset()
        elif isinstance(stmt, ir.CallOwnOperation) and stmt.operation not in calling:
            callee = next((o for o in agg.operations if o.name == stmt.operation), None)
            if callee is not None:
                out |= _targets(flow, context, agg, callee, field, state, calling | {op.name})
    return frozenset(out)
