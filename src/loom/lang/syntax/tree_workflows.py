"""The tree builder's rules of workflows and of the other bodies in their vocabulary: handlers,
domain services, projections, timers, and the timeout statements of a process."""

from __future__ import annotations

from typing import Any

from loom.lang.syntax import ast
from loom.lang.syntax.builder import Positions
from loom.lang.syntax.tree_tokens import TokenReader, millis


class WorkflowRules(TokenReader):
    def _handler(self, kind: str, meta: Positions, ch: list[Any]) -> Any:
        result = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "result"), None)
        tx = next((c for c in ch[2:] if isinstance(c, tuple) and c[0] == "transactional"), None)
        auto = next((c for c in ch[2:] if isinstance(c, tuple) and c[0] == "autocommit"), None)
        gate = next((c[1] for c in ch[2:] if isinstance(c, tuple) and c[0] == "requires"), None)
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
            autocommit=auto[-1] if auto else None,
            requires=gate,
        )

    def command_handler(self, meta: Positions, ch: list[Any]) -> Any:
        return self._handler("command", meta, ch)

    def query_handler(self, meta: Positions, ch: list[Any]) -> Any:
        return self._handler("query", meta, ch)

    def domain_service(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.DomainService(str(ch[0]), self.tsp(ch[0]), list(ch[1:]), self.sp(meta))

    def service_method(self, meta: Positions, ch: list[Any]) -> Any:
        result = next((c[1] for c in ch[2:] if isinstance(c, tuple)), None)
        last = ch[-1]
        body = last if isinstance(last, list) else None
        value = None if isinstance(last, (list, tuple)) else last
        return ast.ServiceMethod(
            str(ch[0]), self.tsp(ch[0]), ch[1], result, body, value, self.sp(meta)
        )

    def event_sourced(self, meta: Positions, ch: list[Any]) -> Any:
        return ("eventSourced", self.sp(meta))

    def once(self, meta: Positions, ch: list[Any]) -> Any:
        return ("once", self.sp(meta))

    def autocommit(self, meta: Positions, ch: list[Any]) -> Any:
        return ("autocommit", self.sp(meta))

    def apply(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Apply(ch[0], ch[1], self.sp(meta))

    def transactional(self, meta: Positions, ch: list[Any]) -> Any:
        if ch:
            return ("transactional", str(ch[0]), self.tsp(ch[0]), self.sp(meta))
        return ("transactional", None, None, self.sp(meta))

    def workflow(self, meta: Positions, ch: list[Any]) -> Any:
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
            autocommit=next((m[-1] for m in modifiers if m[0] == "autocommit"), None),
        )

    def create(self, meta: Positions, ch: list[Any]) -> Any:
        result = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "result"), None)
        by = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "by"), None)
        gate = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "requires"), None)
        return ast.Create(ch[0], result, ch[-1], self.sp(meta), by, requires=gate)

    def by(self, meta: Positions, ch: list[Any]) -> Any:
        return ("by", ch[0])

    def on(self, meta: Positions, ch: list[Any]) -> Any:
        by = next((c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "by"), None)
        return ast.On(ch[0], by, ch[-1], self.sp(meta))

    def projection(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Projection(
            str(ch[0]),
            self.tsp(ch[0]),
            [c for c in ch[1:] if isinstance(c, ast.Field)],
            [c for c in ch[1:] if isinstance(c, ast.On)],
            self.sp(meta),
            [c[1] for c in ch[1:] if isinstance(c, tuple) and c[0] == "filter"],
        )

    def proj_filter(self, meta: Positions, ch: list[Any]) -> Any:
        return ("filter", ch[0])

    def handle(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Handle(str(ch[0]), self.tsp(ch[0]), self.sp(meta))

    def on_timeout(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.OnTimeout(str(ch[0]), self.tsp(ch[0]), ch[1], self.sp(meta))

    def timer(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Timer(
            str(ch[0]), self.tsp(ch[0]), millis(str(ch[1])), self.tsp(ch[1]), ch[2], self.sp(meta)
        )

    def schedule_at(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Schedule(str(ch[0]), self.tsp(ch[0]), ch[1], None, self.sp(meta))

    def schedule_after(self, meta: Positions, ch: list[Any]) -> Any:
        after = ch[1]
        if isinstance(after, ast.Literal) and after.kind == "duration":  # `after 15m`
            ms = after.value // 1000  # type: ignore[operator]
            return ast.Schedule(str(ch[0]), self.tsp(ch[0]), None, ms, self.sp(meta))
        return ast.Schedule(str(ch[0]), self.tsp(ch[0]), None, None, self.sp(meta), after)

    def cancel(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Cancel(str(ch[0]), self.tsp(ch[0]), self.sp(meta))

    def complete(self, meta: Positions, ch: list[Any]) -> Any:
        return ast.Complete(self.sp(meta))

    def keyword_call(self, meta: Positions, ch: list[Any]) -> Any:
        word, args = ch[0], ch[2]
        call = ast.Call(ast.Name(str(word), self.tsp(word)), args, self.sp(meta))
        return ast.ExprStmt(call, self.sp(meta))
