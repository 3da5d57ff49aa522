"""`<context>/ids.py`: the identity types of a context's aggregates (`AccountId`, a NewType of
UUID), for a context that has aggregates.

They live apart from `domain.py` and import nothing of any context, so two contexts whose
aggregates hold ids of each other's (`Alpha.Xylo` keeps a `Beta.Yarn id`, `Beta.Yarn` an
`Alpha.Xylo id`) import each other's ids without a cycle. Every module that names an id imports it
from here, the context's own modules too.
"""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.model_info import ModelInfo
from loom.codegen.python.modules import header, module_text
from loom.model import ir, naming


def emit_ids(info: ModelInfo, context: ir.Context) -> str:
    imports = Imports()
    imports.add("typing", "NewType")
    imports.add("uuid", "UUID")
    lines = [f'{id_t} = NewType("{id_t}", UUID)' for id_t in id_types(context)]
    head = header(
        info.files_of(context), f"Identities of the aggregates of context {context.name}."
    )
    return module_text(head, imports, [lines])


def id_types(context: ir.Context) -> list[str]:
    return [naming.id_type(a.name) for a in context.aggregates]
