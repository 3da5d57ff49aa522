"""IR expression -> Python source.

Precedence follows Python's grammar; a child is parenthesised only when Python would otherwise read
it differently. Comparisons never chain (`(a < b) == c`), and the right operand of a binary operator
at the same level keeps its parentheses (`a - (b - c)`). Arithmetic that the model types as decimal,
`/` (always decimal division) and `%` are calls of `loom.runtime.decimals` (`decimals.add(a, b)`):
exact, or an `ArithmeticRefused` 422, wherever the code runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType

from loom.codegen.python import time_exprs
from loom.codegen.python.imports import Imports
from loom.codegen.python.literals import decimal_literal, py_str
from loom.model import ir, naming
from loom.model.builtins import runtime_function

# Python precedence levels (higher binds tighter).
COND = 1
OR = 2
AND = 3
NOT = 4
CMP = 5
ADD = 8
MUL = 9
UNARY = 10
ATOM = 20

_BINARY_PREC = {
    "||": OR,
    "&&": AND,
    "==": CMP,
    "!=": CMP,
    "<": CMP,
    "<=": CMP,
    ">": CMP,
    ">=": CMP,
    "in": CMP,
    "+": ADD,
    "-": ADD,
    "*": MUL,
    "/": MUL,
    "%": MUL,
}
_PY_OP = {"&&": "and", "||": "or"}


@dataclass
class Scope:
    """What names mean where an expression is rendered.

    `self_name` renders SelfField (`self` in the domain); `params` maps a parameter to its Python
    expression (`amount` in a method, `body.amount` in a route); `locals` maps a `let` name to its
    Python variable. `enum_ref` returns the Python name of an enum class (registering any import).
    """

    imports: Imports
    enum_ref: Callable[[str, str], str]
    self_name: str | None = "self"
    params: dict[str, str] = field(default_factory=dict)
    locals: dict[str, str] = field(default_factory=dict)
    # the Python variable holding the enclosing workflow's instance (StateField reads)
    state: str | None = None
    # where domain-service classes come from (None: defined in the module being written)
    services_module: str | None = ".services"
    # where a workflow's module-level helpers (its functions, its `apply` folds) come from: a body
    # rendered outside `workflows.py` (a reaction, an `on timeout`) imports them (None: defined in
    # the module being written)
    workflows_module: str | None = ".workflows"
    # aggregate fields read as locals (a declared factory assigns them before the aggregate exists)
    fields: dict[str, str] = field(default_factory=dict)
    # the aggregate whose members are in scope (for calls of its functions)
    owner: str | None = None


# (("aggregate" | "workflow"), owner name, function name) -> parameter types, for the model being
# generated (set by `generate`): arguments are converted to them (an int where a decimal is due).
SIGNATURES: ContextVar[Mapping[tuple[str, str, str], tuple[ir.Type, ...]]] = ContextVar(
    "loom_codegen_signatures", default=MappingProxyType({})
)


def signatures(model: ir.Model) -> dict[tuple[str, str, str], tuple[ir.Type, ...]]:
    found: dict[tuple[str, str, str], tuple[ir.Type, ...]] = {}
    clashes: set[tuple[str, str, str]] = set()
    for ctx in model.contexts:
        owners = [("aggregate", a.name, a.functions) for a in ctx.aggregates]
        owners += [("workflow", w.name, w.functions) for w in ctx.workflows]
        for kind, name, functions in owners:
            for fn in functions:
                key = (kind, name, fn.name)
                types = tuple(p.type for p in fn.params)
                if key in found and found[key] != types:
                    clashes.add(key)
                found[key] = types
    for key in clashes:
        del found[key]
    return found


def render(expr: ir.Expr, scope: Scope) -> str:
    """Python source for `expr`, without outer parentheses."""
    return _render(expr, scope)[0]


def render_as(expr: ir.Expr, target: ir.Type, scope: Scope) -> str:
    """`expr` converted to `target` where Python needs it: an int where a decimal is expected."""
    text, prec = _render(expr, scope)
    if _is_decimal(target) and _is_int(expr.type):
        return _to_decimal(expr, text, prec, scope)
    return text


def _is_int(t: ir.Type) -> bool:
    return isinstance(t, ir.PrimitiveType) and t.name == "int"


def _is_decimal(t: ir.Type) -> bool:
    if isinstance(t, ir.OptionalType):
        return _is_decimal(t.inner)
    return isinstance(t, ir.PrimitiveType) and t.name == "decimal"


def _is_string(t: ir.Type) -> bool:
    return isinstance(t, ir.PrimitiveType) and t.name == "string"


def _to_decimal(expr: ir.Expr, text: str, prec: int, scope: Scope) -> str:
    scope.imports.add("decimal", "Decimal")
    if isinstance(expr, ir.Literal_) and isinstance(expr.value, int):
        return f"Decimal({expr.value})"
    return f"Decimal({text})"


def _wrap(text: str, prec: int, need: int) -> str:
    return f"({text})" if prec < need else text


def _literal(expr: ir.Literal_, scope: Scope) -> tuple[str, int]:
    value = expr.value
    if value is None:
        return "None", ATOM
    if isinstance(value, bool):
        return ("True" if value else "False"), ATOM
    timed = time_exprs.literal(expr, scope.imports)
    if timed is not None:
        return timed, ATOM
    if _is_decimal(expr.type):
        scope.imports.add("decimal", "Decimal")
        return decimal_literal(str(value)), ATOM
    if isinstance(value, int):
        return str(value), (UNARY if value < 0 else ATOM)
    if isinstance(expr.type, ir.EnumType):
        return (
            f"{scope.enum_ref(expr.type.name, expr.type.context)}.{naming.upper_snake(value)}",
            ATOM,
        )
    return py_str(str(value)), ATOM


def _render(expr: ir.Expr, scope: Scope) -> tuple[str, int]:
    if isinstance(expr, ir.Literal_):
        return _literal(expr, scope)
    if isinstance(expr, ir.SelfField):
        if expr.name in scope.fields and expr.kind != "id":
            return scope.fields[expr.name], ATOM
        if scope.self_name is None:
            raise ValueError(f"`{expr.text}` refers to an aggregate member outside an aggregate")
        return f"{scope.self_name}.{_member_name(expr.name, expr.kind)}", ATOM
    if isinstance(expr, ir.Param):
        return scope.params.get(expr.name, naming.ident(expr.name)), ATOM
    if isinstance(expr, ir.Local):
        return scope.locals.get(expr.name, naming.ident(expr.name)), ATOM
    if isinstance(expr, ir.Member):
        obj, prec = _render(expr.obj, scope)
        return f"{_wrap(obj, prec, ATOM)}.{_member_name(expr.name, expr.kind)}", ATOM
    if isinstance(expr, ir.EnumMember):
        cls = scope.enum_ref(expr.type.name, expr.type.context)
        return f"{cls}.{naming.upper_snake(expr.member)}", ATOM
    if isinstance(expr, ir.Unary):
        inner = expr.operand
        if expr.op == "!" and isinstance(inner, ir.Binary) and inner.op == "in":
            left = _wrap(*_render(inner.left, scope), CMP + 1)
            return f"{left} not in {_wrap(*_render(inner.right, scope), CMP + 1)}", CMP
        if expr.op == "!":
            operand, prec = _render(expr.operand, scope)
            return f"not {_wrap(operand, prec, NOT)}", NOT
        if _is_decimal(expr.type):
            if isinstance(expr.operand, ir.Literal_):  # `-1.5`: the literal Decimal("-1.5")
                scope.imports.add("decimal", "Decimal")
                return decimal_literal(f"-{expr.operand.value}"), ATOM
            scope.imports.add("loom.runtime", "decimals")
            return f"decimals.neg({render(expr.operand, scope)})", ATOM
        operand, prec = _render(expr.operand, scope)
        return f"-{_wrap(operand, prec, UNARY + 1 if prec == UNARY else UNARY)}", UNARY
    if isinstance(expr, ir.Binary):
        return _binary(expr, scope)
    if isinstance(expr, ir.Conditional):
        cond = _wrap(*_render(expr.condition, scope), OR)
        then = _wrap(*_branch(expr.then, expr.type, scope), OR)
        other = _wrap(*_branch(expr.otherwise, expr.type, scope), COND)
        return f"{then} if {cond} else {other}", COND
    if isinstance(expr, ir.Now):
        scope.imports.add("loom.runtime", "now")
        return "now()", ATOM
    if isinstance(expr, ir.Round):
        scope.imports.add("loom.runtime", "decimals")
        value = render(expr.value, scope)
        return f"decimals.round_to({value}, scale={expr.scale}, mode={py_str(expr.mode)})", ATOM
    if isinstance(expr, ir.TimeCall):
        rendered = [render(a, scope) for a in expr.args]
        return time_exprs.call(expr, rendered, scope.imports), ATOM
    if isinstance(expr, ir.BuiltinCall):
        scope.imports.add("loom.runtime", "functions")
        args = ", ".join(render(a, scope) for a in expr.args)
        return f"functions.{runtime_function(expr)}({args})", ATOM
    if isinstance(expr, ir.FunctionCall):
        if expr.owner == "workflow":
            key = ("workflow", expr.workflow or "", expr.function)
        else:
            key = ("aggregate", expr.aggregate or scope.owner or "", expr.function)
        params = SIGNATURES.get().get(key)
        if params is not None and len(params) == len(expr.args):
            args = ", ".join(
                render_as(a, t, scope) for a, t in zip(expr.args, params, strict=False)
            )
        else:
            args = ", ".join(render(a, scope) for a in expr.args)
        if expr.owner == "workflow":
            fn = workflow_member(scope, workflow_function(expr.workflow or "", expr.function))
            return f"{fn}({args})", ATOM
        if expr.receiver is not None:
            receiver = _wrap(*_render(expr.receiver, scope), ATOM)
            return f"{receiver}._{naming.snake(expr.function)}({args})", ATOM
        if scope.self_name is None:
            raise ValueError(f"`{expr.text}`: an aggregate function outside its aggregate")
        return f"{scope.self_name}._{naming.snake(expr.function)}({args})", ATOM
    if isinstance(expr, ir.StateField):
        if scope.state is None:
            raise ValueError(f"`{expr.text}` reads workflow state outside a correlated workflow")
        return f"{scope.state}.{naming.ident(expr.name)}", ATOM
    if isinstance(expr, ir.ServiceCall):
        cls = naming.pascal(expr.service)
        if scope.services_module is not None:
            scope.imports.add(scope.services_module, cls)
        args = ", ".join(render(a, scope) for a in expr.args)
        return f"{cls}.{naming.ident(expr.method)}({args})", ATOM
    if isinstance(expr, ir.Construct):
        cls = scope.enum_ref(expr.type.name, expr.type.context)  # any domain class, by model name
        kwargs = [
            f"{naming.ident(arg.name)}="
            + ("None" if arg.value is None else render_as(arg.value, arg.type, scope))
            for arg in expr.args
        ]
        return f"{cls}({', '.join(kwargs)})", ATOM
    if isinstance(expr, ir.CurrentUser):
        return _current_user(expr, scope), ATOM
    if isinstance(expr, ir.ListLiteral):
        element = expr.type.element if isinstance(expr.type, ir.ListType) else None
        items = [
            render_as(i, element, scope) if element is not None else render(i, scope)
            for i in expr.items
        ]
        return "[" + ", ".join(items) + "]", ATOM
    raise TypeError(f"unknown expression node {type(expr).__name__}")


# `currentUser.<member>` -> the attribute or method of the runtime Principal
_PRINCIPAL = {
    "id": "subject",
    "isSystem": "is_system",
    "isAuthenticated": "is_authenticated",
    "roles": "roles",
    "hasRole": "has_role",
    "claim": "claim",
}


def _current_user(expr: ir.CurrentUser, scope: Scope) -> str:
    """`currentUser.hasRole("a")` -> `current_principal().has_role("a")`; `.roles` is a list;
    `.tenant` is the tenant the rows are scoped to, `current_tenant()`."""
    if expr.member == "tenant":
        scope.imports.add("loom.runtime", "current_tenant")
        return "current_tenant()"
    scope.imports.add("loom.runtime", "current_principal")
    text = f"current_principal().{_PRINCIPAL[expr.member]}"
    if expr.member == "roles":
        return f"list({text})"
    if expr.member in ("hasRole", "claim"):
        return f"{text}({', '.join(render(a, scope) for a in expr.args)})"
    return text


def _is_principal_id(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.CurrentUser) and expr.member == "id"


def _subject_comparison(expr: ir.Binary, scope: Scope) -> str:
    """`x == currentUser.id` -> `current_principal().id_is(x)` (`!=`: `id_is_not`):
    false for a principal without an id, so an anonymous caller never matches a value a client
    sends, "" or null included. The other side, when it is `currentUser.id` too, is its raw id."""
    scope.imports.add("loom.runtime", "current_principal")
    other = expr.right if _is_principal_id(expr.left) else expr.left
    text = "current_principal().id" if _is_principal_id(other) else render(other, scope)
    method = "id_is" if expr.op == "==" else "id_is_not"
    return f"current_principal().{method}({text})"


def workflow_member(scope: Scope, name: str) -> str:
    """`name`, a module-level definition of `workflows.py`, imported when the code being written
    lives elsewhere."""
    if scope.workflows_module is not None:
        scope.imports.add(scope.workflows_module, name)
    return name


def workflow_function(workflow: str, function: str) -> str:
    """A workflow function at module scope: `<workflow_snake>_<fn_snake>`."""
    return f"{naming.snake(workflow)}_{naming.snake(function)}"


def _branch(expr: ir.Expr, target: ir.Type, scope: Scope) -> tuple[str, int]:
    if _is_decimal(target) and _is_int(expr.type):
        text, prec = _render(expr, scope)
        return _to_decimal(expr, text, prec, scope), ATOM
    return _render(expr, scope)


def _binary(expr: ir.Binary, scope: Scope) -> tuple[str, int]:
    op = expr.op
    if op in ("==", "!=") and (_is_principal_id(expr.left) or _is_principal_id(expr.right)):
        return _subject_comparison(expr, scope), ATOM
    prec = _BINARY_PREC[op]
    py_op = _PY_OP.get(op, op)
    left_t, right_t = expr.left.type, expr.right.type
    if prec == CMP:
        none_left = isinstance(expr.left, ir.Literal_) and expr.left.value is None
        none_right = isinstance(expr.right, ir.Literal_) and expr.right.value is None
        if op in ("==", "!=") and (none_left or none_right):
            py_op = "is" if op == "==" else "is not"
        left = _wrap(*_render(expr.left, scope), CMP + 1)
        right = _wrap(*_render(expr.right, scope), CMP + 1)
        return f"{left} {py_op} {right}", CMP
    if prec in (AND, OR):
        left = _wrap(*_render(expr.left, scope), prec)
        right = _wrap(*_render(expr.right, scope), prec + 1)
        return f"{left} {py_op} {right}", prec
    # arithmetic
    timed = time_exprs.arithmetic(
        expr, render(expr.left, scope), render(expr.right, scope), scope.imports
    )
    if timed is not None:
        return timed, ATOM
    if op == "+" and (_is_string(expr.type) or _is_string(left_t) or _is_string(right_t)):
        left = _concat_operand(expr.left, scope, prec)
        right = _concat_operand(expr.right, scope, prec + 1)
        return f"{left} + {right}", prec
    decimal = op == "/" or _is_decimal(expr.type) or _is_decimal(left_t) or _is_decimal(right_t)
    if decimal or op == "%":
        # through loom.runtime.decimals: exact, or a 422 (int operands are taken as they are)
        scope.imports.add("loom.runtime", "decimals")
        fn = _DECIMAL_OP[op] if decimal else "int_rem"
        return f"decimals.{fn}({render(expr.left, scope)}, {render(expr.right, scope)})", ATOM
    left = _wrap(*_render(expr.left, scope), prec)
    right = _wrap(*_render(expr.right, scope), prec + 1)
    return f"{left} {py_op} {right}", prec


# Decimal arithmetic -> loom.runtime.decimals (so is `%` of ints, whose zero divisor is a 422 too)
_DECIMAL_OP = {"+": "add", "-": "sub", "*": "mul", "/": "div", "%": "rem"}


def _concat_operand(expr: ir.Expr, scope: Scope, need: int) -> str:
    text, prec = _render(expr, scope)
    if not _is_string(expr.type):
        return f"str({text})"
    return _wrap(text, prec, need)


def _member_name(name: str, kind: str) -> str:
    if kind == "id":
        return "id"
    return naming.ident(name)
