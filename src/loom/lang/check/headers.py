"""What a declaration's header and outline promise: the traits of an aggregate, the isolation level
of a transactional workflow or handler, the entry points a workflow must (and must no longer)
have, and whether its `once` has an instance to run once. The bodies behind them are checked by the rules that follow in `rules.RULES`."""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.workflows import correlation
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.syntax import ast
from loom.model.isolation import ISOLATION_LEVELS

TRAITS = ("crudish",)


def check_headers(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for decl in ctx.decls:
            if isinstance(decl, ast.Aggregate):
                _traits(ck, decl)
            elif isinstance(decl, ast.Workflow):
                _isolation(ck, decl.isolation, decl.isolation_span)
                _entries(ck, decl)
                if decl.autocommit is not None:
                    _autocommit(ck, f"workflow `{decl.name}`", decl, decl.autocommit)
            elif isinstance(decl, ast.Handler):
                _isolation(ck, decl.isolation, decl.isolation_span)
                if decl.autocommit is not None:
                    _autocommit(ck, f"commandHandler `{decl.name}`", decl, decl.autocommit)


def _traits(ck: Checker, agg: ast.Aggregate) -> None:
    for name, span in agg.traits:
        if name not in TRAITS:
            ck.report(
                "loom.unknown-trait",
                f"unknown trait `{name}` on aggregate `{agg.name}`",
                span,
                "not a trait",
                help=did_you_mean(name, TRAITS) or "the only trait is `crudish`",
            )


def _isolation(ck: Checker, isolation: str | None, span: Span | None) -> None:
    if isolation is not None and isolation not in ISOLATION_LEVELS:
        assert span is not None
        ck.report(
            "loom.isolation-level",
            f"unknown isolation level `{isolation}`",
            span,
            "not an isolation level",
            help=did_you_mean(isolation, ISOLATION_LEVELS)
            or "use one of `read_committed`, `repeatable_read`, `serializable`",
        )


def _autocommit(ck: Checker, what: str, decl: ast.Workflow | ast.Handler, span: Span) -> None:
    """`autocommit` chooses the mode a body has by default (each save commits on its own, and
    `loom.body-not-atomic` is then not warned of): it cannot be both, nor on a process manager,
    whose steps always run in one transaction."""
    if decl.transactional:
        why, fix = "is also `transactional`", "keep the one you mean"
    elif isinstance(decl, ast.Workflow) and ast.is_process(decl):
        why = "is a process manager, whose steps always run in one transaction"
        fix = "remove `autocommit`"
    else:
        return
    ck.report(
        "loom.autocommit-conflict",
        f"{what} is declared `autocommit` but {why}",
        span,
        "`autocommit` here",
        help=fix,
    )


def check_once(ck: Checker) -> None:
    """`once` says what a starter does after `complete`: only a workflow that keeps instances
    has one to end (run after the declared types are known: the key is an id-typed field)."""
    for ctx in ck.prog.contexts.values():
        for wf in ctx.workflows.values():
            if wf.once is not None and correlation(ck, wf) is None:
                _once_without_instance(ck, wf, wf.once)


def _once_without_instance(ck: Checker, wf: ast.Workflow, once: Span) -> None:
    ck.report(
        "loom.once-without-instance",
        f"`once` on workflow `{wf.name}`, which keeps no instance: there is nothing to run once",
        once,
        "`once` here",
        secondary=[(wf.name_span, f"`{wf.name}` has no id-shaped state field")],
        help="declare the correlation key as a state field (e.g. `subscription: Subscription "
        "id`) and end the instance with `complete`, or remove `once`",
    )


def _entries(ck: Checker, wf: ast.Workflow) -> None:
    for h in wf.handles:
        ck.report(
            "loom.workflow-handle-removed",
            f"workflows have no `handle` member; `handle {h.name}` must become a `commandHandler`",
            h.name_span,
            "`handle` was removed",
            help=f"move it out of the workflow as `commandHandler {h.name}(…) {{ … }}`, or model the "
            "step as an aggregate operation",
        )
    if not wf.creates and not wf.handles and not wf.ons:
        ck.report(
            "loom.workflow-without-create",
            f"workflow `{wf.name}` has no `create` and no `on`, so nothing can start it",
            wf.name_span,
            "no entry point",
            help="add `create(params) { … }` (a command), `create(e: Event) by e.key { … }` or "
            "`on(e: Event) { … }` (a reaction), or remove the workflow",
        )
