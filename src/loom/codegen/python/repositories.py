"""`<context>/repositories.py`: one repository class per aggregate (the runtime does the work).

An aggregate without a declared repository still gets one, named `<Aggregate>Repository`, for its
routes.
"""

from __future__ import annotations

from loom.codegen.python import names
from loom.codegen.python._code import Imports, docstring, header, module_text, where
from loom.codegen.python._shared import ModelInfo
from loom.codegen.python.tables import table_var
from loom.model import ir


def emit_repositories(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    blocks: list[list[str]] = []
    if context.aggregates:
        imports.add("loom.runtime", "Repository")
        imports.add(".", "tables")
    for agg in context.aggregates:
        cls = names.pascal(agg.name)
        imports.add(".domain", cls)
        repo = context.repository_for(agg.name)
        if repo is not None:
            doc = f"repository {repo.name} for {agg.name} ({where(repo.origin)})"
        else:
            doc = f"the repository of aggregate {agg.name} ({where(agg.origin)})"
        blocks.append(
            [
                f"class {info.repository_class(context, agg.name)}(Repository[{cls}]):",
                f"    {docstring(doc)}",
                "",
                f"    aggregate = {cls}",
                f"    table = tables.{table_var(agg)}",
            ]
        )
    head = header(info.files_of(context), f"Repositories of context {context.name}.")
    return module_text(head, imports, blocks)
