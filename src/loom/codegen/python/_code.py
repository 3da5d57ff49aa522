"""Small helpers for emitting already-formatted Python text.

The generated code must pass `ruff format --check` without running a formatter at generation time.
The rule used everywhere: a bracketed construct (call, signature, import list) is written on one line
when the whole line fits in `LINE_LENGTH` columns, otherwise exploded one item per line with a trailing
("magic") comma. ruff keeps both shapes as they are, for any configured line length of 88 or more.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from loom.model import ir

LINE_LENGTH = 88
INDENT = "    "


@dataclass(frozen=True)
class Group:
    """`head item, item, ... tail`, e.g. Group("require(", [...], ")")."""

    head: str
    items: Sequence[Doc]
    tail: str


Doc = str | Group


def flat(doc: Doc) -> str:
    if isinstance(doc, str):
        return doc
    return doc.head + ", ".join(flat(i) for i in doc.items) + doc.tail


def lay(doc: Doc, indent: int = 0, suffix: str = "") -> list[str]:
    """Lines (with indentation) for `doc` at `indent` levels, followed by `suffix`."""
    pad = INDENT * indent
    text = flat(doc) + suffix
    if isinstance(doc, str) and len(pad) + len(text) > LINE_LENGTH and not suffix:
        return _split_statement(doc, indent)
    if isinstance(doc, str) and len(pad) + len(text) > LINE_LENGTH:
        split = _split_item(doc, indent, suffix)
        if split is not None:
            return split
    if isinstance(doc, str) or not doc.items or len(pad) + len(text) <= LINE_LENGTH:
        return [pad + text]
    lines = [pad + doc.head]
    for item in doc.items:
        lines.extend(lay(item, indent + 1, ","))
    lines.append(pad + doc.tail + suffix)
    return lines


_OPEN, _CLOSE = "([{", ")]}"
_PRIORITY = [  # black/ruff delimiter priorities, highest first
    (" if ", " else "),
    (" or ", " and "),
    (" == ", " != ", " < ", " <= ", " > ", " >= ", " is ", " is not ", " in ", " not in "),
    (" + ", " - "),
    (" * ", " / ", " % ", " // "),
]


def _scan(text: str) -> tuple[list[tuple[int, str]], int]:
    """Top-level (outside brackets and strings) delimiters of an expression, and the index of
    the opening bracket matching a final closing one (-1 when the text does not end with one)."""
    found: list[tuple[int, str]] = []
    depth, quote, i, last_open = 0, "", 0, -1
    stack: list[int] = []
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            stack.append(i)
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
            last_open = stack.pop() if stack else -1
        elif depth == 0:
            for level, ops in enumerate(_PRIORITY):
                op = next((o for o in ops if text.startswith(o, i)), None)
                if op is not None:
                    found.append((level, op))
                    i += len(op) - 1
                    break
        i += 1
    ends_with_bracket = bool(text) and text[-1] in _CLOSE and depth == 0
    return found, (last_open if ends_with_bracket else -1)


def _split_args(inner: str) -> list[str]:
    parts, depth, quote, start = [], 0, "", 0
    i = 0
    while i < len(inner):
        ch = inner[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
        i += 1
    if inner[start:].strip():
        parts.append(inner[start:].strip())
    return parts


def _split_item(text: str, indent: int, suffix: str) -> list[str] | None:
    """An item of an exploded bracket (`price=Money(…)`) too long for its line, laid out the way
    ruff format leaves it: its own trailing bracket exploded, one argument a line. None when the
    item is not one call (operators at its top level)."""
    delimiters, open_at = _scan(text)
    if open_at <= 0 or delimiters:
        return None
    head, inner = text[: open_at + 1], text[open_at + 1 : -1]
    if not inner or " for " in inner or len(INDENT * indent + head) > LINE_LENGTH:
        return None
    return lay(Group(head, _split_args(inner), text[-1]), indent, suffix)


def _split_statement(text: str, indent: int) -> list[str]:
    """A statement too long for one line, laid out the way ruff format leaves it: a trailing
    bracket exploded (one item a line, magic trailing comma) when the rest reads without
    parentheses, else the right-hand side of an assignment / return wrapped in parentheses."""
    pad = INDENT * indent
    prefix, expr = "", text
    for lead in ("return ", "raise "):
        if text.startswith(lead):
            prefix, expr = lead, text[len(lead) :]
            break
    else:
        head, sep, rest = text.partition(" = ")
        if sep and _scan(head)[0] == [] and "(" not in head:
            prefix, expr = head + sep, rest
    delimiters, open_at = _scan(expr)
    top = [d for d in delimiters if d[0] == min((d[0] for d in delimiters), default=0)]
    if open_at > 0 or (open_at == 0 and not delimiters):
        head = prefix + expr[: open_at + 1]
        inner = expr[open_at + 1 : -1]
        if (not delimiters or len(top) == 1) and inner and len(pad + head) <= LINE_LENGTH:
            if " for " in inner:  # a comprehension: no trailing comma
                return [pad + head, pad + INDENT + inner, pad + expr[-1]]
            items = _split_args(inner)
            return lay(Group(head, items, expr[-1]), indent)
    # parentheses only where ruff adds them at any line length from 88 to 100
    fits_inside = len(pad) + len(INDENT) + len(expr) <= LINE_LENGTH
    if prefix and delimiters and fits_inside and len(pad) + len(text) > 100:
        return [pad + prefix + "(", pad + INDENT + expr, pad + ")"]
    return [pad + text]


def call(func: str, args: Iterable[Doc], prefix: str = "", tail: str = "") -> Group:
    return Group(f"{prefix}{func}(", list(args), ")" + tail)


def py_str(text: str) -> str:
    """A Python string literal for `text`, quoted the way ruff format leaves it."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == quote:
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def one_line(text: str) -> str:
    """Source text as one line (for comments and rule names): runs of whitespace become a space."""
    return " ".join(text.split())


def docstring(text: str) -> str:
    """A one-line docstring (the text never holds quotes or backslashes that would need care)."""
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if text.endswith('"'):
        text += " "
    return f'"""{text}"""'


def where(origin: ir.Origin) -> str:
    """`banking.loom:24`: the file's base name and the line, as docstrings quote it."""
    return f"{posixpath.basename(origin.file.replace(chr(92), '/'))}:{origin.line}"


def shown_file(file: str) -> str:
    """A model file as the header names it: as given, except that an absolute path is reduced to its
    base name (generated text never holds a machine's absolute paths)."""
    norm = file.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 2 and norm[1] == ":" and norm[2] == "/"):
        return posixpath.basename(norm)
    return norm


def header(files: Sequence[str], what: str) -> list[str]:
    names = ", ".join(shown_file(f) for f in files) or "the model"
    return [
        f"# Generated by Loom from {names}.",
        "# Do not edit: change the model and rebuild.",
        f"# {what}",
    ]


_STDLIB = {
    "collections",
    "dataclasses",
    "datetime",
    "decimal",
    "enum",
    "functools",
    "logging",
    "typing",
    "uuid",
}


def _section(module: str) -> int:
    if module == "__future__":
        return 0
    if module.startswith("."):
        return 4
    top = module.split(".")[0]
    if top in _STDLIB:
        return 1
    if top == "loom":
        return 3
    return 2


def _name_key(name: str) -> tuple[int, str]:
    base = name.split(" as ")[0]
    if base.isupper() and len(base) > 1:
        kind = 0
    elif base[:1].isupper():
        kind = 1
    else:
        kind = 2
    return (kind, base.lower())


@dataclass
class Imports:
    """The imports a module needs, collected while its body is rendered."""

    froms: dict[str, set[str]] = field(default_factory=dict)
    plain: set[str] = field(default_factory=set)

    def add(self, module: str, *names: str) -> None:
        self.froms.setdefault(module, set()).update(names)

    def discard(self, module: str, *names: str) -> None:
        """Forget names added for code that was not written after all."""
        found = self.froms.get(module)
        if found is not None:
            found.difference_update(names)
            if not found:
                del self.froms[module]

    def module(self, module: str) -> None:
        self.plain.add(module)

    def lines(self) -> list[str]:
        sections: dict[int, list[str]] = {}
        for mod in sorted(self.plain):
            sections.setdefault(_section(mod), []).append(f"import {mod}")
        for mod in sorted(self.froms, key=lambda m: (m.startswith("."), m)):
            aliased = sorted(n for n in self.froms[mod] if " as " in n)
            names = sorted((n for n in self.froms[mod] if " as " not in n), key=_name_key)
            sections.setdefault(_section(mod), []).extend(f"from {mod} import {n}" for n in aliased)
            if not names:
                continue
            group = Group(f"from {mod} import (", names, ")")
            if len(flat(group)) <= LINE_LENGTH:
                text = [f"from {mod} import {', '.join(names)}"]
            else:
                text = lay(group)
            sections.setdefault(_section(mod), []).extend(text)
        out: list[str] = []
        for key in sorted(sections):
            if out:
                out.append("")
            out.extend(sections[key])
        return out


def module_text(head: list[str], imports: Imports, blocks: list[list[str]]) -> str:
    """Assemble a module: header, imports, then top-level blocks.

    A block that starts with `def`, `class`, `async def` or a decorator (after its comments) is a
    definition and gets two blank lines around it; consecutive plain statements are separated by one.
    """
    lines = list(head)
    imp = imports.lines()
    if imp:
        lines.append("")
        lines.extend(imp)
    prev_def = False
    for block in blocks:
        if not block:
            continue
        is_def = _is_def(block)
        if is_def or prev_def:
            lines.extend(["", ""])
        else:
            lines.append("")
        lines.extend(block)
        prev_def = is_def
    return "\n".join(lines) + "\n"


def _is_def(block: list[str]) -> bool:
    for line in block:
        if line.startswith("#"):
            continue
        return line.startswith(("def ", "class ", "async def ", "@"))
    return False
