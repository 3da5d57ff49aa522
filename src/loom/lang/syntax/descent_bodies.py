"""The fast parser's types, statements, values and expressions (`descent.py` reads the
declarations around them). Each level of binary operators is handed its first operand already
read: most expressions are one operand, and they then cost one call, not seven."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax.descent_cursor import (
    ADD,
    ASSIGN,
    BINARY,
    CMP,
    GIVE_UP,
    LITERALS,
    MUL,
    Cursor,
)
from loom.lang.syntax.scan import NAME


class Bodies(Cursor):
    # ---- types

    def type(self) -> Any:
        i0 = self.i
        b = self.b
        ch: list[Any] = [self.name()]
        k = self.k
        if k[self.i] == ".":
            self.i += 1
            ch.append(self.name())
        if k[self.i] == "(":
            ch.append(self.type_args())
        if k[self.i] == "id":
            j = self.i
            self.i += 1
            ch.append(b.id_mark(self.meta(j), []))
        if k[self.i] == "[":
            j = self.i
            self.i += 1
            self.expect("]")
            ch.append(b.list_mark(self.meta(j), []))
        if k[self.i] == "?":
            j = self.i
            self.i += 1
            ch.append(b.opt_mark(self.meta(j), []))
        return b.type(self.meta(i0), ch)

    def type_args(self) -> Any:
        i0 = self.i
        self.i += 1
        ch = []
        if self.k[self.i] != ")":
            ch.append(self.type_arg())
            while self.accept(","):
                if self.k[self.i] == ")":
                    break
                ch.append(self.type_arg())
        self.expect(")")
        return self.b.type_args(self.meta(i0), ch)

    def type_arg(self) -> Any:
        i0 = self.i
        kind = self.k[i0]
        if kind == "-":
            self.i += 1
            number = self.terminal("INT")
            return self.b.negative_type_arg(self.meta(i0), [number])
        tok = self.terminal(kind) if kind in ("INT", "DECIMAL", "STRING") else self.name()
        return self.b.type_arg(self.meta(i0), [tok])

    # ---- statements

    def block(self) -> Any:
        i0 = self.i
        self.expect("{")
        stmts = []
        while self.k[self.i] != "}":
            stmts.append(self.statement())
        self.i += 1
        return self.b.block(self.meta(i0), stmts)

    def statement(self) -> Any:
        method = _STATEMENTS.get(self.k[self.i])
        if method is not None:
            return method(self)
        i0 = self.i
        target = self.expr()
        if self.k[self.i] in ASSIGN:
            j = self.i
            op = self.b.assign_op(self.meta_of_name(j), [self.kept()])
            value = self.value()
            return self.b.assign(self.meta(i0), [target, op, value])
        return self.b.expr_stmt(self.meta(i0), [target])

    def precondition(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.expr()]
        if self.k[self.i] == "message":
            ch.append(self.message())
        return self.b.precondition(self.meta(i0), ch)

    def let(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("=")
        ch.append(self.value())
        if self.k[self.i] == "ignoring":
            ch.append(self.ignoring())
        return self.b.let(self.meta(i0), ch)

    def var(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.accept(":"):
            ch.append(self.type())
        self.expect("=")
        ch.append(self.value())
        return self.b.var(self.meta(i0), ch)

    def ignoring(self) -> Any:
        j = self.i
        self.i += 1
        names = [self.name()]
        while self.accept(","):
            names.append(self.name())
        return self.b.ignoring(self.meta(j), names)

    def emit(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        ch += self.entries()
        return self.b.emit(self.meta(i0), ch)

    def entries(self) -> list[Any]:
        """`(entry ","?)* "}"`, the `}` read too."""
        out = []
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            entry: list[Any] = [self.name()]
            self.expect(":")
            entry.append(self.value())
            out.append(b.entry(self.meta(j), entry))
            self.accept(",")
        self.i += 1
        return out

    def return_(self) -> Any:
        i0 = self.i
        self.i += 1
        value = self.value()
        return self.b.return_(self.meta(i0), [value])

    def if_(self) -> Any:
        i0 = self.i
        self.i += 1
        b = self.b
        if self.accept("let"):
            ch: list[Any] = [self.name()]
            self.expect("=")
            ch.append(self.expr())
            if self.k[self.i] == "ignoring":
                ch.append(self.ignoring())
            ch.append(self.block())
            if self.k[self.i] == "else":
                ch.append(self.else_())
            return b.if_let(self.meta(i0), ch)
        ch = [self.expr(), self.block()]
        if self.k[self.i] == "else":
            ch.append(self.else_())
        return b.if_stmt(self.meta(i0), ch)

    def else_(self) -> Any:
        j = self.i
        self.i += 1
        if self.k[self.i] == "if":
            nested = self.if_()
            return self.b.else_if(self.meta(j), [nested])
        block = self.block()
        return self.b.else_block(self.meta(j), [block])

    def for_(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("in")
        ch += [self.expr(), self.block()]
        return self.b.for_stmt(self.meta(i0), ch)

    def not_found(self) -> Any:
        i0 = self.i
        self.i += 1
        ch = [self.terminal("STRING")] if self.k[self.i] == "STRING" else []
        return self.b.not_found(self.meta(i0), ch)

    def schedule(self) -> Any:
        if self.k[self.i + 1] == "(":
            return self._keyword_call()
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.accept("at"):
            ch.append(self.expr())
            return self.b.schedule_at(self.meta(i0), ch)
        self.expect("after")
        ch.append(self.expr())
        return self.b.schedule_after(self.meta(i0), ch)

    def cancel(self) -> Any:
        if self.k[self.i + 1] == "(":
            return self._keyword_call()
        i0 = self.i
        self.i += 1
        name = self.name()
        return self.b.cancel(self.meta(i0), [name])

    def complete(self) -> Any:
        if self.k[self.i + 1] == "(":
            return self._keyword_call()
        i0 = self.i
        self.i += 1
        return self.b.complete(self.meta(i0), [])

    def _keyword_call(self) -> Any:
        """`cancel(…)`, `schedule(…)`, `complete(…)`: the sibling operation of that name, called
        (the grammar's `keyword_call`, whose tokens lark keeps)."""
        i0 = self.i
        word, lpar = self.kept(), self.kept()
        args = self.args()
        if self.k[self.i] != ")":
            raise GIVE_UP
        rpar = self.kept()
        return self.b.keyword_call(self.meta(i0), [word, lpar, args, rpar])

    # ---- values and expressions

    def value(self) -> Any:
        """`_value`: a record `Name { … }`, or an expression."""
        if self.at_name() and self.k[self.i + 1] == "{":
            i0 = self.i
            ch: list[Any] = [self.name()]
            self.i += 1
            ch += self.entries()
            return self.b.record(self.meta(i0), ch)
        return self.expr()

    # Each level of binary operators is handed its first operand (a `unary`, starting at token
    # `i0`) already read: most expressions are one operand, and they then cost one call, not seven.

    def expr(self) -> Any:
        i0 = self.i
        cond = self.unary()
        if self.k[self.i] in BINARY:
            cond = self.or_expr(i0, cond)
        if self.k[self.i] != "?":
            return cond
        self.i += 1
        then = self.expr()
        self.expect(":")
        otherwise = self.expr()
        return self.b.ternary(self.meta(i0), [cond, then, otherwise])

    def or_expr(self, i0: int, first: Any) -> Any:
        left = self.and_expr(i0, first)
        while self.k[self.i] == "||":
            self.i += 1
            j = self.i
            right = self.and_expr(j, self.unary())
            left = self.b.or_op(self.meta(i0), [left, right])
        return left

    def and_expr(self, i0: int, first: Any) -> Any:
        left = self.cmp(i0, first)
        while self.k[self.i] == "&&":
            self.i += 1
            j = self.i
            right = self.cmp(j, self.unary())
            left = self.b.and_op(self.meta(i0), [left, right])
        return left

    def cmp(self, i0: int, first: Any) -> Any:
        left = self.sum(i0, first)
        if self.k[self.i] not in CMP:
            return left
        op = self.b.cmp_op(self.meta_of_name(self.i), [self.kept()])
        j = self.i
        right = self.sum(j, self.unary())
        return self.b.compare(self.meta(i0), [left, op, right])

    def sum(self, i0: int, first: Any) -> Any:
        left = self.product(i0, first)
        b = self.b
        while self.k[self.i] in ADD:
            op = b.add_op(self.meta_of_name(self.i), [self.kept()])
            j = self.i
            right = self.product(j, self.unary())
            left = b.arith(self.meta(i0), [left, op, right])
        return left

    def product(self, i0: int, first: Any) -> Any:
        left = first
        b = self.b
        while self.k[self.i] in MUL:
            op = b.mul_op(self.meta_of_name(self.i), [self.kept()])
            right = self.unary()
            left = b.arith(self.meta(i0), [left, op, right])
        return left

    def unary(self) -> Any:
        i0 = self.i
        if self.k[i0] in ("!", "-"):
            op = self.b.unary_op(self.meta_of_name(i0), [self.kept()])
            operand = self.unary()
            return self.b.prefix(self.meta(i0), [op, operand])
        return self.postfix()

    def postfix(self) -> Any:
        i0 = self.i
        node = self.atom()
        k = self.k
        b = self.b
        while True:
            kind = k[self.i]
            if kind == ".":
                self.i += 1
                member = self.name()
                node = b.member(self.meta(i0), [node, member])
            elif kind == "(":
                self.i += 1
                args = self.args()
                self.expect(")")
                node = b.call(self.meta(i0), [node, args])
            else:
                return node

    def args(self) -> Any:
        i0 = self.i
        ch = []
        if self.k[self.i] != ")":
            ch.append(self.arg())
            while self.accept(","):
                if self.k[self.i] == ")":
                    break
                ch.append(self.arg())
        return self.b.args(self.meta(i0), ch)

    def arg(self) -> Any:
        i0 = self.i
        b = self.b
        if self.k[i0] == "{":
            self.i += 1
            entries = self.entries()
            return b.record_arg(self.meta(i0), entries)
        if self.at_name() and self.k[i0 + 1] == ":":
            ch: list[Any] = [self.name()]
            self.i += 1
            ch.append(self.value())
            return b.named_arg(self.meta(i0), ch)
        value = self.value()
        return b.pos_arg(self.meta(i0), [value])

    def atom(self) -> Any:
        i0 = self.i
        kind = self.k[i0]
        b = self.b
        if kind == NAME or (kind in self.keywords and kind != "true" and kind != "false"):
            return b.name(self.meta_of_name(i0), [self.name()])
        literal = LITERALS.get(kind)
        if literal is not None:
            return getattr(b, literal)(self.meta_of_name(i0), [self.terminal(kind)])
        if kind == "true" or kind == "false":
            self.i += 1
            return (b.true if kind == "true" else b.false)(self.meta(i0), [])
        if kind == "[":
            self.i += 1
            items = []
            if self.k[self.i] != "]":
                items.append(self.value())
                while self.accept(","):
                    if self.k[self.i] == "]":
                        break
                    items.append(self.value())
            self.expect("]")
            return b.list(self.meta(i0), items)
        if kind == "(":
            self.i += 1
            inner = self.expr()
            self.expect(")")
            return inner
        raise GIVE_UP


_STATEMENTS = {
    "precondition": Bodies.precondition,
    "let": Bodies.let,
    "var": Bodies.var,
    "emit": Bodies.emit,
    "return": Bodies.return_,
    "if": Bodies.if_,
    "for": Bodies.for_,
    "notFound": Bodies.not_found,
    "schedule": Bodies.schedule,
    "cancel": Bodies.cancel,
    "complete": Bodies.complete,
}
