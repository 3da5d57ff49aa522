"""Pass 3, check: types every expression and enforces the rules (`rules.RULES`, in order), returning
what lowering needs as typed `Facts` (`facts.py`), keyed by the AST nodes.

`checker.Checker` holds the state of one check; each rule module takes it as `ck`. Expressions are
typed by `expressions.ExpressionChecker`, the one concrete checker.
"""

from __future__ import annotations

from collections.abc import Mapping

from loom.lang.check.expressions import ExpressionChecker
from loom.lang.check.facts import Facts
from loom.lang.check.rules import RULES, Rule
from loom.lang.diagnostics import Sink
from loom.lang.names.symbols import Program


def check(prog: Program, sources: Mapping[str, str], sink: Sink) -> Facts:
    """Run every rule over the program; diagnostics go to `sink`, the facts are returned."""
    ck = ExpressionChecker(prog, sink, dict(sources))
    for rule in RULES:
        rule.run(ck)
    return ck.facts


__all__ = ["RULES", "Facts", "Rule", "check"]
