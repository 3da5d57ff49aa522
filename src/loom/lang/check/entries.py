"""What every entry of a context's bodies shares (a workflow's `create`s and reactions, its
timeouts, handlers, timers): the scope its body is checked in, the types of its parameters and
of its result, and how its body must end; and the handlers and timers themselves, which are
nothing more."""

from __future__ import annotations

from loom.lang.check import deletes, filters
from loom.lang.check.bodies import block, terminates
from loom.lang.check.checker import Checker
from loom.lang.check.records import check_query_params, result_problem
from loom.lang.check.scope import Binding, Scope
from loom.lang.names.symbols import ContextSymbols
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, show


def check_timer(ck: Checker, ctx: ContextSymbols, tm: ast.Timer) -> None:
    """`timer NAME every D { … }`: a recurring sweep, checked like a commandHandler body with no
    parameters and no result."""
    scope = body_scope(ck, ctx, [], "timer", None, {}, None)
    check_entry_body(ck, scope, tm.body, None, None)


def param_type(
    ck: Checker, ctx: ContextSymbols, p: ast.Param, *, payloads: bool = False
) -> AnyType:
    """Resolve (once) the type of a parameter of a workflow entry: an event type is admitted (it
    makes the entry a reaction), a payload type where `payloads` says so."""
    t = ck.facts.types.get(p.type)
    if t is None:
        t = resolve_type(ctx, p.type, ck.sink, prog=ck.prog, payloads=payloads, events=True)
        ck.facts.types[p.type] = t
    return t


def body_scope(
    ck: Checker,
    ctx: ContextSymbols,
    params: list[ast.Param],
    body: str,
    wf: ast.Workflow | None,
    state: dict[str, AnyType],
    corr: str | None,
) -> Scope:
    scope = Scope(ctx, None, "workflow", wf=wf, body=body, state=state, correlated=corr is not None)
    # a command-triggered create runs as its workflow says; every other body of a workflow (a
    # reaction, a timeout) and a timer runs in `service.reaction()`, one transaction
    scope.transactional = (
        wf.transactional if body == "create" and wf is not None else body != "command"
    )
    for p in params:
        # A workflow `create` and a handler contract are where payload types are in scope.
        t = ck.facts.types.get(p.type)
        if t is None:
            t = resolve_type(ctx, p.type, ck.sink, prog=ck.prog, payloads=True)
            ck.facts.types[p.type] = t
        scope.names.setdefault(p.name, Binding(p.name, t, p.name_span, "param"))
    return scope


def entry_result(
    ck: Checker,
    ctx: ContextSymbols,
    t: ast.TypeRef | None,
    aggregates: bool,
    what: str = "a workflow",
) -> AnyType | None:
    if t is None:
        return None
    result = resolve_type(ctx, t, ck.sink, value=False, prog=ck.prog, payloads=True)
    problem = result_problem(result, what)
    if problem is not None and problem not in ("an aggregate", "an event"):
        ck.report(
            "loom.workflow-return-type",
            f"{what} cannot answer {a(result)}, {problem}: return the id and read the record "
            "back, or use a queryHandler / commandHandler, which may return value objects and "
            "payloads",
            t.span,
            "unsupported result type",
            help="declare an id result (`create(…): X id`, then `return x.id`), or move this entry "
            f"into a handler: `commandHandler Name(…): {show(result)} {{ … }}`",
        )
        result = ERROR
    elif problem is not None:
        ck.report(
            "loom.workflow-return-type",
            f"{what} cannot answer {a(result)}: return the id and read the record back, or read "
            "it in a queryHandler (the only callable that answers aggregates)",
            t.span,
            "unsupported result type",
            help=f"declare the result as `{show(result).rstrip('[]?')} id` and `return x.id`; "
            "only values, ids" + (" and aggregates" if aggregates else "") + " cross the wire",
        )
        result = ERROR
    ck.facts.types[t] = result
    return result


def check_entry_body(
    ck: Checker,
    scope: Scope,
    body: list[ast.Stmt],
    result: AnyType | None,
    result_ref: ast.TypeRef | None,
) -> None:
    block(ck, body, scope, result)
    deletes.check_body(ck, body)
    filters.check_body(ck, body)
    if result_ref is not None and not (
        terminates(body) or any(isinstance(s, ast.Return) for s in body)
    ):
        last = body[-1] if body else None
        ck.report(
            "loom.workflow-missing-return",
            f"the body declares the result `{ck.text(result_ref.span)}` but does not end in "
            "`return`",
            result_ref.span,
            "result declared here",
            secondary=[(last.span, "the body ends here")] if last else [],
            help="end the body with `return <value>`, or remove the result type",
        )
    ck.warn_unused(scope)


def check_handler(ck: Checker, ctx: ContextSymbols, h: ast.Handler) -> None:
    scope = body_scope(ck, ctx, h.params, h.kind, None, {}, None)
    scope.transactional = h.transactional
    result = entry_result(ck, ctx, h.result, h.kind == "query", f"a {h.kind}Handler")
    if h.kind == "query":
        check_query_params(ck, h)
    if h.kind == "query" and h.result is None:
        ck.report(
            "loom.workflow-return-type",
            f"queryHandler `{h.name}` must declare what it answers",
            h.name_span,
            "no result type",
            help=f"declare it: `queryHandler {h.name}(…): T {{ … return … }}`",
        )
    check_entry_body(ck, scope, h.body, result, h.result)
