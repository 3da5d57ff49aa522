"""Use after delete: once a body deletes a bound aggregate (`Repo.delete(x)` / `Repo.remove(x)`),
later statements on the same path may not use `x` (`loom.workflow-use-after-delete`).

The walk follows the statement lists: a delete in a nested block (an `if let` branch, a loop body)
counts for the rest of that block only, because the other path may not have deleted it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from loom.lang.check.checker import Checker
from loom.lang.check.facts import DeleteStmt
from loom.lang.diagnostics import Span
from loom.lang.syntax import ast


def check_body(ck: Checker, body: list[ast.Stmt]) -> None:
    _block(ck, body, {})


def _block(ck: Checker, body: list[ast.Stmt], deleted: dict[str, Span]) -> None:
    deleted = dict(deleted)
    for stmt in body:
        for name in _uses(stmt, deleted):
            ck.report(
                "loom.workflow-use-after-delete",
                f"`{name.name}` was deleted above, so it cannot be used here",
                name.span,
                "used after its delete",
                secondary=[(deleted[name.name], "deleted here")],
                help=f"use `{name.name}` before deleting it, or read the values you need into "
                "`let`s first",
            )
        for block in ast.nested_blocks(stmt):
            _block(ck, block, deleted)
        found = ck.facts.stmts.get(stmt)
        if isinstance(found, DeleteStmt):
            deleted.setdefault(found.name, stmt.span)


def _uses(stmt: ast.Stmt, deleted: dict[str, Span]) -> Iterator[ast.Name]:
    """The names of deleted bindings this statement reads (not inside its nested blocks)."""
    if not deleted:
        return
    if isinstance(stmt, ast.IfLet):
        roots: list[object] = [stmt.source]
    elif isinstance(stmt, ast.If):
        roots = [stmt.condition]
    elif isinstance(stmt, ast.ForEach):
        roots = [stmt.items]
    else:
        roots = [stmt]
    for root in roots:
        for node in _walk(root):
            if isinstance(node, ast.Name) and node.name in deleted:
                yield node


def _walk(node: object) -> Iterator[object]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, list):
            stack.extend(reversed(n))
        elif dataclasses.is_dataclass(n) and not isinstance(n, (type, Span)):
            if isinstance(n, ast.MemberAccess):
                stack.append(n.obj)
                continue
            for f in dataclasses.fields(n):
                value = getattr(n, f.name)
                if isinstance(value, (list, ast.Name)) or dataclasses.is_dataclass(value):
                    stack.append(value)
