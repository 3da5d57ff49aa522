"""`currentUser` and `requires` gates: who the code runs as, and who may run an operation.

- `currentUser` is the principal of the running request (a verified bearer token's user, or
  anonymous) or, in a reaction, a timeout or a timer, the system principal. It is read through its
  members only: `id: string` (none for anonymous callers, the system and a token without `sub`:
  `==` / `!=` with it are false then, and reading it as a value is a 401 at run time),
  `isSystem: bool`, `isAuthenticated: bool`, `roles: string[]`, `hasRole(name: string): bool`,
  `claim(name: string): string` ("" when absent), `tenant: string` (tenanted contexts only).
- It may be read in an operation's `requires` gate, in the bodies a request runs (a workflow's
  command `create`, a `commandHandler`, a `queryHandler`) and in the bodies the system runs (an
  event-triggered `create`, an `on`, an `on timeout`, a context `timer`): there it is the system
  principal of the tenant the body runs in (`isSystem` true, no roles, no claims,
  `currentUser.tenant` the event's, the instance's or the swept tenant). `currentUser.id` is
  refused in those: the system has no id, so every read of it would fail or compare false.
  A criterion may read it too: one that does is a read rule, which a repository names as its
  `filter` (`read_rules.py`), built for the caller of each read.
  Anywhere else it is `loom.current-user-misplaced`: the aggregate's state and rules (invariants,
  `when`, bodies, functions, defaults), retrievals and domain services do not depend on who asks,
  and an `apply` or a projection must fold an event the same way on every replay.
- A reaction (event-triggered `create`, `on`), an `on timeout` or a timer that calls an operation
  whose gate reads `currentUser` without a `currentUser.isSystem ||` disjunct (or one reading
  only `currentUser.tenant`) gets the warning `loom.reactor-gate-unsatisfiable`: the gate would
  refuse the system principal.
"""

from __future__ import annotations

from collections.abc import Iterator

from loom.lang.check.checker import Checker
from loom.lang.check.facts import CallOp, OwnCall, ServiceStmt
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import a, is_error
from loom.model import ir

NAME = "currentUser"
MEMBERS: dict[str, ir.Type] = {
    "id": ir.STRING,
    "isSystem": ir.BOOL,
    "isAuthenticated": ir.BOOL,
    "roles": ir.ListType(ir.STRING),
    "tenant": ir.STRING,
}
METHODS: dict[str, ir.Type] = {"hasRole": ir.BOOL, "claim": ir.STRING}
_ALL = ", ".join(f"`{m}`" for m in MEMBERS) + ", " + ", ".join(f"`{m}(…)`" for m in METHODS)


def is_current_user(e: ast.Expr, scope: Scope) -> bool:
    """`currentUser`, unless a parameter or local of that name hides it."""
    return isinstance(e, ast.Name) and e.name == NAME and NAME not in scope.names


# the bodies a request runs, as its caller; and those the system runs, as the system principal of
# the tenant it runs in (the event's, the instance's, each swept tenant's)
REQUEST_BODIES = ("create", "command", "query")
SYSTEM_BODIES = ("starter", "on", "timeout", "timer")


def allowed(scope: Scope) -> bool:
    """A `requires` gate, a criterion (a read rule), a body a request runs, or a body the system
    runs."""
    return scope.kind in ("requires", "criterion") or (
        scope.kind == "workflow" and scope.body in REQUEST_BODIES + SYSTEM_BODIES
    )


def runs_as_system(scope: Scope) -> bool:
    """A reaction (event-triggered `create`, `on`), an `on timeout` or a context `timer`."""
    return scope.kind == "workflow" and scope.body in SYSTEM_BODIES


SYSTEM_WHERE = {
    "starter": "a reaction to an event",
    "on": "a reaction to an event",
    "timeout": "an `on timeout` body",
    "timer": "a context timer",
}


def _system_id(ck: Checker, span: Span, scope: Scope) -> None:
    """`currentUser.id` where the system runs: it has no id."""
    where = SYSTEM_WHERE[scope.body]
    source = (
        "carry who acted in the event (a field `by: string` set from `currentUser.id` where the "
        "event is raised) and read it from the event"
        if scope.body in ("starter", "on")
        else "keep who acted where the body reads it (a field set from `currentUser.id` by a "
        "request's body) and read it from there"
    )
    readable = f"`{NAME}.isSystem`" + (
        f" and `{NAME}.tenant` are" if scope.ctx.tenanted is not None else " is"
    )
    ck.report(
        "loom.current-user-misplaced",
        f"`{NAME}.id` cannot be read in {where}: it runs as the system principal, which has no "
        "id, so reading it would always fail and comparing with it would always be false",
        span,
        "the system has no id",
        help=f"{readable} read here; to know who acted, {source}",
    )


def _misplaced(ck: Checker, span: Span, scope: Scope) -> None:
    if scope.kind == "workflow" and scope.body in ("apply", "projection"):
        where = "an `apply` clause" if scope.body == "apply" else "a projection"
        why = (
            f"{'an `apply`' if scope.body == 'apply' else 'a projection'} folds an event into "
            "its state and must do so the same way on every replay, whoever raised the event"
        )
        fix = "carry who acted in the event, and read it from the event"
    else:
        where = {
            "operation": "an operation body",
            "when": "a `when` gate",
            "factory": "a `create` factory",
            "invariant": "an invariant",
            "derived": "a derived value",
            "default": "a default",
            "function": "a function",
            "retrieval": "a retrieval",
            "service": "a domain service",
        }.get(scope.kind, "this place")
        why = "the domain's state and rules do not depend on who asks"
        fix = (
            "gate the operation with `requires …` (checked before its `when`), or pass the value "
            "in as a parameter from a workflow or handler body"
        )
    ck.report(
        "loom.current-user-misplaced",
        f"`{NAME}` cannot be read in {where}: {why}",
        span,
        f"`{NAME}` in {where}",
        help=f"`{NAME}` is read in `requires` gates (of operations, factories, workflow "
        f"`create`s and handlers), in a repository filter's criterion, in workflow `create`, "
        f"commandHandler and queryHandler bodies, and (as the system) in reactions, timeouts and "
        f"timers; here, {fix}",
    )


def bare(ck: Checker, e: ast.Name, scope: Scope) -> ir.Expr:
    """`currentUser` on its own: not a value."""
    ck.report(
        "loom.unknown-name",
        f"`{NAME}` is not a value: read one of its members",
        e.span,
        "read a member",
        help=f"its members are {_ALL}, e.g. `{NAME}.id`",
    )
    return ck.poison(e)


def member(ck: Checker, e: ast.MemberAccess, scope: Scope, text: str) -> ir.Expr:
    """`currentUser.id`, `.isSystem`, `.isAuthenticated`, `.roles`."""
    t = MEMBERS.get(e.name)
    if t is None:
        if e.name in METHODS:
            ck.report(
                "loom.unknown-field",
                f'`{NAME}.{e.name}` is called with a name: `{NAME}.{e.name}("…")`',
                e.name_span,
                "called, not read",
                help=f'write `{NAME}.{e.name}("admin")`'
                if e.name == "hasRole"
                else f'write `{NAME}.{e.name}("email")`',
            )
        else:
            ck.report(
                "loom.unknown-field",
                f"`{NAME}` has no member `{e.name}`",
                e.name_span,
                "unknown member",
                help=did_you_mean(e.name, [*MEMBERS, *METHODS])
                or f'its members are {_ALL}; read any claim of the token with `{NAME}.claim("'
                f'{e.name}")`',
            )
        return ck.poison(e)
    if not allowed(scope):
        _misplaced(ck, e.span, scope)
        return ck.poison(e)
    if e.name == "id" and runs_as_system(scope):
        _system_id(ck, e.span, scope)
        return ck.poison(e)
    if e.name == "tenant" and scope.ctx.tenanted is None:
        ck.report(
            "loom.tenant-outside-tenanted-context",
            f"`{NAME}.tenant` is read in context `{scope.ctx.name}`, which is not tenanted",
            e.span,
            "no tenant here",
            secondary=[(scope.ctx.span, f"context `{scope.ctx.name}` declared here")],
            help=f"declare the context `context {scope.ctx.name} tenanted {{ … }}` (every row "
            f"then belongs to the caller's tenant), or read the claim with "
            f'`{NAME}.claim("tenant")`',
        )
        return ck.poison(e)
    return ir.CurrentUser(e.name, (), t, text)  # type: ignore[arg-type]


def call(ck: Checker, e: ast.Call, scope: Scope, text: str) -> ir.Expr:
    """`currentUser.hasRole(name)`, `currentUser.claim(name)`."""
    assert isinstance(e.callee, ast.MemberAccess)
    name, span = e.callee.name, e.callee.name_span
    t = METHODS.get(name)
    args: list[ir.Expr] = []
    for arg in e.args:
        if isinstance(arg, ast.Record) or arg.name is not None:
            ck.report(
                "loom.unsupported-call",
                f"`{NAME}.{name}` takes one positional argument",
                arg.span,
                "named or record argument",
                help=f'pass the name alone, e.g. `{NAME}.{name}("admin")`',
            )
            return ck.poison(e)
        args.append(ck.expr(arg.value, scope, ir.STRING))
    if t is None:
        if name in MEMBERS:
            ck.report(
                "loom.unsupported-call",
                f"`{NAME}.{name}` is read, not called",
                e.span,
                "not a method",
                help=f"write `{NAME}.{name}` without the parentheses",
            )
        else:
            ck.report(
                "loom.unknown-operation",
                f"`{NAME}` has no method `{name}`",
                span,
                "unknown method",
                help=did_you_mean(name, [*METHODS, *MEMBERS]) or f"its members are {_ALL}",
            )
        return ck.poison(e)
    if len(args) != 1:
        ck.report(
            "loom.argument-count",
            f"`{NAME}.{name}` takes 1 argument, but {len(args)} "
            f"{'was' if len(args) == 1 else 'were'} given",
            e.span,
            f"{len(args)} given",
            help=f'pass one name, e.g. `{NAME}.{name}("admin")`'
            if name == "hasRole"
            else f'pass one claim name, e.g. `{NAME}.{name}("email")`',
        )
        return ck.poison(e)
    arg0 = args[0]
    if not is_error(arg0.type) and arg0.type != ir.STRING:
        ck.report(
            "loom.type-mismatch",
            f"`{NAME}.{name}` takes a `string`, but this is {a(arg0.type)}",
            e.args[0].span,
            f"this is {a(arg0.type)}",
            help='pass a name as a string, e.g. `"admin"`',
        )
        return ck.poison(e)
    if not allowed(scope):
        _misplaced(ck, e.span, scope)
        return ck.poison(e)
    return ir.CurrentUser(name, (arg0,), t, text)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Reactions and gates


def expr_nodes(x: ir.Expr) -> Iterator[ir.Expr]:
    """`x` and every expression inside it."""
    stack = [x]
    while stack:
        e = stack.pop()
        yield e
        if isinstance(e, ir.Unary):
            stack.append(e.operand)
        elif isinstance(e, ir.Binary):
            stack += [e.left, e.right]
        elif isinstance(e, ir.Conditional):
            stack += [e.condition, e.then, e.otherwise]
        elif isinstance(e, ir.Member):
            stack.append(e.obj)
        elif isinstance(e, ir.FunctionCall | ir.ServiceCall | ir.CurrentUser):
            stack += list(e.args)
        elif isinstance(e, ir.ListLiteral):
            stack += list(e.items)


def reads_principal(x: ir.Expr) -> bool:
    return any(isinstance(e, ir.CurrentUser) for e in expr_nodes(x))


def admits_system(x: ir.Expr) -> bool:
    """Can one of the gate's top-level `||` operands hold for the system principal: it is
    `currentUser.isSystem`, or it reads of `currentUser` nothing but `.tenant` (which the system
    principal of a tenanted context's reaction, timeout or timer has)?"""
    if isinstance(x, ir.Binary) and x.op == "||":
        return admits_system(x.left) or admits_system(x.right)
    if isinstance(x, ir.CurrentUser) and x.member == "isSystem":
        return True
    read = {e.member for e in expr_nodes(x) if isinstance(e, ir.CurrentUser)}
    return read == {"tenant"}


def _walk(stmts: list[ast.Stmt]) -> list[ast.Stmt]:
    return list(ast.walk_stmts(stmts))


class _Gates:
    """The `requires` gates an operation call runs: the operation's own, then those of the
    operations it calls on its aggregate, transitively."""

    def __init__(self, ck: Checker, ctx: ContextSymbols) -> None:
        self.ck = ck
        self.ctx = ctx

    def refusing(
        self, aggregate: str, operation: str, seen: set[tuple[str, str]] | None = None
    ) -> tuple[ast.Operation, str] | None:
        """The first gate on the way that refuses the system principal, with the operation that
        declares it (`Agg.op`)."""
        seen = set() if seen is None else seen
        if (aggregate, operation) in seen:
            return None
        seen.add((aggregate, operation))
        agg = self.ctx.aggregates.get(aggregate)
        op = next((o for o in agg.operations if o.name == operation), None) if agg else None
        if op is None:
            return None
        if op.requires is not None:
            x = self.ck.facts.exprs.get(op.requires)
            if x is not None and reads_principal(x) and not admits_system(x):
                return op, f"{aggregate}.{operation}"
        for s in _walk(op.body):
            found = self.ck.facts.stmts.get(s)
            if isinstance(found, OwnCall):
                hit = self.refusing(aggregate, found.operation, seen)
                if hit is not None:
                    return hit
        return None

    def of_service(self, stmt: ServiceStmt) -> tuple[ast.Operation, str] | None:
        svc = self.ctx.services.get(stmt.service)
        m = next((m for m in svc.methods if m.name == stmt.method), None) if svc else None
        if m is None:
            return None
        for s in _walk(m.body or []):
            found = self.ck.facts.stmts.get(s)
            if isinstance(found, CallOp):
                hit = self.refusing(found.aggregate, found.operation)
                if hit is not None:
                    return hit
        return None


def system_bodies(ck: Checker, ctx: ContextSymbols) -> list[tuple[list[ast.Stmt], str]]:
    """The bodies of the context the system principal runs (reactions, timeouts, timers), each
    with where it is as a message names it."""
    bodies: list[tuple[list[ast.Stmt], str]] = []
    for wf in ctx.workflows.values():
        bodies += [
            (c.body, f"a reaction of `{wf.name}`") for c in wf.creates if c in ck.facts.triggers
        ]
        bodies += [(on.body, f"a reaction of `{wf.name}`") for on in wf.ons]
        bodies += [(t.body, f"timeout `{t.name}` of `{wf.name}`") for t in wf.timeouts]
    bodies += [(tm.body, f"timer `{tm.name}`") for tm in ctx.timers.values()]
    return bodies


def check_reactor_gates(ck: Checker) -> None:
    """`loom.reactor-gate-unsatisfiable` on every call of a body the system runs (a reaction, an
    `on timeout`, a context timer) that runs a gate refusing the system principal."""
    for ctx in ck.prog.contexts.values():
        gates = _Gates(ck, ctx)
        for body, where in system_bodies(ck, ctx):
            for s in _walk(body):
                found = ck.facts.stmts.get(s)
                hit, called = None, ""
                if isinstance(found, CallOp):
                    hit = gates.refusing(found.aggregate, found.operation)
                    called = f"{found.aggregate}.{found.operation}"
                elif isinstance(found, ServiceStmt):
                    hit = gates.of_service(found)
                    called = f"{found.service}.{found.method}"
                if hit is not None and isinstance(s, ast.ExprStmt):
                    _warn(ck, s, hit[0], hit[1], called, where)


def _warn(
    ck: Checker, s: ast.ExprStmt, op: ast.Operation, label: str, called: str, where: str
) -> None:
    assert op.requires is not None
    gate = ck.text(op.requires.span)
    whose = (
        f"the `requires` gate of `{label}`"
        if called == label
        else f"it runs `{label}`, whose `requires` gate"
    )
    ck.report(
        "loom.reactor-gate-unsatisfiable",
        f"`{ck.text(s.expr.span)}` runs in {where}, as the system principal, but "
        f"{whose} reads `{NAME}` without admitting the system, so it refuses every such call",
        s.expr.span,
        "called as the system principal",
        secondary=[(op.requires.span, f"the gate of `{label}`")],
        help=f"admit the system in the gate: `requires {NAME}.isSystem || {gate}`; or call an "
        "operation whose gate admits the system",
    )
