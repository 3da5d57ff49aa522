"""`resource NAME { kind: api  context: Ctx  timeout: 2s  retries: 2 }` and the calls through it.

- A resource binds another context's command and query handlers: `kind: api` (the only kind) and
  `context` are required, `timeout` (default 5s) and `retries` (default 2, queries only) optional;
  each setting once and in range (`loom.resource-setting`); an unknown context is
  `loom.unknown-context`.
- `name.Handler(arg: value, …)` calls a handler of the bound context, in a workflow, handler or
  reaction body, with named arguments (`loom.api-arguments`, `loom.type-mismatch`). It answers the
  handler's result type; one answering an aggregate cannot be called (`loom.api-aggregate-result`).
- A query body calls only query handlers (`loom.query-handler-mutates`); a command call cannot
  run inside a transactional body, whose rollback could not undo it
  (`loom.api-command-in-transaction`).
"""

from __future__ import annotations

from typing import Literal

from loom.lang.check.checker import Checker
from loom.lang.check.facts import ApiStmt, ResourceFact
from loom.lang.check.principal import SYSTEM_WHERE, runs_as_system
from loom.lang.check.reads import args_only, query_refuses
from loom.lang.check.scope import Scope
from loom.lang.check.settings import known_settings
from loom.lang.diagnostics import Sink, Span, did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.names.type_refs import resolve_type
from loom.lang.syntax import ast
from loom.lang.types import AnyType, ErrorType, a, is_error
from loom.model import ir
from loom.model.ir import resources

_SETTINGS = ("kind", "context", "timeout", "retries")
_EXAMPLE = "`resource directory { kind: api  context: Directory }`"


def _setting_error(ck: Checker, message: str, span: Span, label: str, help: str) -> None:
    ck.report("loom.resource-setting", message, span, label, help=help)


def _one_name(s: ast.ChannelSetting) -> tuple[str, Span] | None:
    if not isinstance(s.value, list) or len(s.value) != 1 or s.value[0][0] is not None:
        return None
    return s.value[0][1], s.value[0][2]


def check_resources(ck: Checker) -> None:
    for ctx in ck.prog.contexts.values():
        for res in ctx.resources.values():
            fact = _resource(ck, ctx, res)
            if fact is not None:
                ck.facts.resources[res] = fact


def _resource(ck: Checker, ctx: ContextSymbols, res: ast.Resource) -> ResourceFact | None:
    what = f"resource `{res.name}`"
    seen = known_settings(ck, "loom.resource-setting", "resource", res, _SETTINGS)
    ok = True
    kind = seen.get("kind")
    kind_name = _one_name(kind) if kind is not None else None
    if kind is None:
        _setting_error(ck, f"{what} has no `kind`", res.name_span, "no `kind`", f"write {_EXAMPLE}")
        ok = False
    elif kind_name is None or kind_name[0] not in resources.RESOURCE_KINDS:
        _setting_error(
            ck,
            f"`kind` of {what} is `api`, not `{ck.text(kind.value_span)}`: the only kind of "
            "resource is another context's API",
            kind.value_span,
            "not a supported kind",
            "write `kind: api`",
        )
        ok = False
    target: str | None = None
    setting = seen.get("context")
    if setting is None:
        _setting_error(
            ck, f"{what} names no context", res.name_span, "no `context`", f"write {_EXAMPLE}"
        )
        ok = False
    else:
        named = _one_name(setting)
        if named is None:
            _setting_error(
                ck,
                f"`context` of {what} names one context",
                setting.value_span,
                "not one context name",
                "write `context: Directory`",
            )
        elif named[0] == ctx.name:
            _setting_error(
                ck,
                f"{what} binds its own context `{ctx.name}`",
                named[1],
                "its own context",
                "a resource reaches another context; call this context's own logic directly",
            )
        elif named[0] not in ck.prog.contexts:
            ck.report(
                "loom.unknown-context",
                f"{what} binds `{named[0]}`, which is not a context of the model",
                named[1],
                "no such context",
                secondary=[(res.name_span, "this resource")],
                help=did_you_mean(named[0], ck.prog.contexts)
                or "name a context declared in one of the model's files",
            )
        else:
            target = named[0]
            ck.refer(named[1], ck.prog.contexts[target].span)
    timeout = _ranged(
        ck, what, seen.get("timeout"), resources.DEFAULT_TIMEOUT_MS, resources.TIMEOUT_RANGE_MS
    )
    retries = _ranged(
        ck, what, seen.get("retries"), resources.DEFAULT_RETRIES, resources.RETRIES_RANGE
    )
    if not ok or target is None or timeout is None or retries is None:
        return None
    return ResourceFact(target, timeout, retries)


def _ranged(
    ck: Checker, what: str, s: ast.ChannelSetting | None, default: int, bounds: tuple[int, int]
) -> int | None:
    """The value of `timeout` (a duration, in ms) or `retries` (a count); None when refused."""
    if s is None:
        return default
    low, high = bounds
    if s.key == "timeout":
        if not isinstance(s.value, ast.Duration) or not low <= s.value.ms <= high:
            _setting_error(
                ck,
                f"`timeout` of {what} is one duration from 1ms to 10m",
                s.value_span,
                "not a duration in range",
                help="write e.g. `timeout: 2s` (a whole number with `ms`, `s` or `m`)",
            )
            return None
        return s.value.ms
    if not isinstance(s.value, int) or isinstance(s.value, bool) or not low <= s.value <= high:
        _setting_error(
            ck,
            f"`retries` of {what} is a whole number from {low} to {high}",
            s.value_span,
            "not a count in range",
            help="write e.g. `retries: 2` (query calls only are retried; 0 turns retries off)",
        )
        return None
    return s.value


# --------------------------------------------------------------------------------------------------
# Calls


def _signature_type(ck: Checker, ctx: ContextSymbols, t: ast.TypeRef) -> AnyType:
    """A type of another context's handler signature: resolved by the rule checking that handler
    (reported there), so resolved quietly here when that rule has not run yet."""
    found = ck.facts.types.get(t)
    if found is not None:
        return found
    return resolve_type(ctx, t, Sink(), prog=ck.prog, payloads=True, value=False)


def _holds_aggregate(t: AnyType) -> bool:
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return isinstance(t, ir.AggregateType)


def api_call(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    position: str,
    res: ast.Resource,
    method: str,
    mspan: Span,
) -> ir.Expr | ApiStmt | None:
    """`res.method(args)` in a body: a value (`let`, `if let` source) or a command statement."""
    fact = ck.facts.resources.get(res)
    if fact is None:  # its settings were refused
        args_only(ck, call, scope)
        return None
    target = ck.prog.contexts[fact.target]
    h = target.handlers.get(method)
    if h is None:
        ck.report(
            "loom.unknown-api-handler",
            f"context `{target.name}` has no command or query handler `{method}`",
            mspan,
            "no such handler",
            secondary=[(res.name_span, f"`{res.name}` binds context `{target.name}`")],
            help=did_you_mean(method, target.handlers)
            or f"call one of `{target.name}`'s handlers: "
            + (", ".join(f"`{n}`" for n in target.handlers) or "it declares none"),
        )
        args_only(ck, call, scope)
        return None
    ck.refer(mspan, h.name_span)
    label = f"`{res.name}.{method}`"
    result = _signature_type(ck, target, h.result) if h.result is not None else ir.VOID
    refused = False
    if _holds_aggregate(result):
        ck.report(
            "loom.api-aggregate-result",
            f"{label} answers an aggregate of context `{target.name}`, which cannot cross to "
            f"context `{scope.ctx.name}`",
            call.span,
            "answers an aggregate",
            secondary=[(h.result.span if h.result else h.name_span, "declared result")],
            help=f"give `{method}` a result another context can hold: a `response` payload or a "
            "value object with the fields the caller needs",
        )
        refused = True
    if h.kind == "command":
        if query_refuses(ck, scope, f"call the commandHandler {label}", call.span):
            refused = True
        elif scope.transactional:
            ck.report(
                "loom.api-command-in-transaction",
                f"{label} runs a command of context `{target.name}` inside a transactional body: "
                "it commits on its own and a rollback here could not undo it",
                call.span,
                "a command call in a transaction",
                secondary=[(h.name_span, "the command handler")],
                help="call it from a non-transactional commandHandler or workflow `create`, or "
                "let the other context react to an event this body emits",
            )
            refused = True
    _tenant_for_the_system(ck, call, scope, target, label)
    args = _named_args(ck, call, scope, h, target, label)
    if refused or args is None or isinstance(result, ErrorType):
        return None
    kind: Literal["command", "query"] = "command" if h.kind == "command" else "query"
    value = ir.ApiCall(res.name, target.name, h.name, kind, args, result, ck.text(call.span))
    return _placed(ck, call, position, value, h, label)


def _tenant_for_the_system(
    ck: Checker, call: ast.Call, scope: Scope, target: ContextSymbols, label: str
) -> None:
    """A body the system runs calls as the system principal of its event's tenant (a system
    token, docs/deployables.md); an untenanted context's has none, which a tenanted context's
    handler refuses (403) on every call: the reaction would be dead-lettered."""
    if target.tenanted is None or scope.ctx.tenanted is not None or not runs_as_system(scope):
        return
    ck.report(
        "loom.api-call-without-tenant",
        f"{label} calls tenanted context `{target.name}` from {SYSTEM_WHERE[scope.body]} of "
        f"untenanted context `{scope.ctx.name}`: it runs as the system principal, which has no "
        "tenant there, so every call is refused (403) and the reaction dead-lettered",
        call.span,
        "called as the system principal without a tenant",
        secondary=[(target.tenanted, f"`{target.name}` is tenanted")],
        help=f"make context `{scope.ctx.name}` tenanted too (its events then carry their "
        "tenant), or call the handler from a request, whose caller's token names one",
    )


def _placed(
    ck: Checker, call: ast.Call, position: str, value: ir.ApiCall, h: ast.Handler, label: str
) -> ir.Expr | ApiStmt | None:
    if position == "stmt":
        if h.kind == "query":
            ck.report(
                "loom.invalid-statement",
                f"{label} is a query and its answer is not used",
                call.span,
                "the value is not used",
                help="bind its answer with `let`, or remove the call",
            )
            return None
        return ApiStmt(value)
    if position == "value":
        ck.report(
            "loom.workflow-nested-call",
            f"{label} calls another context: it must be the whole value of a `let`",
            call.span,
            "call inside an expression",
            help=f"bind it first: `let answer = {ck.text(call.span)}`",
        )
        return None
    if h.result is None:
        ck.report(
            "loom.invalid-statement",
            f"{label} answers nothing, so there is no value to bind",
            call.span,
            "answers nothing",
            help="call it as a statement of its own",
        )
        return None
    return value


def _named_args(
    ck: Checker,
    call: ast.Call,
    scope: Scope,
    h: ast.Handler,
    target: ContextSymbols,
    label: str,
) -> tuple[tuple[str, ir.Expr], ...] | None:
    """The arguments by parameter, in the handler's order; None when they do not bind."""
    params = {p.name: p for p in h.params}
    given: dict[str, tuple[ir.Expr, Span]] = {}
    ok = True
    for arg in call.args:
        if isinstance(arg, ast.Record) or arg.name is None or arg.name_span is None:
            ck.report(
                "loom.api-arguments",
                f"{label} takes named arguments",
                arg.span,
                "not a named argument",
                help="name each parameter: "
                + (", ".join(f"`{p.name}: …`" for p in h.params) or "it takes none"),
            )
            args_only(ck, call, scope)
            return None
        p = params.get(arg.name)
        pt = _signature_type(ck, target, p.type) if p is not None else None
        x = ck.expr(arg.value, scope, pt if pt is not None and not is_error(pt) else None)
        if p is None:
            ck.report(
                "loom.api-arguments",
                f"{label} has no parameter `{arg.name}`",
                arg.name_span,
                "unknown parameter",
                secondary=[(h.name_span, "the handler")],
                help=did_you_mean(arg.name, params)
                or "its parameters: " + (", ".join(f"`{n}`" for n in params) or "none"),
            )
            ok = False
            continue
        if arg.name in given:
            ck.report(
                "loom.api-arguments",
                f"`{arg.name}` is given twice to {label}",
                arg.name_span,
                "given again",
                secondary=[(given[arg.name][1], "first given here")],
                help="give each parameter once",
            )
            ok = False
            continue
        given[arg.name] = (x, arg.name_span)
        if pt is not None and not is_error(pt):
            ok = (
                ck.mismatch(
                    x,
                    arg.value,
                    pt,
                    f"parameter `{p.name}` of {label} is {_show(pt)}, but this is {_show(x.type)}",
                    [(p.span, "parameter")],
                )
                and ok
            )
    missing = [
        p.name
        for p in h.params
        if p.name not in given
        and not isinstance(_signature_type(ck, target, p.type), ir.OptionalType)
    ]
    if missing:
        ck.report(
            "loom.api-arguments",
            f"{label} needs " + ", ".join(f"`{n}`" for n in missing),
            call.span,
            "missing " + ("an argument" if len(missing) == 1 else "arguments"),
            secondary=[(h.name_span, "the handler")],
            help="pass " + ", ".join(f"`{n}: …`" for n in missing),
        )
        ok = False
    if not ok:
        return None
    out: list[tuple[str, ir.Expr]] = []
    for p in h.params:
        if p.name in given:
            out.append((p.name, given[p.name][0]))
        else:  # an optional parameter left out: null
            t = _signature_type(ck, target, p.type)
            out.append((p.name, ir.Literal_(None, t, "null")))  # type: ignore[arg-type]
    return tuple(out)


def _show(t: AnyType) -> str:
    return a(t) if not is_error(t) else "a value of unknown type"
