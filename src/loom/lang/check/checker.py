"""The state of one check and the helpers every rule uses.

`Checker` holds the program, the sink, the sources and the facts being gathered (`facts.py`). It
is abstract in one method, `expr`: expression typing (`expressions.py`) sits above the rules for
the expression forms it dispatches to (records, `currentUser`, workflow state, calls), while those
rules type their own sub-expressions through `ck.expr`. That one late-bound method is what lets
every rule module import only the modules below it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from loom.lang.check import scales
from loom.lang.check.facts import Facts, Reference
from loom.lang.check.scope import Binding, Scope
from loom.lang.diagnostics import Sink, Span
from loom.lang.names.symbols import ContextSymbols, Program
from loom.lang.syntax import ast
from loom.lang.types import ERROR, AnyType, a, assignable, is_error, is_numeric
from loom.model import ir


class Checker(ABC):
    def __init__(self, prog: Program, sink: Sink, sources: dict[str, str]) -> None:
        self.prog = prog
        self.sink = sink
        self.sources = sources
        self.facts = Facts()
        # per aggregate: (calling operation, called operation, call), for cycle detection
        self.own_calls: dict[ast.Aggregate, list[tuple[str | None, str, ast.Call]]] = {}
        self.current_operation: str | None = None
        # record fields whose default is being typed (a value object containing itself)
        self.defaults_in_progress: set[ast.Field] = set()

    @abstractmethod
    def expr(self, e: ast.Expr, scope: Scope, expected: AnyType | None = None) -> ir.Expr:
        """The typed IR form of an expression (ERROR-typed, with a diagnostic, when it is wrong)."""

    def text(self, span: Span) -> str:
        return self.sources.get(span.file, "")[span.start : span.end]

    def poison(self, e: ast.Expr) -> ir.Expr:
        return ir.Literal_(None, ERROR, self.text(e.span))  # type: ignore[arg-type]  # ERROR is no ir.Type: it never reaches lowering

    def refer(self, span: Span, target: Span) -> None:
        """`span` names the declaration whose name is at `target`."""
        self.facts.references.append(Reference(span, target))

    def refer_state(self, name: ast.Name, scope: Scope) -> None:
        """`name` reads or writes a state field of the scope's workflow."""
        wf = scope.wf
        declared = next((f for f in wf.state if f.name == name.name), None) if wf else None
        if declared is not None:
            self.refer(name.span, declared.name_span)

    def type_of(self, t: ast.TypeRef) -> AnyType:
        return self.facts.types.get(t, ERROR)

    def report(
        self,
        code: str,
        message: str,
        span: Span,
        label: str = "",
        *,
        secondary: Sequence[tuple[Span, str]] = (),
        help: str | None = None,
    ) -> None:
        self.sink.report(code, message, span, label, secondary=list(secondary), help=help)

    def mismatch(
        self,
        x: ir.Expr,
        node: ast.Expr,
        target: AnyType,
        message: str,
        secondary: list[tuple[Span, str]] | None = None,
        help: str | None = None,
    ) -> bool:
        """Report `loom.type-mismatch` unless a value of x's type fits `target`, or
        `loom.decimal-scale-exceeded` when it has more digits after the point than the
        `decimal(P, S)` `target` holds. True when it fits."""
        if assignable(x.type, target):
            return scales.check_scale(self.sink, x, node.span, target)
        if help is None and x.type == ir.DECIMAL and target == ir.INT:
            help = "a `decimal` never narrows to `int` implicitly; change the target's type to `decimal`"
        if help is None and x.type == ir.DURATION and is_numeric(target):
            help = f"a duration has a unit: count it with `inDays({x.text})`, `inHours(…)`, `inMinutes(…)` or `inSeconds(…)` (an `int`, truncated toward zero)"
        self.report(
            "loom.type-mismatch",
            message,
            node.span,
            f"this is {a(x.type)}",
            secondary=secondary or [],
            help=help or "convert the value, or change the type",
        )
        return False

    def condition(self, e: ast.Expr, scope: Scope, what: str) -> ir.Expr:
        x = self.expr(e, scope, ir.BOOL)
        if not is_error(x.type) and x.type != ir.BOOL:
            self.report(
                "loom.type-mismatch",
                f"{what} must be a `bool`, not {a(x.type)}",
                e.span,
                f"this is {a(x.type)}",
                help="write a comparison, e.g. `amount > 0`",
            )
        return x

    def root(self, e: ast.Expr, scope: Scope, expected: AnyType | None = None) -> ir.Expr:
        """Type a whole expression (not a part of one) and keep it for lowering."""
        x = self.expr(e, scope, expected)
        self.facts.exprs[e] = x
        return x

    def fields_of(self, ctx: ContextSymbols, agg_name: str) -> dict[str, tuple[str, AnyType, Span]]:
        """Readable members of an aggregate: name -> (kind, type, declaration span)."""
        agg = ctx.aggregates[agg_name]
        out: dict[str, tuple[str, AnyType, Span]] = {
            "id": ("id", ir.IdType(agg.name, ctx.name), agg.name_span)
        }
        for m in agg.members:
            if isinstance(m, ast.Field):
                out.setdefault(m.name, ("field", self.type_of(m.type), m.name_span))
            elif isinstance(m, ast.Derived):
                out.setdefault(m.name, ("derived", self.type_of(m.type), m.name_span))
        return out

    def self_members(self, scope: Scope) -> dict[str, tuple[str, AnyType, Span]]:
        """What a bare name may read as a member of `self`: the aggregate's fields, derived values
        and `id`, or the fields of the value object whose invariants are checked."""
        if scope.agg is not None:
            return self.fields_of(scope.ctx, scope.agg.name)
        if scope.record is not None:
            return {
                f.name: ("field", self.type_of(f.type), f.name_span) for f in scope.record.fields
            }
        return {}

    def check_args(
        self, e: ast.Call, scope: Scope, params: list[ast.Param], what: str, decl: Span
    ) -> tuple[ir.Expr, ...]:
        out: list[ir.Expr] = []
        for i, arg in enumerate(e.args):
            if isinstance(arg, ast.Record) or arg.name is not None:
                self.report(
                    "loom.unsupported-call",
                    f"{what} takes positional arguments",
                    arg.span,
                    "named or record argument",
                    help="pass the values in parameter order, without names",
                )
                return tuple(out)
            pt = self.type_of(params[i].type) if i < len(params) else None
            x = self.expr(arg.value, scope, pt)
            if pt is not None:
                self.mismatch(
                    x,
                    arg.value,
                    pt,
                    f"argument `{params[i].name}` of {what} is {a(pt)}, but this is {a(x.type)}",
                    [(params[i].span, "parameter")],
                )
            out.append(x)
        if len(e.args) != len(params):
            self.report(
                "loom.argument-count",
                f"{what} takes {len(params)} argument"
                f"{'s' if len(params) != 1 else ''}, but {len(e.args)} "
                f"{'were' if len(e.args) != 1 else 'was'} given",
                e.span,
                f"{len(e.args)} given",
                secondary=[(decl, "declared here")],
                help="pass " + (", ".join(f"`{p.name}`" for p in params) or "no arguments"),
            )
        return tuple(out)

    def params_scope(
        self, ctx: ContextSymbols, agg: ast.Aggregate | None, kind: str, params: list[ast.Param]
    ) -> Scope:
        scope = Scope(ctx, agg, kind)
        for p in params:
            scope.names.setdefault(
                p.name, Binding(p.name, self.type_of(p.type), p.name_span, "param")
            )
        return scope

    def warn_unused(self, scope: Scope) -> None:
        for b in scope.names.values():
            if b.kind in ("value", "var") and not b.used and not b.name.startswith("_"):
                word = "let" if b.kind == "value" else "var"
                self.report(
                    "loom.unused-local",
                    f"`{b.name}` is never used",
                    b.span,
                    "assigned but never read",
                    help=f"remove the `{word}`, use the value, or start its name with `_`",
                )

    def bind_local(self, scope: Scope, b: Binding) -> None:
        prev = scope.names.get(b.name)
        if prev is not None:
            what = "parameter" if prev.kind == "param" else "local"
            self.report(
                "loom.duplicate-declaration",
                f"`{b.name}` is already a {what} here",
                b.span,
                "declared again here",
                secondary=[(prev.span, "first declared here")],
                help="choose another name: bindings cannot be redeclared or shadowed",
            )
            return
        scope.names[b.name] = b
