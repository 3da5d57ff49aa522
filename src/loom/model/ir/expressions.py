"""The expressions. Every expression carries its type and the exact source text it was written as (for
error messages such as "precondition `creditLimit >= amount` failed").

The API calls (`api.ApiCall`) and the time functions (`time.TimeCall`) are expressions too; they
live in their own modules, where back ends name them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from loom.model.ir.types import EnumType, PayloadType, Type, ValueType


@dataclass(frozen=True, slots=True)
class Literal_:
    """A literal. `value` is the Python value: str, int, decimal.Decimal (as text, see below), bool.

    Decimal literals keep their source text in `value` (e.g. "12.50") so that no float ever appears.
    """

    value: str | int | bool | None
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class SelfField:
    """A field, derived value or `id` of the aggregate whose member is being evaluated."""

    name: str
    type: Type
    text: str
    kind: Literal["field", "derived", "id"] = "field"


@dataclass(frozen=True, slots=True)
class Param:
    """A parameter of the enclosing operation, function or workflow `create`."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Local:
    """A `let` binding of the enclosing body."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Member:
    """`obj.name`: a field, derived value or `id` of an aggregate-typed (or event-typed) value."""

    obj: Expr
    name: str
    type: Type
    text: str
    kind: Literal["field", "derived", "id"] = "field"


@dataclass(frozen=True, slots=True)
class EnumMember:
    enum: str
    member: str
    type: EnumType
    text: str


@dataclass(frozen=True, slots=True)
class Unary:
    op: Literal["-", "!"]
    operand: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic (+ - * / %), comparison (== != < <= > >=), membership (`x in xs`: `right` is a
    list of `left`'s type) and boolean (&& ||) operators.

    Typing rules (enforced by the checker): int op int -> int, except `/` which is decimal;
    any arithmetic with a decimal operand -> decimal; `+` on strings concatenates.
    """

    op: Literal["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||"]
    left: Expr
    right: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Conditional:
    condition: Expr
    then: Expr
    otherwise: Expr
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Now:
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class Round:
    """`round(x, 2)`, `round(x, 2, halfUp)`: `value` with exactly `scale` digits after the point,
    rounded by `mode` (a name of `loom.runtime.decimals.ROUNDING_MODES`: `halfEven` when none)."""

    value: Expr
    scale: int
    mode: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """A call of a pure `function`.

    - `owner="aggregate"`, `receiver=None`: a function of the enclosing aggregate (`fee(x)`).
    - `owner="aggregate"`, `receiver=e`: a function of the aggregate `e` evaluates to, called from a
      workflow or handler body (`source.fee(x)`); `aggregate` names it.
    - `owner="workflow"`: a function of the enclosing workflow `workflow` (emitted at module scope,
      namespaced by the workflow).
    """

    function: str
    args: tuple[Expr, ...]
    type: Type
    text: str
    owner: Literal["aggregate", "workflow"] = "aggregate"
    receiver: Expr | None = None
    aggregate: str | None = None
    workflow: str | None = None


@dataclass(frozen=True, slots=True)
class StateField:
    """A state field of the enclosing (correlated) workflow, read in one of its bodies."""

    name: str
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ServiceCall:
    """A call of a non-mutating domain-service method used as a value: `Pricing.quote(a, 3)`."""

    service: str
    method: str
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ListLiteral:
    items: tuple[Expr, ...]
    type: Type
    text: str


PrincipalMember: TypeAlias = Literal[
    "id", "isSystem", "isAuthenticated", "roles", "hasRole", "claim", "tenant"
]


@dataclass(frozen=True, slots=True)
class CurrentUser:
    """A read of the principal the code runs as (`currentUser`): the request's user, anonymous,
    or the system (a reaction). `member` is what is read: `id` (string; none for anonymous
    callers, the system and a token without `sub`, when `==` / `!=` with it are false and reading
    it as a value is a 401), `isSystem`, `isAuthenticated` (bool), `roles` (string[]), `tenant`
    (string: the caller's tenant, in a tenanted context only, where a request has one), or the
    calls `hasRole(name)` (bool) and `claim(name)` (string, "" when absent), whose one argument is
    `args[0]`. Only in an operation's `requires` gate and in command-side workflow / handler bodies."""

    member: PrincipalMember
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class RecordArg:
    """One field of a record expression: its declared type and its value (None: an optional field
    left out that declares no default)."""

    name: str
    type: Type
    value: Expr | None


@dataclass(frozen=True, slots=True)
class Construct:
    """`Money { amount: 1, currency: "EUR" }`: a value object or payload. `args` lists every field in
    declaration order; a field the expression left out carries its declared default."""

    type: ValueType | PayloadType
    args: tuple[RecordArg, ...]
    text: str


TimeFunction = Literal["today", "seconds", "minutes", "hours", "days", "dateOf", "startOf"]


@dataclass(frozen=True, slots=True)
class TimeCall:
    """A call of a time function; `args` is empty for `today()`, one value otherwise."""

    function: TimeFunction
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class BuiltinCall:
    """A call of a built-in function of `loom.model.builtins.BUILTINS` (`addMonths(d, 1)`,
    `length(s)`): its name, its arguments in order, and its result type."""

    function: str
    args: tuple[Expr, ...]
    type: Type
    text: str


@dataclass(frozen=True, slots=True)
class ApiCall:
    """`resource.Handler(arg: value, …)`: a call of `handler` (a command or query handler of
    context `target`) through `resource`. `args` are the handler's parameters in its order, each
    given once; `type` is the handler's result type (VOID for a command answering nothing)."""

    resource: str
    target: str
    handler: str
    kind: Literal["command", "query"]
    args: tuple[tuple[str, Expr], ...]
    type: Type
    text: str


Expr: TypeAlias = (
    Literal_
    | SelfField
    | Param
    | Local
    | Member
    | EnumMember
    | Unary
    | Binary
    | Conditional
    | Now
    | FunctionCall
    | ListLiteral
    | StateField
    | ServiceCall
    | Construct
    | CurrentUser
    | ApiCall
    | Round
    | TimeCall
    | BuiltinCall
)
