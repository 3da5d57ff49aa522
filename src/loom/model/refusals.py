"""The public text of a refusal: the `rule` and `detail` of the 422 / 403 problem a precondition,
invariant, state gate, `requires` gate, `string(N)` or `decimal(P, S)` bound answers when it does not hold.

A client may match on `rule` (it names the declaration and quotes its source), so it is defined
once, here, whatever emits the check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from loom.model import ir

Kind = Literal["precondition", "invariant", "state-gate", "requires"]


@dataclass(frozen=True, slots=True)
class Refusal:
    kind: Kind
    rule: str
    detail: str


def one_line(text: str) -> str:
    """Source text as one line (for rule names and comments): runs of whitespace become a space."""
    return " ".join(text.split())


def precondition(label: str, stmt: ir.Precondition) -> Refusal:
    """`label` names the body: `Account.withdraw`, `workflow transfer`, `Pricing.quote`."""
    rule = f"{label}: precondition {one_line(stmt.condition.text)}"
    detail = stmt.message if stmt.message is not None else f"{rule} failed"
    return Refusal("precondition", rule, detail)


def invariant(owner: str, inv: ir.Invariant) -> Refusal:
    """`owner` is the aggregate or value object that declares the invariant."""
    rule = f"{owner}: invariant {one_line(inv.condition.text)}"
    detail = inv.message if inv.message is not None else f"{rule} failed"
    return Refusal("invariant", rule, detail)


def state_gate(label: str, when: ir.Expr) -> Refusal:
    """An operation's `when` gate; `label` is `Aggregate.operation`."""
    gate = one_line(when.text)
    detail = f"{label} is not allowed in the current state (when {gate})"
    return Refusal("state-gate", f"{label}: when {gate}", detail)


def requires(label: str, gate: ir.Expr) -> Refusal:
    """A `requires` gate over the principal; `label` names the entry: `Aggregate.operation`,
    `Aggregate.create`, `workflow Name`, `commandHandler Name`, `queryHandler Name`."""
    text = one_line(gate.text)
    detail = f"{label} is not allowed for the current user (requires {text})"
    return Refusal("requires", f"{label}: requires {text}", detail)


def string_length(
    owner: str, field: str, bound: int, each: bool, kind: Kind = "invariant"
) -> Refusal:
    """The implicit invariant of a `string(N)` field (`each`: of a list of them); with `kind`
    "precondition", the implicit precondition of an operation's parameter (`owner` is then
    `Aggregate.operation`)."""
    what = "each of its strings is" if each else "it is"
    detail = f"{field}: {what} at most {bound} characters"
    return Refusal(kind, f"{owner}: {field}: string({bound})", detail)


def decimal_bounds(
    owner: str, field: str, precision: int, scale: int, each: bool, kind: Kind = "invariant"
) -> Refusal:
    """The implicit invariant of a `decimal(P, S)` field (`each`: of a list of them); with `kind`
    "precondition", the implicit precondition of an operation's parameter."""
    what = "each of its numbers has" if each else "it has"
    detail = (
        f"{field}: {what} at most {precision - scale} digits before the point and {scale} after "
        f"it (never rounded: round it in the model with round(x, {scale}))"
    )
    return Refusal(kind, f"{owner}: {field}: decimal({precision}, {scale})", detail)
