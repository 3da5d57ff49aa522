"""The tree builder's rules of declarations: files, contexts, enums, aggregates and their members,
repositories, criteria and retrievals, records, channels, resources and their settings."""

from __future__ import annotations

from typing import Any

from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lang.syntax.builder import Positions
from loom.lang.syntax.tree_tokens import TokenReader, millis
from loom.lang.syntax.unknown_declaration import report_unknown_declaration


class DeclarationRules(TokenReader):
    def start(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.File(
            self.file,
            [c for c in ch if isinstance(c, ast.Context)],
            [c for c in ch if isinstance(c, ast.Deployable)],
            [c for c in ch if isinstance(c, ast.ChannelSource)],
        )

    def top_decl(self, meta: Positions, ch: list[Any]) -> Any:
        word = str(ch[0])
        args = (str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))
        if word == "channelSource":
            return ast.ChannelSource(*args)
        if word != "deployable":  # `NAME NAME {` is their shape; any other word is a typo
            report_unknown_declaration(self.file, ch[0], self.sink, top_level=True)
        return ast.Deployable(*args)

    def context(self, meta: Positions, ch: list[Any]) -> Any:
        tenanted = ch[1] if len(ch) > 1 and isinstance(ch[1], Span) else None
        decls = list(ch[2:] if tenanted is not None else ch[1:])
        return ast.Context(str(ch[0]), self.tsp(ch[0]), decls, self.sp(meta), tenanted)

    def tenanted(self, meta: Positions, ch: list[Any]) -> Any:
        return self.sp(meta)

    def enum_member(self, meta: Positions, ch: list[Any]) -> Any:
        terminal = any(c == "terminal" for c in ch[1:])
        renamed = next((c for c in ch[1:] if isinstance(c, ast.Renamed)), None)
        return (str(ch[0]), self.tsp(ch[0]), renamed, terminal)

    def terminal_state(self, meta: Positions, ch: list[Any]) -> Any:
        return "terminal"

    def enum(self, meta: Positions, ch: list[Any]) -> Any:
        members = [(name, span) for name, span, _, _ in ch[1:]]
        renamed = {i: r for i, (_, _, r, _) in enumerate(ch[1:]) if r is not None}
        terminal = {name for name, _, _, t in ch[1:] if t}
        return ast.Enum(str(ch[0]), self.tsp(ch[0]), members, self.sp(meta), renamed, terminal)

    def renamed(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Renamed(str(ch[1]), self.tsp(ch[1]))

    def traits(self, meta: Positions, ch: list[Any]) -> Any:
        traits = [(str(t), self.tsp(t)) for t in ch]
        self._once_each(traits, "trait")
        return traits

    def aggregate(self, meta: Positions, ch: list[Any]) -> Any:
        traits: list[Any] = []
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

    def immutable(self, meta: Positions, ch: list[Any]) -> Any:
        return "immutable"

    def read_only(self, meta: Positions, ch: list[Any]) -> Any:
        return "readOnly"

    def default(self, meta: Positions, ch: list[Any]) -> Any:
        return ("default", ch[0])

    def message(self, meta: Positions, ch: list[Any]) -> Any:
        return ("message", self._string(ch[0]))

    def when(self, meta: Positions, ch: list[Any]) -> Any:
        return ("when", ch[0])

    def requires(self, meta: Positions, ch: list[Any]) -> Any:
        return ("requires", ch[0])

    def result(self, meta: Positions, ch: list[Any]) -> Any:
        return ("result", ch[0])

    def field(self, meta: Positions, ch: list[Any]) -> Any:
        name, typ = ch[0], ch[1]
        immutable = "immutable" in ch[2:]
        default = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        renamed = next((c for c in ch[2:] if isinstance(c, ast.Renamed)), None)
        return ast.Field(
            str(name),
            self.tsp(name),
            typ,
            immutable,
            default,
            self.sp(meta),
            renamed,
            read_only="readOnly" in ch[2:],
        )

    event_field = field

    def derived(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Derived(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def invariant(self, meta: Positions, ch: list[Any]) -> Any:
        msg = ch[1][1] if len(ch) > 1 else None
        return ast.Invariant(ch[0], msg, self.sp(meta))

    def function(self, meta: Positions, ch: list[Any]) -> Any:
        if isinstance(ch[3], list):
            return ast.Function(
                str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], None, self.sp(meta), body=ch[3]
            )
        return ast.Function(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], ch[3], self.sp(meta))

    def private(self, meta: Positions, ch: list[Any]) -> Any:
        return "private"

    def internal(self, meta: Positions, ch: list[Any]) -> Any:
        return "internal"

    def public(self, meta: Positions, ch: list[Any]) -> Any:
        return "public"

    def operation(self, meta: Positions, ch: list[Any]) -> Any:
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

    def extern_operation(self, meta: Positions, ch: list[Any]) -> Any:
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

    def unique(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Unique([(str(t), self.tsp(t)) for t in ch], self.sp(meta))

    def factory(self, meta: Positions, ch: list[Any]) -> Any:
        gate = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "requires"), None)
        return ast.Factory(ch[0], ch[-1], self.sp(meta), requires=gate)

    def repo_find(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.RepoFind(str(ch[0]), self.tsp(ch[0]), ch[1], ch[2], self.sp(meta))

    def crit_params(self, meta: Positions, ch: list[Any]) -> Any:
        return ("params", ch[0])

    def _crit(self, ch: list[Any]) -> Any:
        params: list[Any] = next((c[1] for c in ch if isinstance(c, tuple)), [])
        rest = [c for c in ch[1:] if not isinstance(c, tuple)]
        return params, rest[0], rest[1]

    def criterion(self, meta: Positions, ch: list[Any]) -> Any:
        params, agg, cond = self._crit(ch)
        return ast.Criterion(
            str(ch[0]), self.tsp(ch[0]), params, str(agg), self.tsp(agg), cond, self.sp(meta)
        )

    def retrieval(self, meta: Positions, ch: list[Any]) -> Any:
        params, agg, where = self._crit(ch)
        return ast.Retrieval(
            str(ch[0]), self.tsp(ch[0]), params, str(agg), self.tsp(agg), where, self.sp(meta)
        )

    def repository(self, meta: Positions, ch: list[Any]) -> Any:
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

    def repo_filter(self, meta: Positions, ch: list[Any]) -> Any:
        return ("filter", (str(ch[0]), self.tsp(ch[0])))

    def event(self, meta: Positions, ch: list[Any]) -> Any:
        renamed = ch[1] if len(ch) > 1 and isinstance(ch[1], ast.Renamed) else None
        fields = list(ch[2:] if renamed else ch[1:])
        return ast.Event(str(ch[0]), self.tsp(ch[0]), fields, self.sp(meta), renamed)

    def record_field(self, meta: Positions, ch: list[Any]) -> Any:
        default = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        return ast.Field(str(ch[0]), self.tsp(ch[0]), ch[1], False, default, self.sp(meta))

    def value_object(self, meta: Positions, ch: list[Any]) -> Any:
        fields = [c for c in ch[1:] if isinstance(c, ast.Field)]
        invariants = [c for c in ch[1:] if isinstance(c, ast.Invariant)]
        return ast.ValueObject(str(ch[0]), self.tsp(ch[0]), fields, invariants, self.sp(meta))

    def payload_kind(self, meta: Positions, ch: list[Any]) -> Any:
        return str(ch[0])

    def payload(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Payload(ch[0], str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))

    def channel(self, meta: Positions, ch: list[Any]) -> Any:
        args = (str(ch[1]), self.tsp(ch[1]), list(ch[2:]), self.sp(meta))
        if str(ch[0]) == "resource":
            return ast.Resource(*args)
        if str(ch[0]) != "channel":  # `NAME NAME {` is a channel's shape; any other word is a typo
            report_unknown_declaration(self.file, ch[0], self.sink)
        return ast.Channel(*args)

    def channel_setting(self, meta: Positions, ch: list[Any]) -> Any:
        value, value_span = ch[1]
        return ast.ChannelSetting(str(ch[0]), self.tsp(ch[0]), value, value_span, self.sp(meta))

    def qname(self, meta: Positions, ch: list[Any]) -> Any:
        if len(ch) == 2:
            return (str(ch[0]), str(ch[1]), self.sp(meta))
        return (None, str(ch[0]), self.sp(meta))

    def setting_names(self, meta: Positions, ch: list[Any]) -> Any:
        return (list(ch), self.sp(meta))

    def setting_int(self, meta: Positions, ch: list[Any]) -> Any:
        return (int(str(ch[0])), self.sp(meta))

    def setting_duration(self, meta: Positions, ch: list[Any]) -> Any:
        return (ast.Duration(millis(str(ch[0]))), self.sp(meta))

    def setting_range(self, meta: Positions, ch: list[Any]) -> Any:
        return ((millis(str(ch[0])), millis(str(ch[1]))), self.sp(meta))
