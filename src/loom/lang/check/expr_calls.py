"""Typing of calls inside expressions: functions of the enclosing aggregate or workflow, `now()`,
and the refused forms (operations as values, repository calls inside an aggregate). A mixin of
`ExpressionChecker`; `recv.m(…)` in workflow and handler bodies is judged by `calls.py`.
"""

from __future__ import annotations

from loom.lang.check import builtins, factories, principal, rounding, times, workflows
from loom.lang.check.checker import Checker
from loom.lang.check.scope import Scope
from loom.lang.diagnostics import did_you_mean
from loom.lang.syntax import ast
from loom.model import ir


class CallTyping(Checker):
    def call(self, e: ast.Call, scope: Scope, text: str) -> ir.Expr:
        if isinstance(e.callee, ast.MemberAccess) and principal.is_current_user(
            e.callee.obj, scope
        ):
            return principal.call(self, e, scope, text)
        if isinstance(e.callee, ast.Name) and scope.wf is not None:
            found = workflows.workflow_function_call(self, e, scope, text)
            if found is not None:
                return found
        if isinstance(e.callee, ast.MemberAccess):
            if scope.kind in ("workflow", "service"):
                return workflows.value_call(self, e, scope)
            return self.aggregate_member_call(e, scope)
        if not isinstance(e.callee, ast.Name):
            self.report(
                "loom.unsupported-call",
                "only functions and operations can be called",
                e.callee.span,
                "not callable",
            )
            return self.poison(e)
        n = e.callee.name
        agg = scope.agg
        fns = {f.name: f for f in agg.functions} if agg else {}
        ops = {o.name: o for o in agg.operations} if agg else {}
        if n in fns and scope.reads_fields:
            f = fns[n]
            args = self.check_args(e, scope, f.params, f"function `{n}`", f.name_span)
            if factories.function_call(self, scope, n, f.name_span, e.span):
                return self.poison(e)
            return ir.FunctionCall(n, args, self.type_of(f.result), text)  # type: ignore[arg-type]
        if n in ops and scope.reads_fields:
            for arg in e.args:
                if isinstance(arg, ast.Arg):
                    self.expr(arg.value, scope)
            if scope.kind == "function":
                self.report(
                    "loom.function-block-impure" if scope.block else "loom.function-impure",
                    f"a function cannot call the operation `{n}`",
                    e.span,
                    "an operation changes the aggregate",
                    secondary=[(ops[n].name_span, "operation declared here")],
                    help="functions are pure; compute the value without calling an operation",
                )
            else:
                self.report(
                    "loom.operation-in-expression",
                    f"the operation `{n}` has no value and cannot be used in an expression",
                    e.span,
                    "an operation call",
                    secondary=[(ops[n].name_span, "operation declared here")],
                    help="operations are called from workflows, as statements; use a "
                    "`function` for a computed value",
                )
            return self.poison(e)
        if (n in fns or n in ops) and scope.kind == "default":
            self.report(
                "loom.unknown-name",
                f"a default cannot call `{n}`: it needs the aggregate, which does not exist yet",
                e.callee.span,
                "not available in a default",
                help="use a literal, an enum member or `now()`; or make the value a `derived`",
            )
            return self.poison(e)
        if n == "round" and n not in fns:
            return rounding.round_call(self, e, scope, text)
        if n == "now" and n not in fns:
            if e.args:
                self.report(
                    "loom.argument-count",
                    f"`now()` takes no arguments, got {len(e.args)}",
                    e.span,
                    "no arguments expected",
                    help="write `now()`",
                )
            return ir.Now(ir.DATETIME, text)
        if n in times.FUNCTIONS and n not in fns:
            return times.call(self, e, scope, n, text)
        if n in builtins.FUNCTIONS and n not in fns:
            return builtins.call(self, e, scope, n, text)
        self.report(
            "loom.unknown-name",
            f"unknown function `{n}`",
            e.callee.span,
            "not a function",
            help=did_you_mean(n, [*fns, "now", *times.FUNCTIONS, *builtins.FUNCTIONS])
            if scope.reads_fields
            else did_you_mean(n, ["now", *times.FUNCTIONS, *builtins.FUNCTIONS]),
        )
        for arg in e.args:
            if isinstance(arg, ast.Arg):
                self.expr(arg.value, scope)
        return self.poison(e)

    def aggregate_member_call(self, e: ast.Call, scope: Scope) -> ir.Expr:
        assert isinstance(e.callee, ast.MemberAccess)
        recv = e.callee.obj
        impure = "loom.function-block-impure" if scope.block else "loom.function-impure"
        if isinstance(recv, ast.Name) and recv.name in scope.ctx.repositories:
            code = impure if scope.kind == "function" else "loom.unsupported-call"
            self.report(
                code,
                f"{'a function' if scope.kind == 'function' else 'an aggregate'} cannot use the "
                f"repository `{recv.name}`",
                e.span,
                "repository call",
                help="load what you need in a workflow and pass it in as a parameter",
            )
        elif (
            scope.kind == "function"
            and isinstance(recv, ast.Name)
            and (recv.name in scope.ctx.services or recv.name in scope.ctx.aggregates)
        ):
            self.report(
                impure,
                f"a function cannot call `{recv.name}.{e.callee.name}`",
                e.span,
                "a call with effects",
                help="functions are pure; compute the value from the parameters",
            )
        else:
            self.report(
                "loom.unsupported-call",
                "calls on a value are not supported inside an aggregate",
                e.span,
                "unsupported call",
                help="call a function of this aggregate by name, e.g. `fee(amount)`",
            )
        return self.poison(e)
