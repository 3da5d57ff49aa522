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

from loom.lang.syntax.descent_cursor import GIVE_UP, PAYLOAD_KINDS, RENAMED, GiveUp
from loom.lang.syntax.descent_workflows import Workflows
from loom.lang.syntax.scan import END, Tokens, reserved
from loom.lang.syntax.tree_to_ast import Build


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


class _Descent(Workflows):
    """The declarations: a file's contexts and everything in them (workflows and their kin in
    `descent_workflows.py`, the members of declarations in `descent_members.py`)."""

    def start(self) -> Any:
        i0 = self.i
        decls = []
        while self.k[self.i] != END:
            if self.k[self.i] == "context":
                decls.append(self.context())
            else:
                decls.append(self.top_decl())
        return self.b.start(self.meta(i0), decls)

    def top_decl(self) -> Any:
        """`deployable Name { … }`, `channelSource Name { … }`: a channel's shape (the builder
        checks the word)."""
        i0 = self.i
        ch: list[Any] = [self.name(), self.name()]
        self.expect("{")
        ch += self.settings()
        return self.b.top_decl(self.meta(i0), ch)

    def context(self) -> Any:
        i0 = self.i
        self.expect("context")
        ch: list[Any] = [self.name()]
        if self.k[self.i] == "tenanted":
            j = self.i
            self.i += 1
            ch.append(self.b.tenanted(self.meta(j), []))
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
        if kind in PAYLOAD_KINDS:
            return self.payload()
        if self.at_name() and self.at_name(1) and self.k[self.i + 2] == "{":
            return self.channel()
        raise GIVE_UP

    def enum(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            member: list[Any] = [self.name()]
            if self.k[self.i] == "terminal":
                t = self.i
                self.i += 1
                member.append(b.terminal_state(self.meta(t), []))
            if self.k[self.i] == RENAMED:
                member.append(self.renamed())
            ch.append(b.enum_member(self.meta(j), member))
            self.accept(",")
        self.i += 1
        return b.enum(self.meta(i0), ch)

    def aggregate(self) -> Any:
        i0 = self.i
        self.i += 1
        b = self.b
        ch: list[Any] = [self.name()]
        if self.k[self.i] == RENAMED:
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
                raise GIVE_UP
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

    def event(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        if self.k[self.i] == RENAMED:
            ch.append(self.renamed())
        self.expect("{")
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            field: list[Any] = [self.name()]
            self.expect(":")
            field.append(self.type())
            if self.k[self.i] == RENAMED:
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

    def channel(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name(), self.name()]
        self.expect("{")
        ch += self.settings()
        return self.b.channel(self.meta(i0), ch)

    def settings(self) -> list[Any]:
        """`key: value …` up to and including the closing `}`."""
        out: list[Any] = []
        b = self.b
        while self.k[self.i] != "}":
            j = self.i
            setting: list[Any] = [self.name()]
            self.expect(":")
            setting.append(self.setting_value())
            out.append(b.channel_setting(self.meta(j), setting))
        self.i += 1
        return out

    def setting_value(self) -> Any:
        i0 = self.i
        kind = self.k[i0]
        b = self.b
        if kind == "INT":
            return b.setting_int(self.meta_of_name(i0), [self.terminal("INT")])
        if kind == "DURATION":
            ch = [self.terminal("DURATION")]
            if self.k[self.i] != "..":
                return b.setting_duration(self.meta(i0), ch)
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
    "internal": _Descent.operation,
    "public": _Descent.operation,
    "extern": _Descent.extern_operation,
    "unique": _Descent.unique,
    "create": _Descent.factory,
}
