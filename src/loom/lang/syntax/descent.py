"""The fast parser: recursive descent over `grammar.lark`, for texts that parse.

It hands the tree builder (`tree_to_ast.Build`) exactly what `reduce.parse` does, rule by rule: the
same children (named tokens, sub-rules' values, inlined `_rules` spliced in, `!rule` tokens kept)
and the same positions (first to last token of the rule), so the two build the same tree and the
same diagnostics. It knows no error messages: at the first token it does not expect, or wherever
lark might read the text differently (`scan.reserved`), it gives up and `parser.parse_file` parses
the text again with lark, whose syntax errors are the ones reported. So it may refuse text lark
accepts (only time is lost), never accept text lark refuses.

Choices mirror lark's: where the grammar's LALR tables resolve a shift/reduce conflict (a `-` or a
`(` after an expression, a string after `notFound`), lark shifts, and so this parser is greedy.
It is three to four times faster than lark: no parse table, no reductions of the one-child `?rules`
an expression passes through, no parse tree.
"""

from __future__ import annotations

from typing import Any

from loom.lang.syntax.builder import Positions, Token
from loom.lang.syntax.scan import END, NAME, Tokens, grammar, reserved
from loom.lang.syntax.tree_to_ast import Build


class GiveUp(Exception):
    """The text is not one this parser can be sure of: lark parses it instead."""


_GIVE_UP = GiveUp()
_new_str = str.__new__

# the first word of each declaration in a context, and of each statement
_PAYLOAD_KINDS = frozenset({"command", "query", "response", "error"})
_CMP = frozenset({"==", "!=", "<", "<=", ">", ">="})
_ADD = frozenset({"+", "-"})
_MUL = frozenset({"*", "/", "%"})
_ASSIGN = frozenset({":=", "+=", "-="})
_BINARY = _CMP | _ADD | _MUL | {"||", "&&"}
_LITERALS = {"STRING": "string", "DECIMAL": "decimal", "INT": "int"}
_RENAMED = "RENAMED_FROM"


def parse(text: str, builder: Build) -> Any:
    """The builder's `ast.File` for `text`, or None when lark must parse it (see the module's
    docstring)."""
    tokens = Tokens(text)
    p = _Descent(tokens, builder)
    try:
        tree = p.start()
    except (GiveUp, RecursionError):
        # lark's parser is not recursive: a deep expression is for it (and the passes after)
        return None
    if p.keyword_names and reserved(tokens, p.keyword_names):
        return None
    return tree


class _Descent:
    def __init__(self, tokens: Tokens, builder: Build) -> None:
        self.k = tokens.kinds
        self.v = tokens.texts
        self.offsets = tokens.offsets
        self.lines = tokens.lines
        self.columns = tokens.columns
        self.i = 0
        self.b = builder
        self.keywords = grammar().keywords
        self.terminal_of = grammar().terminal_of
        self.keyword_names: list[int] = []  # tokens spelled like keywords, read as names

    # ---- tokens and positions

    def meta(self, i0: int) -> Positions:
        """The positions of the rule whose first token is `i0` and last the one just read."""
        j = self.i - 1
        if j < i0:
            return (None, None)
        n = len(self.v[j])
        return (
            (self.lines[i0], self.columns[i0], self.offsets[i0]),
            (self.lines[j], self.columns[j] + n, self.offsets[j] + n),
        )

    def token(self, i: int, kind: str) -> Token:
        """The token for the builder of token `i`."""
        value = self.v[i]
        t: Token = _new_str(Token, value)
        line, column, start = self.lines[i], self.columns[i], self.offsets[i]
        t.type = kind
        t.start_pos = start
        t.line = line
        t.column = column
        t.end_line = line
        t.end_column = column + len(value)
        t.end_pos = start + len(value)
        return t

    def expect(self, kind: str) -> None:
        if self.k[self.i] != kind:
            raise _GIVE_UP
        self.i += 1

    def accept(self, kind: str) -> bool:
        if self.k[self.i] == kind:
            self.i += 1
            return True
        return False

    def name(self) -> Token:
        i = self.i
        kind = self.k[i]
        if kind != NAME:
            if kind not in self.keywords:
                raise _GIVE_UP
            self.keyword_names.append(i)  # a keyword's spelling: see `scan.reserved`
        self.i = i + 1
        return self.token(i, NAME)

    def at_name(self, offset: int = 0) -> bool:
        kind = self.k[self.i + offset]
        return kind == NAME or kind in self.keywords

    def terminal(self, kind: str) -> Token:
        """A named terminal of the kind (STRING, INT, DECIMAL, DURATION)."""
        i = self.i
        if self.k[i] != kind:
            raise _GIVE_UP
        self.i = i + 1
        return self.token(i, kind)

    def kept(self) -> Token:
        """The token of a `!rule` (`payload_kind`, the operators), which lark keeps."""
        i = self.i
        self.i = i + 1
        return self.token(i, self.terminal_of[self.k[i]])

    # ---- declarations

    def start(self) -> Any:
        i0 = self.i
        contexts = []
        while self.k[self.i] != END:
            contexts.append(self.context())
        return self.b.start(self.meta(i0), contexts)

    def context(self) -> Any:
        i0 = self.i
        self.expect("context")
        ch: list[Any] = [self.name()]
        self.expect("{")
        while self.k[self.i] != "}":
            ch.append(self.declaration())
        self.i += 1
        return self.b.context(self.meta(i0), ch)

    def declaration(self) -> Any:
        kind = self.k[self.i]
        method = _DECLARATIONS.get(kind)
        if method is not None:
            return method(self)
        if kind in _PAYLOAD_KINDS:
            return self.payload()
        if self.at_name() and self.at_name(1) and self.k[self.i + 2] == "{":
            return self.channel()
        raise _GIVE_UP

    def enum(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            member: list[Any] = [self.name()]
            if self.k[self.i] == _RENAMED:
                member.append(self.renamed())
            ch.append(b.enum_member(self.meta(j), member))
            self.accept(",")
        self.i += 1
        return b.enum(self.meta(i0), ch)

    def meta_of_name(self, i: int) -> Positions:
        n = len(self.v[i])
        line, column, start = self.lines[i], self.columns[i], self.offsets[i]
        return ((line, column, start), (line, column + n, start + n))

    def aggregate(self) -> Any:
        i0 = self.i
        self.i += 1
        b = self.b
        ch: list[Any] = [self.name()]
        if self.k[self.i] == _RENAMED:
            ch.append(self.renamed())
        if self.k[self.i] == "with":
            j = self.i
            self.i += 1
            names = [self.name()]
            while self.accept(","):
                names.append(self.name())
            ch.append(b.traits(self.meta(j), names))
        self.expect("{")
        while self.k[self.i] != "}":
            ch.append(self.aggregate_member())
        self.i += 1
        return b.aggregate(self.meta(i0), ch)

    def aggregate_member(self) -> Any:
        kind = self.k[self.i]
        method = _AGGREGATE_MEMBERS.get(kind)
        if method is not None:
            return method(self)
        return self.field()

    def field(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name()]
        self.expect(":")
        ch.append(self.type())
        b = self.b
        if self.k[self.i] == "immutable":
            j = self.i
            self.i += 1
            ch.append(b.immutable(self.meta(j), []))
        if self.k[self.i] == _RENAMED:
            ch.append(self.renamed())
        if self.k[self.i] == "=":
            ch.append(self.default())
        return b.field(self.meta(i0), ch)

    def renamed(self) -> Any:
        """`renamed from OLD` (one token, then the name)."""
        j = self.i
        if "\n" in self.v[j]:
            raise _GIVE_UP  # a token over two lines: positions this parser does not compute
        self.i += 1
        ch = [self.token(j, _RENAMED), self.name()]
        return self.b.renamed(self.meta(j), ch)

    def default(self) -> Any:
        j = self.i
        self.i += 1
        value = self.value()
        return self.b.default(self.meta(j), [value])

    def derived(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect(":")
        ch.append(self.type())
        self.expect("=")
        ch.append(self.value())
        return self.b.derived(self.meta(i0), ch)

    def invariant(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.expr()]
        if self.k[self.i] == "message":
            ch.append(self.message())
        return self.b.invariant(self.meta(i0), ch)

    def message(self) -> Any:
        j = self.i
        self.i += 1
        text = self.terminal("STRING")
        return self.b.message(self.meta(j), [text])

    def function(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name(), self.paren_params()]
        self.expect(":")
        ch.append(self.type())
        if self.accept("="):
            ch.append(self.value())
        else:
            ch.append(self.block())
        return self.b.function(self.meta(i0), ch)

    def paren_params(self) -> Any:
        self.expect("(")
        params = self.params()
        self.expect(")")
        return params

    def params(self) -> Any:
        i0 = self.i
        ch = []
        while self.k[self.i] != ")":
            ch.append(self.param())
            self.accept(",")
        return self.b.params(self.meta(i0), ch)

    def param(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name()]
        self.expect(":")
        ch.append(self.type())
        return self.b.param(self.meta(i0), ch)

    def operation(self) -> Any:
        i0 = self.i
        b = self.b
        ch: list[Any] = []
        if self.k[self.i] == "private":
            self.i += 1
            ch.append(b.private(self.meta(i0), []))
        self.expect("operation")
        ch += [self.name(), self.paren_params()]
        if self.k[self.i] == "requires":
            ch.append(self.gate(b.requires))
        if self.k[self.i] == "when":
            ch.append(self.gate(b.when))
        ch.append(self.block())
        return b.operation(self.meta(i0), ch)

    def gate(self, method: Any) -> Any:
        """`requires expr`, `when expr`, `by expr`."""
        j = self.i
        self.i += 1
        cond = self.expr()
        return method(self.meta(j), [cond])

    def extern_operation(self) -> Any:
        i0 = self.i
        self.i += 1
        self.expect("operation")
        ch: list[Any] = [self.name(), self.paren_params()]
        if self.k[self.i] == ":":
            ch.append(self.result())
        if self.k[self.i] == "requires":
            ch.append(self.gate(self.b.requires))
        if self.k[self.i] == "{":
            ch.append(self.block())
        return self.b.extern_operation(self.meta(i0), ch)

    def result(self) -> Any:
        j = self.i
        self.i += 1
        typ = self.type()
        return self.b.result(self.meta(j), [typ])

    def unique(self) -> Any:
        i0 = self.i
        self.i += 1
        self.expect("(")
        ch = [self.name()]
        while self.accept(","):
            if self.k[self.i] == ")":
                break
            ch.append(self.name())
        self.expect(")")
        return self.b.unique(self.meta(i0), ch)

    def factory(self) -> Any:
        i0 = self.i
        self.i += 1
        ch = [self.paren_params(), self.block()]
        return self.b.factory(self.meta(i0), ch)

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
        if kind in ("INT", "DECIMAL", "STRING"):
            tok = self.terminal(kind)
        else:
            tok = self.name()
        return self.b.type_arg(self.meta(i0), [tok])

    def repository(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("for")
        ch.append(self.name())
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            if self.accept("find"):
                member: list[Any] = [self.name(), self.paren_params()]
                self.expect(":")
                member.append(self.type())
                ch.append(b.repo_find(self.meta(j), member))
            elif self.accept("filter"):
                name = self.name()
                ch.append(b.repo_filter(self.meta(j), [name]))
            else:
                raise _GIVE_UP
        self.i += 1
        return b.repository(self.meta(i0), ch)

    def criterion_head(self) -> list[Any]:
        """`NAME crit_params? "of" NAME` of a criterion or a retrieval."""
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.k[self.i] == "(":
            j = self.i
            params = self.paren_params()
            ch.append(self.b.crit_params(self.meta(j), [params]))
        self.expect("of")
        ch.append(self.name())
        return ch

    def criterion(self) -> Any:
        i0 = self.i
        ch = self.criterion_head()
        self.expect("=")
        ch.append(self.expr())
        return self.b.criterion(self.meta(i0), ch)

    def retrieval(self) -> Any:
        i0 = self.i
        ch = self.criterion_head()
        self.expect("{")
        self.expect("where")
        self.expect(":")
        ch.append(self.expr())
        self.accept(",")
        self.expect("}")
        return self.b.retrieval(self.meta(i0), ch)

    def command_handler(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name(), self.paren_params()]
        if self.k[self.i] == ":":
            ch.append(self.result())
        if self.k[self.i] == "transactional":
            ch.append(self.transactional())
        ch.append(self.block())
        return self.b.command_handler(self.meta(i0), ch)

    def query_handler(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name(), self.paren_params()]
        if self.k[self.i] == ":":
            ch.append(self.result())
        ch.append(self.block())
        return self.b.query_handler(self.meta(i0), ch)

    def transactional(self) -> Any:
        j = self.i
        self.i += 1
        ch = []
        if self.accept("("):
            ch.append(self.name())
            self.expect(")")
        return self.b.transactional(self.meta(j), ch)

    def domain_service(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        while self.k[self.i] != "}":
            j = self.i
            method: list[Any] = [self.name(), self.paren_params()]
            if self.k[self.i] == ":":
                method.append(self.result())
            if self.accept("="):
                method.append(self.value())
            else:
                method.append(self.block())
            ch.append(self.b.service_method(self.meta(j), method))
        self.i += 1
        return self.b.domain_service(self.meta(i0), ch)

    def event(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.k[self.i] == _RENAMED:
            ch.append(self.renamed())
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            field: list[Any] = [self.name()]
            self.expect(":")
            field.append(self.type())
            if self.k[self.i] == _RENAMED:
                field.append(self.renamed())
            if self.k[self.i] == "=":
                field.append(self.default())
            ch.append(b.event_field(self.meta(j), field))
            self.accept(",")
        self.i += 1
        return b.event(self.meta(i0), ch)

    def value_object(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        while self.k[self.i] != "}":
            if self.k[self.i] == "invariant":
                ch.append(self.invariant())
            else:
                ch.append(self.record_field())
            self.accept(",")
        self.i += 1
        return self.b.value_object(self.meta(i0), ch)

    def record_field(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name()]
        self.expect(":")
        ch.append(self.type())
        if self.k[self.i] == "=":
            ch.append(self.default())
        return self.b.record_field(self.meta(i0), ch)

    def payload(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.b.payload_kind(self.meta_of_name(i0), [self.kept()])]
        ch.append(self.name())
        self.expect("{")
        while self.k[self.i] != "}":
            ch.append(self.record_field())
            self.accept(",")
        self.i += 1
        return self.b.payload(self.meta(i0), ch)

    def projection(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        while self.k[self.i] != "}":
            ch.append(self.on() if self.k[self.i] == "on" else self.field())
        self.i += 1
        return self.b.projection(self.meta(i0), ch)

    def channel(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name(), self.name()]
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            setting: list[Any] = [self.name()]
            self.expect(":")
            setting.append(self.setting_value())
            ch.append(b.channel_setting(self.meta(j), setting))
        self.i += 1
        return b.channel(self.meta(i0), ch)

    def setting_value(self) -> Any:
        i0 = self.i
        kind = self.k[i0]
        b = self.b
        if kind == "INT":
            return b.setting_int(self.meta_of_name(i0), [self.terminal("INT")])
        if kind == "DURATION":
            ch = [self.terminal("DURATION")]
            self.expect("..")
            ch.append(self.terminal("DURATION"))
            return b.setting_range(self.meta(i0), ch)
        names = [self.qname()]
        while self.accept(","):
            names.append(self.qname())
        return b.setting_names(self.meta(i0), names)

    def qname(self) -> Any:
        i0 = self.i
        ch = [self.name()]
        if self.accept("."):
            ch.append(self.name())
        return self.b.qname(self.meta(i0), ch)

    def workflow(self) -> Any:
        i0 = self.i
        self.i += 1
        b = self.b
        ch: list[Any] = [self.name()]
        while True:
            kind = self.k[self.i]
            if kind == "transactional":
                ch.append(self.transactional())
            elif kind == "eventSourced":
                j = self.i
                self.i += 1
                ch.append(b.event_sourced(self.meta(j), []))
            else:
                break
        self.expect("{")
        while self.k[self.i] != "}":
            ch.append(self.workflow_member())
        self.i += 1
        return b.workflow(self.meta(i0), ch)

    def workflow_member(self) -> Any:
        i0 = self.i
        kind = self.k[i0]
        b = self.b
        if kind == "create":
            self.i += 1
            ch: list[Any] = [self.paren_params()]
            if self.k[self.i] == ":":
                ch.append(self.result())
            if self.k[self.i] == "by":
                ch.append(self.gate(b.by))
            ch.append(self.block())
            return b.create(self.meta(i0), ch)
        if kind == "handle":
            self.i += 1
            ch = [self.name(), self.paren_params(), self.block()]
            return b.handle(self.meta(i0), ch)
        if kind == "function":
            return self.function()
        if kind == "apply":
            self.i += 1
            ch = [self.paren_params(), self.block()]
            return b.apply(self.meta(i0), ch)
        if kind == "on":
            if self.k[i0 + 1] == "timeout":
                self.i += 2
                ch = [self.name(), self.block()]
                return b.on_timeout(self.meta(i0), ch)
            return self.on()
        return self.field()

    def on(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.paren_params()]
        if self.k[self.i] == "by":
            ch.append(self.gate(self.b.by))
        ch.append(self.block())
        return self.b.on(self.meta(i0), ch)

    def timer(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("every")
        ch += [self.terminal("DURATION"), self.block()]
        return self.b.timer(self.meta(i0), ch)

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
        if self.k[self.i] in _ASSIGN:
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
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.accept("at"):
            ch.append(self.expr())
            return self.b.schedule_at(self.meta(i0), ch)
        self.expect("after")
        ch.append(self.terminal("DURATION"))
        return self.b.schedule_after(self.meta(i0), ch)

    def cancel(self) -> Any:
        i0 = self.i
        self.i += 1
        name = self.name()
        return self.b.cancel(self.meta(i0), [name])

    def complete(self) -> Any:
        i0 = self.i
        self.i += 1
        return self.b.complete(self.meta(i0), [])

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
        if self.k[self.i] in _BINARY:
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
        if self.k[self.i] not in _CMP:
            return left
        op = self.b.cmp_op(self.meta_of_name(self.i), [self.kept()])
        j = self.i
        right = self.sum(j, self.unary())
        return self.b.compare(self.meta(i0), [left, op, right])

    def sum(self, i0: int, first: Any) -> Any:
        left = self.product(i0, first)
        b = self.b
        while self.k[self.i] in _ADD:
            op = b.add_op(self.meta_of_name(self.i), [self.kept()])
            j = self.i
            right = self.product(j, self.unary())
            left = b.arith(self.meta(i0), [left, op, right])
        return left

    def product(self, i0: int, first: Any) -> Any:
        left = first
        b = self.b
        while self.k[self.i] in _MUL:
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
        literal = _LITERALS.get(kind)
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
        raise _GIVE_UP


_DECLARATIONS = {
    "enum": _Descent.enum,
    "aggregate": _Descent.aggregate,
    "repository": _Descent.repository,
    "event": _Descent.event,
    "workflow": _Descent.workflow,
    "criterion": _Descent.criterion,
    "retrieval": _Descent.retrieval,
    "commandHandler": _Descent.command_handler,
    "queryHandler": _Descent.query_handler,
    "domainService": _Descent.domain_service,
    "value": _Descent.value_object,
    "projection": _Descent.projection,
    "timer": _Descent.timer,
}
_AGGREGATE_MEMBERS = {
    "derived": _Descent.derived,
    "invariant": _Descent.invariant,
    "function": _Descent.function,
    "operation": _Descent.operation,
    "private": _Descent.operation,
    "extern": _Descent.extern_operation,
    "unique": _Descent.unique,
    "create": _Descent.factory,
}
_STATEMENTS = {
    "precondition": _Descent.precondition,
    "let": _Descent.let,
    "emit": _Descent.emit,
    "return": _Descent.return_,
    "if": _Descent.if_,
    "for": _Descent.for_,
    "notFound": _Descent.not_found,
    "schedule": _Descent.schedule,
    "cancel": _Descent.cancel,
    "complete": _Descent.complete,
}
