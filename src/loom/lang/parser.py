"""Text to syntax tree. A syntax error becomes a `loom.syntax-error` diagnostic; parsing of that file
stops at the first one (LALR recovery would mostly produce follow-on noise for a language this small).
"""

from __future__ import annotations

import functools
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from loom.lang import ast
from loom.lang.diagnostics import Sink, Span

_GRAMMAR = Path(__file__).with_name("grammar.lark")


@functools.cache
def _parser() -> Lark:
    # Built once per process: constructing the LALR tables is most of the cost of a small compile.
    return Lark(
        _GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        propagate_positions=True,
        maybe_placeholders=False,
        # Lark keeps the built tables in the temp folder, keyed by a hash of the grammar and its
        # options, so a fresh process (each `loom check`) skips most of the build; a missing or
        # broken cache file only means a rebuild.
        cache=True,
    )


# Readable names for the terminals lark reports in "expected ..." sets.
_FRIENDLY = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "a number",
    "DECIMAL": "a number",
    "$END": "end of file",
}
_OPERATORS = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "?", ".", "("}


@functools.cache
def _terminal_text() -> dict[str, str]:
    out = dict(_FRIENDLY)
    for t in _parser().terminals:
        if isinstance(t.pattern, PatternStr):
            out[t.name] = f"`{t.pattern.value}`"
    return out


_EXPRESSION_START = {
    "NAME",
    "STRING",
    "INT",
    "DECIMAL",
    "LPAR",
    "LSQB",
    "BANG",
    "MINUS",
    "TRUE",
    "FALSE",
}


def describe_expected(names: set[str] | frozenset[str]) -> str:
    texts = _terminal_text()
    if {"NAME", "STRING", "INT"} <= set(names):
        # Where a value may start, the ten terminals that can begin one read better as one word.
        rest = set(names) - _EXPRESSION_START
        return "an expression" if not rest else describe_expected(rest) + " or an expression"
    shown: set[str] = set()
    operators = 0
    for n in names:
        text = texts.get(n)
        if text is None:
            continue
        if text.strip("`") in _OPERATORS:
            operators += 1
        shown.add(text)
    if operators >= 3:
        # After a complete expression nearly every operator fits; listing them all buries the point.
        shown = {s for s in shown if s.strip("`") not in _OPERATORS} | {"an operator"}
    order = sorted(shown, key=lambda s: (not s.startswith("`"), s))
    if not order:
        return "something else"
    if len(order) == 1:
        return order[0]
    return "one of " + ", ".join(order)


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "STRING":
        return "a string"
    if tok.type in ("INT", "DECIMAL"):
        return f"the number `{tok}`"
    return f"`{tok}`"


def _end_of_text(file: str, text: str) -> Span:
    # Point at the end of the last written thing, not at the blank line after it.
    text = text.rstrip()
    lines = text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    return Span(file, line, col, line, col + 1, len(text), len(text))


def parse(file: str, text: str, sink: Sink) -> ast.File:
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        _report_syntax_error(file, text, exc, sink)
        return ast.File(file)
    return _Build(file, sink).transform(tree)


def _report_syntax_error(file: str, text: str, exc: UnexpectedInput, sink: Sink) -> None:
    if isinstance(exc, UnexpectedToken):
        tok = exc.token
        if tok.type == "$END" or getattr(tok, "line", None) is None:
            span = _end_of_text(file, text)
        else:
            span = Span(
                file,
                tok.line,
                tok.column,
                tok.end_line or tok.line,
                tok.end_column or tok.column + 1,
                tok.start_pos or 0,
                tok.end_pos or 0,
            )
        expected = describe_expected(_acceptable(exc))
        before = text[: tok.start_pos or 0].rstrip() if tok.type != "$END" else ""
        if set(exc.expected) == {"NAME"} and before.endswith(":"):
            # Only a name fits after `:` here (not a value), so the grammar wants a type.
            expected = (
                "a type (`string`, `int`, `decimal`, `bool`, `datetime`, `date`, an enum, `X id`)"
            )
        found = _describe_token(tok)
        sink.report(
            "loom.syntax-error",
            f"unexpected {found}; expected {expected}",
            span,
            f"expected {expected} here",
            help=_soft_keyword_hint(tok, before) or _hint(tok, exc.expected),
        )
        return
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        span = Span(file, exc.line, exc.column, exc.line, exc.column + 1, pos, pos + 1)
        rest = text[pos : pos + 2]
        if rest.startswith('"'):
            msg, label = "unterminated string literal", "this string is never closed"
            hint = 'close the string with `"` on the same line'
        elif rest == "/*":
            msg, label = "unterminated block comment", "this comment is never closed"
            hint = "close the comment with `*/`"
        else:
            expected = describe_expected(exc.allowed or set())
            msg = f"unexpected character `{exc.char}`; expected {expected}"
            label, hint = "not valid here", None
        sink.report("loom.syntax-error", msg, span, label, help=hint)
        return
    span = _end_of_text(file, text)
    sink.report("loom.syntax-error", "unexpected end of file", span, "the model ends here")


_SOFT_KEYWORDS = {
    "id": "a field cannot be named `id`: every aggregate already has one (`x: Customer id` reads the "
    "`id` after a type as part of the type)",
    "immutable": "after a field's type, `immutable` is read as that field's modifier; give this "
    "field another name",
    "message": "after a precondition or invariant, `message` is read as its message; give the field "
    "another name",
}


def _soft_keyword_hint(tok: Token, before: str) -> str | None:
    """Explain the one confusing case of contextual keywords: a member named like the keyword that
    may end the previous member (`n: int` then `id: …`)."""
    if tok.type == "$END" or str(tok) not in (":", ":=", "+=", "-="):
        return None
    words = before.split()
    return _SOFT_KEYWORDS.get(words[-1]) if words else None


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """The terminals that really fit at the error. LALR merges states, so `exc.expected` can list
    tokens that would fail a step later; simulating each one on a copy of the parser is exact."""
    try:
        accepted = set(exc.interactive_parser.accepts())
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return set(exc.expected)
    return accepted or set(exc.expected)


def _hint(tok: Token, expected: set[str]) -> str | None:
    if tok.type == "$END":
        return "a `{` is probably missing its `}`"
    if tok.type == "NAME" and "COMMA" in expected:
        return "separate the items with `,`"
    if "NAME" in expected and str(tok).isidentifier() and tok.type != "NAME":
        return f"`{tok}` is a keyword here; choose another name"
    return None


# --------------------------------------------------------------------------------------------------
# Tree to AST


def _unescape(raw: str) -> tuple[str, str | None]:
    """Decode a string literal (with its quotes). Returns the text and the first bad escape, if any."""
    out: list[str] = []
    bad: str | None = None
    i, body = 0, raw[1:-1]
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "0": "\0"}
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
            else:
                bad = bad or "\\" + nxt
                out.append(nxt)
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out), bad


@v_args(meta=True)
class _Build(Transformer):
    def __init__(self, file: str, sink: Sink) -> None:
        super().__init__()
        self.file = file
        self.sink = sink

    def sp(self, meta: object) -> Span:
        m = meta
        if getattr(m, "empty", True):
            return Span(self.file, 1, 1, 1, 1)
        return Span(self.file, m.line, m.column, m.end_line, m.end_column, m.start_pos, m.end_pos)  # type: ignore[attr-defined]

    def tsp(self, tok: Token) -> Span:
        return Span(
            self.file,
            tok.line or 1,
            tok.column or 1,
            tok.end_line or 1,
            tok.end_column or 1,
            tok.start_pos or 0,
            tok.end_pos or 0,
        )

    def _string(self, tok: Token) -> str:
        value, bad = _unescape(str(tok))
        if bad:
            self.sink.report(
                "loom.invalid-escape",
                f"unknown escape sequence `{bad}` in a string",
                self.tsp(tok),
                "unknown escape",
                help='use one of `\\n`, `\\t`, `\\r`, `\\"`, `\\\\`, `\\0`',
            )
        return value

    # ---- declarations
    def start(self, meta, ch):
        return ast.File(self.file, list(ch))

    def context(self, meta, ch):
        return ast.Context(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def enum_member(self, meta, ch):
        return (str(ch[0]), self.tsp(ch[0]))

    def enum(self, meta, ch):
        return ast.Enum(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def traits(self, meta, ch):
        return [(str(t), self.tsp(t)) for t in ch]

    def aggregate(self, meta, ch):
        traits: list = []
        members = []
        for c in ch[1:]:
            if isinstance(c, list):
                traits = c
            else:
                members.append(c)
        return ast.Aggregate(str(ch[0]), self.tsp(ch[0]), traits, members, self.sp(meta))

    def immutable(self, meta, ch):
        return "immutable"

    def default(self, meta, ch):
        return ("default", ch[0])

    def message(self, meta, ch):
        return ("message", self._string(ch[0]))

    def when(self, meta, ch):
        return ("when", ch[0])

    def result(self, meta, ch):
        return ("result", ch[0])

    def field(self, meta, ch):
        name, typ = ch[0], ch[1]
        immutable = "immutable" in ch[2:]
        default = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        return ast.Field(str(name), self.tsp(name), typ, immutable, default, self.sp(meta))

    def derived(self, meta, ch):
        return ast.Derived(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def invariant(self, meta, ch):
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Invariant(ch[0], msg, self.sp(meta))

    def function(self, meta, ch):
        return ast.Function(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], ch[3], self.sp(meta))

    def operation(self, meta, ch):
        when = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        return ast.Operation(str(ch[0]), self.tsp(ch[0]), ch[1], when, ch[-1], self.sp(meta))

    def params(self, meta, ch):
        return list(ch)

    def param(self, meta, ch):
        return ast.Param(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def id_mark(self, meta, ch):
        return "id"

    def list_mark(self, meta, ch):
        return "list"

    def opt_mark(self, meta, ch):
        return "opt"

    def type(self, meta, ch):
        marks = set(ch[1:])
        return ast.TypeRef(
            str(ch[0]),
            self.tsp(ch[0]),
            "id" in marks,
            "list" in marks,
            "opt" in marks,
            self.sp(meta),
        )

    def repository(self, meta, ch):
        return ast.Repository(
            str(ch[0]), self.tsp(ch[0]), str(ch[1]), self.tsp(ch[1]), self.sp(meta)
        )

    def event(self, meta, ch):
        return ast.Event(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def transactional(self, meta, ch):
        if ch:
            return ("transactional", str(ch[0]), self.tsp(ch[0]))
        return ("transactional", None, None)

    def workflow(self, meta, ch):
        tx = next((c for c in ch[1:] if isinstance(c, tuple)), None)
        creates = [c for c in ch[1:] if isinstance(c, ast.Create)]
        handles = [c for c in ch[1:] if isinstance(c, ast.Handle)]
        return ast.Workflow(
            str(ch[0]),
            self.tsp(ch[0]),
            tx is not None,
            tx[1] if tx else None,
            tx[2] if tx else None,
            creates,
            handles,
            self.sp(meta),
        )

    def create(self, meta, ch):
        result = next((c[1] for c in ch[1:] if isinstance(c, tuple)), None)
        return ast.Create(ch[0], result, ch[-1], self.sp(meta))

    def handle(self, meta, ch):
        return ast.Handle(str(ch[0]), self.tsp(ch[0]), self.sp(meta))

    # ---- statements
    def block(self, meta, ch):
        return list(ch)

    def precondition(self, meta, ch):
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Precondition(ch[0], msg, self.sp(meta))

    def let(self, meta, ch):
        return ast.Let(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def entry(self, meta, ch):
        return ast.Arg(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def emit(self, meta, ch):
        return ast.Emit(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def return_(self, meta, ch):
        return ast.Return(ch[0], self.sp(meta))

    def assign_op(self, meta, ch):
        return str(ch[0])

    def assign(self, meta, ch):
        return ast.Assign(ch[0], ch[1], ch[2], self.sp(meta))

    def expr_stmt(self, meta, ch):
        return ast.ExprStmt(ch[0], self.sp(meta))

    # ---- expressions
    def ternary(self, meta, ch):
        return ast.Ternary(ch[0], ch[1], ch[2], self.sp(meta))

    def _binary(self, meta, left, op, right, op_span):
        return ast.Binary(op, left, right, self.sp(meta), op_span)

    def or_op(self, meta, ch):
        return self._binary(meta, ch[0], "||", ch[1], ch[0].span)

    def and_op(self, meta, ch):
        return self._binary(meta, ch[0], "&&", ch[1], ch[0].span)

    def compare(self, meta, ch):
        return self._binary(meta, ch[0], ch[1][0], ch[2], ch[1][1])

    def arith(self, meta, ch):
        return self._binary(meta, ch[0], ch[1][0], ch[2], ch[1][1])

    def cmp_op(self, meta, ch):
        return (str(ch[0]), self.tsp(ch[0]))

    add_op = mul_op = unary_op = cmp_op

    def prefix(self, meta, ch):
        return ast.Unary(ch[0][0], ch[1], self.sp(meta))

    def member(self, meta, ch):
        return ast.MemberAccess(ch[0], str(ch[1]), self.tsp(ch[1]), self.sp(meta))

    def call(self, meta, ch):
        return ast.Call(ch[0], ch[1], self.sp(meta))

    def args(self, meta, ch):
        return list(ch)

    def pos_arg(self, meta, ch):
        return ast.Arg(None, None, ch[0], self.sp(meta))

    def named_arg(self, meta, ch):
        return ast.Arg(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def record_arg(self, meta, ch):
        return ast.Record(list(ch), self.sp(meta))

    def name(self, meta, ch):
        return ast.Name(str(ch[0]), self.tsp(ch[0]))

    def string(self, meta, ch):
        return ast.Literal("string", self._string(ch[0]), self.tsp(ch[0]))

    def int(self, meta, ch):
        return ast.Literal("int", int(str(ch[0])), self.tsp(ch[0]))

    def decimal(self, meta, ch):
        return ast.Literal("decimal", str(ch[0]), self.tsp(ch[0]))

    def true(self, meta, ch):
        return ast.Literal("bool", True, self.sp(meta))

    def false(self, meta, ch):
        return ast.Literal("bool", False, self.sp(meta))

    def list(self, meta, ch):
        return ast.ListLit(list(ch), self.sp(meta))


# `return` is a Python keyword, so the rule's callback needs an alias.
setattr(_Build, "return", _Build.return_)
