"""What every emitter needs to know about a model: module names, class names, files, types."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

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


def _origins(context: ir.Context) -> Iterator[ir.Origin]:
    yield context.origin
    for group in (
        context.enums,
        context.aggregates,
        context.repositories,
        context.events,
        context.workflows,
        context.criteria,
        context.retrievals,
        context.handlers,
        context.services,
    ):
        for decl in group:
            yield decl.origin
    for agg in context.aggregates:
        for member in (*agg.fields, *agg.derived, *agg.invariants, *agg.functions, *agg.operations):
            yield member.origin
    for wf in context.workflows:
        for create in wf.creates:
            yield create.origin


def context_files(context: ir.Context) -> list[str]:
    out: list[str] = []
    for origin in _origins(context):
        if origin.file not in out:
            out.append(origin.file)
    return out


# --------------------------------------------------------------------------------------------------
# Types


@dataclass
class TypeNames:
    """Renders IR types as Python annotations for one generated module.

    `mode` is "domain" (plain Python types), "input" (request bodies: Int64, AwareDatetime) or
    "output" (responses: Int64, datetime). `here` is the context whose domain module defines names
    locally (`domain.py` itself) or None when every domain name is imported from `.domain`.
    """

    info: ModelInfo
    context: ir.Context
    imports: Imports
    mode: str = "domain"
    in_domain: bool = False

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

    def render(self, t: ir.Type) -> str:
        if isinstance(t, ir.PrimitiveType):
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
        if isinstance(t, ir.VoidType):
            return "None"
        raise TypeError(f"unknown type {t!r}")

    def _primitive(self, name: str) -> str:
        if name == "string":
            return "str"
        if name == "bool":
            return "bool"
        if name == "int":
            if self.mode == "domain":
                return "int"
            self.imports.add("loom.runtime", "Int64")
            return "Int64"
        if name == "decimal":
            self.imports.add("decimal", "Decimal")
            return "Decimal"
        if name == "datetime":
            if self.mode == "input":
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
    elif isinstance(expr, ir.FunctionCall | ir.ListLiteral | ir.ServiceCall):
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
    if isinstance(stmt, ir.BindInstance):
        return (stmt.key,)
    return ()


def child_blocks(stmt: ir.Stmt) -> tuple[tuple[ir.Stmt, ...], ...]:
    if isinstance(stmt, ir.IfLet):
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
        name = preferred
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name


# --------------------------------------------------------------------------------------------------
# Workflow instances (correlated workflows)


def state_class(wf: ir.Workflow) -> str:
    """The dataclass of a correlated workflow's state, in domain.py: `FollowUpState`."""
    return names.pascal(wf.name) + "State"


def instances_class(wf: ir.Workflow) -> str:
    """Its instance store, in repositories.py: `FollowUpInstances`."""
    return names.pascal(wf.name) + "Instances"


def instances_table_var(wf: ir.Workflow) -> str:
    return names.snake(wf.name) + "_instances"


def instance_out_class(wf: ir.Workflow) -> str:
    return names.pascal(wf.name) + "InstanceOut"


def correlated(context: ir.Context) -> list[ir.Workflow]:
    """The workflows that keep instance rows."""
    return [wf for wf in context.workflows if wf.correlation is not None]
