"""The checks generated code runs where a refusal may happen: `require(...)` for preconditions,
invariants and state gates (422), `authorize(...)` for `requires` gates (403), the implicit
invariants a `string(N)` or `decimal(P, S)` field puts on its values, and the implicit
preconditions such a parameter of an operation or factory puts on its arguments. Their public text
comes from `loom.model.refusals`."""

from __future__ import annotations

from collections.abc import Sequence

from loom.codegen.python.expressions import Scope, render
from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import call, lay
from loom.codegen.python.literals import py_str
from loom.model import ir, naming
from loom.model.refusals import Kind, Refusal, decimal_bounds, requires, string_length


def check(cond: str, refusal: Refusal, imports: Imports, depth: int) -> list[str]:
    """The lines that refuse with `refusal` unless the Python condition `cond` holds."""
    text = [f"rule={py_str(refusal.rule)}", f"detail={py_str(refusal.detail)}"]
    if refusal.kind == "requires":
        imports.add("loom.runtime", "authorize")
        return lay(call("authorize", [cond, *text]), depth)
    imports.add("loom.runtime", "require")
    return lay(call("require", [cond, f"kind={py_str(refusal.kind)}", *text]), depth)


def entry_gate(gate: ir.Expr | None, label: str, scope: Scope) -> list[str]:
    """The `requires` gate of a route's entry point (a workflow's `create`, a handler), first in
    its function: a refusal (403) reads and writes nothing."""
    if gate is None:
        return []
    return check(render(gate, scope), requires(label, gate), scope.imports, 1)


def max_length(t: ir.Type) -> int | None:
    """N of a `string(N)`, `string(N)?`, `string(N)[]` or `string(N)[]?`."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return t.max_length if isinstance(t, ir.PrimitiveType) else None


def bound_checks(
    owner: str,
    fields: Sequence[ir.Field | ir.Parameter],
    imports: Imports | None = None,
    *,
    params: bool = False,
) -> list[tuple[str, Refusal]]:
    """(condition, refusal) of each `string(N)` and `decimal(P, S)` field: an implicit invariant of
    its aggregate, value object or event, so an operation assigning a longer string, or a number
    with more digits than the field holds, is refused (422; never truncated or rounded). `imports`
    takes what the conditions use (none when only their presence matters).

    With `params`, of each such parameter of the operation or factory `owner` (`Agg.op`): a
    precondition on its argument, read by its Python name. The wire checks a request's own
    arguments; this refuses what a workflow, handler, reaction or sibling operation computed and
    passed (a `/`, a plain `decimal`), never rounding or storing it."""
    checks = []
    kind: Kind = "precondition" if params else "invariant"
    for f in fields:
        attr = naming.ident(f.name) if params else f"self.{naming.ident(f.name)}"
        inner = f.type.inner if isinstance(f.type, ir.OptionalType) else f.type
        each = isinstance(inner, ir.ListType)
        element = inner.element if isinstance(inner, ir.ListType) else inner
        n = max_length(f.type)
        # the condition on one value, `{}` where the value goes
        if n is not None:
            test, refusal = f"len({{}}) <= {n}", string_length(owner, f.name, n, each, kind)
        elif isinstance(element, ir.PrimitiveType) and element.precision is not None:
            p, s = element.precision, element.scale
            assert s is not None
            if imports is not None:
                imports.add("loom.runtime", "decimals")
            test = f"decimals.fits({{}}, precision={p}, scale={s})"
            refusal = decimal_bounds(owner, f.name, p, s, each, kind)
        else:
            continue
        cond = f"all({test.format('v')} for v in {attr})" if each else test.format(attr)
        if isinstance(f.type, ir.OptionalType):
            cond = f"{attr} is None or {cond}"
        checks.append((cond, refusal))
    return checks


def scaled_params(params: Sequence[ir.Parameter], imports: Imports, depth: int) -> list[str]:
    """After their checks, each `decimal(P, S)` parameter held with exactly S places (`12.5` as
    `12.50`, `12.500` too), as the wire hands a request's arguments: the operation sees the same
    value whoever called it."""
    lines: list[str] = []
    for p in params:
        inner = p.type.inner if isinstance(p.type, ir.OptionalType) else p.type
        element = inner.element if isinstance(inner, ir.ListType) else inner
        if not isinstance(element, ir.PrimitiveType) or element.precision is None:
            continue
        imports.add("loom.runtime", "decimals")
        name = naming.ident(p.name)
        one = f"decimals.to_scale({{}}, precision={element.precision}, scale={element.scale})"
        value = (
            f"[{one.format('v')} for v in {name}]"
            if isinstance(inner, ir.ListType)
            else one.format(name)
        )
        if isinstance(p.type, ir.OptionalType):
            value = f"None if {name} is None else {value}"
        lines += lay(f"{name} = {value}", depth)
    return lines


def has_extern_checks(agg: ir.Aggregate, op: ir.Operation) -> bool:
    """Does the extern operation check anything before the user's code: bounded parameters, a
    `requires` gate? Its callers then call `naming.extern_checks(op.name)` first."""
    return op.requires is not None or bool(bound_checks(f"{agg.name}.{op.name}", op.params))


def has_invariants(agg: ir.Aggregate) -> bool:
    """Does the aggregate have a `check_invariants` method: declared invariants, or the implicit
    ones of its `string(N)` and `decimal(P, S)` fields?"""
    return bool(agg.invariants or bound_checks(agg.name, agg.fields))
