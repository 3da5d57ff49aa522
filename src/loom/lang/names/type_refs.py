"""Type references to types: what `x: T` names, resolved against the context's symbols.

A type that does not resolve gets a diagnostic and the ERROR type, so each mistake is one message.
"""

from __future__ import annotations

from loom.lang.diagnostics import Sink, did_you_mean
from loom.lang.names.decimal_type import decimal_type
from loom.lang.names.symbols import PAYLOAD_SCOPE, ContextSymbols, Program, article, kind_of
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, storable
from loom.model import ir

PRIMITIVES = ("string", "int", "decimal", "bool", "datetime", "date", "duration")


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
        foreign: str | None
        if home is not None:
            foreign = (
                f"`{t.name}` is an event of context `{home}`: name it `{home}.{t.name}` (an "
                "event of another context is qualified by its context)"
            )
        else:
            foreign = _declared_elsewhere(syms, t, prog)
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


def _declared_elsewhere(syms: ContextSymbols, t: ast.TypeRef, prog: Program | None) -> str | None:
    """The help for a type declared in another context (looked for only once it is unknown here:
    scanning every context for every type reference made resolving quadratic)."""
    if prog is None:
        return None
    elsewhere = next(
        (
            c.name
            for c in prog.contexts.values()
            if c.name != syms.name
            and (t.name in c.aggregates or t.name in c.enums or t.name in c.values)
        ),
        None,
    )
    if elsewhere is None:
        return None
    return f"`{t.name}` is declared in context `{elsewhere}`; a type refers to its own context only"


def _sized(base: AnyType, t: ast.TypeRef, sink: Sink) -> AnyType | None:
    """`string(N)`: a string of at most N characters. No other type takes an argument."""
    assert t.args is not None and t.args_span is not None
    if base == ir.DECIMAL and not t.is_id and t.qualifier is None:
        return decimal_type(t, sink)
    if base != ir.STRING or t.is_id or t.qualifier is not None:
        sink.report(
            "loom.unexpected-type-argument",
            f"`{t.name}` takes no argument in parentheses",
            t.args_span,
            "an argument of a type that takes none",
            secondary=[(t.name_span, f"`{t.name}` is not `string`")],
            help="only `string(N)` (its maximum length) and `decimal(P, S)` (its precision and "
            "scale) take arguments; write the type on its own, "
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
            f"`{t.qualifier}.{t.name}` is {article(what)} of context `{other.name}`; only its "
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
