"""Repository filters and `ignoring`.

`repository Notes for Note { filter Live }` names a parameterless criterion of the aggregate that
every read through the repository applies (body reads and the generated GET / operation routes).
A body read widens itself with a trailing `ignoring Live[, …]`."""

from __future__ import annotations

import dataclasses

from loom.lang.check.checker import Checker
from loom.lang.check.facts import IfLetFact, Load, ReadLoad
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast


def check_repository_filters(ck: Checker, ctx: ContextSymbols, repo: ast.Repository) -> None:
    seen: dict[str, Span] = {}
    for name, span in repo.filters:
        if name in seen:
            ck.report(
                "loom.duplicate-declaration",
                f"filter `{name}` is declared twice in `{repo.name}`",
                span,
                "declared again here",
                secondary=[(seen[name], "first declared here")],
                help="remove one of them",
            )
            continue
        seen[name] = span
        crit = ctx.criteria.get(name)
        if crit is None:
            ck.report(
                "loom.unknown-criterion",
                f"`filter {name}` names no criterion of context `{ctx.name}`",
                span,
                "not a criterion",
                help=did_you_mean(name, ctx.criteria)
                or f"declare it: `criterion {name} of {repo.aggregate} = …`",
            )
            continue
        ck.refer(span, crit.name_span)
        if crit.aggregate != repo.aggregate or crit.params:
            why = (
                f"it selects `{crit.aggregate}`, not `{repo.aggregate}`"
                if crit.aggregate != repo.aggregate
                else "it takes parameters, and a filter has no arguments to give it"
            )
            ck.report(
                "loom.repository-filter",
                f"criterion `{name}` cannot filter `{repo.name}`: {why}",
                span,
                "not usable as a filter",
                secondary=[(crit.name_span, "criterion declared here")],
                help=f"a filter names a parameterless criterion of `{repo.aggregate}`",
            )


def check_body(ck: Checker, body: list[ast.Stmt]) -> None:
    """Validate every `ignoring` of a workflow / handler body and record it for lowering."""
    for stmt in ast.walk_stmts(body):
        if isinstance(stmt, (ast.Let, ast.IfLet)) and stmt.ignoring:
            _check_ignoring(ck, stmt)


def refuse_outside_body(ck: Checker, stmt: ast.Let) -> None:
    """An `ignoring` on a `let` of an operation, factory, function or service: there is no read."""
    if stmt.ignoring:
        _not_a_read(ck, stmt.ignoring[0][1], stmt.value)


def _check_ignoring(ck: Checker, stmt: ast.Let | ast.IfLet) -> None:
    found = ck.facts.stmts.get(stmt)
    read = found.read if isinstance(found, (ReadLoad, IfLetFact)) else None
    repo_name: str | None = None
    if isinstance(found, Load):
        repo_name = found.repository
    elif read is not None:
        repo_name = read.repository
    source = stmt.value if isinstance(stmt, ast.Let) else stmt.source
    if repo_name is None:
        if found is not None or isinstance(stmt, ast.Let):
            _not_a_read(ck, stmt.ignoring[0][1], source)
        return
    repo = next(
        (
            r
            for c in ck.prog.contexts.values()
            for r in c.repositories.values()
            if r.name == repo_name
        ),
        None,
    )
    filters = [n for n, _ in repo.filters] if repo is not None else []
    kept: list[str] = []
    for name, span in stmt.ignoring:
        if name not in filters:
            ck.report(
                "loom.unknown-filter",
                f"`{repo_name}` has no filter `{name}`"
                + ("" if filters else ": it declares no filters"),
                span,
                "not a filter of this repository",
                secondary=[(repo.name_span, "repository declared here")] if repo else [],
                help=did_you_mean(name, filters)
                or (
                    f"its filters are {', '.join(f'`{n}`' for n in filters)}"
                    if filters
                    else "remove `ignoring`, or declare `filter " + name + "` in the repository"
                ),
            )
        elif name not in kept:
            kept.append(name)
    if not kept:
        return
    if isinstance(found, Load):
        ck.facts.stmts[stmt] = dataclasses.replace(found, ignoring=tuple(kept))
    elif isinstance(found, (ReadLoad, IfLetFact)) and read is not None:
        widened = dataclasses.replace(read, ignoring=tuple(kept))
        ck.facts.stmts[stmt] = dataclasses.replace(found, read=widened)


def _not_a_read(ck: Checker, span: Span, source: ast.Expr) -> None:
    ck.report(
        "loom.unknown-filter",
        "`ignoring` widens a repository read, and this value is not one",
        span,
        "nothing to widen",
        secondary=[(_span_of(source), "not a repository read")],
        help="remove `ignoring`; it follows reads such as `Notes.getById(id) ignoring Live`",
    )


def _span_of(e: ast.Expr) -> Span:
    return e.span
