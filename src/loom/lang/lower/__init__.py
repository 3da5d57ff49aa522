"""Pass 4, lower: the checked AST and the check's `Facts` to `loom.model.ir`. Runs only on a model
without errors, so every fact it looks up is there; it reads nothing but the tree and the facts.

`model.py` assembles the declarations; `bodies.py` lowers statement bodies and derives the saves.
"""

from __future__ import annotations

from loom.lang.check.facts import Facts
from loom.lang.lower.model import lower_model
from loom.lang.names.symbols import Program
from loom.model import ir


def lower(prog: Program, facts: Facts) -> ir.Model:
    """The IR model of a checked, error-free program."""
    return lower_model(prog, facts)


__all__ = ["lower"]
