"""Symbol tables: contexts merged across files, their declarations, and the names inside each one.

One namespace per context holds enums, aggregates, repositories, events and workflows together: a
generated service has one module per context, where two declarations with one name would collide.
The one exception is a payload sharing its name with the workflow or handler it is the input of
(`command ReserveSeat` + `workflow ReserveSeat`): a payload is a type, the other an entry point,
and their generated names never meet.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang import ast
from loom.lang.diagnostics import Sink, Span, did_you_mean
from loom.lang.types import ERROR, AnyType, storable
from loom.model import ir
from loom.model.isolation import ISOLATION_LEVELS

PRIMITIVES = ("string", "int", "decimal", "bool", "datetime", "date")
TRAITS = ("crudish",)

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
    timers: dict[str, ast.Timer] = field(default_factory=dict)
    # enum member name -> the enums declaring it (a bare member resolves only when this is unique)
    members: dict[str, list[ast.Enum]] = field(default_factory=dict)
    # aggregate name -> its repository (the first one, when a duplicate was reported)
    repo_for: dict[str, ast.Repository] = field(default_factory=dict)


@dataclass
class Program:
    contexts: dict[str, ContextSymbols] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def repositories_elsewhere(self, name: str, here: str) -> list[tuple[str, ast.Repository]]:
        return [
            (c.name, c.repositories[name])
            for c in self.contexts.values()
            if c.name != here and name in c.repositories
        ]


def _article(word: str) -> str:
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
            for decl in ctx.decls:
                _declare(syms, decl, sink)
    for syms in prog.contexts.values():
        for decl in syms.decls:
            _check_decl(syms, decl, sink)
    return prog


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
                f" (the first is {_article(kind_of(first))})"
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
        ast.Timer: syms.timers,
    }[type(decl)]
    return table  # type: ignore[return-value]


def _check_decl(syms: ContextSymbols, decl: ast.Decl, sink: Sink) -> None:
    if isinstance(decl, ast.Enum):
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
    elif isinstance(decl, ast.Handler):
        _check_isolation(decl.isolation, decl.isolation_span, sink)
        _check_params(decl.params, sink, "Parameter", decl.name)
    elif isinstance(decl, (ast.Criterion, ast.Retrieval)):
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


def _check_aggregate(agg: ast.Aggregate, sink: Sink) -> None:
    for name, span in agg.traits:
        if name not in TRAITS:
            sink.report(
                "loom.unknown-trait",
                f"unknown trait `{name}` on aggregate `{agg.name}`",
                span,
                "not a trait",
                help=did_you_mean(name, TRAITS) or "the only trait is `crudish`",
            )
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
        if m.name == "version":
            sink.report(
                "loom.reserved-member-name",
                f"`version` is reserved in aggregate `{agg.name}`: every aggregate carries its "
                "version for optimistic concurrency, stored and answered under that name",
                m.name_span,
                "reserved name",
                help="rename the member, e.g. `revision` or `schemaVersion`",
            )
            continue
        if m.name in seen:
            _dup(sink, "Member", m.name, m.name_span, seen[m.name], f" in aggregate `{agg.name}`")
        else:
            seen[m.name] = m.name_span
        if isinstance(m, (ast.Function, ast.Operation)):
            _check_params(m.params, sink, "Parameter", m.name)


def _check_isolation(isolation: str | None, span: Span | None, sink: Sink) -> None:
    if isolation is not None and isolation not in ISOLATION_LEVELS:
        assert span is not None
        sink.report(
            "loom.isolation-level",
            f"unknown isolation level `{isolation}`",
            span,
            "not an isolation level",
            help=did_you_mean(isolation, ISOLATION_LEVELS)
            or "use one of `read_committed`, `repeatable_read`, `serializable`",
        )


def _process_stmts(stmts: list[ast.Stmt]) -> bool:
    return any(
        isinstance(s, (ast.Schedule, ast.Cancel, ast.Complete)) for s in ast.walk_stmts(stmts)
    )


def is_process(wf: ast.Workflow) -> bool:
    """A process manager: a workflow with `on timeout` handlers, or whose bodies schedule,
    cancel or complete (its instance then also answers `ended` and `timeouts`)."""
    bodies = [c.body for c in wf.creates] + [o.body for o in wf.ons]
    return bool(wf.timeouts) or any(_process_stmts(b) for b in bodies)


def _check_workflow(wf: ast.Workflow, sink: Sink) -> None:
    _check_isolation(wf.isolation, wf.isolation_span, sink)
    seen: dict[str, Span] = {}
    for m in [*wf.state, *wf.functions]:
        if m.name == "version" and m in wf.state:
            sink.report(
                "loom.reserved-member-name",
                f"`version` is reserved in workflow `{wf.name}`: every instance row carries its "
                "version for optimistic concurrency, stored and answered under that name",
                m.name_span,
                "reserved name",
                help="rename the state field, e.g. `revision` or `step`",
            )
            continue
        if m.name in ("ended", "timeouts") and m in wf.state and is_process(wf):
            sink.report(
                "loom.reserved-member-name",
                f"`{m.name}` is reserved in workflow `{wf.name}`: it uses timeouts or `complete`, "
                f"so its instance answers `{m.name}` (whether it ended, its pending timeouts)",
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
    for h in wf.handles:
        sink.report(
            "loom.workflow-handle-removed",
            f"workflows have no `handle` member; `handle {h.name}` must become a `commandHandler`",
            h.name_span,
            "`handle` was removed",
            help=f"move it out of the workflow as `commandHandler {h.name}(…) {{ … }}`, or model the "
            "step as an aggregate operation",
        )
    if not wf.creates and not wf.handles and not wf.ons:
        sink.report(
            "loom.workflow-without-create",
            f"workflow `{wf.name}` has no `create` and no `on`, so nothing can start it",
            wf.name_span,
            "no entry point",
            help="add `create(params) { … }` (a command), `create(e: Event) by e.key { … }` or "
            "`on(e: Event) { … }` (a reaction), or remove the workflow",
        )
    # Two command creates; an event-triggered one (`by`, or typed by an event) is checked with the
    # types, in rules_workflow.
    for c in wf.creates:
        _check_params(c.params, sink, "Parameter", f"{wf.name}.create")
    for on in wf.ons:
        _check_params(on.params, sink, "Parameter", f"{wf.name}.on")


# --------------------------------------------------------------------------------------------------
# Types


def resolve_type(
    syms: ContextSymbols,
    t: ast.TypeRef,
    sink: Sink,
    *,
    value: bool = True,
    prog: Program | None = None,
    payloads: bool = False,
    events: bool = False,
) -> AnyType:
    """The IR type a type reference names; ERROR (with a diagnostic) when it does not resolve.

    `value=True` refuses aggregate and event types (fields, parameters and event fields hold values,
    never whole aggregates); a workflow result is resolved with `value=False` and judged by its rule.
    `payloads=True` admits payload types (a workflow `create` parameter, a handler contract);
    elsewhere a payload name does not resolve. `events=True` admits an event type (the parameter of
    an event-triggered `create` or an `on`), of this context by its name or of another one
    qualified, `Orders.OrderPlaced`. `prog` lets the message name the other context when
    the name is declared there.
    """
    elsewhere = (
        next(
            (
                c.name
                for c in prog.contexts.values()
                if c.name != syms.name
                and (t.name in c.aggregates or t.name in c.enums or t.name in c.values)
            ),
            None,
        )
        if prog is not None
        else None
    )
    foreign = (
        f"`{t.name}` is declared in context `{elsewhere}`; a type refers to its own context only"
        if elsewhere
        else None
    )
    base: AnyType
    owners = (
        [c.name for c in prog.contexts.values() if c.name != syms.name and t.name in c.aggregates]
        if prog is not None and t.is_id and t.name not in syms.aggregates
        else []
    )
    if t.qualifier is not None:
        qualified = _qualified(syms, t, sink, prog)
        if qualified is None:
            return ERROR
        base = qualified
    elif t.is_id:
        if t.name in syms.aggregates:
            base = ir.IdType(t.name, syms.name)
        elif len(owners) == 1:
            # Contexts refer to each other's aggregates by identity only: an id is a plain value.
            base = ir.IdType(t.name, owners[0])
        else:
            sink.report(
                "loom.unknown-aggregate",
                f"`{t.name} id` names no aggregate of context `{syms.name}`"
                + (" (it is ambiguous across contexts)" if owners else ""),
                t.name_span,
                "not an aggregate",
                help=(
                    f"`{t.name}` is declared in contexts {', '.join(f'`{o}`' for o in owners)}; "
                    "an id of another context must name an aggregate only one context declares"
                )
                if owners
                else did_you_mean(t.name, syms.aggregates)
                or "an `id` type is the identity of an aggregate of this or another context",
            )
            return ERROR
    elif t.name in PRIMITIVES:
        base = ir.PrimitiveType(t.name)  # type: ignore[arg-type]
    elif t.name in syms.enums:
        base = ir.EnumType(t.name, syms.name)
    elif t.name in syms.aggregates:
        base = ir.AggregateType(t.name, syms.name)
    elif t.name in syms.events:
        base = ir.EventType(t.name, syms.name)
    elif t.name in syms.values:
        base = ir.ValueType(t.name, syms.name)
    elif t.name in syms.payloads:
        payload = syms.payloads[t.name]
        if not payloads:
            sink.report(
                "loom.unknown-type",
                f"`{t.name}` is a {payload.kind} payload, and payload types are not in scope here",
                t.name_span,
                "a payload type out of its scope",
                secondary=[(payload.name_span, f"{payload.kind} `{t.name}` is declared here")],
                help=PAYLOAD_SCOPE + "; for a record stored or passed anywhere else declare a "
                f"value object, `value {t.name} {{ … }}`",
            )
            return ERROR
        base = ir.PayloadType(t.name, syms.name, payload.kind)  # type: ignore[arg-type]
    else:
        home = (
            next(
                (
                    c.name
                    for c in prog.contexts.values()
                    if c.name != syms.name and t.name in c.events
                ),
                None,
            )
            if prog is not None
            else None
        )
        if home is not None:
            foreign = (
                f"`{t.name}` is an event of context `{home}`: name it `{home}.{t.name}` (an "
                "event of another context is qualified by its context)"
            )
        known = [*PRIMITIVES, *syms.enums, *syms.aggregates, *syms.values]
        sink.report(
            "loom.unknown-type",
            f"unknown type `{t.name}`",
            t.name_span,
            "not a type",
            help=foreign
            or did_you_mean(t.name, known)
            or "a type is a primitive (string, int, decimal, bool, datetime, date), an enum, a "
            "value object, or `X id`",
        )
        return ERROR
    if t.args is not None:
        sized = _sized(base, t, sink)
        if sized is None:
            return ERROR
        base = sized
    if t.is_list:
        base = ir.ListType(base)  # type: ignore[arg-type]
    if t.is_optional:
        base = ir.OptionalType(base)  # type: ignore[arg-type]
    if value and not storable(base) and not (events and isinstance(base, ir.EventType)):
        what = "an aggregate" if t.name in syms.aggregates else "an event"
        sink.report(
            "loom.invalid-type-use",
            f"`{t.name}` is {what}, not a value type",
            t.name_span,
            f"{what} here",
            help=f"store its identity instead: `{t.name} id`"
            if t.name in syms.aggregates
            else "events are raised with `emit`, not stored",
        )
        return ERROR
    return base


def _sized(base: AnyType, t: ast.TypeRef, sink: Sink) -> AnyType | None:
    """`string(N)`: a string of at most N characters. No other type takes an argument."""
    assert t.args is not None and t.args_span is not None
    if base != ir.STRING or t.is_id or t.qualifier is not None:
        sink.report(
            "loom.unexpected-type-argument",
            f"`{t.name}` takes no argument in parentheses",
            t.args_span,
            "an argument of a type that takes none",
            secondary=[(t.name_span, f"`{t.name}` is not `string`")],
            help="only `string(N)` takes one, its maximum length; write the type on its own, "
            f"`{t.name}`",
        )
        return None
    limit = f"a whole number of characters from 1 to {ir.MAX_STRING_LENGTH}"
    if len(t.args) != 1:
        sink.report(
            "loom.invalid-string-length",
            f"`string(…)` takes exactly one length, {limit}; it has {len(t.args)}",
            t.args_span,
            "one length expected",
            secondary=[(t.name_span, "a bounded string")],
            help="write `string(100)` for a string of at most 100 characters, or plain `string`",
        )
        return None
    arg = t.args[0]
    n = int(arg.text) if arg.text.isdigit() else None
    if n is None or not 1 <= n <= ir.MAX_STRING_LENGTH:
        sink.report(
            "loom.invalid-string-length",
            f"`{arg.text}` is not a length: the length of `string(N)` is {limit}",
            arg.span,
            "not a valid length",
            secondary=[(t.name_span, "a bounded string")],
            help="write `string(100)` for a string of at most 100 characters, or plain `string` "
            "for one without a bound",
        )
        return None
    return ir.PrimitiveType("string", max_length=n)


def _qualified(
    syms: ContextSymbols, t: ast.TypeRef, sink: Sink, prog: Program | None
) -> AnyType | None:
    """`Ctx.Name`: an event of context `Ctx`, or (`Ctx.Name id`) the id of one of its aggregates.
    Events are a context's public surface; everything else of it stays private."""
    assert t.qualifier is not None and t.qualifier_span is not None
    other = prog.contexts.get(t.qualifier) if prog is not None else None
    if other is None and t.qualifier == syms.name:
        other = syms
    if other is None:
        contexts = list(prog.contexts) if prog is not None else [syms.name]
        sink.report(
            "loom.unknown-type",
            f"`{t.qualifier}.{t.name}`: there is no context `{t.qualifier}`",
            t.qualifier_span,
            "not a context",
            help=did_you_mean(t.qualifier, contexts)
            or "a qualified name is `Context.Event` (or `Context.Aggregate id`)",
        )
        return None
    if t.is_id and t.name in other.aggregates:
        return ir.IdType(t.name, other.name)
    if not t.is_id and t.name in other.events:
        return ir.EventType(t.name, other.name)
    decl = other.names.get(t.name)
    if decl is not None:
        what = kind_of(decl)
        why = (
            f"`{t.qualifier}.{t.name}` is {_article(what)} of context `{other.name}`; only its "
            "events (and its aggregates' ids) are visible to other contexts"
        )
        fix = (
            f"write `{t.qualifier}.{t.name} id` for its identity"
            if isinstance(decl, ast.Aggregate)
            else "an event is the public surface of a context; publish one and consume it here"
        )
    else:
        why = f"context `{other.name}` declares no event `{t.name}`"
        fix = did_you_mean(t.name, [*other.events, *other.aggregates]) or (
            f"its events are {', '.join(f'`{e}`' for e in other.events) or 'none'}"
        )
    sink.report("loom.unknown-type", why, t.name_span, "not an event of that context", help=fix)
    return None
