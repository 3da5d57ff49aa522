"""The names a body sees while it is checked: its bindings, and what kind of body it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols
from loom.lang.syntax import ast
from loom.lang.types import AnyType


@dataclass
class Binding:
    """A name in a body: a parameter, a `let` (of a plain value, a load, or a create) or a `var`."""

    name: str
    type: AnyType
    span: Span
    kind: str  # "param" | "value" | "loaded" | "created" | "var"
    aggregate: str | None = None
    repository: str | None = None
    used: bool = False
    mutated: bool = False
    deleted: bool = False


@dataclass
class Scope:
    ctx: ContextSymbols
    agg: ast.Aggregate | None
    kind: str  # "default" | "derived" | "invariant" | "function" | "operation" | "workflow" | ...
    names: dict[str, Binding] = field(default_factory=dict)
    # Workflow and handler bodies: the enclosing workflow (None in a handler), which body this is
    # ("create" | "command" | "query" | "apply" | "starter" | "on" | "timeout" | "timer"),
    # and the workflow's state fields.
    wf: ast.Workflow | None = None
    body: str = ""
    block: bool = False  # a block-form function
    state: dict[str, AnyType] = field(default_factory=dict)
    correlated: bool = False
    # The aggregate of the `if let` read whose else branch this is (for a bare `notFound`).
    miss: str | None = None
    depth: int = 0  # 0 for the body itself, +1 per nested block
    # One shared cell per body: is the workflow instance bound yet (a create that takes no
    # correlation parameter binds it where it assigns the correlation field)?
    bound: list[bool] = field(default_factory=lambda: [True])
    # The value object whose invariants (or field defaults) are checked: its fields read by name.
    record: ast.ValueObject | None = None
    # A declared factory's body (but its `emit`s): the fields assigned so far, the only members of
    # the aggregate it may read (factories.py).
    building: set[str] | None = None
    # the body runs in one transaction (a transactional create or command handler, a reaction, a
    # timeout or timer body): a command of another context cannot be called from it
    transactional: bool = False

    def child(self, miss: str | None = None) -> Scope:
        """A nested block: sees the outer bindings (shared, so use marks carry), adds its own."""
        return Scope(
            self.ctx,
            self.agg,
            self.kind,
            dict(self.names),
            self.wf,
            self.body,
            self.block,
            self.state,
            self.correlated,
            miss,
            self.depth + 1,
            self.bound,
            transactional=self.transactional,
        )

    @property
    def reads_fields(self) -> bool:
        # A default is evaluated before the aggregate exists, so it cannot read its fields.
        return (self.agg is not None or self.record is not None) and self.kind != "default"
