"""The tree builder: one method per grammar rule (see grammar.lark), called by `reduce.parse` as the
parser reduces that rule, with the rule's positions and its children's values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from loom.lang.diagnostics import Sink, Span
from loom.lang.syntax import ast
from loom.lang.syntax.builder import Builder, Positions
from loom.lang.syntax.unknown_declaration import report_unknown_declaration

if TYPE_CHECKING:
    from lark import Token

# --------------------------------------------------------------------------------------------------
# Tree to AST


def _unescape(raw: str) -> tuple[str, str | None]:
    """Decode a string literal (with its quotes). Returns the text and the first bad escape, if any."""
    if "\\" not in raw:
        return raw[1:-1], None  # most strings: nothing to decode
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


class Build(Builder):
    def __init__(self, file: str, sink: Sink) -> None:
        self.file = file
        self.sink = sink

    def sp(self, meta: Positions) -> Span:
        start, end = meta
        if start is None or end is None:  # a rule that matched no text
            return Span(self.file, 1, 1, 1, 1)
        return Span(self.file, start[0], start[1], end[0], end[1], start[2], end[2])

    def _once_each(self, words: list[tuple[str, Span]], what: str) -> None:
        """A modifier, trait or `ignoring` filter written twice is a mistake (the second one may
        say something the first does not, `transactional transactional(serializable)`), never
        merged silently."""
        first: dict[str, Span] = {}
        for word, span in words:
            if word not in first:
                first[word] = span
                continue
            self.sink.report(
                "loom.duplicate-modifier",
                f"the {what} `{word}` is written twice",
                span,
                f"`{word}` again",
                secondary=[(first[word], "first written here")],
                help="keep one `transactional`, with the isolation level you mean (e.g. "
                "`transactional(serializable)`), and remove the other"
                if word == "transactional"
                else f"remove the second `{word}`",
            )

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
        return ast.File(
            self.file,
            [c for c in ch if isinstance(c, ast.Context)],
            [c for c in ch if isinstance(c, ast.Deployable)],
            [c for c in ch if isinstance(c, ast.ChannelSource)],
        )

    def top_decl(self, meta, ch):
        word = str(ch[0])
        args = (str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))
        if word == "channelSource":
            return ast.ChannelSource(*args)
        if word != "deployable":  # `NAME NAME {` is their shape; any other word is a typo
            report_unknown_declaration(self.file, ch[0], self.sink, top_level=True)
        return ast.Deployable(*args)

    def context(self, meta, ch):
        tenanted = ch[1] if len(ch) > 1 and isinstance(ch[1], Span) else None
        decls = list(ch[2:] if tenanted is not None else ch[1:])
        return ast.Context(str(ch[0]), self.tsp(ch[0]), decls, self.sp(meta), tenanted)

    def tenanted(self, meta, ch):
        return self.sp(meta)

    def enum_member(self, meta, ch):
        return (str(ch[0]), self.tsp(ch[0]), ch[1] if len(ch) > 1 else None)

    def enum(self, meta, ch):
        members = [(name, span) for name, span, _ in ch[1:]]
        renamed = {i: r for i, (_, _, r) in enumerate(ch[1:]) if r is not None}
        return ast.Enum(str(ch[0]), self.tsp(ch[0]), members, self.sp(meta), renamed)

    def renamed(self, meta, ch):
        return ast.Renamed(str(ch[1]), self.tsp(ch[1]))

    def traits(self, meta, ch):
        traits = [(str(t), self.tsp(t)) for t in ch]
        self._once_each(traits, "trait")
        return traits

    def aggregate(self, meta, ch):
        traits: list = []
        members = []
        renamed = None
        for c in ch[1:]:
            if isinstance(c, list):
                traits = c
            elif isinstance(c, ast.Renamed):
                renamed = c
            else:
                members.append(c)
        return ast.Aggregate(
            str(ch[0]), self.tsp(ch[0]), traits, members, self.sp(meta), renamed_from=renamed
        )

    def immutable(self, meta, ch):
        return "immutable"

    def default(self, meta, ch):
        return ("default", ch[0])

    def message(self, meta, ch):
        return ("message", self._string(ch[0]))

    def when(self, meta, ch):
        return ("when", ch[0])

    def requires(self, meta, ch):
        return ("requires", ch[0])

    def result(self, meta, ch):
        return ("result", ch[0])

    def field(self, meta, ch):
        name, typ = ch[0], ch[1]
        immutable = "immutable" in ch[2:]
        default = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        renamed = next((c for c in ch[2:] if isinstance(c, ast.Renamed)), None)
        return ast.Field(str(name), self.tsp(name), typ, immutable, default, self.sp(meta), renamed)

    event_field = field

    def derived(self, meta, ch):
        return ast.Derived(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def invariant(self, meta, ch):
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Invariant(ch[0], msg, self.sp(meta))

    def function(self, meta, ch):
        if isinstance(ch[3], list):
            return ast.Function(
                str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], None, self.sp(meta), body=ch[3]
            )
        return ast.Function(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], ch[3], self.sp(meta))

    def private(self, meta, ch):
        return "private"

    def internal(self, meta, ch):
        return "internal"

    def public(self, meta, ch):
        return "public"

    def operation(self, meta, ch):
        private, internal, public = (ch[0] == w for w in ("private", "internal", "public"))
        if private or internal or public:
            ch = ch[1:]
        when = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "when"), None)
        gate = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "requires"), None)
        return ast.Operation(
            str(ch[0]),
            self.tsp(ch[0]),
            ch[1],
            when,
            ch[-1],
            self.sp(meta),
            private=private,
            requires=gate,
            internal=internal,
            public=public,
        )

    def extern_operation(self, meta, ch):
        internal, public = ch[0] == "internal", ch[0] == "public"
        if internal or public:
            ch = ch[1:]
        result = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "result"), None)
        gate = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "requires"), None)
        body = next((c for c in ch[2:] if isinstance(c, list)), None)
        return ast.Operation(
            str(ch[0]),
            self.tsp(ch[0]),
            ch[1],
            None,
            body or [],
            self.sp(meta),
            extern=True,
            result=result,
            has_body=body is not None,
            requires=gate,
            internal=internal,
            public=public,
        )

    def unique(self, meta, ch):
        return ast.Unique([(str(t), self.tsp(t)) for t in ch], self.sp(meta))

    def factory(self, meta, ch):
        return ast.Factory(ch[0], ch[1], self.sp(meta))

    def repo_find(self, meta, ch):
        return ast.RepoFind(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def crit_params(self, meta, ch):
        return ("params", ch[0])

    def _crit(self, ch):
        params = next((c[1] for c in ch if isinstance(c, tuple)), [])
        rest = [c for c in ch[1:] if not isinstance(c, tuple)]
        return params, rest[0], rest[1]

    def criterion(self, meta, ch):
        params, agg, cond = self._crit(ch)
        return ast.Criterion(
            str(ch[0]), self.tsp(ch[0]), params, str(agg), self.tsp(agg), cond, self.sp(meta)
        )

    def retrieval(self, meta, ch):
        params, agg, where = self._crit(ch)
        return ast.Retrieval(
            str(ch[0]), self.tsp(ch[0]), params, str(agg), self.tsp(agg), where, self.sp(meta)
        )

    def _handler(self, kind, meta, ch):
        result = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "result"), None)
        tx = next((c for c in ch[2:] if isinstance(c, tuple) and c[0] == "transactional"), None)
        return ast.Handler(
            kind,
            str(ch[0]),
            self.tsp(ch[0]),
            ch[1],
            result,
            tx is not None,
            tx[1] if tx else None,
            tx[2] if tx else None,
            ch[-1],
            self.sp(meta),
        )

    def command_handler(self, meta, ch):
        return self._handler("command", meta, ch)

    def query_handler(self, meta, ch):
        return self._handler("query", meta, ch)

    def domain_service(self, meta, ch):
        return ast.DomainService(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def service_method(self, meta, ch):
        result = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        last = ch[-1]
        body = last if isinstance(last, list) else None
        value = None if isinstance(last, (list, tuple)) else last
        return ast.ServiceMethod(
            str(ch[0]), self.tsp(ch[0]), ch[1], result, body, value, self.sp(meta)
        )

    def event_sourced(self, meta, ch):
        return ("eventSourced", self.sp(meta))

    def once(self, meta, ch):
        return ("once", self.sp(meta))

    def apply(self, meta, ch):
        return ast.Apply(ch[0], ch[1], self.sp(meta))

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

    def type_arg(self, meta, ch):
        return ast.TypeArg(str(ch[0]), self.tsp(ch[0]))

    def negative_type_arg(self, meta, ch):
        return ast.TypeArg("-" + str(ch[0]), self.sp(meta))

    def type_args(self, meta, ch):
        return (list(ch), self.sp(meta))

    def type(self, meta, ch):
        # a name is a token (lark's or the fast parser's), a mark a plain text
        names = []
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

    def repository(self, meta, ch):
        members = list(ch[2:])
        return ast.Repository(
            str(ch[0]),
            self.tsp(ch[0]),
            str(ch[1]),
            self.tsp(ch[1]),
            self.sp(meta),
            [m for m in members if isinstance(m, ast.RepoFind)],
            [m[1] for m in members if isinstance(m, tuple) and m[0] == "filter"],
        )

    def repo_filter(self, meta, ch):
        return ("filter", (str(ch[0]), self.tsp(ch[0])))

    def ignoring(self, meta, ch):
        names = [(str(n), self.tsp(n)) for n in ch]
        self._once_each(names, "filter")
        return ("ignoring", names)

    def event(self, meta, ch):
        renamed = ch[1] if len(ch) > 1 and isinstance(ch[1], ast.Renamed) else None
        fields = list(ch[2:] if renamed else ch[1:])
        return ast.Event(str(ch[0]), self.tsp(ch[0]), fields, self.sp(meta), renamed)

    def record_field(self, meta, ch):
        default = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        return ast.Field(str(ch[0]), self.tsp(ch[0]), ch[1], False, default, self.sp(meta))

    def value_object(self, meta, ch):
        fields = [c for c in ch[1:] if isinstance(c, ast.Field)]
        invariants = [c for c in ch[1:] if isinstance(c, ast.Invariant)]
        return ast.ValueObject(str(ch[0]), self.tsp(ch[0]), fields, invariants, self.sp(meta))

    def payload_kind(self, meta, ch):
        return str(ch[0])

    def payload(self, meta, ch):
        return ast.Payload(ch[0], str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))

    def transactional(self, meta, ch):
        if ch:
            return ("transactional", str(ch[0]), self.tsp(ch[0]), self.sp(meta))
        return ("transactional", None, None, self.sp(meta))

    def workflow(self, meta, ch):
        modifiers = [c for c in ch[1:] if isinstance(c, tuple)]
        self._once_each([(m[0], m[-1]) for m in modifiers], "modifier")
        tx = next((c for c in modifiers if c[0] == "transactional"), None)
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
            event_sourced=any(m[0] == "eventSourced" for m in modifiers),
            state=[c for c in ch[1:] if isinstance(c, ast.Field)],
            functions=[c for c in ch[1:] if isinstance(c, ast.Function)],
            applies=[c for c in ch[1:] if isinstance(c, ast.Apply)],
            ons=[c for c in ch[1:] if isinstance(c, ast.On)],
            timeouts=[c for c in ch[1:] if isinstance(c, ast.OnTimeout)],
            once=next((m[-1] for m in modifiers if m[0] == "once"), None),
        )

    def create(self, meta, ch):
        result = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "result"), None)
        by = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "by"), None)
        return ast.Create(ch[0], result, ch[-1], self.sp(meta), by)

    def by(self, meta, ch):
        return ("by", ch[0])

    def on(self, meta, ch):
        by = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "by"), None)
        return ast.On(ch[0], by, ch[-1], self.sp(meta))

    def projection(self, meta, ch):
        return ast.Projection(
            str(ch[0]),
            self.tsp(ch[0]),
            [c for c in ch[1:] if isinstance(c, ast.Field)],
            [c for c in ch[1:] if isinstance(c, ast.On)],
            self.sp(meta),
        )

    def channel(self, meta, ch):
        args = (str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))
        if str(ch[0]) == "resource":
            return ast.Resource(*args)
        if str(ch[0]) != "channel":  # `NAME NAME {` is a channel's shape; any other word is a typo
            report_unknown_declaration(self.file, ch[0], self.sink)
        return ast.Channel(*args)

    def channel_setting(self, meta, ch):
        value, value_span = ch[1]
        return ast.ChannelSetting(str(ch[0]), self.tsp(ch[0]), value, value_span, self.sp(meta))

    def qname(self, meta, ch):
        if len(ch) == 2:
            return (str(ch[0]), str(ch[1]), self.sp(meta))
        return (None, str(ch[0]), self.sp(meta))

    def setting_names(self, meta, ch):
        return (list(ch), self.sp(meta))

    def setting_int(self, meta, ch):
        return (int(str(ch[0])), self.sp(meta))

    def setting_duration(self, meta, ch):
        return (ast.Duration(_millis(str(ch[0]))), self.sp(meta))

    def setting_range(self, meta, ch):
        return ((_millis(str(ch[0])), _millis(str(ch[1]))), self.sp(meta))

    def handle(self, meta, ch):
        return ast.Handle(str(ch[0]), self.tsp(ch[0]), self.sp(meta))

    def on_timeout(self, meta, ch):
        return ast.OnTimeout(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def timer(self, meta, ch):
        return ast.Timer(
            str(ch[0]), self.tsp(ch[0]), _millis(str(ch[1])), self.tsp(ch[1]), ch[2], self.sp(meta)
        )

    def schedule_at(self, meta, ch):
        return ast.Schedule(str(ch[0]), self.tsp(ch[0]), ch[1], None, self.sp(meta))

    def schedule_after(self, meta, ch):
        after = ch[1]
        if isinstance(after, ast.Literal) and after.kind == "duration":  # `after 15m`
            ms = after.value // 1000  # type: ignore[operator]
            return ast.Schedule(str(ch[0]), self.tsp(ch[0]), None, ms, self.sp(meta))
        return ast.Schedule(str(ch[0]), self.tsp(ch[0]), None, None, self.sp(meta), after)

    def cancel(self, meta, ch):
        return ast.Cancel(str(ch[0]), self.tsp(ch[0]), self.sp(meta))

    def complete(self, meta, ch):
        return ast.Complete(self.sp(meta))

    # ---- statements
    def block(self, meta, ch):
        return list(ch)

    def precondition(self, meta, ch):
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Precondition(ch[0], msg, self.sp(meta))

    def let(self, meta, ch):
        ignoring = ch[2][1] if len(ch) > 2 else []
        return ast.Let(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta), ignoring)

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

    def if_let(self, meta, ch):
        ch = list(ch)
        ignoring = ch.pop(2)[1] if isinstance(ch[2], tuple) and ch[2][0] == "ignoring" else []
        otherwise = ch[3][1] if len(ch) > 3 else None
        return ast.IfLet(
            str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], otherwise, self.sp(meta), ignoring
        )

    def else_block(self, meta, ch):
        return ("else", ch[0])

    def else_if(self, meta, ch):
        return ("else", [ch[0]])

    def if_stmt(self, meta, ch):
        otherwise = ch[2][1] if len(ch) > 2 else None
        return ast.If(ch[0], ch[1], otherwise, self.sp(meta))

    def for_stmt(self, meta, ch):
        return ast.ForEach(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def not_found(self, meta, ch):
        return ast.NotFound(self._string(ch[0]) if ch else None, self.sp(meta))

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

    def record(self, meta, ch):
        return ast.RecordExpr(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def name(self, meta, ch):
        return ast.Name(str(ch[0]), self.tsp(ch[0]))

    def string(self, meta, ch):
        return ast.Literal("string", self._string(ch[0]), self.tsp(ch[0]))

    def int(self, meta, ch):
        return ast.Literal("int", int(str(ch[0])), self.tsp(ch[0]))

    def decimal(self, meta, ch):
        return ast.Literal("decimal", str(ch[0]), self.tsp(ch[0]))

    def duration(self, meta, ch):  # its value in microseconds
        return ast.Literal("duration", _millis(str(ch[0])) * 1000, self.tsp(ch[0]))

    def true(self, meta, ch):
        return ast.Literal("bool", True, self.sp(meta))

    def false(self, meta, ch):
        return ast.Literal("bool", False, self.sp(meta))

    def list(self, meta, ch):
        return ast.ListLit(list(ch), self.sp(meta))


_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _millis(text: str) -> int:
    """`100ms`, `1s`, `5m`, `2h`, `1d` in milliseconds."""
    digits = text.rstrip("smhd")
    return int(digits) * _UNIT_MS[text[len(digits) :]]


# `return` is a Python keyword, so the rule's callback needs an alias.
setattr(Build, "return", Build.return_)
