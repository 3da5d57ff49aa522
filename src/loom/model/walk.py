"""Walking the IR: every expression and every statement reachable from a piece of a model.

`children` is the one place that knows which fields of which IR node hold code (expressions,
statements, and the declarations, reads and record arguments that hold them); every walk is built
on it, so a back end never keeps a partial copy that misses a field. `tests/model/test_walk.py`
derives from the dataclasses' own fields which ones can hold code and checks that `children`
reaches each of them.

Order is source order, pre-order (a statement before the statements nested in it; an expression
before its operands), so generation that follows a walk stays deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TypeAlias

from loom.model import ir

Decl: TypeAlias = (
    ir.Field
    | ir.Derived
    | ir.Invariant
    | ir.Function
    | ir.Operation
    | ir.Factory
    | ir.Criterion
    | ir.Retrieval
    | ir.Aggregate
    | ir.WorkflowCreate
    | ir.Apply
    | ir.Reaction
    | ir.OnTimeout
    | ir.Timer
    | ir.Workflow
    | ir.Handler
    | ir.ServiceMethod
    | ir.DomainService
    | ir.ValueObject
    | ir.Payload
    | ir.Event
    | ir.Projection
    | ir.Context
    | ir.Model
)
"""The declarations that hold code (directly or through their members)."""

Node: TypeAlias = ir.Expr | ir.Stmt | ir.Read | ir.RecordArg | Decl
"""What the walks start from."""

_LEAVES = (
    ir.Literal_,
    ir.SelfField,
    ir.Param,
    ir.Local,
    ir.EnumMember,
    ir.Now,
    ir.StateField,
    ir.Save,
    ir.NotFoundStmt,
    ir.Delete,
    ir.SaveInstance,
    ir.CancelTimeout,
    ir.CompleteInstance,
)


def _opt(node: Node | None) -> tuple[Node, ...]:
    return () if node is None else (node,)


def _values(pairs: Iterable[tuple[str, ir.Expr | None]]) -> tuple[Node, ...]:
    return tuple(e for _, e in pairs if e is not None)


def children(node: Node) -> tuple[Node, ...]:
    """The IR nodes directly inside `node` that hold (or are) code, in source order."""
    if isinstance(node, _LEAVES):
        return ()
    # -- expressions
    if isinstance(node, ir.Member):
        return (node.obj,)
    if isinstance(node, ir.Unary):
        return (node.operand,)
    if isinstance(node, ir.Binary):
        return (node.left, node.right)
    if isinstance(node, ir.Conditional):
        return (node.condition, node.then, node.otherwise)
    if isinstance(node, ir.Round):
        return (node.value,)
    if isinstance(node, ir.FunctionCall):
        return (*_opt(node.receiver), *node.args)
    if isinstance(node, ir.ServiceCall | ir.CurrentUser | ir.TimeCall | ir.BuiltinCall):
        return node.args
    if isinstance(node, ir.ApiCall):
        return _values(node.args)
    if isinstance(node, ir.ListLiteral):
        return node.items
    if isinstance(node, ir.Construct):
        return node.args
    if isinstance(node, ir.RecordArg):
        return _opt(node.value)
    # -- statements
    if isinstance(node, ir.Precondition):
        return (node.condition,)
    if isinstance(node, ir.Assign | ir.Let | ir.Var | ir.SetLocal | ir.Return | ir.AssignState):
        return (node.value,)
    if isinstance(node, ir.Emit):
        return _values(node.args)
    if isinstance(node, ir.LoadById):
        return (node.id,)
    if isinstance(node, ir.CreateAggregate):
        return _values(node.args)
    if isinstance(node, ir.CallOperation | ir.CallService | ir.CallOwnOperation):
        return node.args
    if isinstance(node, ir.CallApi):
        return (node.call,)
    if isinstance(node, ir.Read):
        return _values(node.args)
    if isinstance(node, ir.Load):
        return (node.read,)
    if isinstance(node, ir.IfLet):
        return (*_opt(node.read), *_opt(node.value), *node.then, *node.otherwise)
    if isinstance(node, ir.If):
        return (node.condition, *node.then, *node.otherwise)
    if isinstance(node, ir.ForEach):
        return (node.items, *node.body)
    if isinstance(node, ir.BindInstance | ir.RouteInstance):
        return (node.key,)
    if isinstance(node, ir.ScheduleTimeout):
        return (*_opt(node.at), *_opt(node.after))
    return _decl_children(node)


def _decl_children(node: Node) -> tuple[Node, ...]:
    if isinstance(node, ir.Field):
        return _opt(node.default)
    if isinstance(node, ir.Derived):
        return (node.value,)
    if isinstance(node, ir.Invariant | ir.Criterion):
        return (node.condition,)
    if isinstance(node, ir.Function):
        return (*_opt(node.value), *node.body)
    if isinstance(node, ir.Operation):
        return (*_opt(node.requires), *_opt(node.when), *node.body)
    if isinstance(node, ir.Retrieval):
        return node.args
    if isinstance(node, ir.Factory | ir.WorkflowCreate | ir.Handler):
        return (*_opt(node.requires), *node.body)
    if isinstance(node, ir.Apply | ir.OnTimeout | ir.Timer | ir.ServiceMethod):
        return node.body
    if isinstance(node, ir.Reaction):
        return (*_opt(node.by), *node.body)
    if isinstance(node, ir.Aggregate):
        return (
            *node.fields,
            *node.derived,
            *node.invariants,
            *_opt(node.factory),
            *node.functions,
            *node.operations,
        )
    if isinstance(node, ir.Workflow):
        return (
            *node.state,
            *node.functions,
            *node.creates,
            *node.applies,
            *node.reactions,
            *node.timeouts,
        )
    if isinstance(node, ir.DomainService):
        return node.methods
    if isinstance(node, ir.ValueObject):
        return (*node.fields, *node.invariants)
    if isinstance(node, ir.Payload | ir.Event):
        return node.fields
    if isinstance(node, ir.Projection):
        rule = () if node.filter is None else (node.filter,)
        return (*node.fields, *node.reactions, *rule)
    if isinstance(node, ir.Context):
        return (
            *node.values,
            *node.payloads,
            *node.aggregates,
            *node.events,
            *node.criteria,
            *node.retrievals,
            *node.workflows,
            *node.handlers,
            *node.services,
            *node.projections,
            *node.timers,
        )
    if isinstance(node, ir.Model):
        return node.contexts
    raise TypeError(f"not an IR node that holds code: {type(node).__name__}")


def nodes(roots: Iterable[Node]) -> Iterator[Node]:
    """Every node of `roots` and inside them, pre-order."""
    for node in roots:
        yield node
        yield from nodes(children(node))


def expressions(*roots: Node) -> Iterator[ir.Expr]:
    """Every expression in `roots` (themselves included), sub-expressions and the expressions of
    nested statements and members too."""
    for node in nodes(roots):
        if isinstance(node, ir.Expr):
            yield node


def statements(*roots: Node) -> Iterator[ir.Stmt]:
    """Every statement in `roots` (themselves included), nested ones too, in source pre-order."""
    for node in roots:
        if isinstance(node, (ir.Read, ir.RecordArg, ir.Expr)):
            continue  # expressions hold no statement: not entered
        if isinstance(node, ir.Stmt):
            yield node
        yield from statements(*children(node))


def calls_api(stmts: Iterable[ir.Stmt]) -> bool:
    """Whether a body calls another context's handler (`resource { kind: api }`): its route may
    answer 502 / 504."""
    return any(isinstance(n, (ir.ApiCall, ir.CallApi)) for n in nodes(stmts))


def body(stmts: Iterable[ir.Stmt]) -> Iterator[ir.Stmt]:
    """Every statement of a body, nested ones included, in source pre-order."""
    return statements(*stmts)


def locals_read(stmts: Iterable[ir.Stmt]) -> set[str]:
    """The names of the locals that `stmts` (nested ones included) read, call or save: what makes
    an earlier `let` binding used."""
    stmts = tuple(stmts)
    used = {e.name for e in expressions(*stmts) if isinstance(e, ir.Local)}
    for stmt in body(stmts):
        if isinstance(stmt, ir.CallOperation):
            used.add(stmt.target)
        elif isinstance(stmt, ir.Save | ir.Delete):
            used.add(stmt.name)
        elif isinstance(stmt, ir.CallService):
            used.update(stmt.mutates)
    return used


def reads_after(stmts: Sequence[ir.Stmt]) -> list[frozenset[str]]:
    """For each statement of a body, `locals_read` of the statements after it, in one pass from
    the end (a body's locals read are the union of its statements'), not once per statement."""
    out: list[frozenset[str]] = [frozenset()] * len(stmts)
    later: frozenset[str] = frozenset()
    for i in range(len(stmts) - 1, -1, -1):
        out[i] = later
        later = later | locals_read((stmts[i],))
    return out
