"""The fast parser's members of declarations: fields (with their renames and defaults),
parameters and results, derived values, invariants, functions, an aggregate's operations, unique
keys and factory, and a record's fields."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax.descent_bodies import Bodies
from loom.lang.syntax.descent_cursor import GIVE_UP, RENAMED


class Members(Bodies):
    """The members of declarations, over the bodies (`descent_bodies.py`)."""

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
        if self.k[self.i] == "readOnly":
            j = self.i
            self.i += 1
            ch.append(b.read_only(self.meta(j), []))
        if self.k[self.i] == RENAMED:
            ch.append(self.renamed())
        if self.k[self.i] == "=":
            ch.append(self.default())
        return b.field(self.meta(i0), ch)

    def renamed(self) -> Any:
        """`renamed from OLD` (one token, then the name)."""
        j = self.i
        if "\n" in self.v[j]:
            raise GIVE_UP  # a token over two lines: positions this parser does not compute
        self.i += 1
        ch = [self.token(j, RENAMED), self.name()]
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
        elif self.k[self.i] in ("internal", "public"):
            mark = (b.internal if self.k[self.i] == "internal" else b.public)(self.meta(i0), [])
            self.i += 1
            if self.k[self.i] == "extern":
                return self.extern_operation(i0, [mark])
            ch.append(mark)
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

    def extern_operation(self, i0: int | None = None, ch: list[Any] | None = None) -> Any:
        """`[internal|public] extern operation …`: `i0` and `ch` hold the mark already read."""
        i0 = self.i if i0 is None else i0
        ch = [] if ch is None else ch
        self.i += 1
        self.expect("operation")
        ch += [self.name(), self.paren_params()]
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
        ch = [self.paren_params()]
        if self.k[self.i] == "requires":
            ch.append(self.gate(self.b.requires))
        ch.append(self.block())
        return self.b.factory(self.meta(i0), ch)

    def record_field(self) -> Any:
        i0 = self.i
        ch: list[Any] = [self.name()]
        self.expect(":")
        ch.append(self.type())
        if self.k[self.i] == "=":
            ch.append(self.default())
        return self.b.record_field(self.meta(i0), ch)
