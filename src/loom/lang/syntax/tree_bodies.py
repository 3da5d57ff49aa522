"""The tree builder's rules of parameters and types, statements and expressions."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax import ast
from loom.lang.syntax.builder import Positions
from loom.lang.syntax.tree_tokens import TokenReader, millis


class BodyRules(TokenReader):
    def params(self, meta: Positions, ch: list[Any]) -> Any:
        return list(ch)

    def param(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Param(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def id_mark(self, meta: Positions, ch: list[Any]) -> Any:
        return "id"

    def list_mark(self, meta: Positions, ch: list[Any]) -> Any:
        return "list"

    def opt_mark(self, meta: Positions, ch: list[Any]) -> Any:
        return "opt"

    def type_arg(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.TypeArg(str(ch[0]), self.tsp(ch[0]))

    def negative_type_arg(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.TypeArg("-" + str(ch[0]), self.sp(meta))

    def type_args(self, meta: Positions, ch: list[Any]) -> Any:
        return (list(ch), self.sp(meta))

    def type(self, meta: Positions, ch: list[Any]) -> Any:
        # a name is a token (lark's or the fast parser's), a mark a plain text
        names: list[Any] = []  # tokens: str subclasses with positions
        args = None
        marks = set()
        for c in ch:
            if type(c) is str:
                marks.add(c)
            elif isinstance(c, str):
                names.append(c)
            elif args is None and isinstance(c, tuple):
                args = c
        name, qualifier = names[-1], names[0] if len(names) > 1 else None
        return ast.TypeRef(
            str(name),
            self.tsp(name),
            "id" in marks,
            "list" in marks,
            "opt" in marks,
            self.sp(meta),
            str(qualifier) if qualifier is not None else None,
            self.tsp(qualifier) if qualifier is not None else None,
            args[0] if args is not None else None,
            args[1] if args is not None else None,
        )

    def ignoring(self, meta: Positions, ch: list[Any]) -> Any:
        names = [(str(n), self.tsp(n)) for n in ch]
        self._once_each(names, "filter")
        return ("ignoring", names)

    def block(self, meta: Positions, ch: list[Any]) -> Any:
        return list(ch)

    def precondition(self, meta: Positions, ch: list[Any]) -> Any:
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Precondition(ch[0], msg, self.sp(meta))

    def let(self, meta: Positions, ch: list[Any]) -> Any:
        ignoring = ch[2][1] if len(ch) > 2 else []
        return ast.Let(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta), ignoring)

    def var(self, meta: Positions, ch: list[Any]) -> Any:
        declared = ch[1] if len(ch) > 2 else None
        return ast.Var(str(ch[0]), self.tsp(ch[0]), declared, ch[-1], self.sp(meta))

    def entry(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Arg(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def emit(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Emit(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def return_(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Return(ch[0], self.sp(meta))

    def assign_op(self, meta: Positions, ch: list[Any]) -> Any:
        return str(ch[0])

    def assign(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Assign(ch[0], ch[1], ch[2], self.sp(meta))

    def expr_stmt(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.ExprStmt(ch[0], self.sp(meta))

    def if_let(self, meta: Positions, ch: list[Any]) -> Any:
        ch = list(ch)
        ignoring = ch.pop(2)[1] if isinstance(ch[2], tuple) and ch[2][0] == "ignoring" else []
        otherwise = ch[3][1] if len(ch) > 3 else None
        return ast.IfLet(
            str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], otherwise, self.sp(meta), ignoring
        )

    def else_block(self, meta: Positions, ch: list[Any]) -> Any:
        return ("else", ch[0])

    def else_if(self, meta: Positions, ch: list[Any]) -> Any:
        return ("else", [ch[0]])

    def if_stmt(self, meta: Positions, ch: list[Any]) -> Any:
        otherwise = ch[2][1] if len(ch) > 2 else None
        return ast.If(ch[0], ch[1], otherwise, self.sp(meta))

    def for_stmt(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.ForEach(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def not_found(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.NotFound(self._string(ch[0]) if ch else None, self.sp(meta))

    def ternary(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Ternary(ch[0], ch[1], ch[2], self.sp(meta))

    def _binary(self, meta: Positions, left: Any, op: Any, right: Any, op_span: Any) -> Any:
        return ast.Binary(op, left, right, self.sp(meta), op_span)

    def or_op(self, meta: Positions, ch: list[Any]) -> Any:
        return self._binary(meta, ch[0], "||", ch[1], ch[0].span)

    def and_op(self, meta: Positions, ch: list[Any]) -> Any:
        return self._binary(meta, ch[0], "&&", ch[1], ch[0].span)

    def compare(self, meta: Positions, ch: list[Any]) -> Any:
        return self._binary(meta, ch[0], ch[1][0], ch[2], ch[1][1])

    def arith(self, meta: Positions, ch: list[Any]) -> Any:
        return self._binary(meta, ch[0], ch[1][0], ch[2], ch[1][1])

    def cmp_op(self, meta: Positions, ch: list[Any]) -> Any:
        return (str(ch[0]), self.tsp(ch[0]))

    add_op = mul_op = unary_op = cmp_op

    def prefix(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Unary(ch[0][0], ch[1], self.sp(meta))

    def member(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.MemberAccess(ch[0], str(ch[1]), self.tsp(ch[1]), self.sp(meta))

    def call(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Call(ch[0], ch[1], self.sp(meta))

    def args(self, meta: Positions, ch: list[Any]) -> Any:
        return list(ch)

    def pos_arg(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Arg(None, None, ch[0], self.sp(meta))

    def named_arg(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Arg(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def record_arg(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Record(list(ch), self.sp(meta))

    def record(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.RecordExpr(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def name(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Name(str(ch[0]), self.tsp(ch[0]))

    def string(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Literal("string", self._string(ch[0]), self.tsp(ch[0]))

    def int(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Literal("int", int(str(ch[0])), self.tsp(ch[0]))

    def decimal(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Literal("decimal", str(ch[0]), self.tsp(ch[0]))

    def duration(self, meta: Positions, ch: list[Any]) -> Any:  # its value in microseconds
        return ast.Literal("duration", millis(str(ch[0])) * 1000, self.tsp(ch[0]))

    def true(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Literal("bool", True, self.sp(meta))

    def false(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Literal("bool", False, self.sp(meta))

    def list(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.ListLit(list(ch), self.sp(meta))


# `return` is a Python keyword, so the rule's callback needs an alias.
setattr(BodyRules, "return", BodyRules.return_)
