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
from loom.model import ir, walk

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


def read_rule(context: ir.Context, aggregate: str, ignoring: tuple[str, ...] = ()) -> list[str]:
    """The read rule of the aggregate's routes: its repository's filters, if any (but those a
    body's read ignores)."""
    repo = context.repository_for(aggregate)
    names = [n for n in repo.filters if n not in ignoring] if repo is not None else []
    if not names:
        return []
    conditions = "; ".join(f"filter {n}: {context.criterion(n).condition.text}" for n in names)
    return [
        f"Read rule ({conditions}): a caller reads only the {aggregate} rows it admits; another is "
        "a 404, as an unknown id is, and in no page or list."
    ]


def projection_rule(p: ir.Projection) -> list[str]:
    """The read rule of a projection's routes: its `filter`, if any."""
    if p.filter is None:
        return []
    return [
        f"Read rule (filter: {p.filter.text}): a caller reads only the rows it admits; another is "
        "a 404, as an unknown key is, and in no page."
    ]


def body_read_rules(context: ir.Context, body: tuple[ir.Stmt, ...]) -> list[str]:
    """The read rules of the repositories a handler's body reads through, each once."""
    rules: list[str] = []
    for node in walk.nodes(body):
        if isinstance(node, ir.Read | ir.LoadById):
            for rule in read_rule(context, node.aggregate, node.ignoring):
                if rule not in rules:
                    rules.append(rule)
    return rules


def operation_rules(op: ir.Operation) -> list[str]:
    """An operation's `requires` and `when` gates, as the model states them."""
    rules = []
    if op.requires is not None:
        rules.append(f"Requires: {op.requires.text} (else 403 forbidden).")
    if op.when is not None:
        rules.append(f"When: {op.when.text} (else 422 state-gate-refused).")
    return rules
