"""Symbol tables: contexts merged across files, their declarations, and the names inside each one.

One namespace per context holds enums, aggregates, repositories, events and workflows together: a
generated service has one module per context, where two declarations with one name would collide.
The one exception is a payload sharing its name with the workflow or handler it is the input of
(`command ReserveSeat` + `workflow ReserveSeat`): a payload is a type, the other an entry point,
and their generated names never meet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from loom.lang.diagnostics import Sink, Span, did_you_mean
from loom.lang.syntax import ast
from loom.model.naming import snake
from loom.model.reserved import (
    CHECK_INVARIANTS,
    ENDED,
    ENDED_AT,
    EPISODE,
    STARTED_AT,
    TIMEOUTS,
    VERSION,
)

_KIND = {
    ast.Enum: "enum",
    ast.Aggregate: "aggregate",
    ast.Repository: "repository",
    ast.Event: "event",
    ast.Workflow: "workflow",
    ast.Criterion: "criterion",
    ast.Retrieval: "retrieval",
    ast.Handler: "handler",
    ast.DomainService: "domain service",
    ast.ValueObject: "value object",
    ast.Projection: "projection",
    ast.Channel: "channel",
    ast.Resource: "resource",
    ast.Timer: "timer",
}

PAYLOAD_SCOPE = (
    "payload types may be used only as the type of a workflow `create` parameter, or as a "
    "parameter or the result of a commandHandler / queryHandler"
)


def kind_of(decl: object) -> str:
    if isinstance(decl, ast.Payload):
        return f"{decl.kind} payload"
    return _KIND.get(type(decl), "declaration")


@dataclass
class ContextSymbols:
    name: str
    span: Span
    # `context Billing tenanted { … }`: the word `tenanted` (every part of the context says it)
    tenanted: Span | None = None
    decls: list[ast.Decl] = field(default_factory=list)
    names: dict[str, ast.Decl] = field(default_factory=dict)
    enums: dict[str, ast.Enum] = field(default_factory=dict)
    aggregates: dict[str, ast.Aggregate] = field(default_factory=dict)
    repositories: dict[str, ast.Repository] = field(default_factory=dict)
    events: dict[str, ast.Event] = field(default_factory=dict)
    workflows: dict[str, ast.Workflow] = field(default_factory=dict)
    criteria: dict[str, ast.Criterion] = field(default_factory=dict)
    retrievals: dict[str, ast.Retrieval] = field(default_factory=dict)
    handlers: dict[str, ast.Handler] = field(default_factory=dict)
    services: dict[str, ast.DomainService] = field(default_factory=dict)
    values: dict[str, ast.ValueObject] = field(default_factory=dict)
    payloads: dict[str, ast.Payload] = field(default_factory=dict)
    projections: dict[str, ast.Projection] = field(default_factory=dict)
    channels: dict[str, ast.Channel] = field(default_factory=dict)
    resources: dict[str, ast.Resource] = field(default_factory=dict)
    timers: dict[str, ast.Timer] = field(default_factory=dict)
    # enum member name -> the enums declaring it (a bare member resolves only when this is unique)
    members: dict[str, list[ast.Enum]] = field(default_factory=dict)
    # aggregate name -> its repository (the first one, when a duplicate was reported)
    repo_for: dict[str, ast.Repository] = field(default_factory=dict)


@dataclass
class Program:
    contexts: dict[str, ContextSymbols] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    # the topology beside the contexts: one namespace each (a deployable is often named like the
    # context it runs, `deployable Orders { contexts: Orders }`); the first of a name, when a
    # duplicate was reported
    deployables: dict[str, ast.Deployable] = field(default_factory=dict)
    channel_sources: dict[str, ast.ChannelSource] = field(default_factory=dict)

    def repositories_elsewhere(self, name: str, here: str) -> list[tuple[str, ast.Repository]]:
        return [
            (c.name, c.repositories[name])
            for c in self.contexts.values()
            if c.name != here and name in c.repositories
        ]


def article(word: str) -> str:
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _dup(sink: Sink, what: str, name: str, span: Span, first: Span, extra: str = "") -> None:
    sink.report(
        "loom.duplicate-declaration",
        f"{what} `{name}` is declared twice{extra}",
        span,
        "declared again here",
        secondary=[(first, "first declared here")],
        help="rename one of them, or remove the second",
    )


def build(files: list[ast.File], sink: Sink) -> Program:
    prog = Program(files=[f.name for f in files])
    for f in files:
        for ctx in f.contexts:
            syms = prog.contexts.get(ctx.name)
            if syms is None:
                syms = prog.contexts[ctx.name] = ContextSymbols(ctx.name, ctx.name_span)
                syms.tenanted = ctx.tenanted
            elif (syms.tenanted is None) != (ctx.tenanted is None):
                _tenanted_partial(sink, syms, ctx)
            for decl in ctx.decls:
                _declare(syms, decl, sink)
        for d in f.deployables:
            _declare_top(prog.deployables, d, "Deployable", sink)
        for c in f.channel_sources:
            _declare_top(prog.channel_sources, c, "Channel source", sink)
    for syms in prog.contexts.values():
        for decl in syms.decls:
            _check_decl(syms, decl, sink)
    return prog


def _tenanted_partial(sink: Sink, first: ContextSymbols, again: ast.Context) -> None:
    """A context declared in several parts is tenanted in all of them or in none: a part that
    leaves the word out would read as holding untenanted rows."""
    said, silent = (
        (first.tenanted, again.name_span)
        if again.tenanted is None
        else (again.tenanted, first.span)
    )
    assert said is not None
    sink.report(
        "loom.tenanted-partial",
        f"context `{first.name}` is declared `tenanted` in one part and not in another",
        silent,
        "declared without `tenanted`",
        secondary=[(said, "declared `tenanted` here")],
        help=f"write `context {first.name} tenanted {{ … }}` in every part, or in none",
    )


_Top = TypeVar("_Top", ast.Deployable, ast.ChannelSource)


def _declare_top(table: dict[str, _Top], decl: _Top, what: str, sink: Sink) -> None:
    first = table.setdefault(decl.name, decl)
    if first is not decl:
        _dup(sink, what, decl.name, decl.name_span, first.name_span)


def _may_share(a: ast.Decl, b: ast.Decl) -> bool:
    """A payload and the workflow or handler it is the input of may have one name."""
    kinds = {type(a), type(b)}
    return ast.Payload in kinds and len(kinds) == 2 and bool(kinds & {ast.Workflow, ast.Handler})


def _declare(syms: ContextSymbols, decl: ast.Decl, sink: Sink) -> None:
    first = syms.names.get(decl.name)
    if first is not None and _may_share(first, decl):
        first = next(
            (d for d in syms.decls if d.name == decl.name and not _may_share(d, decl)), None
        )
        if first is None:
            syms.decls.append(decl)
            _table(syms, decl)[decl.name] = decl
            return
    if first is not None:
        where = f" in context `{syms.name}`"
        _dup(
            sink,
            kind_of(decl).capitalize(),
            decl.name,
            decl.name_span,
            first.name_span,
            where
            + (
                f" (the first is {article(kind_of(first))})"
                if type(first) is not type(decl)
                else ""
            ),
        )
        return
    syms.names[decl.name] = decl
    syms.decls.append(decl)
    _table(syms, decl)[decl.name] = decl


def _table(syms: ContextSymbols, decl: ast.Decl) -> dict[str, ast.Decl]:
    table = {
        ast.Enum: syms.enums,
        ast.Aggregate: syms.aggregates,
        ast.Repository: syms.repositories,
        ast.Event: syms.events,
        ast.Workflow: syms.workflows,
        ast.Criterion: syms.criteria,
        ast.Retrieval: syms.retrievals,
        ast.Handler: syms.handlers,
        ast.DomainService: syms.services,
        ast.ValueObject: syms.values,
        ast.Payload: syms.payloads,
        ast.Projection: syms.projections,
        ast.Channel: syms.channels,
        ast.Resource: syms.resources,
        ast.Timer: syms.timers,
    }[type(decl)]
    return table  # type: ignore[return-value]


def _check_decl(syms: ContextSymbols, decl: ast.Decl, sink: Sink) -> None:
    if isinstance(decl, ast.Enum):
        if not decl.members:
            sink.report(
                "loom.empty-enum",
                f"enum `{decl.name}` has no members, so no field of it can ever hold a value",
                decl.name_span,
                "no members",
                help=f"list its values: `enum {decl.name} {{ First, Second }}`",
            )
        seen: dict[str, Span] = {}
        for name, span in decl.members:
            if name in seen:
                _dup(sink, "Enum member", name, span, seen[name], f" in `{decl.name}`")
                continue
            seen[name] = span
            syms.members.setdefault(name, []).append(decl)
    elif isinstance(decl, ast.Aggregate):
        _check_aggregate(decl, sink)
    elif isinstance(decl, ast.Repository):
        if decl.aggregate not in syms.aggregates:
            sink.report(
                "loom.unknown-aggregate",
                f"repository `{decl.name}` is for `{decl.aggregate}`, which is not an aggregate of "
                f"context `{syms.name}`",
                decl.aggregate_span,
                "no such aggregate",
                help=did_you_mean(decl.aggregate, syms.aggregates),
            )
        elif decl.aggregate in syms.repo_for:
            other = syms.repo_for[decl.aggregate]
            sink.report(
                "loom.duplicate-declaration",
                f"`{decl.aggregate}` already has a repository, `{other.name}`",
                decl.name_span,
                "second repository",
                secondary=[(other.name_span, "the first repository")],
                help="an aggregate has one repository; remove this one",
            )
        else:
            syms.repo_for[decl.aggregate] = decl
    elif isinstance(decl, ast.Event):
        _check_params(decl.fields, sink, "Event field", decl.name)
    elif isinstance(decl, (ast.ValueObject, ast.Payload, ast.Projection)):
        _check_params(decl.fields, sink, "Field", decl.name)
    elif isinstance(decl, ast.Workflow):
        _check_workflow(decl, sink)
    elif isinstance(decl, (ast.Handler, ast.Criterion, ast.Retrieval)):
        _check_params(decl.params, sink, "Parameter", decl.name)
    elif isinstance(decl, ast.DomainService):
        seen_m: dict[str, Span] = {}
        for m in decl.methods:
            if m.name in seen_m:
                _dup(sink, "Method", m.name, m.name_span, seen_m[m.name], f" in `{decl.name}`")
            else:
                seen_m[m.name] = m.name_span
            _check_params(m.params, sink, "Parameter", m.name)


def _check_params(
    params: list[ast.Param] | list[ast.Field], sink: Sink, what: str, owner: str
) -> None:
    seen: dict[str, Span] = {}
    for p in params:
        if p.name in seen:
            _dup(sink, what, p.name, p.name_span, seen[p.name], f" in `{owner}`")
        else:
            seen[p.name] = p.name_span


def _check_immutable_line(field: ast.Field, after: ast.Field, sink: Sink) -> None:
    """`immutable` is a suffix: written at the start of a line, before the next field's name, it
    is read as the field above's modifier, which is surely not what the line says."""
    if not field.immutable or field.default is not None or field.renamed_from is not None:
        return
    end = field.span
    if end.end_line > field.type.span.end_line and end.end_line == after.span.line:
        sink.report(
            "loom.immutable-before-field",
            f"`immutable` comes after a field's type: this line makes `{field.name}` immutable, "
            f"not `{after.name}`",
            after.name_span,
            f"`{after.name}` is not immutable",
            secondary=[(field.span, f"`{field.name}` is the field made immutable")],
            help=f"put `immutable` after the type it is meant for, on its line "
            f"(`{after.name}: <type> immutable`); for `{field.name}` too, after its own type",
        )


def _check_aggregate(agg: ast.Aggregate, sink: Sink) -> None:
    seen: dict[str, Span] = {}
    factories = [m for m in agg.members if isinstance(m, ast.Factory)]
    for extra in factories[1:]:
        sink.report(
            "loom.duplicate-declaration",
            f"aggregate `{agg.name}` declares more than one `create`",
            extra.span,
            "second `create`",
            secondary=[(factories[0].span, "the first `create`")],
            help="an aggregate has one factory; merge the two",
        )
    for f in factories[:1]:
        _check_params(f.params, sink, "Parameter", f"{agg.name}.create")
    for above, after in zip(agg.members, agg.members[1:], strict=False):
        if isinstance(above, ast.Field) and isinstance(after, ast.Field):
            _check_immutable_line(above, after, sink)
    for m in agg.members:
        if isinstance(m, (ast.Invariant, ast.Unique, ast.Factory)):
            continue
        if m.name == "id":
            sink.report(
                "loom.duplicate-declaration",
                f"`id` is declared in aggregate `{agg.name}`, but every aggregate already has one",
                m.name_span,
                "`id` is implicit",
                help=f"remove it: `id` is always there, typed `{agg.name} id`",
            )
            continue
        if m.name == VERSION:
            sink.report(
                "loom.reserved-member-name",
                f"`version` is reserved in aggregate `{agg.name}`: every aggregate carries its "
                "version for optimistic concurrency, stored and answered under that name",
                m.name_span,
                "reserved name",
                help="rename the member, e.g. `revision` or `schemaVersion`",
            )
            continue
        if snake(m.name) == CHECK_INVARIANTS:
            sink.report(
                "loom.reserved-member-name",
                f"`{m.name}` is reserved in aggregate `{agg.name}`: the generated aggregate has a "
                f"`{CHECK_INVARIANTS}` method that checks its invariants",
                m.name_span,
                "reserved name",
                help="rename the member, e.g. `validate` or `audit`",
            )
            continue
        if m.name in seen:
            _dup(sink, "Member", m.name, m.name_span, seen[m.name], f" in aggregate `{agg.name}`")
        else:
            seen[m.name] = m.name_span
        if isinstance(m, (ast.Function, ast.Operation)):
            _check_params(m.params, sink, "Parameter", m.name)


_PROCESS_RESERVED = (ENDED, TIMEOUTS, EPISODE, STARTED_AT, ENDED_AT)


def _check_workflow(wf: ast.Workflow, sink: Sink) -> None:
    seen: dict[str, Span] = {}
    members: list[ast.Field | ast.Function] = [*wf.state, *wf.functions]
    for m in members:
        if m.name == VERSION and m in wf.state:
            sink.report(
                "loom.reserved-member-name",
                f"`version` is reserved in workflow `{wf.name}`: every instance row carries its "
                "version for optimistic concurrency, stored and answered under that name",
                m.name_span,
                "reserved name",
                help="rename the state field, e.g. `revision` or `step`",
            )
            continue
        if m.name in _PROCESS_RESERVED and m in wf.state and ast.is_process(wf):
            sink.report(
                "loom.reserved-member-name",
                f"`{m.name}` is reserved in workflow `{wf.name}`: it uses timeouts or `complete`, "
                f"so its instance answers `{m.name}` (whether it ended, its pending timeouts, "
                "its episode and when that started and ended)",
                m.name_span,
                "reserved name",
                help="rename the state field, e.g. `closed` or `deadlines`",
            )
            continue
        if m.name in seen:
            _dup(sink, "Member", m.name, m.name_span, seen[m.name], f" in workflow `{wf.name}`")
        else:
            seen[m.name] = m.name_span
    for fn in wf.functions:
        _check_params(fn.params, sink, "Parameter", fn.name)
    for c in wf.creates:
        _check_params(c.params, sink, "Parameter", f"{wf.name}.create")
    for on in wf.ons:
        _check_params(on.params, sink, "Parameter", f"{wf.name}.on")
