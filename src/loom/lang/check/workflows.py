"""The rules of workflows as wholes: state fields and the correlation key, workflow functions,
command `create` entries, `apply` clauses, timeouts; and the hooks of expression typing for their
bodies (state reads, workflow function calls).

What every entry shares, and the command and query handlers and timers, are in `entries.py`; the
event-triggered entries in `reactions.py`. Bodies are checked statement by statement in
`bodies.py`; calls in `calls.py`.
"""

from __future__ import annotations

from loom.lang.check import events, operations
from loom.lang.check.bodies import block, unbound_state
from loom.lang.check.calls import classify
from loom.lang.check.checker import Checker
from loom.lang.check.entries import body_scope, check_entry_body, entry_result, param_type
from loom.lang.check.reactions import check_on, check_starter
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast
from loom.lang.types import AnyType, a
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
    corr = ck.facts.correlations[wf] = correlation(ck, wf)
    for fn in wf.functions:
        scope = Scope(ctx, None, "function", wf=wf, block=fn.body is not None, state=state)
        for p in fn.params:
            scope.names.setdefault(
                p.name, Binding(p.name, ck.type_of(p.type), p.name_span, "param")
            )
        operations.function_body(ck, fn, scope)
    commands: list[ast.Create] = []
    triggers: dict[ir.EventType, ast.Create | ast.On] = {}
    for c in wf.creates:
        for p in c.params:
            # an event type here makes this create a starter; a payload, a command entry
            param_type(ck, ctx, p, payloads=True)
        if any(isinstance(ck.type_of(p.type), ir.EventType) for p in c.params):
            event = check_starter(ck, ctx, wf, c, state, corr)
            _once(ck, ctx, wf, triggers, event, c)
            continue
        if c.by is not None:
            ck.report(
                "loom.by-without-event",
                "`by` keys an event-triggered `create`, but no event triggers this one",
                c.by.span,
                "`by` without an event",
                help="type the parameter by an event (`create(e: SomeEvent) by e.key`), or "
                "remove `by`: a command `create` binds its instance by the parameter named like "
                "the correlation field",
            )
        commands.append(c)
        _check_create(ck, ctx, wf, c, state, corr)
    for extra in commands[1:]:
        ck.report(
            "loom.duplicate-declaration",
            f"workflow `{wf.name}` has more than one command `create`",
            extra.span,
            "second `create`",
            secondary=[(commands[0].span, "the first `create`")],
            help="a workflow has one command entry; declare a second workflow (or a "
            "commandHandler) for the other one",
        )
    for on in wf.ons:
        event = check_on(ck, ctx, wf, on, state, corr)
        _once(ck, ctx, wf, triggers, event, on)
    for ap in wf.applies:
        _check_apply(ck, ctx, wf, ap, state, corr)
    if wf.event_sourced and wf.state:
        _check_unapplied(ck, ctx, wf)
    _check_timeouts(ck, ctx, wf, state, corr)


def _timeout_stmts(stmts: list[ast.Stmt]) -> list[ast.Schedule | ast.Cancel]:
    return [s for s in ast.walk_stmts(stmts) if isinstance(s, (ast.Schedule, ast.Cancel))]


def _check_timeouts(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    state: dict[str, AnyType],
    corr: str | None,
) -> None:
    """`on timeout NAME` bodies, and the names `schedule` / `cancel` use: every scheduled name has
    one handler, every handler and every cancel names a scheduled timeout."""
    bodies = [c.body for c in wf.creates] + [on.body for on in wf.ons]
    bodies += [t.body for t in wf.timeouts]
    used = [s for b in bodies for s in _timeout_stmts(b)]
    scheduled = {s.name for s in used if isinstance(s, ast.Schedule)}
    handlers: dict[str, ast.OnTimeout] = {}
    for t in wf.timeouts:
        first = handlers.get(t.name)
        if first is not None:
            ck.report(
                "loom.duplicate-declaration",
                f"timeout `{t.name}` of `{wf.name}` already has a handler",
                t.name_span,
                "second `on timeout`",
                secondary=[(first.name_span, "the first handler")],
                help="a timeout has one handler: merge the two bodies",
            )
            continue
        handlers[t.name] = t
        scope = body_scope(ck, ctx, [], "timeout", wf, state, corr)
        if corr is None:
            ck.report(
                "loom.timeout-outside-process",
                f"`on timeout {t.name}` is declared in `{wf.name}`, which keeps no instance",
                t.span,
                "no process instance here",
                help="declare the correlation key as a state field (e.g. `appointment: "
                "Appointment id`): a timeout belongs to one instance",
            )
        elif t.name not in scheduled:
            ck.report(
                "loom.timeout-unknown",
                f"no body of `{wf.name}` schedules a timeout `{t.name}`, so this handler never runs",
                t.name_span,
                "never scheduled",
                help=did_you_mean(t.name, scheduled)
                or f"arm it in a body with `schedule {t.name} after 15m` (or `at <datetime>`), "
                "or remove the handler",
            )
        check_entry_body(ck, scope, t.body, None, None)
    if corr is None:
        return  # each statement was already reported as outside a process
    for s in used:
        if s.name in handlers:
            ck.refer(s.name_span, handlers[s.name].name_span)
            continue
        if isinstance(s, ast.Schedule):
            ck.report(
                "loom.timeout-unhandled",
                f"timeout `{s.name}` is scheduled, but `{wf.name}` has no `on timeout {s.name}`",
                s.name_span,
                "no handler",
                help=did_you_mean(s.name, handlers)
                or f"add `on timeout {s.name} {{ … }}` to `{wf.name}`: what happens when it fires",
            )
        else:
            ck.report(
                "loom.timeout-unknown",
                f"`{wf.name}` has no timeout `{s.name}` to cancel",
                s.name_span,
                "unknown timeout",
                help=did_you_mean(s.name, handlers)
                or "cancel a name that a `schedule` arms and an `on timeout` handles",
            )


def _check_unapplied(ck: Checker, ctx: ContextSymbols, wf: ast.Workflow) -> None:
    """An event-sourced workflow's state changes only through `apply`; an event it emits with no
    `apply` clause leaves the state as it was, which is rarely what the author meant."""
    applied = {
        t.name
        for ap in wf.applies
        if len(ap.params) == 1 and isinstance(t := ck.type_of(ap.params[0].type), ir.EventType)
    }
    warned: set[str] = set()
    for body in [*(c.body for c in wf.creates), *(on.body for on in wf.ons)]:
        for emit in _emits(body):
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
    return [s for s in ast.walk_stmts(stmts) if isinstance(s, ast.Emit)]


def _check_create(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    c: ast.Create,
    state: dict[str, AnyType],
    corr: str | None,
) -> None:
    scope = body_scope(ck, ctx, c.params, "create", wf, state, corr)
    has_param = any(p.name == corr for p in c.params)
    assigns = corr is not None and _assigns(c.body, corr)
    # Without any way to bind, the create itself is reported below, not each use of state.
    scope.bound[0] = corr is None or has_param or not assigns
    result = entry_result(ck, ctx, c.result, aggregates=False)
    check_entry_body(ck, scope, c.body, result, c.result)
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


def _once(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    seen: dict[ir.EventType, ast.Create | ast.On],
    event: ir.EventType | None,
    node: ast.Create | ast.On,
) -> None:
    spans = {e: n.span for e, n in seen.items()}
    events.once(ck, wf.name, ctx.name, spans, event, node.span)
    if event is not None and event not in seen:
        seen[event] = node


def _assigns(stmts: list[ast.Stmt], name: str) -> bool:
    for s in stmts:
        if isinstance(s, ast.Assign) and isinstance(s.target, ast.Name) and s.target.name == name:
            return True
        blocks = (
            [s.then, s.otherwise or []]
            if isinstance(s, (ast.IfLet, ast.If))
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
        ck.facts.types[p.type] = t
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
        if isinstance(s, (ast.ExprStmt, ast.Emit, ast.IfLet, ast.If, ast.ForEach, ast.Return)):
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


# --------------------------------------------------------------------------------------------------
# Hooks of expression typing


def state_read(ck: Checker, e: ast.Name, scope: Scope, text: str) -> ir.Expr:
    ck.refer_state(e, scope)
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
        ck.type_of(f.result),  # type: ignore[arg-type]  # ERROR only in a model never lowered
        text,
        "workflow",
        None,
        None,
        scope.wf.name,
    )


def value_call(ck: Checker, e: ast.Call, scope: Scope) -> ir.Expr:
    """A `recv.m(...)` call used as a value inside a larger expression of a body."""
    found = classify(ck, e, scope, "value", None)
    if isinstance(found, ir.Expr):
        return found
    return ck.poison(e)
