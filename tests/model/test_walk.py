"""The IR walkers reach every field that can hold code.

Which fields can hold an expression or a statement is derived from the IR dataclasses themselves
(`dataclasses.fields` and the type hints of `loom.model.ir`): directly, optional, in tuples, or
through a record such as `Read` or `Field`. For each such field of each node, the test builds an
instance with a fresh sentinel there and asserts that `walk.expressions` / `walk.statements` visit
it. A new IR node or field that the walker forgets fails here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest

from loom.model import ir, walk

EXPR_CLASSES = frozenset(get_args(ir.Expr))
STMT_CLASSES = frozenset(get_args(ir.Stmt))
Kind = Literal["expr", "stmt"]
KINDS: tuple[Kind, ...] = ("expr", "stmt")
TARGETS: dict[Kind, frozenset[type]] = {"expr": EXPR_CLASSES, "stmt": STMT_CLASSES}

# the IR's nodes: those of the ir package's modules
NODE_CLASSES = sorted(
    (
        obj
        for module in (ir,)
        for obj in vars(module).values()
        if isinstance(obj, type)
        and dataclasses.is_dataclass(obj)
        and (obj.__module__ + ".").startswith(module.__name__ + ".")  # the ir package's modules too
    ),
    key=lambda c: c.__name__,
)
HINTED = NODE_CLASSES
# each class's module's names, and the IR's: the ir package's modules import some only for the
# type checker
HINTS = {cls: get_type_hints(cls, None, vars(ir)) for cls in HINTED}


def _init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields a node is built from (not those it derives, such as a context's look-up index)."""
    return [f for f in dataclasses.fields(cls) if f.init]


def _members(hint: Any) -> tuple[Any, ...]:
    """The alternatives of a union hint (`A | B`, `Optional[A]`), else the hint itself."""
    if isinstance(hint, types.UnionType) or get_origin(hint) is typing.Union:
        return get_args(hint)
    return (hint,)


def holds(hint: Any, kind: Kind, seen: frozenset[Any] = frozenset()) -> bool:
    """Whether a value of type `hint` can contain code of `kind`."""
    if hint in seen:
        return False
    seen = seen | {hint}
    if len(_members(hint)) > 1:
        return any(holds(m, kind, seen) for m in _members(hint))
    if hint in TARGETS[kind]:
        return True
    if get_origin(hint) is tuple:
        return any(holds(a, kind, seen) for a in get_args(hint) if a is not Ellipsis)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return any(holds(h, kind, seen) for h in HINTS[hint].values())
    return False


def sample(hint: Any) -> Any:
    """Some value of type `hint` (holding no sentinel)."""
    if hint is type(None):
        return None
    if hint in (str, int, bool):
        return hint()
    if get_origin(hint) is Literal:
        return get_args(hint)[0]
    members = _members(hint)
    if len(members) > 1:
        return None if type(None) in members else sample(members[0])
    if get_origin(hint) is tuple:
        args = get_args(hint)
        return () if Ellipsis in args else tuple(sample(a) for a in args)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint(**{f.name: sample(HINTS[hint][f.name]) for f in _init_fields(hint)})
    raise TypeError(f"no sample for {hint!r}")


def with_sentinel(hint: Any, kind: Kind) -> tuple[Any, Any]:
    """(a value of type `hint` holding a fresh node of `kind`, that node)."""
    members = _members(hint)
    direct = [m for m in members if m in TARGETS[kind]]
    if direct:
        sentinel = sample(direct[0])
        return sentinel, sentinel
    if len(members) > 1:
        return with_sentinel(next(m for m in members if holds(m, kind)), kind)
    if get_origin(hint) is tuple:
        args = get_args(hint)
        if Ellipsis in args:
            value, sentinel = with_sentinel(args[0], kind)
            return (value,), sentinel
        at = next(i for i, a in enumerate(args) if holds(a, kind))
        value, sentinel = with_sentinel(args[at], kind)
        return tuple(value if i == at else sample(a) for i, a in enumerate(args)), sentinel
    field = next(f for f in _init_fields(hint) if holds(HINTS[hint][f.name], kind))
    return build(hint, field.name, kind)


def build(cls: type, field: str, kind: Kind) -> tuple[Any, Any]:
    """(an instance of `cls` with a sentinel of `kind` in `field`, the sentinel)."""
    value, sentinel = with_sentinel(HINTS[cls][field], kind)
    others = {f.name: sample(HINTS[cls][f.name]) for f in _init_fields(cls) if f.name != field}
    return cls(**others, **{field: value}), sentinel


CASES = [
    (cls, f.name, kind)
    for cls in NODE_CLASSES
    for f in _init_fields(cls)
    for kind in KINDS
    if holds(HINTS[cls][f.name], kind)
]


def test_the_cases_cover_the_ir() -> None:
    """The derivation finds the fields it should (a broken one would make every case vacuous)."""
    found = {(cls.__name__, name, kind) for cls, name, kind in CASES}
    expected = {
        ("ScheduleTimeout", "at", "expr"),
        ("CallOwnOperation", "args", "expr"),
        ("Construct", "args", "expr"),
        ("IfLet", "read", "expr"),
        ("IfLet", "otherwise", "stmt"),
        ("Operation", "requires", "expr"),
        ("Workflow", "timeouts", "stmt"),
        ("Context", "timers", "stmt"),
        ("Model", "contexts", "expr"),
    }
    assert expected <= found
    assert len(CASES) > 80


@pytest.mark.parametrize(
    ("cls", "field", "kind"), CASES, ids=[f"{c.__name__}.{f}-{k}" for c, f, k in CASES]
)
def test_walker_visits_field(cls: type, field: str, kind: Kind) -> None:
    node, sentinel = build(cls, field, kind)
    if kind == "expr":
        assert any(e is sentinel for e in walk.expressions(node)), (cls.__name__, field)
    else:
        assert any(s is sentinel for s in walk.statements(node)), (cls.__name__, field)


def test_locals_read_sees_every_expression_of_a_body() -> None:
    """A local read only in a timeout's `at` or an own-operation call still counts as read."""
    origin = ir.Origin("m.loom", 1, 1)
    at = ir.Member(ir.Local("a", ir.AggregateType("A", "C"), "a"), "startsAt", ir.DATETIME, "")
    arg = ir.Local("later", ir.DATETIME, "later")
    body = (
        ir.ScheduleTimeout("remind", at, None, origin),
        ir.CallOwnOperation("moveTo", (arg,), origin),
    )
    assert walk.locals_read(body) == {"a", "later"}


def test_statements_in_source_preorder() -> None:
    origin = ir.Origin("m.loom", 1, 1)
    inner = ir.CompleteInstance(origin)
    then = ir.CancelTimeout("t", origin)
    branch = ir.If(ir.Literal_(True, ir.BOOL, "true"), (then,), (inner,), origin)
    last = ir.SaveInstance()
    assert list(walk.body((branch, last))) == [branch, then, inner, last]
