"""The tree builder: one method per grammar rule (see grammar.lark), called by `reduce.parse` as the
parser reduces that rule, with the rule's positions and its children's values.

The rules live by what they build: `tree_declarations.py`, `tree_workflows.py` and
`tree_bodies.py`, over what they all read with (`tree_tokens.py`)."""

from __future__ import annotations

from loom.lang.syntax.tree_bodies import BodyRules
from loom.lang.syntax.tree_declarations import DeclarationRules
from loom.lang.syntax.tree_workflows import WorkflowRules


class Build(DeclarationRules, WorkflowRules, BodyRules):
    """Every rule's method: the parsers find each by the rule's name (`return` included)."""
