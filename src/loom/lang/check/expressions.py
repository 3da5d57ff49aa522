"""Typing of expressions. Each expression is typed by building its IR form (an `ir.Expr` carries its
type and its source text); an expression that already has a diagnostic gets the ERROR type, which
fits everywhere, so one mistake makes one message.

`ExpressionChecker` is the concrete checker: it implements `Checker.expr`, dispatching the forms
that belong to a rule (records, `currentUser`, workflow state and functions) to that rule's module.
"""

from __future__ import annotations

from loom.lang.check import factories, lists, principal, records, times, workflows
from loom.lang.check.expr_calls import CallTyping
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import Span, did_you_mean
from loom.lang.names.symbols import kind_of
from loom.lang.syntax import ast
from loom.lang.types import (
    ERROR,
    AnyType,
    a,
    comparable,
    is_error,
    is_numeric,
    is_record,
    join,
    ordered,
    show,
    strip_optional,
)
from loom.model import ir

_LITERAL_TYPES = {
    "string": ir.STRING,
    "int": ir.INT,
    "decimal": ir.DECIMAL,
    "bool": ir.BOOL,
    "duration": ir.DURATION,
}


# what a user from another language writes for "no value": Loom has no such literal
_NULL_SPELLINGS = frozenset({"null", "nil", "None", "none", "undefined"})
_NO_NULL = (
    "Loom has no null literal: an optional field (`T?`) with no default starts absent (leave out "
    "`= null`), and a field becomes absent when assigned an optional value that is (a left-out "
    "optional parameter, another `T?` field)"
)


def _int_literal(e: ast.Expr) -> ast.Literal | None:
    """The `int` literal `e` is, alone or after a `-`."""
    if isinstance(e, ast.Unary) and e.op == "-":
        e = e.operand
    return e if isinstance(e, ast.Literal) and e.kind == "int" else None


def _member_span(en: ast.Enum, member: str) -> Span:
    return next(span for name, span in en.members if name == member)


class ExpressionChecker(CallTyping):
    """The checker every rule runs on (`check.check` makes one per compilation)."""

    # ---- expressions

    def expr(self, e: ast.Expr, scope: Scope, expected: AnyType | None = None) -> ir.Expr:
        text = self.text(e.span)
        if isinstance(e, ast.Literal):
            self.int_in_range(e, expected)
            return ir.Literal_(e.value, _LITERAL_TYPES[e.kind], text)
        if isinstance(e, ast.Name):
            return self.name(e, scope, expected)
        if isinstance(e, ast.ListLit):
            return self.list_literal(e, scope, expected)
        if isinstance(e, ast.Unary):
            return self.unary(e, scope, text, expected)
        if isinstance(e, ast.Binary):
            return self.binary(e, scope, text)
        if isinstance(e, ast.Ternary):
            c = self.condition(e.condition, scope, "the condition of `? :`")
            t = self.expr(e.then, scope, expected)
            o = self.expr(e.otherwise, scope, expected if expected is not None else t.type)
            jt = join(t.type, o.type)
            if jt is None:
                self.report(
                    "loom.type-mismatch",
                    f"the branches of `? :` differ: {a(t.type)} and {a(o.type)}",
                    e.otherwise.span,
                    f"this is {a(o.type)}",
                    secondary=[(e.then.span, f"this is {a(t.type)}")],
                    help="make both branches the same type",
                )
                jt = ERROR
            return ir.Conditional(c, t, o, jt, text)  # type: ignore[arg-type]
        if isinstance(e, ast.MemberAccess):
            return self.member(e, scope, text)
        if isinstance(e, ast.Call):
            return self.call(e, scope, text)
        if isinstance(e, ast.RecordExpr):
            return records.record_expr(self, e, scope, text)
        return self.poison(e)

    def list_literal(self, e: ast.ListLit, scope: Scope, expected: AnyType | None) -> ir.Expr:
        text = self.text(e.span)
        target = strip_optional(expected) if expected is not None else None
        el: AnyType | None = target.element if isinstance(target, ir.ListType) else None
        if not e.items and el is None:
            self.report(
                "loom.cannot-infer-type",
                "cannot tell the element type of `[]` here",
                e.span,
                "empty list",
                help="use it where a list type is expected, e.g. a field `tags: string[] = []`",
            )
            return self.poison(e)
        items = []
        for item in e.items:
            x = self.expr(item, scope, el)
            if el is None or is_error(el):
                el = x.type
            elif x.type == ir.DECIMAL and el == ir.INT and not isinstance(target, ir.ListType):
                el = ir.DECIMAL
            else:
                self.mismatch(x, item, el, f"a list of `{show(el)}` cannot hold {a(x.type)}")
            items.append(x)
        return ir.ListLiteral(tuple(items), ir.ListType(el), text)  # type: ignore[arg-type]

    def int_in_range(
        self, e: ast.Literal, expected: AnyType | None, *, negated: bool = False
    ) -> None:
        """Report `loom.int-out-of-range` for an `int` literal beyond 64 bits (`-` and the
        literal together: -9223372036854775808 fits), unless it is written for a `decimal`."""
        if e.kind != "int" or not isinstance(e.value, int) or isinstance(e.value, bool):
            return
        if expected is not None and strip_optional(expected) == ir.DECIMAL:
            return
        value = -e.value if negated else e.value
        if -(2**63) <= value < 2**63:
            return
        self.report(
            "loom.int-out-of-range",
            f"`{'-' if negated else ''}{e.value}` does not fit an `int`, a 64-bit integer "
            f"(from -{2**63} to {2**63 - 1})",
            e.span,
            "beyond 64 bits",
            help="use a `decimal` for a larger whole number (`n: decimal = ...`)",
        )

    def unary(
        self, e: ast.Unary, scope: Scope, text: str, expected: AnyType | None = None
    ) -> ir.Expr:
        if e.op == "-" and isinstance(e.operand, ast.Literal):
            self.int_in_range(e.operand, expected, negated=True)
            literal = e.operand
            x: ir.Expr = ir.Literal_(
                literal.value, _LITERAL_TYPES[literal.kind], self.text(literal.span)
            )
        else:
            x = self.expr(e.operand, scope)
        t: AnyType
        if e.op == "!":
            ok, t = x.type == ir.BOOL, ir.BOOL
        else:
            ok, t = is_numeric(x.type) or x.type == ir.DURATION, x.type
        if not ok and not is_error(x.type):
            need = "`bool`" if e.op == "!" else "number"
            self.report(
                "loom.type-mismatch",
                f"`{e.op}` needs a {need}, not {a(x.type)}",
                e.operand.span,
                f"this is {a(x.type)}",
            )
            t = ERROR
        return ir.Unary(e.op, x, t, text)  # type: ignore[arg-type]

    def binary(self, e: ast.Binary, scope: Scope, text: str) -> ir.Expr:
        op = e.op
        if op in ("&&", "||"):
            left = self.condition(e.left, scope, f"the left side of `{op}`")
            right = self.condition(e.right, scope, f"the right side of `{op}`")
            return ir.Binary(op, left, right, ir.BOOL, text)  # type: ignore[arg-type]
        if op == "in":
            return lists.membership(self, e, scope, text)
        # a literal on the left learns from the right whether it is written for a `decimal`
        first = _int_literal(e.left)
        left = self.expr(e.left, scope, None if first is None else ir.DECIMAL)
        hint = strip_optional(left.type) if not is_error(left.type) else None
        right = self.expr(e.right, scope, hint)
        if first is not None:
            self.int_in_range(first, right.type, negated=first is not e.left)
        lt, rt = left.type, right.type
        timed = times.binary(self, e, left, right, text)
        if timed is not None:
            return timed
        result: AnyType
        if op in ("==", "!="):
            ok, result = comparable(lt, rt), ir.BOOL
        elif op in ("<", "<=", ">", ">="):
            ok, result = ordered(lt, rt), ir.BOOL
        elif op == "+" and lt == ir.STRING and rt == ir.STRING:
            ok, result = True, ir.STRING
        elif op == "+" and isinstance(lt, ir.ListType) and isinstance(rt, ir.ListType):
            # a new list, `xs` then `ys`; the right one was typed for the left's elements
            ok, result = lt == rt, lt
        elif is_error(lt) or is_error(rt):
            ok, result = True, ERROR
        else:
            ok = is_numeric(lt) and is_numeric(rt)
            result = ir.DECIMAL if op == "/" or ir.DECIMAL in (lt, rt) else ir.INT
        if not ok:
            if is_record(strip_optional(lt)) and op not in ("==", "!="):
                msg = (
                    f"`{op}` is not defined on {a(lt)}: a value object or payload is compared "
                    "with `==` / `!=` only"
                )
                hlp = f"apply `{op}` to its fields, e.g. `{self.text(e.left.span)}.<field>`"
            elif op in ("==", "!=", "<", "<=", ">", ">="):
                msg = f"cannot compare {a(lt)} with {a(rt)} using `{op}`"
                hlp = "compare values of one type (an `int` compares with a `decimal`)"
            elif op == "+" and isinstance(lt, ir.ListType):
                msg = f"cannot join {a(lt)} and {a(rt)}"
                hlp = (
                    f"`+` joins two lists of one element type: `{self.text(e.left.span)} + [x]` "
                    f"adds one `{show(lt.element)}`"
                )
            elif op == "+":
                msg = f"cannot add {a(lt)} and {a(rt)}"
                hlp = "`+` adds two numbers, joins two strings or joins two lists"
            else:
                msg = f"`{op}` needs two numbers, not {a(lt)} and {a(rt)}"
                hlp = "use numeric operands"
            self.report(
                "loom.type-mismatch",
                msg,
                e.span,
                f"{a(lt)} {op} {a(rt)}",
                secondary=[(e.left.span, f"this is {a(lt)}")],
                help=hlp,
            )
            result = ERROR if op not in ("==", "!=", "<", "<=", ">", ">=") else ir.BOOL
        return ir.Binary(op, left, right, result, text)  # type: ignore[arg-type]

    def name(self, e: ast.Name, scope: Scope, expected: AnyType | None) -> ir.Expr:
        text, n = self.text(e.span), e.name
        b = scope.names.get(n)
        if b is not None:
            b.used = True
            if b.kind == "param":
                return ir.Param(n, b.type, text)  # type: ignore[arg-type]
            return ir.Local(n, b.type, text)  # type: ignore[arg-type]
        if n == "currentUser":
            return principal.bare(self, e, scope)
        if n in scope.state:
            return workflows.state_read(self, e, scope, text)
        members = self.self_members(scope)
        if n in members and scope.reads_fields:
            kind, t, declared = members[n]
            if kind != "id":  # `id` is implicit: its "declaration" is the aggregate's name
                self.refer(e.span, declared)
            if factories.member_read(self, scope, n, kind, t, declared, e.span):
                return self.poison(e)
            return ir.SelfField(n, t, text, kind)  # type: ignore[arg-type]
        enums = scope.ctx.members.get(n, [])
        want = strip_optional(expected) if expected is not None else None
        if isinstance(want, ir.EnumType) and any(en.name == want.name for en in enums):
            self.refer(e.span, _member_span(scope.ctx.enums[want.name], n))
            return ir.EnumMember(want.name, n, want, text)
        if len(enums) == 1:
            self.refer(e.span, _member_span(enums[0], n))
            et = ir.EnumType(enums[0].name, scope.ctx.name)
            return ir.EnumMember(enums[0].name, n, et, text)
        if len(enums) > 1:
            self.report(
                "loom.ambiguous-enum-member",
                f"`{n}` is a member of several enums: " + ", ".join(f"`{en.name}`" for en in enums),
                e.span,
                "ambiguous",
                secondary=[(en.name_span, f"`{en.name}` has `{n}`") for en in enums],
                help=f"qualify it, e.g. `{enums[0].name}.{n}`",
            )
            return self.poison(e)
        if n in members and scope.kind == "default":
            self.report(
                "loom.unknown-name",
                f"a default cannot read the field `{n}`",
                e.span,
                "fields do not exist yet when defaults are evaluated",
                help="use a literal, an enum member or `now()`",
            )
            return self.poison(e)
        decl = scope.ctx.names.get(n)
        if decl is not None:
            kind = kind_of(decl)
            art = "an" if kind[0] in "aeiou" else "a"
            self.report(
                "loom.unknown-name",
                f"`{n}` is {art} {kind}, not a value",
                e.span,
                "not a value",
                help="use one of its values, e.g. a loaded or created local",
            )
            return self.poison(e)
        candidates = [*scope.names, *scope.ctx.members]
        if scope.reads_fields:
            candidates += list(members)
        self.report(
            "loom.unknown-name",
            f"unknown name `{n}`",
            e.span,
            "not found in this scope",
            help=_NO_NULL if n in _NULL_SPELLINGS else did_you_mean(n, candidates),
        )
        return self.poison(e)

    def member(self, e: ast.MemberAccess, scope: Scope, text: str) -> ir.Expr:
        obj = e.obj
        if isinstance(obj, ast.Name) and obj.name == "currentUser" and obj.name not in scope.names:
            return principal.member(self, e, scope, text)
        if (
            isinstance(obj, ast.Name)
            and obj.name in scope.ctx.enums
            and obj.name not in scope.names
        ):
            en = scope.ctx.enums[obj.name]
            self.refer(obj.span, en.name_span)
            names = [m for m, _ in en.members]
            if e.name not in names:
                self.report(
                    "loom.unknown-enum-member",
                    f"enum `{en.name}` has no member `{e.name}`",
                    e.name_span,
                    "unknown member",
                    help=did_you_mean(e.name, names)
                    or f"its members are {', '.join(f'`{m}`' for m in names)}",
                )
                return self.poison(e)
            self.refer(e.name_span, _member_span(en, e.name))
            return ir.EnumMember(en.name, e.name, ir.EnumType(en.name, scope.ctx.name), text)
        x = self.expr(obj, scope)
        t = x.type
        if is_error(t):
            return self.poison(e)
        if isinstance(t, ir.AggregateType):
            members = self.fields_of(scope.ctx, t.name)
            if e.name in members:
                kind, mt, declared = members[e.name]
                if kind != "id":
                    self.refer(e.name_span, declared)
                return ir.Member(x, e.name, mt, text, kind)  # type: ignore[arg-type]
            self.report(
                "loom.unknown-field",
                f"`{t.name}` has no field `{e.name}`",
                e.name_span,
                "unknown field",
                help=did_you_mean(e.name, members),
            )
            return self.poison(e)
        home = self.prog.contexts.get(t.context) if isinstance(t, ir.EventType) else None
        if isinstance(t, ir.EventType) and home is not None and t.name in home.events:
            # an event of this context or of another one (events are a context's public surface)
            fields = {p.name: p for p in home.events[t.name].fields}
            if e.name in fields:
                self.refer(e.name_span, fields[e.name].name_span)
                return ir.Member(x, e.name, self.type_of(fields[e.name].type), text)  # type: ignore[arg-type]
            self.report(
                "loom.unknown-field",
                f"event `{t.name}` has no field `{e.name}`",
                e.name_span,
                "unknown field",
                help=did_you_mean(e.name, fields),
            )
            return self.poison(e)
        if is_record(t):
            return records.record_member(self, e, x, t, text)
        if isinstance(t, ir.OptionalType) and is_record(t.inner):
            self.report(
                "loom.unknown-field",
                f"`{x.text}` is {a(t)}: it may be absent, so `.{e.name}` cannot be read directly",
                e.name_span,
                "read of an optional value",
                help=f"branch on it first: `if let v = {x.text} {{ … v.{e.name} … }}`",
            )
            return self.poison(e)
        if isinstance(t, ir.IdType):
            repo = scope.ctx.repo_for.get(t.aggregate)
            load = f"`{repo.name}.getById({x.text})`" if repo else "its repository's `getById`"
            self.report(
                "loom.unknown-field",
                f"`{x.text}` is {a(t)}, an identity, so it has no field `{e.name}`",
                e.name_span,
                "not a field of an id",
                help=f"load the {t.aggregate} first with {load}",
            )
            return self.poison(e)
        self.report(
            "loom.unknown-field", f"{a(t)} has no field `{e.name}`", e.name_span, "unknown field"
        )
        return self.poison(e)
