"""The fast parser's workflows and the other declarations with bodies in their vocabulary:
command and query handlers, domain services, projections, timers."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax.descent_members import Members


class Workflows(Members):
    """Workflows, handlers, domain services, projections and timers, over the members."""

    def command_handler(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name(), self.paren_params()]
        if self.k[self.i] == ":":
            ch.append(self.result())
        if self.k[self.i] == "requires":
            ch.append(self.gate(self.b.requires))
        if self.k[self.i] == "transactional":
            ch.append(self.transactional())
        elif self.k[self.i] == "autocommit":
            ch.append(self.autocommit())
        ch.append(self.block())
        return self.b.command_handler(self.meta(i0), ch)

    def query_handler(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name(), self.paren_params()]
        if self.k[self.i] == ":":
            ch.append(self.result())
        if self.k[self.i] == "requires":
            ch.append(self.gate(self.b.requires))
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

    def autocommit(self) -> Any:
        j = self.i
        self.i += 1
        return self.b.autocommit(self.meta(j), [])

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

    def projection(self) -> Any:
        i0 = self.i
        self.i += 1
        ch: list[Any] = [self.name()]
        self.expect("{")
        while self.k[self.i] != "}":
            j = self.i
            if self.accept("filter"):
                ch.append(self.b.proj_filter(self.meta(j), [self.expr()]))
            else:
                ch.append(self.on() if self.k[self.i] == "on" else self.field())
        self.i += 1
        return self.b.projection(self.meta(i0), ch)

    def workflow(self) -> Any:
        i0 = self.i
        self.i += 1
        b = self.b
        ch: list[Any] = [self.name()]
        while True:
            kind = self.k[self.i]
            if kind == "transactional":
                ch.append(self.transactional())
            elif kind == "autocommit":
                ch.append(self.autocommit())
            elif kind == "eventSourced":
                j = self.i
                self.i += 1
                ch.append(b.event_sourced(self.meta(j), []))
            elif kind == "once":
                j = self.i
                self.i += 1
                ch.append(b.once(self.meta(j), []))
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
            if self.k[self.i] == "requires":
                ch.append(self.gate(b.requires))
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
