"""The Python back end: IR -> a FastAPI + Pydantic 2 + SQLAlchemy 2 (async Core) service package.

`generate(model, package=...)` returns every file of the package as text, keyed by its path relative
to the package folder: its Python modules, `asyncapi.json` (the contract of its durable events,
which `main.py` serves) and, for a service with processes or channels, `console.json` (the
processes' state machines and what each event sets off, which the admin routes and the console
answer, and the model's diagrams the console draws). Pure and deterministic: the same model gives the same bytes. The generated
code imports its siblings relatively and `loom.runtime` absolutely, so it loads under any name.
"""

from __future__ import annotations

from collections.abc import Collection

from loom.codegen.python.asyncapi import asyncapi_document, asyncapi_text
from loom.codegen.python.console import CONSOLE_FILE, console_document, console_text, has_console
from loom.codegen.python.domain import emit_domain
from loom.codegen.python.expressions import SIGNATURES, signatures
from loom.codegen.python.handlers import emit_handlers
from loom.codegen.python.ids import emit_ids
from loom.codegen.python.main import (
    ASYNCAPI_FILE,
    app_title,
    emit_context_init,
    emit_main,
    emit_metadata,
    emit_package_init,
)
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.parallel import halves
from loom.codegen.python.projections import emit_projections
from loom.codegen.python.reactions import emit_reactions, has_reactions
from loom.codegen.python.repositories import emit_repositories
from loom.codegen.python.routes import emit_routes
from loom.codegen.python.schemas import emit_schemas
from loom.codegen.python.services import (
    emit_externs,
    emit_services,
    extern_aggregates,
    externs_required,
)
from loom.codegen.python.subset import select
from loom.codegen.python.tables import emit_tables
from loom.codegen.python.workflows import emit_workflows
from loom.model import ir, naming

__all__ = ["generate"]


def generate(
    model: ir.Model, *, package: str = "service", contexts: Collection[str] | None = None
) -> dict[str, str]:
    """Every file of the generated package: relative path (POSIX) -> text. With `contexts` (names
    of contexts of the model), the package of the service holding only those (see `subset`);
    ValueError for a name the model has no context of."""
    subset = None if contexts is None else select(model, contexts)
    token = SIGNATURES.set(signatures(model))
    try:
        return _generate(ModelInfo(model, package, subset))
    finally:
        SIGNATURES.reset(token)


def _generate(info: ModelInfo) -> dict[str, str]:
    files: dict[str, str] = {
        "__init__.py": emit_package_init(info),
        "_metadata.py": emit_metadata(info),
    }
    routers: list[tuple[str, str]] = []
    externs: list[tuple[str, list[str]]] = []
    reactions: list[str] = []  # context modules with a reactions.py
    # the contexts are generated independently of one another: on two cores, in two processes
    each = halves(info.held(), lambda c: _context(info, c), weight=_weight)
    for context_files, context_routers, context_externs, context_reactions in each:
        files.update(context_files)
        routers += context_routers
        externs += context_externs
        reactions += context_reactions
    for contract in info.subset.contracts if info.subset is not None else ():
        files.update(_contract(info, contract))
    files["main.py"] = emit_main(info, routers, externs, reactions)
    held = None if info.subset is None else info.subset.held
    document = asyncapi_document(info.model, held, title=app_title(info))
    files[ASYNCAPI_FILE] = asyncapi_text(document)
    if has_console(info):
        files[CONSOLE_FILE] = console_text(console_document(info.model, held))
    return dict(sorted(files.items()))


_Context = tuple[dict[str, str], list[tuple[str, str]], list[tuple[str, list[str]]], list[str]]


def _context(info: ModelInfo, context: ir.Context) -> _Context:
    """The files of one context's package, and what `main.py` needs to know of it: its routers,
    the extern operations it requires and whether it has reactions."""
    files: dict[str, str] = {}
    routers: list[tuple[str, str]] = []
    externs: list[tuple[str, list[str]]] = []
    reactions: list[str] = []
    mod = naming.context_module(context)
    files[f"{mod}/__init__.py"] = emit_context_init(info, info.files_of(context), context.name)
    files[f"{mod}/domain.py"] = emit_domain(info, context)
    if context.aggregates:
        files[f"{mod}/ids.py"] = emit_ids(info, context)
    files[f"{mod}/tables.py"] = emit_tables(info, context)
    files[f"{mod}/repositories.py"] = emit_repositories(info, context)
    files[f"{mod}/schemas.py"] = emit_schemas(info, context)
    files[f"{mod}/routes.py"] = emit_routes(info, context)
    files[f"{mod}/workflows.py"] = emit_workflows(info, context)
    routers.append((mod, "routes"))
    routers.append((mod, "workflows"))
    if context.services:
        files[f"{mod}/services.py"] = emit_services(info, context)
    if extern_aggregates(context):
        files[f"{mod}/externs.py"] = emit_externs(info, context)
        externs += externs_required(context)
    if context.handlers:
        files[f"{mod}/handlers.py"] = emit_handlers(info, context)
        routers.append((mod, "handlers"))
    if context.projections:
        files[f"{mod}/projections.py"] = emit_projections(info, context)
        routers.append((mod, "projections"))
    if has_reactions(context):
        files[f"{mod}/reactions.py"] = emit_reactions(info, context)
        reactions.append(mod)
    return files, routers, externs, reactions


def _contract(info: ModelInfo, contract: ir.Context) -> dict[str, str]:
    """The package of a context the service does not hold: its public surface only, the ids of
    its aggregates, its events, and the wire models of the records an API call of a held context
    sends or answers (`contract` is the context cut down to those)."""
    whole = info.context(contract.name)
    mod = naming.context_module(whole)
    files = {f"{mod}/__init__.py": emit_context_init(info, info.files_of(whole), whole.name)}
    files[f"{mod}/domain.py"] = emit_domain(info, contract)
    if whole.aggregates:
        files[f"{mod}/ids.py"] = emit_ids(info, whole)
    called = any(r.target == whole.name for c in info.held() for r in c.resources)
    if called and contract.records:
        files[f"{mod}/schemas.py"] = emit_schemas(info, contract)
    return files


def _weight(context: ir.Context) -> int:
    # what most of a context's generation time goes to
    return len(context.aggregates) + len(context.workflows) + len(context.handlers)
