"""The event-triggered entries of a workflow: a starter (`create(e: E) by e.key`) and a reaction
(`on(e: E) [by e.key]`), and how `by` picks the instance they run on."""

from __future__ import annotations

from loom.lang.check import events
from loom.lang.check.checker import Checker
from loom.lang.check.entries import body_scope, check_entry_body, param_type
from loom.lang.check.facts import Trigger
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import AnyType
from loom.model import ir


def _key_field(wf: ast.Workflow, corr: str | None) -> ast.Field | None:
    return next((f for f in wf.state if f.name == corr), None) if corr is not None else None


def check_starter(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    c: ast.Create,
    state: dict[str, AnyType],
    corr: str | None,
) -> ir.EventType | None:
    """`create(e: Event) by e.key { … }`: load-or-allocate the instance keyed by `by`, then run
    the body as one reaction (its own transaction)."""
    scope = body_scope(ck, ctx, c.params, "starter", wf, state, corr)
    found = events.trigger_event(ck, c.params, c.span, "an event-triggered `create`")
    if c.result is not None:
        ck.report(
            "loom.workflow-return-type",
            "an event-triggered `create` answers no one: it runs after the command that raised "
            "its event has answered",
            c.result.span,
            "a result nobody receives",
            help="remove the result type; record what a caller needs in the workflow's state "
            "(`GET …/instances/{id}`) or in an aggregate",
        )
    if corr is None and c.by is not None:
        _uncorrelated_by(ck, wf, c.by)
    elif corr is not None and c.by is None:
        param = found[1] if found else "e"
        ck.report(
            "loom.state-correlation-missing",
            f"this event-triggered `create` of `{wf.name}` does not say which instance it starts",
            c.span,
            "no `by`",
            help=f"add `by {param}.<field>`: the event field holding the `{corr}` of the instance",
        )
    by = events.check_by(
        ck, scope, c.by, found[1] if found else None, _key_field(wf, corr), wf.name
    )
    scope.bound[0] = True
    check_entry_body(ck, scope, c.body, None, None)
    if found is None:
        return None
    ck.facts.triggers[c] = Trigger(found[0], found[1], by if corr is not None else None)
    return found[0]


def check_on(
    ck: Checker,
    ctx: ContextSymbols,
    wf: ast.Workflow,
    on: ast.On,
    state: dict[str, AnyType],
    corr: str | None,
) -> ir.EventType | None:
    """`on(e: Event) [by e.key] { … }`: with `by`, run on the instance keyed by it (none: the
    event is dropped, logged `event_unrouted`); without, a stateless reaction."""
    for p in on.params:
        param_type(ck, ctx, p)
    scope = body_scope(ck, ctx, on.params, "on", wf, state, corr)
    found = events.trigger_event(ck, on.params, on.span, "`on`")
    param = found[1] if found else "e"
    if corr is not None and on.by is None:
        ck.report(
            "loom.reactor-uncorrelated",
            f"`{wf.name}` keeps one instance per `{corr}`, so its `on` must say which instance "
            "the event is for",
            on.span,
            "no `by`",
            help=f"add `by {param}.<field>`: the event field holding the `{corr}`; a reaction "
            "that keeps no state belongs in a workflow without an id-shaped state field",
        )
    elif corr is None and on.by is not None:
        _uncorrelated_by(ck, wf, on.by)
    by = events.check_by(
        ck, scope, on.by, found[1] if found else None, _key_field(wf, corr), wf.name
    )
    scope.bound[0] = True
    check_entry_body(ck, scope, on.body, None, None)
    if found is None:
        return None
    ck.facts.triggers[on] = Trigger(found[0], found[1], by if corr is not None else None)
    return found[0]


def _uncorrelated_by(ck: Checker, wf: ast.Workflow, by: ast.Expr) -> None:
    ck.report(
        "loom.reactor-uncorrelated",
        f"`{wf.name}` keeps no instances (it has no id-shaped state field), so `by` has nothing "
        "to key",
        by.span,
        "`by` without instances",
        help="remove `by`, or declare the correlation key as the workflow's first id-shaped "
        "state field, e.g. `order: Order id`",
    )
