"""What every emitter needs to know about a model: module names, class names, files, types."""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from loom.codegen.python import names
from loom.codegen.python._code import Imports
from loom.model import ir

# Names a generated package uses at its top level; a context module must not take them.
_TOP_LEVEL = {"main", "_metadata"}

# Attributes of pydantic's BaseModel that a schema field must not shadow.
_PYDANTIC_RESERVED = {
    "construct",
    "copy",
    "dict",
    "from_orm",
    "json",
    "parse_file",
    "parse_obj",
    "parse_raw",
    "schema",
    "schema_json",
    "update_forward_refs",
    "validate",
    "from_aggregate",
    "from_value",
    "to_domain",
}


def context_module(context: ir.Context) -> str:
    name = names.ident(context.name)
    return name + "_" if name in _TOP_LEVEL else name


def create_method(agg: ir.Aggregate) -> str:
    """The classmethod that builds a checked new aggregate: `create`, unless a member took it."""
    taken = {names.ident(m.name) for m in (*agg.fields, *agg.derived, *agg.operations)}
    return "create" if "create" not in taken else "create_"


def schema_attr(name: str) -> str:
    """The attribute of a pydantic model for a model name (the alias keeps the model's spelling)."""
    attr = names.ident(name)
    if attr in _PYDANTIC_RESERVED or attr.startswith("model_"):
        attr += "_"
    return attr


def column_name(name: str) -> str:
    """A field's column: its snake_case name (the runtime maps column `from` to field `from_`)."""
    return names.snake(name)


@dataclass
class ModelInfo:
    model: ir.Model
    package: str
    contexts: dict[str, ir.Context] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.contexts = {c.name: c for c in self.model.contexts}

    def context(self, name: str) -> ir.Context:
        return self.contexts[name]

    def aggregate(self, context: str, name: str) -> ir.Aggregate:
        return self.contexts[context].aggregate(name)

    def event(self, context: str, name: str) -> ir.Event:
        return next(e for e in self.contexts[context].events if e.name == name)

    def operation(self, context: str, aggregate: str, name: str) -> ir.Operation:
        agg = self.aggregate(context, aggregate)
        return next(o for o in agg.operations if o.name == name)

    def repository_class(self, context: ir.Context, aggregate: str) -> str:
        repo = context.repository_for(aggregate)
        return (
            names.pascal(repo.name) if repo is not None else names.pascal(aggregate) + "Repository"
        )

    def all_files(self) -> list[str]:
        files: list[str] = list(self.model.sources)
        for ctx in self.model.contexts:
            for f in context_files(ctx):
                if f not in files:
                    files.append(f)
        return files

    def files_of(self, context: ir.Context) -> list[str]:
        own = set(context_files(context))
        ordered = [f for f in self.model.sources if f in own]
        for f in context_files(context):
            if f not in ordered:
                ordered.append(f)
        return ordered


class _HasOrigin(Protocol):
    @property
    def origin(self) -> ir.Origin: ...


def _origins(context: ir.Context) -> Iterator[ir.Origin]:
    yield context.origin
    groups: tuple[tuple[_HasOrigin, ...], ...] = (
        context.enums,
        context.aggregates,
        context.repositories,
        context.events,
        context.workflows,
        context.criteria,
        context.retrievals,
        context.handlers,
        context.services,
        context.values,
        context.payloads,
        context.projections,
        context.channels,
    )
    for group in groups:
        for decl in group:
            yield decl.origin
    for agg in context.aggregates:
        for member in (*agg.fields, *agg.derived, *agg.invariants, *agg.functions, *agg.operations):
            yield member.origin
    for wf in context.workflows:
        for create in wf.creates:
            yield create.origin
        for reaction in wf.reactions:
            yield reaction.origin
    for p in context.projections:
        for reaction in p.reactions:
            yield reaction.origin


def context_files(context: ir.Context) -> list[str]:
    out: list[str] = []
    for origin in _origins(context):
        if origin.file not in out:
            out.append(origin.file)
    return out


# --------------------------------------------------------------------------------------------------
# Types


def record_classes(context: ir.Context) -> dict[str, tuple[str, str]]:
    """The wire models of each value object and payload of a context, in `schemas.py`: name ->
    (request model, response model), `MoneyInput` / `MoneyOut` unless a domain name took them."""
    alloc = NameAlloc(
        {names.pascal(a.name) for a in context.aggregates}
        | {names.pascal(e.name) for e in context.enums}
        | {names.pascal(e.name) for e in context.events}
        | {names.id_type(a.name) for a in context.aggregates}
        | {names.pascal(r.name) for r in context.records}
        | {state_class(wf) for wf in context.workflows}
        | {state_class(p) for p in context.projections}
    )
    out: dict[str, tuple[str, str]] = {}
    for r in context.records:
        base = names.pascal(r.name)
        out[r.name] = (alloc.take(base + "Input"), alloc.take(base + "Out"))
    return out


def is_record(t: ir.Type) -> bool:
    return isinstance(t, ir.ValueType | ir.PayloadType)


def record_of(t: ir.Type) -> ir.ValueType | ir.PayloadType | None:
    """The value object or payload a type holds (`T`, `T?`, `T[]`, `T[]?`), if any."""
    while isinstance(t, ir.OptionalType | ir.ListType):
        t = t.inner if isinstance(t, ir.OptionalType) else t.element
    return t if isinstance(t, ir.ValueType | ir.PayloadType) else None


def convert(text: str, t: ir.Type, fn: str, imports: Imports) -> str:
    """`text` (of type `t`) with the converter `fn` applied to each record it holds, through the
    `map_*` helpers of `loom.runtime.types` (calls, so a long one lays out like any call)."""
    if isinstance(t, ir.OptionalType) and isinstance(t.inner, ir.ListType):
        helper = "map_optional_list"
    elif isinstance(t, ir.OptionalType):
        helper = "map_optional"
    elif isinstance(t, ir.ListType):
        helper = "map_list"
    else:
        return f"{fn}({text})"
    imports.add("loom.runtime.types", helper)
    return f"{helper}({text}, {fn})"


def wire_to_domain(text: str, t: ir.Type, in_types: TypeNames) -> str:
    """A request value (a wire model, or a list / optional of them) as the domain takes it: the
    value objects and payloads it holds built through `to_domain()`, which checks invariants."""
    rec = record_of(t)
    if rec is None:
        return text
    if is_record(t):
        return f"{text}.to_domain()"
    return convert(text, t, f"{in_types.render(rec)}.to_domain", in_types.imports)


def domain_to_wire(text: str, t: ir.Type, out_types: TypeNames) -> str:
    """A domain value as a response model takes it (value objects through `<Name>Out`)."""
    rec = record_of(t)
    if rec is None:
        return text
    return convert(text, t, f"{out_types.render(rec)}.from_value", out_types.imports)


@dataclass
class TypeNames:
    """Renders IR types as Python annotations for one generated module.

    `mode` is "domain" (plain Python types), "input" (JSON request bodies: JsonInt64, JsonBool,
    WireDecimal, WireText, AwareDatetime), "query" (query parameters, which arrive as text: Int64
    and bool where a body has JsonInt64 and JsonBool) or "output" (responses: Int64, DecimalOut,
    datetime). `here` is the context whose domain module defines names
    locally (`domain.py` itself) or None when every domain name is imported from `.domain`. Value
    objects and payloads are their domain dataclasses in "domain" mode, else their wire models
    (imported from `.schemas` unless `in_schemas`).
    """

    info: ModelInfo
    context: ir.Context
    imports: Imports
    mode: str = "domain"
    in_domain: bool = False
    in_schemas: bool = False

    def domain_name(self, context: str, name: str) -> str:
        """A class/NewType defined in a context's domain module, imported as needed."""
        if context == self.context.name:
            if not self.in_domain:
                self.imports.add(".domain", name)
            return name
        other = context_module(self.info.context(context))
        self.imports.add(f"..{other}.domain", name)
        return name

    def enum_ref(self, name: str, context: str) -> str:
        return self.domain_name(context, names.pascal(name))

    def schema_name(self, t: ir.ValueType | ir.PayloadType) -> str:
        """The wire model of a value object or payload, for this module's mode."""
        context = self.info.context(t.context)
        cls = record_classes(context)[t.name][0 if self.mode in ("input", "query") else 1]
        if t.context == self.context.name:
            if not self.in_schemas:
                self.imports.add(".schemas", cls)
        else:
            self.imports.add(f"..{context_module(context)}.schemas", cls)
        return cls

    def render(self, t: ir.Type) -> str:
        if isinstance(t, ir.PrimitiveType):
            if t.max_length is not None and self.mode in ("input", "query"):
                # `string(N)`: the length first, so a too-long value's message counts characters
                self.imports.add("typing", "Annotated")
                self.imports.add("annotated_types", "MaxLen")
                self.imports.add("loom.runtime", "TEXT_CHECK")
                return f"Annotated[str, MaxLen({t.max_length}), TEXT_CHECK]"
            return self._primitive(t.name)
        if isinstance(t, ir.IdType):
            return self.domain_name(t.context, names.id_type(t.aggregate))
        if isinstance(t, ir.EnumType):
            return self.enum_ref(t.name, t.context)
        if isinstance(t, ir.ListType):
            return f"list[{self.render(t.element)}]"
        if isinstance(t, ir.OptionalType):
            return f"{self.render(t.inner)} | None"
        if isinstance(t, ir.AggregateType):
            return self.domain_name(t.context, names.pascal(t.name))
        if isinstance(t, ir.EventType):
            return self.domain_name(t.context, names.pascal(t.name))
        if isinstance(t, ir.ValueType | ir.PayloadType):
            if self.mode == "domain":
                return self.domain_name(t.context, names.pascal(t.name))
            return self.schema_name(t)
        if isinstance(t, ir.VoidType):
            return "None"
        raise TypeError(f"unknown type {t!r}")

    def _primitive(self, name: str) -> str:
        wire = self.mode in ("input", "query")
        if name == "string":
            if wire:
                self.imports.add("loom.runtime", "WireText")
                return "WireText"
            return "str"
        if name == "bool":
            if self.mode == "input":  # JSON true / false only; a query string's is text
                self.imports.add("loom.runtime", "JsonBool")
                return "JsonBool"
            return "bool"
        if name == "int":
            if self.mode == "domain":
                return "int"
            # a JSON body's int is a JSON integer; a query parameter's is text
            cls = "JsonInt64" if self.mode == "input" else "Int64"
            self.imports.add("loom.runtime", cls)
            return cls
        if name == "decimal":
            if wire:
                self.imports.add("loom.runtime", "WireDecimal")
                return "WireDecimal"
            if self.mode == "output":
                self.imports.add("loom.runtime", "DecimalOut")
                return "DecimalOut"
            self.imports.add("decimal", "Decimal")
            return "Decimal"
        if name == "datetime":
            if wire:
                self.imports.add("pydantic", "AwareDatetime")
                return "AwareDatetime"
            self.imports.add("datetime", "datetime")
            return "datetime"
        if name == "date":
            self.imports.add("datetime", "date")
            return "date"
        raise TypeError(f"unknown primitive {name}")


# --------------------------------------------------------------------------------------------------
# Walking bodies


def sub_exprs(expr: ir.Expr) -> Iterator[ir.Expr]:
    yield expr
    if isinstance(expr, ir.Member):
        yield from sub_exprs(expr.obj)
    elif isinstance(expr, ir.Unary):
        yield from sub_exprs(expr.operand)
    elif isinstance(expr, ir.Binary):
        yield from sub_exprs(expr.left)
        yield from sub_exprs(expr.right)
    elif isinstance(expr, ir.Conditional):
        yield from sub_exprs(expr.condition)
        yield from sub_exprs(expr.then)
        yield from sub_exprs(expr.otherwise)
    elif isinstance(expr, ir.Construct):
        for arg in expr.args:
            if arg.value is not None:
                yield from sub_exprs(arg.value)
    elif isinstance(expr, ir.FunctionCall | ir.ListLiteral | ir.ServiceCall | ir.CurrentUser):
        for e in expr.items if isinstance(expr, ir.ListLiteral) else expr.args:
            yield from sub_exprs(e)
        if isinstance(expr, ir.FunctionCall) and expr.receiver is not None:
            yield from sub_exprs(expr.receiver)


def stmt_exprs(stmt: ir.Stmt) -> Iterable[ir.Expr]:
    if isinstance(stmt, ir.Precondition):
        return (stmt.condition,)
    if isinstance(stmt, ir.Assign | ir.Let | ir.Return):
        return (stmt.value,)
    if isinstance(stmt, ir.Emit):
        return tuple(e for _, e in stmt.args)
    if isinstance(stmt, ir.LoadById):
        return (stmt.id,)
    if isinstance(stmt, ir.CreateAggregate):
        return tuple(e for _, e in stmt.args if e is not None)
    if isinstance(stmt, ir.CallOperation | ir.CallService):
        return stmt.args
    if isinstance(stmt, ir.Load):
        return tuple(e for _, e in stmt.read.args)
    if isinstance(stmt, ir.IfLet):
        reads = tuple(e for _, e in stmt.read.args) if stmt.read is not None else ()
        return reads + ((stmt.value,) if stmt.value is not None else ())
    if isinstance(stmt, ir.ForEach):
        return (stmt.items,)
    if isinstance(stmt, ir.AssignState):
        return (stmt.value,)
    if isinstance(stmt, ir.BindInstance | ir.RouteInstance):
        return (stmt.key,)
    if isinstance(stmt, ir.If):
        return (stmt.condition,)
    return ()


def child_blocks(stmt: ir.Stmt) -> tuple[tuple[ir.Stmt, ...], ...]:
    if isinstance(stmt, ir.IfLet | ir.If):
        return (stmt.then, stmt.otherwise)
    if isinstance(stmt, ir.ForEach):
        return (stmt.body,)
    return ()


def walk(stmts: Iterable[ir.Stmt]) -> Iterator[ir.Stmt]:
    """Every statement, nested ones included, in source (pre-)order."""
    for stmt in stmts:
        yield stmt
        for block in child_blocks(stmt):
            yield from walk(block)


def used_locals(stmts: Iterable[ir.Stmt]) -> set[str]:
    """Names of `let` bindings that later statements (nested ones included) read, call or save."""
    used: set[str] = set()
    for stmt in walk(stmts):
        for expr in stmt_exprs(stmt):
            for sub in sub_exprs(expr):
                if isinstance(sub, ir.Local):
                    used.add(sub.name)
        if isinstance(stmt, ir.CallOperation):
            used.add(stmt.target)
        if isinstance(stmt, ir.Save | ir.Delete):
            used.add(stmt.name)
        if isinstance(stmt, ir.CallService):
            used.update(stmt.mutates)
    return used


class NameAlloc:
    """Hands out Python identifiers unique within one scope."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)

    def take(self, preferred: str) -> str:
        # a keyword is never a usable variable (an aggregate `A` has the plural `as`)
        name = preferred + "_" if keyword.iskeyword(preferred) else preferred
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name


# --------------------------------------------------------------------------------------------------
# Keyed rows: the instances of a correlated workflow, the rows of a projection

Keyed = ir.Workflow | ir.Projection


def state_class(wf: Keyed) -> str:
    """The dataclass of a correlated workflow's state, in domain.py: `FollowUpState`; of a
    projection's row: `TicketStatsRow`."""
    return names.pascal(wf.name) + ("State" if isinstance(wf, ir.Workflow) else "Row")


def instances_class(wf: Keyed) -> str:
    """Its store, in repositories.py: `FollowUpInstances`, `TicketStatsRows`."""
    return names.pascal(wf.name) + ("Instances" if isinstance(wf, ir.Workflow) else "Rows")


def instances_table_var(wf: Keyed) -> str:
    return names.snake(wf.name) + ("_instances" if isinstance(wf, ir.Workflow) else "_rows")


def instance_out_class(wf: Keyed) -> str:
    return names.pascal(wf.name) + ("InstanceOut" if isinstance(wf, ir.Workflow) else "Out")


def keyed_fields(wf: Keyed) -> tuple[ir.Field, ...]:
    """The stored fields: a workflow's state, a projection's fields (the key among them). A process
    workflow (timeouts, `complete`) also keeps `ended: bool = false`, set by `complete`."""
    if not isinstance(wf, ir.Workflow):
        return wf.fields
    if wf.process:
        false = ir.Literal_(False, ir.BOOL, "false")
        return (*wf.state, ir.Field(ENDED, ir.BOOL, false, False, wf.origin))
    return wf.state


ENDED = "ended"


def process_name(wf: ir.Workflow) -> str:
    """The name a process workflow's timers are kept under: `<Context>.<Workflow>`."""
    return f"{wf.context}.{wf.name}"


def key_of(wf: Keyed) -> str:
    """The field keying the rows: the correlation field, or the projection's key."""
    key = wf.correlation if isinstance(wf, ir.Workflow) else wf.key
    assert key is not None
    return key


def keyed_what(wf: Keyed) -> str:
    return "workflow" if isinstance(wf, ir.Workflow) else "projection"


def keyed(context: ir.Context) -> list[Keyed]:
    """Everything of a context that keeps keyed rows: correlated workflows, then projections."""
    return [*correlated(context), *context.projections]


def correlated(context: ir.Context) -> list[ir.Workflow]:
    """The workflows that keep instance rows."""
    return [wf for wf in context.workflows if wf.correlation is not None]
