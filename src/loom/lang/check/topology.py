"""Deployables and channel sources: the model's topology, declared beside its contexts.

- `deployable Name { contexts: A, B }` runs its contexts together. Once any is declared, every
  context is in exactly one (a context in none would run nowhere).
- `channelSource Name { kind: nats | redis }` names a broker; `channel X { … source: Name }` places
  a channel on it.
- An event consumed in another deployable than the one of the context raising it can only get
  there on a channel: without one it would never arrive.
"""

from __future__ import annotations

from loom.lang.check.checker import Checker
from loom.lang.check.settings import known_settings
from loom.lang.diagnostics import Span, did_you_mean, suggest
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.model import naming
from loom.model.messaging import BROKER_KINDS

_DEPLOYABLE_SETTINGS = ("contexts",)
_SOURCE_SETTINGS = ("kind",)


def _bare_names(s: ast.ChannelSetting) -> list[tuple[str, Span]] | None:
    """The setting's value as plain names, None when it is anything else."""
    if not isinstance(s.value, list) or any(q is not None for q, _, _ in s.value):
        return None
    return [(name, span) for _, name, span in s.value]


# --------------------------------------------------------------------------------------------------
# Deployables


def check_deployables(ck: Checker) -> None:
    mentions: dict[str, tuple[ast.Deployable, Span]] = {}
    meant: set[str | None] = set()
    for dep in ck.prog.deployables.values():
        what = f"deployable `{dep.name}`"
        found = known_settings(
            ck, "loom.deployable-setting", "deployable", dep, _DEPLOYABLE_SETTINGS
        )
        setting = found.get("contexts")
        names = _bare_names(setting) if setting is not None else None
        if setting is not None and names is None:
            ck.report(
                "loom.deployable-setting",
                f"`contexts` of {what} lists contexts by name",
                setting.value_span,
                "not a list of context names",
                help="write `contexts: Orders, Payment`",
            )
        if setting is None:
            ck.report(
                "loom.deployable-setting",
                f"{what} names no context",
                dep.name_span,
                "no `contexts`",
                help="list the contexts it runs: `contexts: Orders, Payment`",
            )
        for name, span in names or []:
            if name in ck.prog.contexts:
                ck.refer(span, ck.prog.contexts[name].span)
                _deploy(ck, dep, name, span, mentions)
            else:
                _unknown_context(ck, dep, name, span)
                # the misspelt name stands for the context it suggests: not in none, then
                meant.add(suggest(name, ck.prog.contexts))
    if ck.prog.deployables:
        _every_context_deployed(ck, meant)
    _distinct_snake_names(ck)


def _distinct_snake_names(ck: Checker) -> None:
    # a deployable's package folder, database (`<name>.db`) and migrations folder are named after
    # it in snake case: two names that meet there would share one database
    seen: dict[str, ast.Deployable] = {}
    for dep in ck.prog.deployables.values():
        snake = naming.snake(dep.name)
        first = seen.setdefault(snake, dep)
        if first is dep:
            continue
        ck.report(
            "loom.deployable-name-clash",
            f"deployables `{first.name}` and `{dep.name}` are both `{snake}` in snake case",
            dep.name_span,
            f"also `{snake}`",
            secondary=[(first.name_span, f"`{snake}` first")],
            help=f"rename one: each deployable has its own folder, `{snake}.db` and "
            f"`migrations/{snake}/`, named after it in snake case",
        )


def _unknown_context(ck: Checker, dep: ast.Deployable, name: str, span: Span) -> None:
    ck.report(
        "loom.unknown-context",
        f"deployable `{dep.name}` names `{name}`, which is not a context of the model",
        span,
        "no such context",
        help=did_you_mean(name, ck.prog.contexts)
        or "name a context declared in one of the model's files: `context Name { … }`",
    )


def _deploy(
    ck: Checker,
    dep: ast.Deployable,
    name: str,
    span: Span,
    mentions: dict[str, tuple[ast.Deployable, Span]],
) -> None:
    first = mentions.get(name)
    if first is None:
        mentions[name] = (dep, span)
        ck.facts.deployed[name] = dep
        return
    if first[0] is dep:
        ck.report(
            "loom.deployable-setting",
            f"`{name}` is listed twice in deployable `{dep.name}`",
            span,
            "listed again",
            secondary=[(first[1], "first listed here")],
            help="list each context once",
        )
        return
    ck.report(
        "loom.deployable-overlap",
        f"context `{name}` is in two deployables, `{first[0].name}` and `{dep.name}`",
        span,
        f"also in `{dep.name}`",
        secondary=[(first[1], f"in `{first[0].name}` first")],
        help="a context runs in one deployable (its tables live in that one's database); "
        "remove it from one of them",
    )


def _every_context_deployed(ck: Checker, meant: set[str | None]) -> None:
    first = next(iter(ck.prog.deployables.values()))
    for ctx in ck.prog.contexts.values():
        if ctx.name not in ck.facts.deployed and ctx.name not in meant:
            ck.report(
                "loom.context-not-deployed",
                f"context `{ctx.name}` is in no deployable, so it would run nowhere",
                ctx.span,
                "in no deployable",
                secondary=[(first.name_span, "the model declares deployables")],
                help=f"add it to the `contexts` of a deployable, or declare one for it: "
                f"`deployable {ctx.name} {{ contexts: {ctx.name} }}`",
            )


# --------------------------------------------------------------------------------------------------
# Channel sources


def check_channel_sources(ck: Checker) -> None:
    for src in ck.prog.channel_sources.values():
        what = f"channel source `{src.name}`"
        found = known_settings(
            ck, "loom.channel-source-setting", "channel source", src, _SOURCE_SETTINGS
        )
        setting = found.get("kind")
        if setting is None:
            ck.report(
                "loom.channel-source-setting",
                f"{what} has no `kind`",
                src.name_span,
                "no `kind`",
                help="say which broker it is: " + " or ".join(f"`kind: {k}`" for k in BROKER_KINDS),
            )
            continue
        names = _bare_names(setting)
        kind = names[0][0] if names and len(names) == 1 else None
        if kind not in BROKER_KINDS:
            ck.report(
                "loom.channel-source-setting",
                f"`kind` of {what} is one of "
                + ", ".join(f"`{k}`" for k in BROKER_KINDS)
                + f", not `{ck.text(setting.value_span)}`",
                setting.value_span,
                "not a supported broker",
                help=_kind_help(kind),
            )
    for ctx in ck.prog.contexts.values():
        for ch in ctx.channels.values():
            _channel_source(ck, ctx, ch)


def _kind_help(kind: str | None) -> str:
    if kind is not None and kind.lower() == "kafka":
        return (
            "Kafka is not supported: no test of this project runs a Kafka server, and Loom claims "
            "no transport it does not test against a real one; use `nats` or `redis`"
        )
    return (did_you_mean(kind, BROKER_KINDS) if kind else None) or (
        "`nats` is NATS JetStream, `redis` is Redis Streams"
    )


def _channel_source(ck: Checker, ctx: ContextSymbols, ch: ast.Channel) -> None:
    setting = next((s for s in ch.settings if s.key == "source"), None)
    if setting is None:
        return
    names = _bare_names(setting)
    if names is None or len(names) != 1:
        ck.report(
            "loom.channel-setting",
            f"`source` of channel `{ch.name}` names one channel source",
            setting.value_span,
            "not one name",
            help="write `source: Bus`, naming a `channelSource Bus { kind: nats }`",
        )
        return
    name, span = names[0]
    if name in ck.prog.channel_sources:
        ck.refer(span, ck.prog.channel_sources[name].name_span)
    else:
        declared = ck.prog.channel_sources
        ck.report(
            "loom.unknown-channel-source",
            f"channel `{ch.name}` of context `{ctx.name}` is placed on `{name}`, which is not a "
            "channel source",
            span,
            "no such channel source",
            secondary=[(ch.name_span, "this channel")],
            help=did_you_mean(name, declared)
            or f"declare it beside the contexts: `channelSource {name} {{ kind: nats }}`",
        )


# --------------------------------------------------------------------------------------------------
# Events crossing deployables


def check_crossings(ck: Checker) -> None:
    """A reaction to an event raised in another deployable needs a channel carrying it."""
    deployed = ck.facts.deployed
    if not deployed:
        return
    carried = {e for events in ck.facts.channels.values() for e in events}
    for ctx in ck.prog.contexts.values():
        nodes: list[ast.Create | ast.On] = []  # a command `create` has no trigger: skipped
        for wf in ctx.workflows.values():
            nodes += [*wf.creates, *wf.ons]
        for p in ctx.projections.values():
            nodes += p.ons
        for node in nodes:
            trig = ck.facts.triggers.get(node)
            if trig is None or trig.event in carried:
                continue
            producer = deployed.get(trig.event.context)
            consumer = deployed.get(ctx.name)
            if producer is None or consumer is None or producer is consumer:
                continue
            event = ck.prog.contexts[trig.event.context].events[trig.event.name]
            label = f"{trig.event.context}.{trig.event.name}"
            ck.report(
                "loom.crossing-without-channel",
                f"`{label}` is raised in deployable `{producer.name}` and consumed in "
                f"`{consumer.name}`, but no channel carries it: it would never arrive",
                node.params[0].type.span,
                "consumed in another deployable",
                secondary=[
                    (event.name_span, f"raised by context `{trig.event.context}`"),
                    (producer.name_span, f"`{trig.event.context}` runs here"),
                    (consumer.name_span, f"`{ctx.name}` runs here"),
                ],
                help=_carry_help(ck.prog.contexts[trig.event.context], trig.event.name),
            )


def _carry_help(producer: ContextSymbols, event: str) -> str:
    channel = next(iter(producer.channels), None)
    if channel is not None:
        return f"add `{event}` to the `carries` of channel `{channel}` in context `{producer.name}`"
    return (
        f"carry it on a channel, e.g. in context `{producer.name}`: "
        f"`channel Published {{ carries: {event} }}`"
    )
