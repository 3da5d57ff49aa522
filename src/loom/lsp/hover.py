"""Hover: a declaration's signature and its doc comment (the `//` lines right above it: the grammar
has no doc comments of its own); for an event, who emits it and who consumes it, in which
deployables (from the model's event flow, `loom.model.flow`); for an operation, its `requires`
and `when` rules."""

from __future__ import annotations

from loom.lang.diagnostics import Span
from loom.lang.syntax import ast
from loom.lsp.index import Symbol
from loom.lsp.models import Model
from loom.model import flow
from loom.model.deployables import deployable_of


def describe(sym: Symbol, model: Model, text: str) -> str:
    """`text`: of the file declaring `sym`, as the index was built from."""
    parts = [f"```loom\n{signature(sym, text)}\n```"]
    where = f"{sym.kind} in `{sym.container}`" if sym.container else sym.kind
    parts.append(f"*{where}*")
    doc = doc_comment(text, sym.span if sym.kind != "enum member" else sym.name_span)
    if doc:
        parts.append(doc)
    node = sym.node
    if isinstance(node, ast.Operation):
        rules = [
            f"- `{label}` {_source(text, e.span)}"
            for label, e in (("requires", node.requires), ("when", node.when))
            if e is not None
        ]
        parts.append("\n".join(rules) if rules else "No `requires` or `when` rule.")
    if isinstance(node, ast.Event) and sym.kind == "event":
        parts.append(event_flow(model, sym.context, sym.name))
    return "\n\n".join(parts)


def _source(text: str, span: Span) -> str:
    return f"`{' '.join(text[span.start : span.end].split())}`"


def signature(sym: Symbol, text: str) -> str:
    """The declaration's head: its text up to its body's `{` (a field's whole line)."""
    if sym.kind == "enum member":
        return f"{sym.container.split('.')[-1]}.{sym.name}"
    if sym.kind == "context":
        return f"context {sym.name}"
    start = sym.span.start if sym.span.start <= sym.name_span.start else sym.name_span.start
    head = text[start : max(sym.span.end, sym.name_span.end)]
    brace = head.find("{")
    if brace > 0 and sym.kind not in ("field", "derived"):
        head = head[:brace]
    return " ".join(head.split())


def doc_comment(text: str, span: Span) -> str:
    """The `//` comment lines directly above the line where the declaration starts."""
    lines = text.splitlines()
    out: list[str] = []
    i = span.line - 2
    while 0 <= i < len(lines) and lines[i].strip().startswith("//"):
        out.append(lines[i].strip()[2:].strip())
        i -= 1
    return "\n".join(reversed(out))


def event_flow(model: Model, context: str, event: str) -> str:
    if model.model is None:
        return "Who emits and consumes it: known once the model has no errors."
    f = flow.build(model.model)
    key = (context, event)

    def placed(ctx: str) -> str:
        return f"`{deployable_of(model.model, ctx).name}`" if model.model is not None else ""

    emitters = sorted(
        {f"{b.label} (deployable {placed(b.context)})" for b, _ in f.emits.get(key, [])}
    )
    consumers = sorted(
        f"{c.kind} `{c.owner}` of `{c.context}` (deployable {placed(c.context)})"
        for c in f.consumers.get(key, [])
    )
    channel = f.channels.get(key)
    lines = ["**Emitted by**"] + [f"- {e}" for e in emitters or ["nothing in this model"]]
    lines += ["", "**Consumed by**"] + [f"- {c}" for c in consumers or ["nothing in this model"]]
    if channel is not None:
        lines += ["", f"**Carried by** channel `{channel.name}` of `{channel.context}`"]
    return "\n".join(lines)
