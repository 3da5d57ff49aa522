"""`<context>/services.py` (domain services) and `<context>/externs.py` (extern operations), each
only for a context that has them.

- A `domainService` is a class of static methods; a mutating method calls operations on its
  aggregate parameters (the caller saves them), a value method returns a value.
- Extern operations: one `typing.Protocol` per aggregate, `<Aggregate>Externs`, whose methods take the
  aggregate then the operation's arguments. The user's module provides a class of the same name; the
  service loads it at startup (`build_app(..., extern_module=...)` or `LOOM_EXTERN_MODULE`).
"""

from __future__ import annotations

from loom.codegen.python.bodies import externs_class
from loom.codegen.python.checks import check
from loom.codegen.python.domain import event_args
from loom.codegen.python.expressions import Scope, render, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import Group, call, lay
from loom.codegen.python.literals import docstring
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text, where
from loom.codegen.python.type_names import TypeNames
from loom.model import ir, naming, walk
from loom.model.refusals import precondition


def extern_aggregates(context: ir.Context) -> list[ir.Aggregate]:
    return [a for a in context.aggregates if any(o.extern for o in a.operations)]


def emit_externs(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("typing", "Protocol")
    types = TypeNames(info, context, imports, mode="domain")
    blocks: list[list[str]] = []
    for agg in extern_aggregates(context):
        cls = types.domain_name(context.name, naming.pascal(agg.name))
        doc = f"extern operations of aggregate {agg.name} ({where(agg.origin)}): the user's class"
        lines = [f"class {externs_class(agg.name)}(Protocol):", f"    {docstring(doc)}"]
        for op in (o for o in agg.operations if o.extern):
            alloc = naming.NameAlloc({"self"})
            target = alloc.take(naming.snake(agg.name))
            params = ["self", f"{target}: {cls}"]
            params += [
                f"{alloc.take(naming.ident(p.name))}: {types.render(p.type)}" for p in op.params
            ]
            result = types.render(op.result) if op.result is not None else "None"
            lines.append("")
            lines += lay(Group(f"def {naming.ident(op.name)}(", params, f") -> {result}:"), 1)
            lines.append(
                f"        {docstring(f'extern operation {agg.name}.{op.name} ({where(op.origin)})')}"
            )
            lines.append("        ...")
        blocks.append(lines)
    head = header(info.files_of(context), f"Extern operations of context {context.name}.")
    return module_text(head, imports, blocks)


def externs_required(context: ir.Context) -> list[tuple[str, list[str]]]:
    """(class name, method names) the user's module must provide."""
    return [
        (externs_class(a.name), [naming.ident(o.name) for o in a.operations if o.extern])
        for a in extern_aggregates(context)
    ]


def emit_services(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    types = TypeNames(info, context, imports, mode="domain")
    blocks = [_service(info, context, svc, types, imports) for svc in context.services]
    head = header(info.files_of(context), f"Domain services of context {context.name}.")
    return module_text(head, imports, blocks)


def _service(
    info: ModelInfo,
    context: ir.Context,
    svc: ir.DomainService,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    lines = [
        f"class {naming.pascal(svc.name)}:",
        f"    {docstring(f'domainService {svc.name} ({where(svc.origin)})')}",
    ]
    for method in svc.methods:
        lines.append("")
        lines += _method(info, context, svc, method, types, imports)
    return lines


def _method(
    info: ModelInfo,
    context: ir.Context,
    svc: ir.DomainService,
    method: ir.ServiceMethod,
    types: TypeNames,
    imports: Imports,
) -> list[str]:
    alloc = naming.NameAlloc({"cls"})
    params = {p.name: alloc.take(naming.ident(p.name)) for p in method.params}
    scope = Scope(
        imports=imports,
        enum_ref=types.enum_ref,
        self_name=None,
        params=dict(params),
        locals=dict(params),
        services_module=None,
    )
    items = [f"{params[p.name]}: {types.render(p.type)}" for p in method.params]
    result = types.render(method.result) if method.result is not None else "None"
    lines = ["    @staticmethod"]
    lines += lay(Group(f"def {naming.ident(method.name)}(", items, f") -> {result}:"), 1)
    label = f"{svc.name}.{method.name}"
    lines.append(f"        {docstring(f'{label} ({where(method.origin)})')}")
    body: list[str] = []
    for stmt, later in zip(method.body, walk.reads_after(method.body), strict=True):
        if isinstance(stmt, ir.Precondition):
            refusal = precondition(label, stmt)
            body += check(render(stmt.condition, scope), refusal, imports, 2)
        elif isinstance(stmt, ir.Let):
            var = alloc.take(naming.local(stmt.name, stmt.name in later))
            scope.locals[stmt.name] = var
            body += lay(f"{var} = {render(stmt.value, scope)}", 2)
        elif isinstance(stmt, ir.CallOperation):
            op = info.operation(context.name, stmt.aggregate, stmt.operation)
            args = [render_as(a, p.type, scope) for a, p in zip(stmt.args, op.params, strict=True)]
            target = scope.locals.get(stmt.target, naming.ident(stmt.target))
            body += lay(call(f"{target}.{naming.ident(stmt.operation)}", args), 2)
        elif isinstance(stmt, ir.Return):
            value = (
                render_as(stmt.value, method.result, scope)
                if method.result
                else render(stmt.value, scope)
            )
            body += lay(f"return {value}", 2)
        elif isinstance(stmt, ir.Emit) and method.mutates:
            # a service's event is raised on (and saved with) its first mutated aggregate
            event = info.event(stmt.context, stmt.event)
            cls = types.domain_name(stmt.context, naming.pascal(stmt.event))
            owner = scope.locals[method.mutates[0]]
            body += lay(
                call(f"{owner}._raise_event", [call(cls, event_args(event, stmt, scope))]), 2
            )
        else:
            raise NotImplementedError(f"{type(stmt).__name__} in {label} ({where(method.origin)})")
    return lines + (body or ["        pass"])
