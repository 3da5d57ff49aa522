"""The docstring of a generated route, which FastAPI makes its OpenAPI `description`: what the
route does, then the rules a client meets there, so that a client can see who may call what.

- the read rule: the repository's filters, each with its condition (`filter VisibleToCaller:
  currentUser.isSystem || claimant == currentUser.id`); a row they hide is a 404, as an unknown id
  is, and in no page or list;
- an operation's `requires` gate (refused: 403 `forbidden`) and its `when` gate (refused: 422
  `state-gate-refused`), in the model's own words.
"""

from __future__ import annotations

import textwrap

from loom.codegen.python.literals import docstring
from loom.model import ir

_WIDTH = 92  # the text of each line, indented by the function body's 4 spaces


def route_doc(summary: str, rules: list[str]) -> list[str]:
    """The docstring lines of a route's function: the summary alone, or with its rules below."""
    if not rules:
        return [f"    {docstring(summary)}"]
    lines = [f'    """{_escape(summary)}', ""]
    for rule in rules:
        lines += ["    " + line for line in textwrap.wrap(_escape(rule), _WIDTH)]
    return [*lines, '    """']


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def read_rule(context: ir.Context, aggregate: str) -> list[str]:
    """The read rule of the aggregate's routes: its repository's filters, if any."""
    repo = context.repository_for(aggregate)
    if repo is None or not repo.filters:
        return []
    conditions = "; ".join(
        f"filter {name}: {context.criterion(name).condition.text}" for name in repo.filters
    )
    return [
        f"Read rule ({conditions}): a caller reads only the {aggregate} rows it admits; another is "
        "a 404, as an unknown id is, and in no page or list."
    ]


def operation_rules(op: ir.Operation) -> list[str]:
    """An operation's `requires` and `when` gates, as the model states them."""
    rules = []
    if op.requires is not None:
        rules.append(f"Requires: {op.requires.text} (else 403 forbidden).")
    if op.when is not None:
        rules.append(f"When: {op.when.text} (else 422 state-gate-refused).")
    return rules
