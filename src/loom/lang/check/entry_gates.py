"""`requires` gates of the entry points beside operations: an aggregate's factory
(`create(…) requires …`), a workflow's command `create` and a `commandHandler` / `queryHandler`,
spelled and checked like an operation's gate, over `currentUser` and the parameters (no fields:
nothing is loaded when it runs, before the body reads or writes anything).

- An event-triggered `create` takes no gate: no caller runs it, the system does
  (`loom.gate-on-reaction`).
- A reaction, an `on timeout` or a timer creating an aggregate whose factory gate refuses the
  system principal gets `loom.reactor-gate-unsatisfiable`, as when it calls such an operation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from loom.lang.check.checker import Checker
from loom.lang.check.facts import Create
from loom.lang.check.principal import NAME, admits_system, reads_principal, system_bodies
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast


@dataclass(frozen=True, slots=True)
class EntryGate:
    label: str  # as the refusal's rule names it: `Policy.create`, `workflow Issue`, ...
    gate: ast.Expr
    params: list[ast.Param]


def entry_gates(ck: Checker, ctx: ContextSymbols) -> Iterator[EntryGate]:
    """The gates of the context's entry points a caller runs (not its operations')."""
    for agg in ctx.aggregates.values():
        f = agg.factory
        if f is not None and f.requires is not None:
            yield EntryGate(f"{agg.name}.create", f.requires, f.params)
    for wf in ctx.workflows.values():
        for c in wf.creates:
            if c.requires is not None and c not in ck.facts.triggers:
                yield EntryGate(f"workflow {wf.name}", c.requires, c.params)
    for h in ctx.handlers.values():
        if h.requires is not None:
            yield EntryGate(f"{h.kind}Handler {h.name}", h.requires, h.params)


def check_entry_gates(ck: Checker) -> None:
    """Type each entry gate (a `bool` over `currentUser` and the parameters), refuse one on an
    event-triggered `create`, and warn of system bodies creating through a refusing factory."""
    for ctx in ck.prog.contexts.values():
        for entry in entry_gates(ck, ctx):
            scope = ck.params_scope(ctx, None, "requires", entry.params)
            ck.facts.exprs[entry.gate] = ck.condition(entry.gate, scope, "a `requires` gate")
        for wf in ctx.workflows.values():
            for c in wf.creates:
                if c.requires is not None and c in ck.facts.triggers:
                    _on_reaction(ck, wf, c.requires)
        _system_creates(ck, ctx)


def _on_reaction(ck: Checker, wf: ast.Workflow, gate: ast.Expr) -> None:
    ck.report(
        "loom.gate-on-reaction",
        f"this `create` of `{wf.name}` reacts to an event: no caller runs it, so a `requires` "
        "gate has no one to check",
        gate.span,
        "gate on a reaction",
        help="gate the entry that raises the event (its operation, workflow `create` or "
        "handler), or, to refuse some events, test them with `precondition` in the body",
    )


def _system_creates(ck: Checker, ctx: ContextSymbols) -> None:
    """`let x = Agg.create(…)` in a body the system runs, through a gate refusing the system."""
    for body, where in system_bodies(ck, ctx):
        for s in ast.walk_stmts(body):
            found = ck.facts.stmts.get(s)
            if not isinstance(found, Create) or not isinstance(s, ast.Let):
                continue
            agg = ctx.aggregates.get(found.aggregate)
            gate = agg.factory.requires if agg is not None and agg.factory is not None else None
            x = ck.facts.exprs.get(gate) if gate is not None else None
            if gate is None or x is None or not reads_principal(x) or admits_system(x):
                continue
            ck.report(
                "loom.reactor-gate-unsatisfiable",
                f"`{ck.text(s.value.span)}` runs in {where}, as the system principal, but the "
                f"`requires` gate of `{found.aggregate}.create` reads `{NAME}` without admitting "
                "the system, so it refuses every such call",
                s.value.span,
                "created as the system principal",
                secondary=[(gate.span, f"the gate of `{found.aggregate}.create`")],
                help=f"admit the system in the gate: `requires {NAME}.isSystem || "
                f"{ck.text(gate.span)}`",
            )
