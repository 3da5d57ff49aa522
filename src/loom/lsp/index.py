"""The symbol index of one model: every named declaration with its spans, and every name that
refers to one, built from what the compiler's passes made (`loom.lang.compiler.Stages`).

A declaration is known by the span of its name (its first part's, for a context written in several
files). References come from the compiler, never re-resolved here: the checker's
`Facts.references` (names in bodies and settings), `Facts.types` (written types) and the names
pass's `repo_for` (a repository's aggregate).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from loom.lang.check.facts import Facts
from loom.lang.compiler import Stages
from loom.lang.diagnostics import Span
from loom.lang.names.symbols import ContextSymbols, Program, kind_of
from loom.lang.syntax import ast
from loom.model import ir


@dataclass(eq=False)
class Symbol:
    name: str
    kind: str  # "context", "aggregate", "field", "enum member", "operation", …
    name_span: Span
    span: Span  # the whole declaration
    node: object  # the AST node (the enum, for one of its members)
    container: str  # "" for a context or a deployable; "Orders" or "Orders.Order" inside one
    context: str = ""
    children: list[Symbol] = field(default_factory=list)
    parent: Symbol | None = None
    # a context declared in several files: the name span of every part, the first one first
    parts: list[Span] = field(default_factory=list)


def contains(span: Span, line: int, column: int) -> bool:
    """Whether a 1-based (line, column) is in the span, its end included (a cursor right after a
    name is on it)."""
    return (span.line, span.column) <= (line, column) <= (span.end_line, span.end_column)


@dataclass
class Index:
    files: list[ast.File]
    program: Program
    facts: Facts
    sources: dict[str, str]  # the texts it was built from (its spans are offsets into these)
    symbols: dict[Span, Symbol] = field(default_factory=dict)  # by the name span of each one
    roots: dict[str, list[Symbol]] = field(default_factory=dict)  # per file, in source order
    # every occurrence of a declared name, declarations included: (where, the declaration's key)
    occurrences: dict[str, list[tuple[Span, Span]]] = field(default_factory=dict)

    def at(self, file: str, line: int, column: int) -> Symbol | None:
        """The declaration named at a 1-based position (by its declaration or a reference)."""
        best: tuple[Span, Span] | None = None
        for span, key in self.occurrences.get(file, ()):
            if contains(span, line, column) and (best is None or span.start >= best[0].start):
                best = (span, key)
        return self.symbols.get(best[1]) if best is not None else None

    def uses(self, symbol: Symbol) -> list[Span]:
        """Every span naming `symbol`, its declaration(s) included, in file and position order."""
        key = symbol.name_span
        out = {
            (s.file, s.start, s.end): s
            for spans in self.occurrences.values()
            for s, k in spans
            if k == key
        }
        return [out[k] for k in sorted(out)]

    def all_symbols(self) -> Iterator[Symbol]:
        return iter(self.symbols.values())


def build_index(stages: Stages, sources: dict[str, str]) -> Index | None:
    """The index of a model whose files parsed (None when one did not: the caller keeps the last)."""
    if stages.program is None or stages.facts is None:
        return None
    index = Index(stages.files, stages.program, stages.facts, sources)
    _Declarations(index).run()
    _References(index).run()
    return index


class _Declarations:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.contexts: dict[str, Symbol] = {}

    def add(
        self,
        name: str,
        kind: str,
        name_span: Span,
        span: Span,
        node: object,
        parent: Symbol | None,
        context: str,
    ) -> Symbol:
        container = "" if parent is None else _path(parent)
        sym = Symbol(name, kind, name_span, span, node, container, context, parent=parent)
        self.index.symbols.setdefault(name_span, sym)
        self.occur(name_span, name_span)
        if parent is not None:
            parent.children.append(sym)
        else:
            self.index.roots.setdefault(name_span.file, []).append(sym)
        return sym

    def occur(self, span: Span, key: Span) -> None:
        self.index.occurrences.setdefault(span.file, []).append((span, key))

    def run(self) -> None:
        for f in self.index.files:
            self.index.roots.setdefault(f.name, [])
            for ctx in f.contexts:
                self.context(ctx)
            for d in f.deployables:
                self.add(d.name, "deployable", d.name_span, d.span, d, None, "")
            for c in f.channel_sources:
                self.add(c.name, "channel source", c.name_span, c.span, c, None, "")

    def context(self, ctx: ast.Context) -> None:
        first = self.contexts.get(ctx.name)
        # each part is a symbol of its file's outline; all of them are one declaration, the first
        sym = Symbol(ctx.name, "context", ctx.name_span, ctx.span, ctx, "", ctx.name)
        self.index.roots.setdefault(ctx.name_span.file, []).append(sym)
        if first is None:
            first = self.contexts[ctx.name] = sym
            self.index.symbols[ctx.name_span] = sym
        first.parts.append(ctx.name_span)
        self.occur(ctx.name_span, first.name_span)
        for decl in ctx.decls:
            self.decl(decl, sym, ctx.name)

    def decl(self, d: ast.Decl, parent: Symbol, ctx: str) -> None:
        sym = self.add(d.name, declaration_kind(d), d.name_span, d.span, d, parent, ctx)
        if isinstance(d, ast.Aggregate):
            for m in d.members:
                if isinstance(m, (ast.Field, ast.Derived, ast.Function, ast.Operation)):
                    self.add(m.name, declaration_kind(m), m.name_span, m.span, m, sym, ctx)
        elif isinstance(d, ast.Enum):
            for name, span in d.members:
                self.add(name, "enum member", span, span, d, sym, ctx)
        elif isinstance(d, (ast.Event, ast.ValueObject, ast.Payload, ast.Projection)):
            for f in d.fields:
                self.add(f.name, "field", f.name_span, f.span, f, sym, ctx)
        elif isinstance(d, ast.Workflow):
            for f in d.state:
                self.add(f.name, "field", f.name_span, f.span, f, sym, ctx)
            for fn in d.functions:
                self.add(fn.name, "function", fn.name_span, fn.span, fn, sym, ctx)
            for t in d.timeouts:
                self.add(t.name, "timeout", t.name_span, t.span, t, sym, ctx)
        elif isinstance(d, ast.Repository):
            for find in d.finds:
                self.add(find.name, "find", find.name_span, find.span, find, sym, ctx)
        elif isinstance(d, ast.DomainService):
            for method in d.methods:
                self.add(method.name, "method", method.name_span, method.span, method, sym, ctx)


def _path(sym: Symbol) -> str:
    return f"{sym.container}.{sym.name}" if sym.container else sym.name


_KINDS: dict[type, str] = {
    ast.Field: "field",
    ast.Derived: "derived",
    ast.Function: "function",
    ast.Operation: "operation",
    ast.Payload: "payload",
}


def declaration_kind(node: object) -> str:
    return _KINDS.get(type(node)) or kind_of(node)


class _References:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.program = index.program

    def occur(self, span: Span, target: Span) -> None:
        if target in self.index.symbols:
            self.index.occurrences.setdefault(span.file, []).append((span, target))

    def run(self) -> None:
        for ref in self.index.facts.references:
            self.occur(ref.span, ref.target)
        for t, ty in self.index.facts.types.items():
            self.type_ref(t, ty)
        for f in self.index.files:
            for ctx in f.contexts:
                syms = self.program.contexts.get(ctx.name)
                for d in ctx.decls:
                    if syms is not None and isinstance(d, ast.Repository):
                        self.repository(syms, d)

    def type_ref(self, t: ast.TypeRef, ty: object) -> None:
        while isinstance(ty, (ir.ListType, ir.OptionalType)):
            ty = ty.element if isinstance(ty, ir.ListType) else ty.inner
        home_name = getattr(ty, "context", None)
        if t.qualifier_span is not None and home_name is not None and home_name == t.qualifier:
            # `Orders.OrderPlaced` resolved to an event of `Orders`: the qualifier names it
            self.occur(t.qualifier_span, self.program.contexts[home_name].span)
        target: ast.Decl | None = None
        if isinstance(ty, ir.IdType):
            home = self.program.contexts.get(ty.context)
            target = home.aggregates.get(ty.aggregate) if home else None
        elif isinstance(
            ty, (ir.EnumType, ir.AggregateType, ir.EventType, ir.ValueType, ir.PayloadType)
        ):
            home = self.program.contexts.get(ty.context)
            if home is not None:
                target = (
                    home.payloads.get(ty.name)
                    if isinstance(ty, ir.PayloadType)
                    else home.names.get(ty.name)
                )
        if target is not None:
            self.occur(t.name_span, target.name_span)

    def repository(self, syms: ContextSymbols, repo: ast.Repository) -> None:
        """`repository Orders for Order`: the names pass's `repo_for` says which it is for."""
        agg = syms.aggregates.get(repo.aggregate)
        if agg is not None and syms.repo_for.get(repo.aggregate) is repo:
            self.occur(repo.aggregate_span, agg.name_span)
