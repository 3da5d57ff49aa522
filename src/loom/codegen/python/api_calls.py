"""Calls through a `resource { kind: api }` binding -> Python, and the resources `main.py` declares.

    let t = directory.TechnicianInfo(id: tech)
      t: TechnicianView = await service.api("Dispatch.directory").query(
          "technician_info", params={"id": tech}, answer=TechnicianViewInput
      )
    directory.Register(name: n)
      await service.api("Dispatch.directory").command(
          "register", {"name": n}, answer=TechnicianId
      )

The arguments go out as the callee's wire models (`<Record>Out`: names by alias); the answer is
validated by the callee's request models (`<Record>Input`, which check a value object's
invariants) and the runtime builds the domain value from them (`to_domain()`), as a request's
body is built. The bound variable is annotated with the domain type: the runtime answers `Any`.
"""

from __future__ import annotations

from loom.codegen.python.expressions import Scope, render_as
from loom.codegen.python.imports import Imports
from loom.codegen.python.layout import Doc, Group, call
from loom.codegen.python.literals import py_str
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.schemas import sole_payload
from loom.codegen.python.type_names import TypeNames
from loom.codegen.python.wire import domain_to_wire
from loom.model import ir, naming


def resource_key(context: str, resource: str) -> str:
    """The name a resource is started and called by: `Context.resource`."""
    return f"{context}.{resource}"


def handler_of(info: ModelInfo, c: ir.ApiCall) -> ir.Handler:
    return info.context(c.target).handler(c.handler)


def api_call(
    info: ModelInfo,
    context: ir.Context,
    imports: Imports,
    scope: Scope,
    service: str,
    c: ir.ApiCall,
) -> Doc:
    """The expression of the call (its answer as a domain value; None for a 204)."""
    handler = handler_of(info, c)
    out_types = TypeNames(info, context, imports, mode="output")
    in_types = TypeNames(info, context, imports, mode="input")
    given = dict(c.args)
    values = {
        p.name: domain_to_wire(render_as(given[p.name], p.type, scope), p.type, out_types)
        for p in handler.params
    }
    whole = sole_payload(handler.params)
    body: Doc
    if whole is not None and c.kind == "command":
        body = values[whole.name]
    else:
        # a query's parameters by keyword: with its answer type, a call has 3 arguments
        head = "{" if c.kind == "command" else "params={"
        body = Group(head, [f"{py_str(name)}: {v}" for name, v in values.items()], "}")
    args: list[Doc] = [py_str(naming.snake(c.handler)), body]
    if handler.result is not None:
        args.append(f"answer={in_types.render(handler.result)}")
    target = f"{service}.api({py_str(resource_key(context.name, c.resource))}).{c.kind}"
    return call(f"await {target}", args)


def api_resources(info: ModelInfo, imports: Imports) -> list[Doc]:
    """The `ApiResource` of every resource of the contexts the service holds."""
    items: list[Doc] = []
    for ctx in info.held():
        for r in ctx.resources:
            imports.add("loom.runtime", "ApiResource")
            args: list[Doc] = [
                f"owner={py_str(ctx.name)}",
                f"name={py_str(r.name)}",
                f"context={py_str(r.target)}",
                f"timeout={_seconds(r.timeout_ms)}",
                f"retries={r.retries}",
            ]
            items.append(call("ApiResource", args))
    return items


def _seconds(ms: int) -> str:
    return str(ms // 1000) if ms % 1000 == 0 else str(ms / 1000)
