"""`renamed from OLD`: within one scope (the fields of an aggregate, a workflow's state, a
projection or an event; the members of an enum; the aggregates, or the events, of a context) an old
name says where a declaration's data was, so it must name a place that no longer has an owner:
not the declaration itself, not a second renamed declaration, not a declaration that still exists."""

from __future__ import annotations

from dataclasses import dataclass

from loom.lang.check.checker import Checker
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast


@dataclass(frozen=True)
class _Named:
    name: str
    span: Span
    renamed_from: ast.Renamed | None


def check_renames(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for scope, what in _scopes(ctx):
            _check_scope(ck, scope, what)


def _scopes(ctx: ContextSymbols) -> list[tuple[list[_Named], str]]:
    def fields(fs: list[ast.Field]) -> list[_Named]:
        return [_Named(f.name, f.name_span, f.renamed_from) for f in fs]

    out = [
        (
            [_Named(a.name, a.name_span, a.renamed_from) for a in ctx.aggregates.values()],
            f"aggregate of context `{ctx.name}`",
        ),
        (
            [_Named(e.name, e.name_span, e.renamed_from) for e in ctx.events.values()],
            f"event of context `{ctx.name}`",
        ),
    ]
    for agg in ctx.aggregates.values():
        out.append((fields(agg.fields), f"field of aggregate `{agg.name}`"))
    for ev in ctx.events.values():
        out.append((fields(ev.fields), f"field of event `{ev.name}`"))
    for wf in ctx.workflows.values():
        out.append((fields(wf.state), f"state field of workflow `{wf.name}`"))
    for proj in ctx.projections.values():
        out.append((fields(proj.fields), f"field of projection `{proj.name}`"))
    for enum in ctx.enums.values():
        members = [
            _Named(name, span, enum.renamed_from.get(i))
            for i, (name, span) in enumerate(enum.members)
        ]
        out.append((members, f"member of enum `{enum.name}`"))
    return out


def _check_scope(ck: Checker, scope: list[_Named], what: str) -> None:
    current = {d.name: d for d in scope}
    first: dict[str, _Named] = {}
    for d in scope:
        old = d.renamed_from
        if old is None:
            continue
        if old.name == d.name:
            ck.report(
                "loom.renamed-from-itself",
                f"`{d.name}` is renamed from its own name",
                old.span,
                "the same name",
                secondary=[(d.span, "declared here")],
                help=f"write the name `{d.name}` had in the previous model, or remove "
                "`renamed from` if it kept its name",
            )
            continue
        other = current.get(old.name)
        if other is not None:
            ck.report(
                "loom.renamed-from-current-name",
                f"`{d.name}` is renamed from `{old.name}`, but `{old.name}` is still a {what}",
                old.span,
                f"`{old.name}` still exists",
                secondary=[(other.span, f"`{old.name}` declared here")],
                help=f"the data of `{old.name}` cannot both stay and move to `{d.name}`: remove "
                f"or rename the declaration `{old.name}`, or remove `renamed from {old.name}`",
            )
            continue
        earlier = first.get(old.name)
        if earlier is not None:
            assert earlier.renamed_from is not None
            ck.report(
                "loom.duplicate-rename",
                f"`{d.name}` and `{earlier.name}` are both renamed from `{old.name}`",
                old.span,
                "renamed from it again",
                secondary=[
                    (earlier.renamed_from.span, f"`{earlier.name}` is renamed from it here")
                ],
                help=f"the data of `{old.name}` moves to one {what.split(' of ')[0]}: keep "
                "`renamed from` on that one and remove the other",
            )
            continue
        first[old.name] = d
