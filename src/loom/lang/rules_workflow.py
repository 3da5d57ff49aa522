"""The rules of workflows and handlers as wholes: state fields and the correlation key, workflow
functions, `create` entries, `apply` clauses, command and query handlers.

Their bodies are checked statement by statement in `rules_body.py`; calls in `rules_calls.py`.
"""

from __future__ import annotations

from loom.lang import ast, rules_delete
from loom.lang.check import Checker
from loom.lang.diagnostics import did_you_mean
from loom.lang.expressions import Binding, Scope, a
from loom.lang.facts import CallOp, Create, Load  # noqa: F401 - re-exported for older imports
from loom.lang.resolve import ContextSymbols, resolve_type
from loom.lang.rules_body import block, terminates
from loom.lang.rules_calls import classify
from loom.lang.rules_records import check_query_params, result_problem
from loom.lang.types import ERROR, AnyType, show
from loom.model import ir


def correlation(ck: Checker, wf: ast.Workflow) -> str | None:
    """The first id-shaped state field keys the instance rows."""
    return next((f.name for f in wf.state if isinstance(ck.type_of(f.type), ir.IdType)), None)


def _state_types(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow) -> dict[str, AnyType]:
    return {f.name: ck.type_of(f.type) for f in wf.state}


def check_workflow(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow) -> None:
    for f in wf.state:
        ft = ck.type_of(f.type)
        if f.default is not None:
            x = ck.root(f.default, Scope(ctx, None, "default"), ft)
            ck.mismatch(x, f.default, ft, f"the default of `{f.name}` is {a(x.type)}, not {a(ft)}")
    state = _state_types(ck, ctx, wf)
    corr = correlation(ck, wf)
    for fn in wf.functions:
        scope = Scope(ctx, None, "function", wf=wf, block=fn.body is not None, state=state)
        for p in fn.params:
            scope.names.setdefault(
                p.name, Binding(p.name, ck.type_of(p.type), p.name_span, "param")
            )
        ck.function_body(fn, scope)
    for c in wf.creates:
        _check_create(ck, ctx, wf, c, state, corr)
    for ap in wf.applies:
        _check_apply(ck, ctx, wf, ap, state, corr)
    if wf.event_sourced and wf.state:
        _check_unapplied(ck, ctx, wf)


def _check_unapplied(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow) -> None:
    """An event-sourced workflow's state changes only through `apply`; an event it emits with no
    `apply` clause leaves the state as it was, which is rarely what the author meant."""
    applied = {
        t.name
        for ap in wf.applies
        if len(ap.params) == 1 and isinstance(t := ck.type_of(ap.params[0].type), ir.EventType)
    }
    warned: set[str] = set()
    for c in wf.creates:
        for emit in _emits(c.body):
            if emit.event in applied or emit.event in warned or emit.event not in ctx.events:
                continue
            warned.add(emit.event)
            ck.report(
                "loom.workflow-eventsourced-unapplied",
                f"`{wf.name}` is event-sourced, but no `apply` folds `{emit.event}` into its "
                "state, so emitting it changes nothing there",
                emit.event_span,
                "emitted, never applied",
                secondary=[(wf.name_span, "event-sourced workflow")],
                help=f"add `apply(e: {emit.event}) {{ … }}` to `{wf.name}`, or emit it from a "
                "workflow that is not event-sourced",
            )


def _emits(stmts: list[ast.Stmt]) -> list[ast.Emit]:
    out: list[ast.Emit] = []
    for st in stmts:
        if isinstance(st, ast.Emit):
            out.append(st)
        elif isinstance(st, ast.IfLet):
            out += _emits(st.then) + _emits(st.otherwise or [])
        elif isinstance(st, ast.ForEach):
            out += _emits(st.body)
    return out


def _body_scope(
    ck: Checker,
    ctx: ContextSymbols,
    params: list[ast.Param],
    body: str,
    wf: ast.Workflow | None,
    state: dict[str, AnyType],
    corr: str | None,
) -> Scope:
    scope = Scope(ctx, None, "workflow", wf=wf, body=body, state=state, correlated=corr is not None)
    for p in params:
        # A workflow `create` and a handler contract are where payload types are in scope.
        t = resolve_type(ctx, p.type, ck.sink, prog=ck.prog, payloads=True)
        ck.types[id(p.type)] = t
        scope.names.setdefault(p.name, Binding(p.name, t, p.name_span, "param"))
    return scope


def _result(
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
            f"{what} cannot answer {a(result)}: return the id and read the record back, or use "
            + ("a queryHandler" if what == "a commandHandler" else "a commandHandler"),
            t.span,
            "unsupported result type",
            help=f"declare the result as `{show(result).rstrip('[]?')} id` and `return x.id`; "
            "only values, ids" + (" and aggregates" if aggregates else "") + " cross the wire",
        )
        result = ERROR
    ck.types[id(t)] = result
    return result


def _entry(
    ck: Checker,
    scope: Scope,
    body: list[ast.Stmt],
    result: AnyType | None,
    result_ref: ast.TypeRef | None,
) -> None:
    block(ck, body, scope, result)
    rules_delete.check_body(ck, body)
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


def _check_create(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    c: ast.Create,
    state: dict[str, AnyType],
    corr: str | None,
) -> None:
    scope = _body_scope(ck, ctx, c.params, "create", wf, state, corr)
    has_param = any(p.name == corr for p in c.params)
    assigns = corr is not None and _assigns(c.body, corr)
    # Without any way to bind, the create itself is reported below, not each use of state.
    scope.bound[0] = corr is None or has_param or not assigns
    result = _result(ck, ctx, c.result, aggregates=False)
    _entry(ck, scope, c.body, result, c.result)
    if corr is None:
        return
    if not has_param and not assigns and not wf.event_sourced:
        ck.report(
            "loom.state-correlation-missing",
            f"this `create` of `{wf.name}` neither takes `{corr}` nor assigns it, so it cannot "
            "tell which instance it starts",
            c.span,
            "no correlation key",
            help=f"add the parameter `{corr}: {ck.text(next(f.type.span for f in wf.state if f.name == corr))}`, "
            f"or assign `{corr} := …` in the body",
        )
    elif not has_param and wf.event_sourced:
        ck.report(
            "loom.state-correlation-missing",
            f"this `create` of event-sourced `{wf.name}` must take its key `{corr}` as a parameter",
            c.span,
            "no correlation key",
            help=f"add the parameter `{corr}`",
        )


def _assigns(stmts: list[ast.Stmt], name: str) -> bool:
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.target, ast.Name) and s.target.name == name:
            return True
        blocks = (
            [s.then, s.otherwise or []]
            if isinstance(s, ast.IfLet)
            else [s.body]
            if isinstance(s, ast.ForEach)
            else []
        )
        if any(_assigns(b, name) for b in blocks):
            return True
    return False


def _check_apply(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    ap: ast.Apply,
    state: dict[str, AnyType],
    corr: str | None,
) -> None:
    if not wf.event_sourced:
        ck.report(
            "loom.apply-outside-event-sourced",
            f"`apply` belongs to event-sourced workflows, and `{wf.name}` is not one",
            ap.span,
            "`apply` here",
            help=f"declare it `workflow {wf.name} eventSourced {{ … }}`, or assign state directly "
            "with `:=`",
        )
    scope = Scope(
        ctx, None, "workflow", wf=wf, body="apply", state=state, correlated=corr is not None
    )
    for p in ap.params:
        t = resolve_type(ctx, p.type, ck.sink, value=False, prog=ck.prog)
        ck.types[id(p.type)] = t
        scope.names.setdefault(p.name, Binding(p.name, t, p.name_span, "param", used=True))
    if len(ap.params) != 1 or not isinstance(ck.type_of(ap.params[0].type), (ir.EventType,)):
        ck.report(
            "loom.type-mismatch",
            "`apply` takes exactly one parameter, typed by an event",
            ap.span,
            "not `apply(e: Event)`",
            help="write `apply(e: SomeEvent) { field := … }`",
        )
    for s in ap.body:
        if isinstance(s, (ast.ExprStmt, ast.Emit, ast.IfLet, ast.ForEach, ast.Return)):
            ck.report(
                "loom.invalid-statement",
                "an `apply` clause only folds the event into the state",
                s.span,
                "not allowed in `apply`",
                help="assign state fields (`total := total + e.amount`), `let` and `precondition`",
            )
            continue
        block(ck, [s], scope, None)
    ck.warn_unused(scope)


def check_handler(ck: Checker, ctx: ContextSymbols, h: ast.Handler) -> None:
    scope = _body_scope(ck, ctx, h.params, h.kind, None, {}, None)
    result = _result(ck, ctx, h.result, h.kind == "query", f"a {h.kind}Handler")
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
    _entry(ck, scope, h.body, result, h.result)


# --------------------------------------------------------------------------------------------------
# Hooks of expression typing


def state_read(ck: Checker, e: ast.Name, scope: Scope, text: str) -> ir.Expr:
    t = scope.state[e.name]
    if scope.kind == "function":
        ck.report(
            "loom.workflow-function-uses-state",
            f"a workflow function cannot read the state field `{e.name}`",
            e.span,
            "workflow state",
            help="functions are emitted at module scope, with no instance; pass the value in as a "
            "parameter",
        )
        return ck.poison(e)
    if not scope.correlated:
        wf = scope.wf
        ck.report(
            "loom.workflow-uncorrelated-state-read",
            f"`{wf.name if wf else 'this workflow'}` has no id-shaped state field, so there is no "
            f"instance to read `{e.name}` from",
            e.span,
            "state read without a key",
            help="declare the correlation key as a state field, e.g. `order: Order id`",
        )
        return ck.poison(e)
    from loom.lang.rules_body import unbound_state

    unbound_state(ck, scope, e.span, e.name)
    return ir.StateField(e.name, t, text)  # type: ignore[arg-type]


def workflow_function_call(ck: Checker, e: ast.Call, scope: Scope, text: str) -> ir.Expr | None:
    assert isinstance(e.callee, ast.Name) and scope.wf is not None
    fns = {f.name: f for f in scope.wf.functions}
    f = fns.get(e.callee.name)
    if f is None or e.callee.name in scope.names:
        return None
    args = ck.check_args(e, scope, f.params, f"function `{f.name}`", f.name_span)
    return ir.FunctionCall(
        f.name,
        args,
        ck.type_of(f.result),
        text,
        "workflow",
        None,
        None,
        scope.wf.name,  # type: ignore[arg-type]
    )


def value_call(ck: Checker, e: ast.Call, scope: Scope) -> ir.Expr:
    """A `recv.m(...)` call used as a value inside a larger expression of a body."""
    found = classify(ck, e, scope, "value", None)
    if isinstance(found, ir.Expr):  # type: ignore[arg-type]
        return found  # type: ignore[return-value]
    return ck.poison(e)


_ = did_you_mean
