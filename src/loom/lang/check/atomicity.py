"""`loom.body-not-atomic`: where a crash can still separate what a body that is not transactional
writes, or separate a write from the durable event that announces it.

Such a body (a workflow's command `create`, a command handler) commits each save on its own, and the
last write of each group of saves carries the durable events emitted before it (codegen's
`carry_emits`). What is left open is then:
- a body that may write twice on one path (two aggregates, an aggregate and its workflow's
  instance row, an aggregate per iteration of a loop): a crash between the commits keeps the first;
- a durable `emit` after the body's last write on a path (after a `delete`, after a loop or a
  branch that saved): its event commits on its own after that write, and a crash between loses it.

This reads the saves lowering placed, so it runs on the IR after lowering (`compiler._run`), not
in the checker; it only warns, and a model with errors never gets here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from loom.lang.diagnostics import Sink, Span
from loom.model import ir

_WRITES = (ir.Save, ir.SaveInstance, ir.Delete)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class _Path:
    """What one path through a body has done so far."""

    writes: int = 0  # writes that commit on their own (2 stands for "two or more")
    uncarried: list[ir.Emit] = field(default_factory=list)  # durable emits after the last write

    def merge(self, other: _Path) -> _Path:
        emits = self.uncarried + [e for e in other.uncarried if e not in self.uncarried]
        return _Path(max(self.writes, other.writes), emits)


class _Walker:
    def __init__(self, durable: set[tuple[str, str]]) -> None:
        self.durable = durable
        self.torn_writes = False
        self.torn_emits: list[ir.Emit] = []

    def end(self, path: _Path) -> None:
        if path.writes >= 2:
            self.torn_writes = True
        if path.writes and path.uncarried:
            self.torn_emits += [e for e in path.uncarried if e not in self.torn_emits]

    def block(self, stmts: tuple[ir.Stmt, ...], path: _Path) -> _Path | None:
        """Walk `stmts` from `path`; the path that falls through the block, None if none does."""
        for stmt in stmts:
            if isinstance(stmt, _WRITES):
                path = _Path(min(path.writes + 1, 2), [])  # its group's last write carries them
            elif isinstance(stmt, ir.Emit):
                if (stmt.context, stmt.event) in self.durable:
                    path = _Path(path.writes, [*path.uncarried, stmt])
            elif isinstance(stmt, ir.Return | ir.NotFoundStmt):
                if isinstance(stmt, ir.Return):
                    self.end(path)
                return None
            elif isinstance(stmt, ir.If | ir.IfLet):
                then = self.block(stmt.then, _Path(path.writes, list(path.uncarried)))
                other = self.block(stmt.otherwise, _Path(path.writes, list(path.uncarried)))
                if then is None and other is None:
                    return None
                path = then.merge(other) if then and other else then or other or path
            elif isinstance(stmt, ir.ForEach):
                once = self.block(stmt.body, _Path(path.writes, list(path.uncarried)))
                if once is not None:
                    if once.writes > path.writes:  # a write per element: several commits
                        once = _Path(2, once.uncarried)
                    path = path.merge(once)
        return path


def check_atomicity(model: ir.Model, sources: dict[str, str], sink: Sink) -> None:
    """Warn of each body that is not transactional where a crash can separate its writes, or a
    write from the durable event emitted after it (`loom.body-not-atomic`)."""
    durable = {(e.context, e.name) for c in model.contexts for ch in c.channels for e in ch.events}
    for ctx in model.contexts:
        for wf in ctx.workflows:
            if wf.transactional or wf.process or wf.autocommit:
                continue
            for create in wf.creates:
                _check(f"workflow `{wf.name}`", create.body, create.origin, durable, sources, sink)
        for h in ctx.handlers:
            if h.kind == "command" and not (h.transactional or h.autocommit):
                _check(f"commandHandler `{h.name}`", h.body, h.origin, durable, sources, sink)


def _check(
    what: str,
    body: tuple[ir.Stmt, ...],
    at: ir.Origin,
    durable: set[tuple[str, str]],
    sources: dict[str, str],
    sink: Sink,
) -> None:
    walker = _Walker(durable)
    end = walker.block(body, _Path())
    if end is not None:
        walker.end(end)
    fix = (
        "make it `transactional` so that its saves and its events commit together, let it save"
        " one aggregate and leave the rest to a reaction to its event, or, if each save committing"
        " on its own is what you mean, say so: `autocommit`"
    )
    if walker.torn_writes:
        sink.report(
            "loom.body-not-atomic",
            f"{what} is not transactional and may commit several saves, each on its own: a crash"
            " between two of them keeps the first and loses the rest, with the events they carry",
            _span(at, sources),
            "each save commits on its own",
            help=fix,
        )
    for emit in walker.torn_emits:
        sink.report(
            "loom.body-not-atomic",
            f"`emit {emit.event}` comes after the last save of {what}, which is not transactional:"
            " the event commits on its own after that save, and a crash between them loses it",
            _span(emit.origin, sources),
            "written apart from the save before it",
            help="emit it before the statement that saves or deletes (an event emitted before a"
            " save is written in that save's commit), or " + fix,
        )


def _span(at: ir.Origin, sources: dict[str, str]) -> Span:
    """The word the origin points at (a declaration's name, a statement's keyword)."""
    lines = sources.get(at.file, "").splitlines()
    text = lines[at.line - 1] if 0 < at.line <= len(lines) else ""
    word = _WORD.match(text, at.column - 1)
    end = word.end() + 1 if word else at.column + 1
    return Span(at.file, at.line, at.column, at.line, end)
