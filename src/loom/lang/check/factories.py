"""What a declared factory (`create(…) { … }`) may read of the aggregate it is creating.

The factory runs before the aggregate exists: its assignments become locals, and the aggregate is
built from them once the body is done. So its preconditions, `let`s and assigned values may read a
field it has already assigned, but not a field it has not (it has no value yet; a default is applied
only when the aggregate is built), a derived value, a function, or `id` — all of them read the
aggregate itself. Its `emit`s run after the aggregate is built, and read all of it.
`loom.factory-reads-aggregate` reports each such read.
"""

from __future__ import annotations

from loom.lang.check import operations
from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lang.types import AnyType, show

CODE = "loom.factory-reads-aggregate"


def check_factory(ck: Checker, m: ast.Factory, scope: Scope) -> None:
    """The factory's body, in order, with the fields assigned so far readable and nothing else of
    the aggregate (its `emit`s excepted). `scope` holds its parameters."""
    assigned: set[str] = set()
    for stmt in m.body:
        scope.building = None if isinstance(stmt, ast.Emit) else assigned
        operations.operation_stmt(ck, stmt, scope)
        if isinstance(stmt, ast.Assign) and isinstance(stmt.target, ast.Name):
            assigned.add(stmt.target.name)
    scope.building = None
    ck.warn_unused(scope)


def member_read(
    ck: Checker,
    scope: Scope,
    name: str,
    kind: str,
    t: AnyType,
    declared: Span,
    span: Span,
) -> bool:
    """Report `name` (a field, derived value or `id` of the aggregate) read where the factory has
    not made it yet; True when reported."""
    if scope.building is None or (kind == "field" and name in scope.building):
        return False
    assert scope.agg is not None
    agg = scope.agg.name
    if kind == "id":
        ck.report(
            CODE,
            f"`id` is read in `{agg}.create`, but the {agg} it creates gets its id only when the "
            "factory is done",
            span,
            "the id of an aggregate not yet created",
            secondary=[(declared, f"the aggregate `{agg}`")],
            help="read it in an `emit` of the factory (`emit Opened { ticket: id }`), which runs "
            "once the aggregate is made, or from the created aggregate (`let t = "
            f"{agg}.create(…)` then `t.id`)",
        )
        return True
    if kind == "derived":
        what, why = "a derived value", "it is computed from fields that have no value yet"
        fix = f"compute it from the parameters (`let {name} = …`), or read it in an `emit`"
    else:
        default = next((f.default is not None for f in scope.agg.fields if f.name == name), False)
        what = "a field"
        why = "it is not assigned yet" + (
            " (its default is applied only once the factory is done)" if default else ""
        )
        fix = (
            f"take it as a parameter: `create(…, {name}: {show(t)}) {{ … {name} := {name} }}`, "
            f"or assign `{name}` before this read"
        )
    ck.report(
        CODE,
        f"`{name}` is {what} of the {agg} that `{agg}.create` is creating, and {why}: a factory "
        "cannot read the aggregate it creates",
        span,
        "read before the aggregate exists",
        secondary=[(declared, f"`{name}` is declared here")],
        help=fix,
    )
    return True


def function_call(ck: Checker, scope: Scope, name: str, declared: Span, span: Span) -> bool:
    """Report a call of the aggregate's own function `name` in a factory; True when reported."""
    if scope.building is None:
        return False
    assert scope.agg is not None
    agg = scope.agg.name
    ck.report(
        CODE,
        f"`{name}(…)` is a function of the {agg} that `{agg}.create` is creating: a function "
        "runs on the aggregate, which does not exist yet",
        span,
        "called before the aggregate exists",
        secondary=[(declared, f"`{name}` is declared here")],
        help="compute the value from the factory's parameters (a `let`), or call the function "
        "in an `emit` of the factory, which runs once the aggregate is made",
    )
    return True
