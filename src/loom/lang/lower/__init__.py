"""Pass 4, lower: the checked AST and the check's `Facts` to `loom.model.ir`. Runs only on a model
without errors, so every fact it looks up is there; it reads nothing but the tree and the facts.

`model.py` assembles the declarations; `bodies.py` lowers statement bodies and derives the saves;
`revision.py` digests the source text into the model's revision.
"""

from __future__ import annotations

from collections.abc import Mapping

from loom.lang.check.facts import Facts
from loom.lang.lower.model import lower_model
from loom.lang.lower.revision import model_revision
from loom.lang.names.symbols import Program
from loom.model import ir


def lower(prog: Program, facts: Facts, sources: Mapping[str, str]) -> ir.Model:
    """The IR model of a checked, error-free program; `sources` (file name -> text) give its
    revision."""
    return lower_model(prog, facts, model_revision(sources))


__all__ = ["lower", "model_revision"]
