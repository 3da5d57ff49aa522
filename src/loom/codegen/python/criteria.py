"""Criteria -> SQLAlchemy where-clauses over an aggregate's table.

A criterion's condition reads the aggregate's fields (`SelfField`) and the criterion's parameters.
Field reads become columns (`c.due_at`); everything that reads no column stays plain Python and is
bound as a parameter. Every operand of an operation with a decimal side (and of `/`, always a
decimal) goes through `as_number`, whose operators compute exactly on both engines as
`loom.runtime.decimals` does in memory; `%` of ints is `int_rem` (truncating, like
`decimals.int_rem`). `field in xs` is SQL's `IN` over the bound list, `isPresent(field)` is
`IS NOT NULL`. Enums compare as their stored value strings; a column always ends up on the
left of a comparison (so that both Python and mypy pick the column's operator). A column named
like a Python keyword is read by key (`c["class"]`). A read rule's `currentUser` reads no column:
it is bound from the principal when the read runs (the criterion function is called per read), and
`field == currentUser.id` is `subject_is(c.field)`, false for a principal without an id.
"""

from __future__ import annotations

from loom.codegen.python.expressions import Scope, render
from loom.codegen.python.layout import Doc, call
from loom.codegen.python.literals import py_str
from loom.model import ir, naming, walk
from loom.model.builtins import BUILTINS

_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}


def _is_decimal(t: ir.Type) -> bool:
    if isinstance(t, ir.OptionalType):
        return _is_decimal(t.inner)
    return isinstance(t, ir.PrimitiveType) and t.name == "decimal"


def _bare(t: ir.Type) -> ir.Type:
    return t.inner if isinstance(t, ir.OptionalType) else t


def _reads_column(expr: ir.Expr) -> bool:
    return any(isinstance(e, ir.SelfField) for e in walk.expressions(expr))


class SqlRenderer:
    """Renders criterion conditions; `cols` is the Python name of the table's column collection."""

    def __init__(self, scope: Scope, cols: str = "c") -> None:
        self.scope = scope
        self.cols = cols

    def _runtime(self, name: str) -> str:
        self.scope.imports.add("loom.runtime", name)
        return name

    def _sa(self, name: str) -> str:
        self.scope.imports.add("sqlalchemy", name)
        return name

    def where(self, expr: ir.Expr) -> str:
        """A where-clause (ColumnElement[bool]) for a boolean condition."""
        if not _reads_column(expr):
            return f"{self._runtime('sql_bool')}({render(expr, self.scope)})"
        return self._sql(expr)

    def where_doc(self, expr: ir.Expr) -> Doc:
        """`where` as a layout: a top-level and_/or_ may be exploded one part per line."""
        if isinstance(expr, ir.Binary) and expr.op in ("&&", "||") and _reads_column(expr):
            fn = self._sa("and_" if expr.op == "&&" else "or_")
            return call(fn, [self.where(p) for p in self._flatten(expr, expr.op)])
        return self.where(expr)

    def _py(self, expr: ir.Expr, decimal: bool) -> str:
        """A value that reads no column (bound as a parameter)."""
        if isinstance(expr, ir.EnumMember):
            return py_str(expr.member)
        text = render(expr, self.scope)
        if isinstance(expr.type, ir.EnumType) and not isinstance(expr, ir.Literal_):
            return f"{text}.value"
        if decimal:
            return f"{self._runtime('as_number')}({text})"
        return text

    def _operand(self, expr: ir.Expr, decimal: bool) -> str:
        if _reads_column(expr):
            text = self._sql(expr)
            if decimal and not _is_decimal(expr.type):  # an int side of a decimal operation
                return f"{self._runtime('as_number')}({text})"
            call = _int_rem(expr) or isinstance(expr, ir.BuiltinCall)
            return text if _simple(expr) or call else f"({text})"
        text = self._py(expr, decimal)
        return text if _simple(expr) or decimal else f"({text})"

    def _sql(self, expr: ir.Expr) -> str:
        if isinstance(expr, ir.SelfField):
            col = "id" if expr.kind == "id" else naming.column_name(expr.name)
            # `c.class` is not Python: a keyword is read by key, as the table names the column
            keyword = naming.escape(col) != col
            text = f"{self.cols}[{py_str(col)}]" if keyword else f"{self.cols}.{col}"
            if _is_decimal(expr.type):
                return f"{self._runtime('as_number')}({text})"
            return text
        if isinstance(expr, ir.Unary):
            if expr.op == "!":
                return f"{self._sa('not_')}({self.where(expr.operand)})"
            return f"-{self._operand(expr.operand, _is_decimal(expr.type))}"
        if isinstance(expr, ir.Conditional):
            then = self._value(expr.then, _is_decimal(expr.type))
            other = self._value(expr.otherwise, _is_decimal(expr.type))
            return f"{self._sa('case')}(({self.where(expr.condition)}, {then}), else_={other})"
        if isinstance(expr, ir.Binary):
            return self._binary(expr)
        if isinstance(expr, ir.BuiltinCall) and expr.function == "isPresent":
            return f"{self._sql(expr.args[0])}.is_not(None)"
        if isinstance(expr, ir.BuiltinCall):  # a string function (the checker admits no other)
            # a value that reads no column is bound as it is (`functions_sql` binds it as text)
            args = ", ".join(
                self._sql(a) if _reads_column(a) else self._py(a, False) for a in expr.args
            )
            return f"{self._runtime('functions_sql')}.{BUILTINS[expr.function].runtime}({args})"
        raise ValueError(f"`{expr.text}` cannot be translated to SQL")

    def _value(self, expr: ir.Expr, decimal: bool) -> str:
        if _reads_column(expr):
            return self._sql(expr)
        if decimal:
            return self._py(expr, True)
        return f"{self._sa('literal')}({self._py(expr, False)})"

    def _binary(self, expr: ir.Binary) -> str:
        op: str = expr.op
        if op in ("&&", "||"):
            fn = self._sa("and_" if op == "&&" else "or_")
            parts = self._flatten(expr, op)
            return f"{fn}({', '.join(self.where(p) for p in parts)})"
        left, right = expr.left, expr.right
        if op == "in":  # a stored value in a list the service binds (never a stored list)
            values = render(right, self.scope)
            if isinstance(_bare(left.type), ir.EnumType):
                values = f"[v.value for v in {values}]"
            return f"{self._operand(left, False)}.in_({values})"
        if op in ("==", "!=") and (_is_subject(left) or _is_subject(right)):
            other = right if _is_subject(left) else left
            if _reads_column(other):  # a read rule: false for a principal without an id
                fn = self._runtime("subject_is" if op == "==" else "subject_is_not")
                return f"{fn}({self._operand(other, False)})"
        decimal = _is_decimal(left.type) or _is_decimal(right.type) or _is_decimal(expr.type)
        if op in _FLIP:
            if not _reads_column(left):
                left, right, op = right, left, _FLIP[op]
            none = isinstance(right, ir.Literal_) and right.value is None
            lhs = self._operand(left, decimal)
            if none:
                return f"{lhs}.is_(None)" if op == "==" else f"{lhs}.is_not(None)"
            return f"{lhs} {op} {self._operand(right, decimal)}"
        if op == "%" and not decimal:
            rem = self._runtime("int_rem")
            return f"{rem}({self._operand(left, False)}, {self._operand(right, False)})"
        if op == "/" and not decimal:
            decimal = True
        lhs = self._operand(left, decimal)
        if not _reads_column(left) and not decimal:
            lhs = f"{self._sa('literal')}({lhs})"
        return f"{lhs} {op} {self._operand(right, decimal)}"

    def _flatten(self, expr: ir.Expr, op: str) -> list[ir.Expr]:
        if isinstance(expr, ir.Binary) and expr.op == op and _reads_column(expr):
            return self._flatten(expr.left, op) + self._flatten(expr.right, op)
        return [expr]


def _is_subject(expr: ir.Expr) -> bool:
    return isinstance(expr, ir.CurrentUser) and expr.member == "id"


def _int_rem(expr: ir.Expr) -> bool:
    """`%` of ints, rendered as a call (`int_rem(a, b)`), which needs no parentheses."""
    return isinstance(expr, ir.Binary) and expr.op == "%" and not _is_decimal(expr.type)


def _simple(expr: ir.Expr) -> bool:
    return isinstance(
        expr, ir.SelfField | ir.Param | ir.Local | ir.Literal_ | ir.EnumMember | ir.Now | ir.Member
    ) and not (isinstance(expr, ir.Literal_) and isinstance(expr.value, int) and expr.value < 0)


def key_condition(fields: tuple[ir.Field, ...], params: dict[str, str]) -> ir.Expr:
    """`f1 == p1 && f2 == p2 …` as IR, for natural-key reads and declared finds."""
    cond: ir.Expr | None = None
    for f in fields:
        eq = ir.Binary(
            "==",
            ir.SelfField(f.name, f.type, f.name),
            ir.Param(params[f.name], f.type, params[f.name]),
            ir.BOOL,
            f"{f.name} == {params[f.name]}",
        )
        cond = eq if cond is None else ir.Binary("&&", cond, eq, ir.BOOL, "")
    assert cond is not None
    return cond
