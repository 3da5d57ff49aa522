"""Bodies in the workflow vocabulary (workflow creates, command and query handlers) -> Python.

One `BodyWriter` per generated function. `prepare(body)` names every binding (in source order,
nested ones included) and one repository variable per aggregate the body reads, saves or deletes;
`block(body, depth)` renders the statements:

    let x = Repo.find(C(a))       x = await tickets.find_by_c(a)
    if let x = <read> {…} else {…} x = await tickets.find_by_code(code)
                                   if x is not None: … else: …
    for t in due { t.op() }        for t in due: t.op(); await tickets.save(t)
    notFound "detail"              raise not_found("Ticket", "detail")
    Repo.delete(x)                 await tickets.delete(x)

The saves lowering placed (at the end of a branch, an iteration or the body) render where they
stand, so a refusal inside a loop leaves the earlier iterations' saves to the unit of work: rolled
back in `transaction()`, committed in `autocommit()`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from loom.codegen.python import time_exprs
from loom.codegen.python.api_calls import api_call
from loom.codegen.python.checks import check, has_extern_checks, has_invariants
from loom.codegen.python.domain import event_args
from loom.codegen.python.expressions import Scope, render, render_as, workflow_member
from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import (
    Keyed,
    instances_class,
    instances_table_var,
    keyed_fields,
    process_constant,
)
from loom.codegen.python.layout import INDENT, Doc, Group, call, lay
from loom.codegen.python.literals import py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.repositories import call_args, read_method, read_params
from loom.codegen.python.schemas import sole_payload
from loom.codegen.python.stored import int_fit
from loom.codegen.python.type_names import TypeNames
from loom.codegen.python.wire import record_of, wire_to_domain
from loom.model import ir, naming, walk
from loom.model.refusals import precondition
from loom.model.reserved import ENDED


def externs_class(aggregate: str) -> str:
    """The Protocol (and the user's class) of an aggregate's extern operations."""
    return naming.pascal(aggregate) + "Externs"


def apply_function(wf: ir.Workflow, apply: ir.Apply) -> str:
    return f"{naming.snake(wf.name)}_apply_{naming.snake(apply.event)}"


def assign_state(wf: Keyed, stmt: ir.AssignState, scope: Scope, depth: int) -> list[str]:
    field_t = next(f.type for f in keyed_fields(wf) if f.name == stmt.field)
    value = render_as(stmt.value, field_t, scope)
    return lay(f"{scope.state}.{naming.ident(stmt.field)} = {value}", depth)


def body_params(
    params: tuple[ir.Parameter, ...], alloc: naming.NameAlloc, in_types: TypeNames
) -> tuple[dict[str, str], list[str]]:
    """The Python expression of each parameter of a workflow `create` or command handler, read
    from the request `body` (which is the payload itself when that is the only parameter), and the
    lines, run before the unit of work, that build the value objects and payloads among them from
    their request models (a value object's invariants refuse a bad one there: 422)."""
    whole = sole_payload(params) is not None
    py: dict[str, str] = {}
    lines: list[str] = []
    for p in params:
        wire = "body" if whole else f"body.{naming.schema_attr(p.name)}"
        if record_of(p.type) is None:
            py[p.name] = wire
            continue
        var = alloc.take(naming.ident(p.name))
        lines += lay(f"{var} = {wire_to_domain(wire, p.type, in_types)}", 1)
        py[p.name] = var
    return py, lines


_Binding = ir.Let | ir.Var | ir.LoadById | ir.CreateAggregate | ir.Load | ir.IfLet | ir.ForEach
_Write = ir.Save | ir.SaveInstance | ir.Delete
_WRITES = (ir.Save, ir.SaveInstance, ir.Delete)
_USES_WORK = (
    ir.Emit,
    ir.BindInstance,
    ir.SaveInstance,
    ir.RouteInstance,
    ir.ScheduleTimeout,
    ir.CancelTimeout,
    ir.CompleteInstance,
)


def _repo_aggregate(stmt: ir.Stmt) -> str | None:
    if isinstance(stmt, ir.LoadById | ir.Save | ir.Delete):
        return stmt.aggregate
    if isinstance(stmt, ir.Load):
        return stmt.read.aggregate
    if isinstance(stmt, ir.IfLet) and stmt.read is not None:
        return stmt.read.aggregate
    return None


def _optional_aggregate(t: ir.Type) -> str | None:
    inner = t.inner if isinstance(t, ir.OptionalType) else t
    return inner.name if isinstance(inner, ir.AggregateType) else None


@dataclass
class BodyWriter:
    info: ModelInfo
    context: ir.Context
    imports: Imports
    types: TypeNames
    scope: Scope
    label: str  # "workflow transfer", "commandHandler EscalateOpen": the rule prefix
    reserved: set[str]
    work: str = "work"
    default_miss: str = "Resource"
    workflow: ir.Workflow | None = None  # the enclosing workflow (state, applies)
    service: str = "service"  # the Service variable (externs are reached through it)
    # the keyed rows the body binds: a correlated workflow's instances (the default when
    # `workflow` keeps them), or the rows of the projection whose reaction this is
    keyed: Keyed | None = None
    # a reaction: (event type, handler name) for the `event_unrouted` line of a RouteInstance
    unrouted: tuple[str, str] | None = None
    # the declared result of a workflow `create` or a handler: an int in it must fit 64 bits
    result: ir.Type | None = None
    # not all-or-nothing (`service.autocommit()`): each save commits on its own, and the last
    # write of each group of saves carries the durable events emitted before it (`carry_emits`)
    autocommit: bool = False
    repos: dict[str, str] = field(default_factory=dict)
    _vars: dict[int, str] = field(default_factory=dict)
    _miss: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.alloc = naming.NameAlloc(self.reserved)
        self.instance_var: str | None = None
        self.store_var: str | None = None
        self._carry = False
        if self.keyed is None and self.workflow is not None and self.workflow.correlation:
            self.keyed = self.workflow

    # -- preparation -------------------------------------------------------------------------
    def prepare(self, body: tuple[ir.Stmt, ...]) -> None:
        self._carry = self.autocommit and any(isinstance(s, ir.Emit) for s in walk.body(body))
        for stmt in walk.body(body):
            if isinstance(stmt, _Binding):
                name = naming.ident(stmt.name)
                # `l`, `O`, `I` read like digits: a local of the model so named gets a suffix
                name += "_" if name in ("l", "O", "I") else ""
                self._vars[id(stmt)] = self.alloc.take(name)
        for stmt in walk.body(body):
            if isinstance(stmt, ir.Emit) and self._apply(stmt) is not None:
                self._vars[id(stmt)] = self.alloc.take(naming.snake(stmt.event))
        held = self.keyed
        binds = (ir.BindInstance, ir.RouteInstance)
        if held is not None and any(isinstance(s, binds) for s in walk.body(body)):
            row = isinstance(held, ir.Projection)
            self.instance_var = self.alloc.take("row" if row else "instance")
        for stmt in walk.body(body):
            agg = _repo_aggregate(stmt)
            if agg is not None and agg not in self.repos:
                self.repos[agg] = self.alloc.take(naming.plural_snake(agg))
        if held is not None and self.instance_var is not None:
            self.store_var = self.alloc.take(instances_table_var(held))

    def _apply(self, stmt: ir.Emit) -> ir.Apply | None:
        wf = self.workflow
        if wf is None or not wf.event_sourced:
            return None
        return next((a for a in wf.applies if a.event == stmt.event), None)

    def uses_work(self, body: tuple[ir.Stmt, ...]) -> bool:
        return bool(self.repos) or any(isinstance(s, _USES_WORK) for s in walk.body(body))

    def repo_lines(self, depth: int) -> list[str]:
        out = []
        for agg_name, var in self.repos.items():
            repo_cls = self.info.repository_class(self.context, agg_name)
            self.imports.add(".repositories", repo_cls)
            out.append(f"{INDENT * depth}{var} = {repo_cls}({self.work})")
        if self.keyed is not None and self.store_var is not None:
            store_cls = instances_class(self.keyed)
            self.imports.add(".repositories", store_cls)
            out.append(f"{INDENT * depth}{self.store_var} = {store_cls}({self.work})")
        return out

    # -- statements --------------------------------------------------------------------------
    def block(
        self, stmts: tuple[ir.Stmt, ...], depth: int, outer_later: frozenset[str] = frozenset()
    ) -> list[str]:
        out: list[str] = []
        for i, (stmt, later) in enumerate(zip(stmts, walk.reads_after(stmts), strict=True)):
            if self._carry and isinstance(stmt, _WRITES):
                last = i + 1 == len(stmts) or not isinstance(stmts[i + 1], _WRITES)
                out += self._write(stmt, depth, carry=last)
                continue
            out += self.statement(stmt, depth, later | outer_later)
        return out

    def _write(self, stmt: _Write, depth: int, carry: bool = False) -> list[str]:
        """A save or delete. In a body that is not all-or-nothing the last of a group of writes
        carries the durable events emitted so far into its commit, so no crash separates them."""
        if isinstance(stmt, ir.SaveInstance):
            assert self.store_var is not None and self.instance_var is not None
            target, method, arg = self.store_var, "save", self.instance_var
        else:
            target, arg = self.repos[stmt.aggregate], self.scope.locals[stmt.name]
            method = "save" if isinstance(stmt, ir.Save) else "delete"
        args = [arg, "carry_emits=True"] if carry else [arg]
        return lay(call(f"await {target}.{method}", args), depth)

    def _bind(self, stmt: _Binding) -> str:
        var = self._vars[id(stmt)]
        self.scope.locals[stmt.name] = var
        return var

    def statement(self, stmt: ir.Stmt, depth: int, later: set[str] | frozenset[str]) -> list[str]:
        pad = INDENT * depth
        scope = self.scope
        if isinstance(stmt, ir.Precondition):
            refusal = precondition(self.label, stmt)
            return check(render(stmt.condition, scope), refusal, self.imports, depth)
        if isinstance(stmt, ir.Let):
            var = self._bind(stmt)
            if stmt.name not in later:
                var = "_" + var.lstrip("_")
            if isinstance(stmt.value, ir.ApiCall):
                return lay(self._api(stmt.value, var), depth)
            return lay(f"{var} = {render(stmt.value, scope)}", depth)
        if isinstance(stmt, ir.Var | ir.SetLocal):
            return self._var(stmt, depth, later)
        if isinstance(stmt, ir.CallApi):
            return lay(self._api(stmt.call, None), depth)
        if isinstance(stmt, ir.LoadById):
            repo = self.repos[stmt.aggregate] + _widen(stmt.ignoring)
            load = f"await {repo}.get_by_id({render(stmt.id, scope)})"
            return self._load(stmt, load, True, depth, later)
        if isinstance(stmt, ir.Load):
            must_exist = stmt.read.cardinality == "one"
            return self._load(stmt, self.read(stmt.read), must_exist, depth, later)
        if isinstance(stmt, ir.CreateAggregate):
            return self._create(stmt, depth)
        if isinstance(stmt, ir.CallOperation):
            op = self.info.operation(self.context.name, stmt.aggregate, stmt.operation)
            args = [render_as(a, p.type, scope) for a, p in zip(stmt.args, op.params, strict=True)]
            target = scope.locals[stmt.target]
            if op.extern:
                return self._extern(stmt, op, target, args, depth)
            return lay(call(f"{target}.{naming.ident(stmt.operation)}", args), depth)
        if isinstance(stmt, ir.CallService):
            cls = naming.pascal(stmt.service)
            self.imports.add(".services", cls)
            args = [render(a, scope) for a in stmt.args]
            return lay(call(f"{cls}.{naming.ident(stmt.method)}", args), depth)
        if isinstance(stmt, ir.Emit):
            event = self.info.event(stmt.context, stmt.event)
            cls = self.types.domain_name(stmt.context, naming.pascal(stmt.event))
            value = call(cls, event_args(event, stmt, scope))
            apply = self._apply(stmt)
            if apply is None or self.workflow is None or self.instance_var is None:
                return lay(call(f"{self.work}.emit", [value]), depth)
            # event-sourced: fold the event into the instance right after emitting it
            var = self._vars[id(stmt)]
            out = lay(Group(f"{var} = {value.head}", value.items, value.tail), depth)
            out.append(f"{pad}{self.work}.emit({var})")
            fn = workflow_member(scope, apply_function(self.workflow, apply))
            out.append(f"{pad}{fn}({self.instance_var}, {var})")
            return out
        if isinstance(stmt, ir.Return):
            answer = render(stmt.value, scope)
            if self.result is not None:
                what = f"the result of {self.label}"
                answer = int_fit(answer, stmt.value, self.result, what, self.info, self.imports)
            return lay(f"result = {answer}", depth)
        if isinstance(stmt, ir.Save | ir.Delete):
            return self._write(stmt, depth)
        if isinstance(stmt, ir.IfLet):
            return self._if_let(stmt, depth, later)
        if isinstance(stmt, ir.If):
            return self._if(stmt, depth, later)
        if isinstance(stmt, ir.ForEach):
            items = render(stmt.items, scope)
            var = self._bind(stmt)
            if stmt.name not in walk.locals_read(stmt.body):  # counted, not read: say so
                var = scope.locals[stmt.name] = "_" + var.lstrip("_")
            out = lay(f"for {var} in {items}:", depth)
            return out + (self.block(stmt.body, depth + 1, frozenset(later)) or [f"{pad}    pass"])
        if isinstance(stmt, ir.NotFoundStmt):
            self.imports.add("loom.runtime", "not_found")
            agg = stmt.aggregate or (self._miss[-1] if self._miss else self.default_miss)
            args = [py_str(agg)] + ([py_str(stmt.detail)] if stmt.detail is not None else [])
            return lay(call("raise not_found", args), depth)
        if isinstance(stmt, ir.BindInstance) and self.instance_var is not None:
            scope.state = self.instance_var
            key = render(stmt.key, scope)
            out = lay(f"{self.instance_var} = await {self.store_var}.bind({key})", depth)
            return out + self.ended_check(depth, starter=True)
        if isinstance(stmt, ir.RouteInstance) and self.instance_var is not None:
            assert self.unrouted is not None
            self.imports.add("loom.runtime", "log_unrouted")
            scope.state = self.instance_var
            key = render(stmt.key, scope)
            event_type, handler = self.unrouted
            out = lay(f"{self.instance_var} = await {self.store_var}.find({key})", depth)
            out.append(f"{pad}if {self.instance_var} is None:  # no instance: the event is dropped")
            out += lay(call("log_unrouted", [py_str(event_type), py_str(handler)]), depth + 1)
            out.append(f"{pad}    return")
            return out + self.ended_check(depth)
        if isinstance(stmt, ir.ScheduleTimeout | ir.CancelTimeout | ir.CompleteInstance):
            return self._timeout_stmt(stmt, depth)
        if isinstance(stmt, ir.SaveInstance) and self.instance_var is not None:
            return self._write(stmt, depth)
        if isinstance(stmt, ir.AssignState) and scope.state is not None and self.keyed:
            return assign_state(self.keyed, stmt, scope, depth)
        raise NotImplementedError(f"{type(stmt).__name__} in {self.label}")

    def _process(self) -> tuple[ir.Workflow, str, str]:
        """(workflow, its process name as a literal, `str(instance.<key>)`): what keys its timers."""
        wf = self.workflow
        assert wf is not None and wf.correlation is not None and self.instance_var is not None
        key = f"str({self.instance_var}.{naming.ident(wf.correlation)})"
        return wf, process_constant(wf, self.imports), key

    def ended_check(self, depth: int, starter: bool = False) -> list[str]:
        """After a process workflow binds its instance: on an ended instance a starter (a
        `create`) begins the next episode, unless the workflow is `once`; else a reaction is
        ignored (and logs `process_ignored_ended`), and a request refused (409)."""
        wf = self.workflow
        if wf is None or not wf.process or self.instance_var is None:
            return []
        _, process, key = self._process()
        pad = INDENT * depth
        inst = self.instance_var
        if starter and not wf.once:
            out = [f"{pad}if {inst}.{ENDED}:  # its episode ended: this starter begins the next"]
            return out + lay(f"{inst} = await {self.store_var}.next_episode({inst})", depth + 1)
        out = [f"{pad}if {inst}.{ENDED}:  # the process has ended"]
        once = starter and wf.once
        if self.unrouted is not None:
            fields = [
                f'"process": {process}',
                f'"key": {key}',
                f'"handler": {py_str(self.unrouted[1])}',
            ]
            if once:  # why a starter is ignored: the workflow runs once per key
                fields.append('"once": True')
            out += lay(log_fact("process_ignored_ended", fields, self.imports), depth + 1)
            out.append(f"{pad}    return")
            return out
        self.imports.add("loom.runtime", "ConcurrencyConflict")
        detail = f"this {wf.name} instance has ended: it takes no more steps"
        if once:
            detail = f"this {wf.name} instance has ended, and {wf.name} runs once per key"
        refused: list[Doc] = [py_str(wf.name), f"id={key}", f"detail={py_str(detail)}"]
        return out + lay(call("raise ConcurrencyConflict", refused), depth + 1)

    def _timeout_stmt(
        self, stmt: ir.ScheduleTimeout | ir.CancelTimeout | ir.CompleteInstance, depth: int
    ) -> list[str]:
        """Timer rows are written on the body's unit of work (`service.processes.store`), so they
        commit or roll back with the step."""
        _, process, key = self._process()
        timed = [f"process={process}", f"key={key}"]
        store = f"await {self.service}.processes.store"
        if isinstance(stmt, ir.ScheduleTimeout):
            self.imports.add("loom.runtime.processes", "Timeout")
            self.imports.add("loom.runtime", "now")
            if stmt.at is not None:
                when = f"at={render(stmt.at, self.scope)}"
            elif stmt.after is not None:
                when = f"after={render(stmt.after, self.scope)}"
            else:
                assert stmt.after_ms is not None
                self.imports.add("datetime", "timedelta")
                when = f"after={duration(stmt.after_ms)}"
            timeout = call("timeout=Timeout", [py_str(stmt.name), when])
            armed: list[Doc] = [self.work, *timed, timeout, "now=now()"]
            return lay(call(f"{store}.arm", armed), depth)
        if isinstance(stmt, ir.CancelTimeout):
            args = [self.work, *timed, f"name={py_str(stmt.name)}"]
            return lay(call(f"{store}.disarm", args), depth)
        out = [f"{INDENT * depth}{self.instance_var}.{ENDED} = True"]
        return out + lay(call(f"{store}.disarm_all", [self.work, *timed]), depth)

    def _extern(
        self, stmt: ir.CallOperation, op: ir.Operation, target: str, args: list[str], depth: int
    ) -> list[str]:
        """An extern operation: the user's method gets the aggregate and the arguments; the
        invariants are checked afterwards (the aggregate is saved like after any operation)."""
        protocol = externs_class(stmt.aggregate)
        self.imports.add(".externs", protocol)
        self.imports.add("typing", "cast")
        externs = f"cast({protocol}, {self.service}.externs[{py_str(protocol)}])"
        method = f"{externs}.{naming.ident(op.name)}"
        out: list[str] = []
        agg = self.info.aggregate(self.context.name, stmt.aggregate)
        if has_extern_checks(agg, op):
            # the checks answer the arguments: each expression is evaluated once (`now()`)
            checked = call(f"{target}.{naming.extern_checks(op.name)}", args, prefix="*")
            out += lay(call(method, [target, checked]), depth)
        else:
            out += lay(call(method, [target, *args]), depth)
        if has_invariants(agg):
            out.append(f"{INDENT * depth}{target}.check_invariants()")
        return out

    def _var(
        self, stmt: ir.Var | ir.SetLocal, depth: int, later: set[str] | frozenset[str]
    ) -> list[str]:
        """`var x = e` is annotated with the var's type (`[]` needs it); `x := e` assigns the
        same variable. A var nothing reads later is `_x`, in every assignment of it."""
        value = render_as(stmt.value, stmt.type, self.scope)
        if isinstance(stmt, ir.SetLocal):
            return lay(f"{self.scope.locals[stmt.name]} = {value}", depth)
        var = self._bind(stmt)
        if stmt.name not in later:
            var = self.scope.locals[stmt.name] = "_" + var.lstrip("_")
        return lay(f"{var}: {self.types.render(stmt.type)} = {value}", depth)

    def _api(self, c: ir.ApiCall, var: str | None) -> Doc:
        """A call through a resource; bound to `var`, annotated (the runtime answers `Any`)."""
        doc = api_call(self.info, self.context, self.imports, self.scope, self.service, c)
        if var is None:
            return doc
        prefix = f"{var}: {self.types.render(c.type)} = "
        if isinstance(doc, str):
            return prefix + doc
        return Group(prefix + doc.head, doc.items, doc.tail)

    def _load(
        self,
        stmt: ir.LoadById | ir.Load,
        load: str,
        must_exist: bool,
        depth: int,
        later: set[str] | frozenset[str],
    ) -> list[str]:
        """`x = await <read>`; a binding nothing later reads is the bare read, which still runs (a
        miss of a must-exist read is the standard 404) without leaving an unused local."""
        var = self._bind(stmt)
        if stmt.name in later:
            return lay(f"{var} = {load}", depth)
        note = [f"{INDENT * depth}# {stmt.name}: must exist"] if must_exist else []
        return note + lay(load, depth)

    def read(self, read: ir.Read) -> str:
        """`await <repo>.<method>(args)` for a repository read."""
        given, params = dict(read.args), read_params(self.context, read)
        values = [render_as(given[name], t, self.scope) for name, t in params]
        method = read_method(read)
        agg = self.context.aggregate(read.aggregate)
        args = call_args(agg, method, [name for name, _ in params], values)
        repo = self.repos[read.aggregate] + _widen(read.ignoring)
        return f"await {repo}.{method}({', '.join(args)})"

    def _if(
        self, stmt: ir.If, depth: int, later: set[str] | frozenset[str], keyword: str = "if"
    ) -> list[str]:
        """`if c: … else: …`; an else branch that is one `if` of its own reads `elif`."""
        pad = INDENT * depth
        out = lay(f"{keyword} {render(stmt.condition, self.scope)}:", depth)
        out += self.block(stmt.then, depth + 1, frozenset(later)) or [f"{pad}    pass"]
        other = stmt.otherwise
        if len(other) == 1 and isinstance(other[0], ir.If):
            return out + self._if(other[0], depth, later, "elif")
        if other:
            out.append(f"{pad}else:")
            out += self.block(other, depth + 1, frozenset(later))
        return out

    def _if_let(self, stmt: ir.IfLet, depth: int, later: set[str] | frozenset[str]) -> list[str]:
        pad = INDENT * depth
        if stmt.read is not None:
            source = self.read(stmt.read)
            miss = stmt.read.aggregate
        else:
            assert stmt.value is not None
            source = "" if isinstance(stmt.value, ir.ApiCall) else render(stmt.value, self.scope)
            miss = _optional_aggregate(stmt.value.type) or self.default_miss
        var = self._bind(stmt)
        if isinstance(stmt.value, ir.ApiCall):
            out = lay(self._api(stmt.value, var), depth)
        else:
            out = lay(f"{var} = {source}", depth)
        out.append(f"{pad}if {var} is not None:")
        out += self.block(stmt.then, depth + 1, frozenset(later)) or [f"{pad}    pass"]
        if stmt.otherwise:
            out.append(f"{pad}else:")
            self._miss.append(miss)
            out += self.block(stmt.otherwise, depth + 1, frozenset(later))
            self._miss.pop()
        return out

    def _create(self, stmt: ir.CreateAggregate, depth: int) -> list[str]:
        agg = self.info.aggregate(self.context.name, stmt.aggregate)
        cls = self.types.domain_name(self.context.name, naming.pascal(agg.name))
        input_types = {p.name: p.type for p in agg.create_inputs}
        kwargs = [
            f"{naming.ident(name)}="
            + ("None" if expr is None else render_as(expr, input_types[name], self.scope))
            for name, expr in stmt.args
        ]
        var = self._bind(stmt)
        return lay(call(f"{cls}.{naming.create_method(agg)}", kwargs, prefix=f"{var} = "), depth)


def duration(ms: int) -> str:
    """`timedelta(minutes=15)` for a model duration (a setting's, a timer's), in its largest whole
    unit."""
    return time_exprs.timedelta_text(ms * 1000)


def duration_text(ms: int) -> str:
    """A duration as the model writes it: `15m`, `2h`, `1500ms`."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def _widen(ignoring: tuple[str, ...]) -> str:
    """`.ignoring("Live", …)` for a read that switches repository filters off, else nothing."""
    if not ignoring:
        return ""
    return ".ignoring(" + ", ".join(py_str(n) for n in ignoring) + ")"


def log_fact(fact: str, fields: Sequence[Doc], imports: Imports) -> Group:
    """`log_fact(fact, level=INFO, fields={...})`: a fact the generated code logs at INFO."""
    imports.add("loom.runtime", "log_fact")
    imports.add("logging", "INFO")
    return call("log_fact", [py_str(fact), "level=INFO", Group("fields={", fields, "}")])
