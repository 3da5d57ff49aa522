"""Read rules: a repository `filter` whose criterion reads `currentUser`.

`criterion VisibleToCaller of Claim = currentUser.isSystem || claimant == currentUser.id` named by
`repository Claims for Claim { filter VisibleToCaller }` is built for the principal of each read
(the request's caller, or the system principal in a reaction, a timeout or a timer), so a caller
reads only the rows the rule admits. Such a criterion is a read rule and nothing else:

- it takes no parameters (a filter has no arguments to give it), and
- a retrieval or a body read (`Claims.findAll(VisibleToCaller)`) does not name it: the rule
  already applies to every read through the repository, and a criterion that selects rows for a
  body must not change with who asks. Both are `loom.current-user-misplaced`.

`loom.filter-hides-from-system`: a body the system runs (a reaction, an `on timeout`, a timer)
reads through a repository whose read rule, evaluated for the system principal (`isSystem` true,
no id, no roles, no claims), admits no row: every such read finds nothing.

A projection states its read rule in place, over its row's fields (key included) and `currentUser`:
`projection ClaimTotals { claim: Claim id  claimant: string  …  filter claimant == currentUser.id
… }` (checked with the criteria, `declarations.py`). Its GET routes apply it as a repository's
routes do; its folds (run by the system) never do.
"""

from __future__ import annotations

from loom.lang.check.anonymous import SYSTEM, truth
from loom.lang.check.checker import Checker
from loom.lang.check.facts import IfLetFact, Load, ReadLoad
from loom.lang.check.principal import NAME, reads_principal, system_bodies
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast


def is_read_rule(ck: Checker, crit: ast.Criterion) -> bool:
    """Does the criterion read `currentUser` (checked already: criteria come first)?"""
    x = ck.facts.exprs.get(crit.condition)
    return x is not None and reads_principal(x)


def refuse_parameters(ck: Checker, crit: ast.Criterion) -> None:
    """A criterion reading `currentUser` with parameters: it can be neither a filter nor a
    selection."""
    if crit.params and is_read_rule(ck, crit):
        ck.report(
            "loom.current-user-misplaced",
            f"criterion `{crit.name}` reads `{NAME}` and takes parameters: a criterion reading "
            f"`{NAME}` is a read rule, which a repository names as its `filter`, and a filter "
            "has no arguments to give it",
            crit.condition.span,
            f"`{NAME}` in a criterion with parameters",
            secondary=[(crit.name_span, "criterion declared here")],
            help=f"split it: a parameterless criterion over `{NAME}` named by the repository's "
            f"`filter`, and this criterion without `{NAME}` (the filter applies to its reads "
            "too)",
        )


def refuse_use(ck: Checker, crit: ast.Criterion, span: Span, use: str) -> bool:
    """`use` (a retrieval, a body read) names a read rule: report it; True when it did."""
    if not is_read_rule(ck, crit):
        return False
    ck.report(
        "loom.current-user-misplaced",
        f"criterion `{crit.name}` reads `{NAME}`, so it is a read rule: a repository names it as "
        f"its `filter`, and {use} cannot select rows with it",
        span,
        "a read rule used as a selection",
        secondary=[(crit.name_span, "criterion declared here")],
        help=f"name it in the repository (`filter {crit.name}`): every read through the "
        f"repository then applies it for its caller; select rows here with a criterion that "
        f"does not read `{NAME}`",
    )
    return True


def check_read_rules(ck: Checker) -> None:
    """`loom.filter-hides-from-system` on every read, in a body the system runs, through a
    repository whose read rule admits no row for the system principal."""
    for ctx in ck.prog.contexts.values():
        starving = _starving_filters(ck, ctx)
        if not starving:
            continue
        for body, where in system_bodies(ck, ctx):
            for s in ast.walk_stmts(body):
                repo, ignoring = _read_of(ck.facts.stmts.get(s))
                for name, span in starving.get(repo or "", []):
                    if name not in ignoring:
                        _warn(ck, s, where, repo or "", name, span)


def _starving_filters(ck: Checker, ctx: ContextSymbols) -> dict[str, list[tuple[str, Span]]]:
    """Per repository, its filters that read `currentUser` and admit no row for the system."""
    out: dict[str, list[tuple[str, Span]]] = {}
    for repo in ctx.repositories.values():
        for name, span in repo.filters:
            crit = ctx.criteria.get(name)
            x = ck.facts.exprs.get(crit.condition) if crit is not None else None
            if x is not None and reads_principal(x) and truth(x, SYSTEM) is False:
                out.setdefault(repo.name, []).append((name, span))
    return out


def _read_of(fact: object) -> tuple[str | None, tuple[str, ...]]:
    """The repository a statement reads through, and the filters it ignores."""
    if isinstance(fact, Load):
        return fact.repository, fact.ignoring
    if isinstance(fact, ReadLoad | IfLetFact) and fact.read is not None:
        return fact.read.repository, fact.read.ignoring
    return None, ()


def _warn(ck: Checker, s: ast.Stmt, where: str, repo: str, name: str, span: Span) -> None:
    ck.report(
        "loom.filter-hides-from-system",
        f"this read through `{repo}` runs in {where}, as the system principal, but the filter "
        f"`{name}` reads `{NAME}` without admitting the system, so the read never finds a row",
        s.span,
        "read as the system principal",
        secondary=[(span, f"the read rule `{name}`")],
        help=f"admit the system in the criterion: `criterion {name} of … = {NAME}.isSystem || …`"
        f"; or widen this read: `… ignoring {name}`",
    )
