"""Reactions, channels and projections: what connects contexts through their events.

- A reaction is an event-triggered `create(e: Event) by e.key` (a starter) or an `on(e: Event)
  [by e.key]` of a workflow or a projection. It takes exactly one parameter, typed by an event of
  its context (`OrderPlaced`) or of another one (`Orders.OrderPlaced`); `by` reads a field of it.
- `channel Name { carries: …  retention: work|log  maxAttempts: n  backoff: 1s .. 5m }` makes the
  events it carries durable (transactional outbox + relay); an event rides at most one channel.
- `projection Name { key: X id  n: int = 0  on(e: E) by e.x { n := n + 1 } }` folds events into
  one row per key, served over HTTP only (never read by a workflow).
"""

from __future__ import annotations

from loom.lang.check.bodies import unbound_state
from loom.lang.check.checker import Checker
from loom.lang.check.facts import StateWrite, Trigger
from loom.lang.check.scope import Binding, Scope
from loom.lang.check.settings import known_settings
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, is_error, is_numeric, show
from loom.model import ir
from loom.model.deployables import event_label

RETENTIONS = ("work", "log")
SETTINGS = ("carries", "retention", "maxAttempts", "backoff", "source")


# --------------------------------------------------------------------------------------------------
# Reactions (shared by workflows and projections)


def trigger_event(
    ck: Checker, params: list[ast.Param], span: Span, what: str
) -> tuple[ir.EventType, str] | None:
    """The event a reaction takes (its one parameter), or None with a `loom.trigger-parameter`."""
    typed = [(p, ck.type_of(p.type)) for p in params]
    events = [(p, t) for p, t in typed if isinstance(t, ir.EventType)]
    if len(params) == 1 and events:
        p, t = events[0]
        assert isinstance(t, ir.EventType)
        return t, p.name
    if any(is_error(t) for _, t in typed) and len(params) <= 1:
        return None  # the type itself was reported
    if not events:
        ck.report(
            "loom.trigger-parameter",
            f"{what} reacts to an event, so it takes one parameter typed by an event",
            params[0].type.span if params else span,
            "not an event" if params else "no event parameter",
            help="write `on(e: SomeEvent) { … }`; an event of another context is named "
            "`Context.Event`",
        )
        return None
    extra = next(p for p, t in typed if not isinstance(t, ir.EventType) or p is not events[0][0])
    ck.report(
        "loom.trigger-parameter",
        f"{what} takes only its event; `{extra.name}` cannot be given to it",
        extra.span,
        "an extra parameter",
        secondary=[(events[0][0].span, "the event")],
        help="read what you need from the event's fields; a command entry with parameters is a "
        "`create` without an event, or a commandHandler",
    )
    p, t = events[0]
    assert isinstance(t, ir.EventType)
    return t, p.name


def check_by(
    ck: Checker,
    scope: Scope,
    by: ast.Expr | None,
    param: str | None,
    key: ast.Field | None,
    owner: str,
) -> ir.Expr | None:
    """`by e.field`: a field of the event parameter, of the key's type. Typed either way."""
    if by is None:
        return None
    x = ck.root(by, scope)
    shaped = (
        isinstance(by, ast.MemberAccess)
        and isinstance(by.obj, ast.Name)
        and param is not None
        and by.obj.name == param
    )
    if not shaped:
        if param is not None and not is_error(x.type):
            ck.report(
                "loom.by-not-event-field",
                f"`by {ck.text(by.span)}` must read a field of the event `{param}`",
                by.span,
                "not a field of the event",
                help=f"write `by {param}.<field>`: the event field that holds the key",
            )
        return x
    if key is not None:
        kt = ck.type_of(key.type)
        ck.mismatch(
            x,
            by,
            kt,
            f"`by` gives {a(x.type)}, but the key `{key.name}` of `{owner}` is {a(kt)}",
            [(key.span, "the key field")],
            help=f"key by an event field of type `{show(kt)}`",
        )
    return x


def reaction_scope(
    ck: Checker,
    ctx: ContextSymbols,
    params: list[ast.Param],
    scope: Scope,
) -> Scope:
    """Bind the parameters of a reaction in `scope` (resolving their types once)."""
    for p in params:
        t = ck.facts.types.get(p.type)
        if t is None:
            t = resolve_type(ctx, p.type, ck.sink, prog=ck.prog, events=True)
            ck.facts.types[p.type] = t
        scope.names.setdefault(p.name, Binding(p.name, t, p.name_span, "param", used=True))
    return scope


def once(
    ck: Checker,
    owner: str,
    here: str,
    seen: dict[ir.EventType, Span],
    event: ir.EventType | None,
    span: Span,
) -> None:
    """One reaction per event and owner (workflow or projection)."""
    if event is None:
        return
    first = seen.get(event)
    if first is None:
        seen[event] = span
        return
    ck.report(
        "loom.duplicate-declaration",
        f"`{owner}` reacts to `{event_label(event, here)}` twice",
        span,
        "second reaction",
        secondary=[(first, "the first reaction")],
        help="merge the two bodies into one reaction",
    )


# --------------------------------------------------------------------------------------------------
# Channels


def check_channels(ck: Checker) -> None:
    carried: dict[ir.EventType, tuple[str, Span]] = {}
    for ctx in ck.prog.contexts.values():
        for ch in ctx.channels.values():
            for event, span in _channel(ck, ctx, ch):
                first = carried.get(event)
                if first is None:
                    carried[event] = (ch.name, span)
                    continue
                ck.report(
                    "loom.channel-overlap",
                    f"`{event_label(event, ctx.name)}` is carried by two channels, `{first[0]}` "
                    f"and `{ch.name}`",
                    span,
                    "carried again here",
                    secondary=[(first[1], f"first carried by `{first[0]}`")],
                    help="an event rides one channel (its outbox row is written once); remove it "
                    "from one of them",
                )


def _setting_error(ck: Checker, message: str, span: Span, label: str, help: str) -> None:
    ck.report("loom.channel-setting", message, span, label, help=help)


def _channel(ck: Checker, ctx: ContextSymbols, ch: ast.Channel) -> list[tuple[ir.EventType, Span]]:
    """Check one channel's settings; answer the events it carries (resolved) with their spans."""
    seen = known_settings(ck, "loom.channel-setting", "channel", ch, SETTINGS)
    events: list[tuple[ir.EventType, Span]] = []
    for s in seen.values():
        if s.key == "carries":
            events += _carries(ck, ctx, ch, s)
        elif s.key == "retention":
            word = s.value[0][1] if isinstance(s.value, list) and len(s.value) == 1 else None
            if word not in RETENTIONS or (isinstance(s.value, list) and s.value[0][0]):
                _setting_error(
                    ck,
                    f"`retention` of channel `{ch.name}` is `work` or `log`, not "
                    f"`{ck.text(s.value_span)}`",
                    s.value_span,
                    "not a retention",
                    (did_you_mean(word, RETENTIONS) if word else None)
                    or "`work` deletes a row once delivered; `log` keeps it, marked delivered",
                )
        elif s.key == "maxAttempts":
            if not isinstance(s.value, int) or s.value < 1:
                _setting_error(
                    ck,
                    f"`maxAttempts` of channel `{ch.name}` must be a whole number of at least 1",
                    s.value_span,
                    "not a number of attempts",
                    "write e.g. `maxAttempts: 5`: the deliveries tried before the event is "
                    "dead-lettered",
                )
        elif s.key == "backoff":
            if not isinstance(s.value, tuple):
                _setting_error(
                    ck,
                    f"`backoff` of channel `{ch.name}` is a range of durations, `first .. cap`",
                    s.value_span,
                    "not a duration range",
                    "write e.g. `backoff: 1s .. 5m` (units `ms`, `s`, `m`, `h`, `d`): the delay "
                    "doubles from the first retry up to the cap",
                )
            elif s.value[0] > s.value[1] or s.value[0] == 0:
                _setting_error(
                    ck,
                    f"the `backoff` of channel `{ch.name}` starts at "
                    f"{'zero' if s.value[0] == 0 else 'more than its cap'}",
                    s.value_span,
                    "first delay > cap" if s.value[0] else "no delay",
                    "the first delay is positive and no longer than the cap, e.g. `1s .. 5m`",
                )
    if "carries" not in seen:
        _setting_error(
            ck,
            f"channel `{ch.name}` carries no event",
            ch.name_span,
            "no `carries`",
            "list the events it makes durable: `carries: OrderPlaced, Payment.PaymentFailed`",
        )
    return events


def _carries(
    ck: Checker, ctx: ContextSymbols, ch: ast.Channel, s: ast.ChannelSetting
) -> list[tuple[ir.EventType, Span]]:
    if not isinstance(s.value, list):
        _setting_error(
            ck,
            f"`carries` of channel `{ch.name}` lists events",
            s.value_span,
            "not a list of events",
            "write `carries: OrderPlaced, Payment.PaymentFailed`",
        )
        return []
    out: list[tuple[ir.EventType, Span]] = []
    here: set[ir.EventType] = set()
    for qualifier, name, span in s.value:
        owner = ck.prog.contexts.get(qualifier) if qualifier is not None else ctx
        if owner is None:
            ck.report(
                "loom.unknown-event",
                f"`{qualifier}.{name}`: there is no context `{qualifier}`",
                span,
                "not a context",
                help=did_you_mean(qualifier or "", ck.prog.contexts)
                or "an event of another context is `Context.Event`",
            )
            continue
        if name not in owner.events:
            elsewhere = [c.name for c in ck.prog.contexts.values() if name in c.events]
            ck.report(
                "loom.unknown-event",
                f"context `{owner.name}` declares no event `{name}`",
                span,
                "not an event",
                help=(
                    f"`{name}` is an event of context `{elsewhere[0]}`: name it "
                    f"`{elsewhere[0]}.{name}`"
                    if elsewhere and qualifier is None
                    else None
                )
                or did_you_mean(name, owner.events)
                or f"declare it: `event {name} {{ … }}`",
            )
            continue
        # `Ctx.Event`: the name is the span's last characters
        ck.refer(span.tail(len(name)), owner.events[name].name_span)
        event = ir.EventType(name, owner.name)
        if event in here:
            ck.report(
                "loom.channel-setting",
                f"`{event_label(event, ctx.name)}` is listed twice in channel `{ch.name}`",
                span,
                "listed again",
                help="list each event once",
            )
            continue
        here.add(event)
        out.append((event, span))
    ck.facts.channels[ch] = tuple(e for e, _ in out)
    return out


# --------------------------------------------------------------------------------------------------
# Projections


def projection_key(ck: Checker, proj: ast.Projection) -> ast.Field | None:
    """The key of a projection's rows: its first id-shaped field, else its first field."""
    for f in proj.fields:
        if isinstance(ck.type_of(f.type), ir.IdType):
            return f
    return proj.fields[0] if proj.fields else None


_KEY_TYPES = (ir.STRING, ir.INT)


def check_projection(ck: Checker, ctx: ContextSymbols, proj: ast.Projection) -> None:
    state = {f.name: ck.type_of(f.type) for f in proj.fields}
    for f in proj.fields:
        ft = state[f.name]
        if f.default is not None:
            x = ck.root(f.default, Scope(ctx, None, "default"), ft)
            ck.mismatch(x, f.default, ft, f"the default of `{f.name}` is {a(x.type)}, not {a(ft)}")
        if f.immutable:
            ck.report(
                "loom.invalid-statement",
                f"`immutable` has no meaning on the field `{f.name}` of a projection",
                f.span,
                "`immutable` here",
                help="a projection's fields change only in its `on` reactions; remove `immutable`",
            )
    key = projection_key(ck, proj)
    if key is not None:
        ck.facts.projection_keys[proj] = key.name
    kt = ck.type_of(key.type) if key is not None else ERROR
    if key is None:
        ck.report(
            "loom.projection-key",
            f"projection `{proj.name}` declares no field, so nothing keys its rows",
            proj.name_span,
            "no key field",
            help="declare its key first, e.g. `ticket: Ticket id`, then the fields it folds",
        )
    elif not is_error(kt) and not (isinstance(kt, ir.IdType) or kt in _KEY_TYPES):
        ck.report(
            "loom.projection-key",
            f"the key `{key.name}` of projection `{proj.name}` is {a(kt)}; a key is an id, a "
            "`string` or an `int`",
            key.type.span,
            "not a key type",
            help="declare an id-shaped field first (`order: Order id`): the first id field, else "
            "the first field, keys the rows",
        )
    elif key.default is not None:
        ck.report(
            "loom.projection-key",
            f"the key `{key.name}` of projection `{proj.name}` has a default, so every row would "
            "start with the same key",
            key.default.span,
            "a default on the key",
            help="remove the default: `by` (or the reaction's assignment) gives the key",
        )
    if not proj.ons:
        ck.report(
            "loom.workflow-without-create",
            f"projection `{proj.name}` has no `on`, so nothing ever fills it",
            proj.name_span,
            "no reaction",
            help="add `on(e: SomeEvent) by e.key { … }`, or remove the projection",
        )
    seen: dict[ir.EventType, Span] = {}
    for on in proj.ons:
        scope = Scope(ctx, None, "workflow", body="projection", state=state, correlated=True)
        reaction_scope(ck, ctx, on.params, scope)
        found = trigger_event(ck, on.params, on.span, "`on`")
        by = check_by(ck, scope, on.by, found[1] if found else None, key, proj.name)
        # without an event (reported), the body is still checked, but not for its key
        scope.bound[0] = on.by is not None or key is None or found is None
        _fold(ck, proj, key, on.body, scope)
        if key is not None and on.by is None and not scope.bound[0]:
            ck.report(
                "loom.state-correlation-missing",
                f"this `on` of projection `{proj.name}` neither has `by` nor assigns the key "
                f"`{key.name}`, so it cannot tell which row it folds into",
                on.span,
                "no key",
                help=f"add `by {found[1] if found else 'e'}.<field>`, or assign `{key.name} := …` "
                "first in the body",
            )
        ck.warn_unused(scope)
        if found is not None:
            ck.facts.triggers[on] = Trigger(found[0], found[1], by)
            once(ck, proj.name, ctx.name, seen, found[0], on.span)


def _fold(
    ck: Checker,
    proj: ast.Projection,
    key: ast.Field | None,
    body: list[ast.Stmt],
    scope: Scope,
) -> None:
    """A projection's `on` body folds the event into its row: `let`, `precondition`, `if` and
    assignments of its own fields; it reads no repository and changes nothing else."""
    for st in body:
        if isinstance(st, ast.Precondition):
            ck.facts.exprs[st.condition] = ck.condition(st.condition, scope, "a precondition")
        elif isinstance(st, ast.Let) and not _is_call(st.value):
            x = ck.root(st.value, scope)
            ck.bind_local(
                scope, Binding(st.name, x.type, st.name_span, "value", used=is_error(x.type))
            )
        elif isinstance(st, ast.If):
            ck.facts.exprs[st.condition] = ck.condition(
                st.condition, scope, "the condition of `if`"
            )
            for branch in (st.then, st.otherwise):
                if branch is not None:
                    _fold(ck, proj, key, branch, scope.child())
        elif isinstance(st, ast.Assign) and isinstance(st.target, ast.Name):
            _fold_assign(ck, proj, key, st, st.target, scope)
        else:
            ck.report(
                "loom.invalid-statement",
                "a projection's `on` only folds the event into its row",
                st.span,
                "not allowed in a projection",
                help="use `let`, `precondition`, `if` and assignments of the projection's fields "
                "(`count := count + 1`); a projection reads no repository, calls no operation "
                "and emits nothing",
            )
            if isinstance(st, ast.Assign):
                ck.root(st.value, scope)


def _is_call(e: ast.Expr) -> bool:
    return isinstance(e, ast.Call) and isinstance(e.callee, ast.MemberAccess)


def _fold_assign(
    ck: Checker,
    proj: ast.Projection,
    key: ast.Field | None,
    st: ast.Assign,
    target: ast.Name,
    scope: Scope,
) -> None:
    name = target.name
    ft: AnyType | None = scope.state.get(name)
    if ft is None:
        b = scope.names.get(name)
        ck.report(
            "loom.assign-to-readonly" if b is not None else "loom.unknown-field",
            f"cannot assign `{name}`: it is a local value"
            if b is not None
            else f"projection `{proj.name}` has no field `{name}`",
            target.span,
            "not a field of the projection",
            help=did_you_mean(name, scope.state) or "a projection assigns its own fields",
        )
        ck.root(st.value, scope)
        return
    is_key = key is not None and name == key.name
    if is_key and st.op != ":=":
        ck.report(
            "loom.compound-assign-type",
            f"the key `{name}` is given with `:=`, never `{st.op}`",
            st.span,
            "compound assignment of the key",
            help=f"write `{name} := …`",
        )
    if is_key and scope.bound[0]:
        ck.report(
            "loom.assign-to-readonly",
            f"cannot assign `{name}`: it keys the row this reaction folds into, and it is "
            "bound already",
            st.span,
            "the key",
            help="remove the assignment, or remove `by` and assign the key first",
        )
        ck.root(st.value, scope)
        return
    if is_key and scope.depth > 0:
        ck.report(
            "loom.state-correlation-missing",
            f"the key `{name}` must be assigned at the top level of the body",
            st.span,
            "assigned inside a block",
            help="assign it before any `if`, so every path binds the row",
        )
    x = ck.root(st.value, scope, ft)
    if st.op in ("+=", "-=") and not is_key and not is_error(ft) and not is_numeric(ft):
        ck.report(
            "loom.compound-assign-type",
            f"`{st.op}` needs a numeric field, but `{name}` is {a(ft)}",
            target.span,
            f"{a(ft)} field",
            help=f"write `{name} := …` with the new value instead",
        )
        return
    ck.mismatch(x, st.value, ft, f"cannot assign {a(x.type)} to `{name}`, {a(ft)} field")
    if not is_key:
        unbound_state(ck, scope, st.span, name)
    scope.bound[0] = scope.bound[0] or is_key
    if st.op in ("+=", "-=") and not is_error(ft):
        # `n += e` folds as `n := n + e` (the field's type: the checks above admit only that)
        x = ir.Binary(st.op[0], ir.StateField(name, ft, name), x, ft, ck.text(st.span))  # type: ignore[arg-type]
    ck.facts.stmts[st] = StateWrite(name, x, is_key)
