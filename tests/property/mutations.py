"""Hypothesis strategies deriving new models from the corpus by edits a modeller makes.

Each edit works on the text: drop a declaration or a statement, duplicate an aggregate under a new
name, rename a declared name everywhere, add a field of a primitive type, add a guarded operation,
add an operation that emits a new event, toggle `transactional` on a workflow. An edit may well
give a model `loom check` refuses; the property keeps only the accepted ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hypothesis import strategies as st

from tests.property.corpus import Model

# (type, default) of an added field; None: no default (optional types only)
PRIMITIVE_FIELDS: tuple[tuple[str, str | None], ...] = (
    ("string", '"x"'),
    ("string(20)", '"short"'),
    ("int", "0"),
    ("decimal", "1.5"),
    ("bool", "false"),
    ("datetime", "now()"),
    ("date?", None),
    ("string?", None),
    ("int[]", "[]"),
)
DECLARATION = re.compile(
    r"^[ \t]*(?:aggregate|event|enum|value|payload|repository|criterion|workflow|handler|service"
    r"|projection|channel|timer|operation|function|derived|invariant|create|on)\b",
    re.MULTILINE,
)
NAMED = re.compile(
    r"\b(?:aggregate|event|enum|value|payload|workflow|operation|function|derived|criterion"
    r"|timer)\s+([A-Za-z_]\w*)"
)
FIELD = re.compile(r"^[ \t]*([a-z_]\w*)\s*:", re.MULTILINE)
AGGREGATE = re.compile(r"^[ \t]*aggregate\s+([A-Za-z_]\w*)[^{\n]*\{", re.MULTILINE)
WORKFLOW = re.compile(r"(\bworkflow\s+\w+)(\s+transactional(?:\([a-z_]+\))?)?(?=\s*\{)")
ISOLATION = ("", "(read_committed)", "(repeatable_read)", "(serializable)")
# names a rename must leave alone: the implicit id, and what the language gives every model
RESERVED = {"id", "create", "on", "now", "self"}


@dataclass(frozen=True)
class Mutant:
    """A model derived from a corpus model: where it came from, the edits, its sources."""

    base: str
    edits: tuple[str, ...]
    sources: dict[str, str]


def code_mask(text: str) -> list[bool]:
    """For each character: is it code (not inside a string or a comment)?"""
    mask = [True] * len(text)
    i = 0
    while i < len(text):
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = len(text) if end < 0 else end + 2
        elif text[i] == '"':
            end = i + 1
            while end < len(text) and text[end] not in '"\n':
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, len(text))
        else:
            i += 1
            continue
        for k in range(i, end):
            mask[k] = False
        i = end
    return mask


def block_end(text: str, mask: list[bool], opening: int) -> int:
    """The index just past the `}` closing the `{` at `opening` (the end of text if unclosed)."""
    depth = 0
    for k in range(opening, len(text)):
        if not mask[k]:
            continue
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end + 1


def declarations(text: str) -> list[tuple[int, int]]:
    """(start, end) of every declaration: its line, or through its block when the line opens one."""
    mask = code_mask(text)
    out = []
    for m in DECLARATION.finditer(text):
        if not mask[m.end() - 1]:
            continue
        line_end = _line_end(text, m.start())
        brace = next((k for k in range(m.end(), line_end) if mask[k] and text[k] == "{"), None)
        end = line_end if brace is None else _line_end(text, block_end(text, mask, brace) - 1)
        out.append((m.start(), end))
    return out


def statement_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line inside a declaration's body that holds code but no brace."""
    mask = code_mask(text)
    out = []
    depth = 0
    start = 0
    for k, ch in enumerate(text):
        if ch == "\n" or k == len(text) - 1:
            line = range(start, k + 1)
            code = "".join(text[i] for i in line if mask[i]).strip()
            if depth >= 2 and code and "{" not in code and "}" not in code:
                out.append((start, k + 1))
            depth += code.count("{") - code.count("}")
            start = k + 1
    return out


Edit = Callable[[st.DrawFn, str, int], str | None]


def _drop_one(draw: st.DrawFn, text: str, spans: list[tuple[int, int]]) -> str | None:
    if not spans:
        return None
    start, end = draw(st.sampled_from(spans))
    return text[:start] + text[end:]


def drop_declaration(draw: st.DrawFn, text: str, n: int) -> str | None:
    return _drop_one(draw, text, declarations(text))


def drop_statement(draw: st.DrawFn, text: str, n: int) -> str | None:
    return _drop_one(draw, text, statement_lines(text))


def _aggregates(text: str) -> list[re.Match[str]]:
    mask = code_mask(text)
    return [m for m in AGGREGATE.finditer(text) if mask[m.start(1)]]


def duplicate_aggregate(draw: st.DrawFn, text: str, n: int) -> str | None:
    found = _aggregates(text)
    if not found:
        return None
    m = draw(st.sampled_from(found))
    name, twin = m.group(1), f"{m.group(1)}Twin{n}"
    end = _line_end(text, block_end(text, code_mask(text), m.end() - 1) - 1)
    copy = re.sub(rf"\b{name}\b", twin, text[m.start() : end])
    if draw(st.booleans()):
        copy += f"  repository {twin}Store for {twin} {{ }}\n"
    return text[:end] + copy + text[end:]


def _inside_aggregate(draw: st.DrawFn, text: str, members: Callable[[str], str]) -> str | None:
    found = _aggregates(text)
    if not found:
        return None
    m = draw(st.sampled_from(found))
    return text[: m.end()] + "\n" + members(m.group(1)) + "\n" + text[m.end() :]


def add_field(draw: st.DrawFn, text: str, n: int) -> str | None:
    type_, default = draw(st.sampled_from(PRIMITIVE_FIELDS))
    field = f"    added{n}: {type_}" + (f" = {default}" if default else "")
    return _inside_aggregate(draw, text, lambda _: field)


def add_guarded_operation(draw: st.DrawFn, text: str, n: int) -> str | None:
    if draw(st.booleans()):
        members = (
            f"    flag{n}: bool = false\n"
            f"    operation mark{n}() when !flag{n} {{ flag{n} := true }}"
        )
    else:
        members = (
            f"    count{n}: int = 0\n"
            f"    operation bump{n}(by: int) when count{n} < 100 {{\n"
            f'      precondition by > 0 message "give a positive step"\n'
            f"      count{n} += by\n"
            f"    }}"
        )
    return _inside_aggregate(draw, text, lambda _: members)


def add_emit(draw: st.DrawFn, text: str, n: int) -> str | None:
    found = _aggregates(text)
    if not found:
        return None
    m = draw(st.sampled_from(found))
    event = f"  event Pinged{n} {{ subject: {m.group(1)} id, at: datetime }}\n"
    operation = f"\n    operation ping{n}() {{ emit Pinged{n} {{ subject: id, at: now() }} }}\n"
    line = text.rfind("\n", 0, m.start()) + 1
    return text[:line] + event + text[line : m.end()] + operation + text[m.end() :]


def toggle_transactional(draw: st.DrawFn, text: str, n: int) -> str | None:
    mask = code_mask(text)
    found = [m for m in WORKFLOW.finditer(text) if mask[m.start()]]
    if not found:
        return None
    m = draw(st.sampled_from(found))
    flag = "" if m.group(2) else " transactional" + draw(st.sampled_from(ISOLATION))
    return text[: m.start()] + m.group(1) + flag + text[m.end() :]


def rename(draw: st.DrawFn, sources: dict[str, str], n: int) -> dict[str, str] | None:
    """A declared name renamed consistently, in every file of the model."""
    names = sorted(
        {
            name
            for text in sources.values()
            for pattern in (NAMED, FIELD)
            for name in pattern.findall(text)
        }
        - RESERVED
    )
    if not names:
        return None
    old = draw(st.sampled_from(names))
    new = f"{'R' if old[0].isupper() else 'r'}enamed{n}{old[0].upper()}{old[1:]}"
    return {f: re.sub(rf"\b{old}\b", new, t) for f, t in sources.items()}


EDITS: tuple[Edit, ...] = (
    drop_declaration,
    drop_statement,
    duplicate_aggregate,
    add_field,
    add_guarded_operation,
    add_emit,
    toggle_transactional,
)


@st.composite
def mutants(draw: st.DrawFn, bases: Sequence[Model]) -> Mutant:
    """One to three edits of one of `bases`."""
    base = draw(st.sampled_from(bases))
    sources = dict(base.sources)
    edits: list[str] = []
    for n in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, len(EDITS))) == len(EDITS):
            renamed = rename(draw, sources, n)
            if renamed is not None:
                sources = renamed
                edits.append("rename")
            continue
        edit = draw(st.sampled_from(EDITS))
        file = draw(st.sampled_from(sorted(sources)))
        changed = edit(draw, sources[file], n)
        if changed is not None:
            sources[file] = changed
            edits.append(f"{edit.__name__}({file})")
    return Mutant(base.id, tuple(edits), sources)
