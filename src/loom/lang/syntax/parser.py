"""Text to syntax tree. A syntax error becomes a `loom.syntax-error` diagnostic; parsing of that file
stops at the first one (LALR recovery would mostly produce follow-on noise for a language this small).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from loom.lang.diagnostics import Sink, Span
from loom.lang.syntax import ast, reduce
from loom.lang.syntax.grammar import lark_parser
from loom.lang.syntax.tree_to_ast import Build
from loom.lang.syntax.unknown_declaration import TOP_LEVEL_WORDS, report_unknown_declaration

if TYPE_CHECKING:
    from lark import Token
    from lark.exceptions import UnexpectedInput, UnexpectedToken

# lark is imported where this module uses it, not at the top: `syntax.parse` reaches this module
# only for a text its fast parser gave up on, and a process whose texts all parse never loads lark.

# Readable names for the terminals lark reports in "expected ..." sets.
_FRIENDLY = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "a number",
    "DECIMAL": "a number",
    "RENAMED_FROM": "`renamed from`",
    "$END": "end of file",
}
_OPERATORS = {"+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "?", ".", "("}


@functools.cache
def _terminal_text() -> dict[str, str]:
    out = dict(_FRIENDLY)
    for t in lark_parser().terminals:
        if t.pattern.type == "str":
            out[t.name] = f"`{t.pattern.value}`"
    return out


_EXPRESSION_START = {
    "NAME",
    "STRING",
    "INT",
    "DECIMAL",
    "LPAR",
    "LSQB",
    "BANG",
    "MINUS",
    "TRUE",
    "FALSE",
}


def describe_expected(names: set[str] | frozenset[str]) -> str:
    texts = _terminal_text()
    if {"NAME", "STRING", "INT"} <= set(names):
        # Where a value may start, the ten terminals that can begin one read better as one word.
        rest = set(names) - _EXPRESSION_START
        return "an expression" if not rest else describe_expected(rest) + " or an expression"
    shown: set[str] = set()
    operators = 0
    for n in names:
        text = texts.get(n)
        if text is None:
            continue
        if text.strip("`") in _OPERATORS:
            operators += 1
        shown.add(text)
    if operators >= 3:
        # After a complete expression nearly every operator fits; listing them all buries the point.
        shown = {s for s in shown if s.strip("`") not in _OPERATORS} | {"an operator"}
    order = sorted(shown, key=lambda s: (not s.startswith("`"), s))
    if not order:
        return "something else"
    if len(order) == 1:
        return order[0]
    return "one of " + ", ".join(order)


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "STRING":
        return "a string"
    if tok.type in ("INT", "DECIMAL"):
        return f"the number `{tok}`"
    return f"`{tok}`"


def _end_of_text(file: str, text: str) -> Span:
    # Point at the end of the last written thing, not at the blank line after it.
    text = text.rstrip()
    lines = text.split("\n")
    line = len(lines)
    col = len(lines[-1]) + 1
    return Span(file, line, col, line, col + 1, len(text), len(text))


def parse_file(file: str, text: str, sink: Sink) -> ast.File:
    """The file parsed by lark; at a syntax error, its diagnostic and an empty file."""
    # The tree builder runs as the parser reduces, so what it reports waits for the end of the
    # file: a file with a syntax error gets that one diagnostic, never ones about its first half.
    from lark.exceptions import UnexpectedInput  # here: see the top of this module (start-up)

    found = Sink()
    try:
        tree: ast.File = reduce.parse(text, Build(file, found))
    except UnexpectedInput as exc:
        _report_syntax_error(file, text, exc, sink)
        return ast.File(file)
    sink.items += found.items
    return tree


def _report_syntax_error(file: str, text: str, exc: UnexpectedInput, sink: Sink) -> None:
    from lark.exceptions import UnexpectedCharacters, UnexpectedToken  # here (start-up)

    if isinstance(exc, UnexpectedToken):
        unknown = _unknown_declaration(exc)
        if unknown is not None:
            report_unknown_declaration(file, unknown[0], sink, top_level=unknown[1])
            return
        tok = exc.token
        if tok.type == "$END" or getattr(tok, "line", None) is None:
            span = _end_of_text(file, text)
        else:
            span = Span(
                file,
                tok.line,
                tok.column,
                tok.end_line or tok.line,
                tok.end_column or tok.column + 1,
                tok.start_pos or 0,
                tok.end_pos or 0,
            )
        expected = describe_expected(_acceptable(exc))
        before = text[: tok.start_pos or 0].rstrip() if tok.type != "$END" else ""
        if set(exc.expected) == {"NAME"} and before.endswith(":"):
            # Only a name fits after `:` here (not a value), so the grammar wants a type.
            expected = (
                "a type (`string`, `int`, `decimal`, `bool`, `datetime`, `date`, an enum, a value "
                "object, `X id`)"
            )
        found = _describe_token(tok)
        sink.report(
            "loom.syntax-error",
            f"unexpected {found}; expected {expected}",
            span,
            f"expected {expected} here",
            help=_empty_contexts_hint(tok, before)
            or _soft_keyword_hint(tok, before)
            or _renamed_hint(tok, before)
            or _record_hint(tok, before)
            or _var_hint(tok, before)
            or _hint(tok, exc.expected),
        )
        return
    if isinstance(exc, UnexpectedCharacters):
        pos = exc.pos_in_stream or 0
        span = Span(file, exc.line, exc.column, exc.line, exc.column + 1, pos, pos + 1)
        rest = text[pos : pos + 2]
        if rest.startswith('"'):
            msg, label = "unterminated string literal", "this string is never closed"
            hint = 'close the string with `"` on the same line'
        elif rest == "/*":
            msg, label = "unterminated block comment", "this comment is never closed"
            hint = "close the comment with `*/`"
        else:
            expected = describe_expected(exc.allowed or set())
            msg = f"unexpected character `{exc.char}`; expected {expected}"
            label, hint = "not valid here", None
        sink.report("loom.syntax-error", msg, span, label, help=hint)
        return
    span = _end_of_text(file, text)
    sink.report("loom.syntax-error", "unexpected end of file", span, "the model ends here")


def _unknown_declaration(exc: UnexpectedToken) -> tuple[Token, bool] | None:
    """`agregate Foo { … }` parses as far as it does because `NAME NAME {` is how a `channel`
    starts (at the top level, a `deployable` or a `channelSource`); when the first word is none of
    those, that word is the mistake, not what follows. Answers the word and whether it is at the
    top level (no token before it on the stack: only whole declarations)."""
    from lark import Token  # here (start-up)

    try:
        stack = list(exc.interactive_parser.parser_state.value_stack)
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return None
    for i in range(len(stack) - 2):
        first, second, third = stack[i : i + 3]
        if not (
            isinstance(first, Token)
            and isinstance(second, Token)
            and isinstance(third, Token)
            and (first.type, second.type, third.type) == ("NAME", "NAME", "LBRACE")
        ):
            continue
        top_level = not any(isinstance(v, Token) for v in stack[:i])
        if str(first) not in (TOP_LEVEL_WORDS if top_level else ("channel", "resource")):
            return first, top_level
    return None


def _empty_contexts_hint(tok: Token, before: str) -> str | None:
    """`contexts:` with nothing after it: a deployable runs at least one context."""
    if str(tok) != "}" or not re.search(r"\bcontexts\s*:$", before):
        return None
    return (
        "a deployable runs at least one context: `contexts: Orders, Payment`; remove a deployable "
        "that runs none"
    )


_SOFT_KEYWORDS = {
    "id": "a field cannot be named `id`: every aggregate already has one (`x: Customer id` reads the "
    "`id` after a type as part of the type)",
    "immutable": "after a field's type, `immutable` is read as that field's modifier; give this "
    "field another name",
    "message": "after a precondition or invariant, `message` is read as its message; give the field "
    "another name",
    **{
        word: f"`{word}` at the start of an aggregate member begins an operation (`{word} "
        "operation name(…)`): a field cannot be called so; give it another name"
        for word in ("private", "internal", "public")
    },
}


def _soft_keyword_hint(tok: Token, before: str) -> str | None:
    """Explain the one confusing case of contextual keywords: a member named like the keyword that
    may end the previous member (`n: int` then `id: …`)."""
    if tok.type == "$END" or str(tok) not in (":", ":=", "+=", "-="):
        return None
    words = before.split()
    return _SOFT_KEYWORDS.get(words[-1]) if words else None


_RENAMED_ORDER = (
    "`renamed from OLD` comes right after a declaration's name (`aggregate Client renamed from "
    "Customer with crudish { … }`, `event Opened renamed from Created { … }`, `Closed renamed "
    "from Shut`), and in a field after its type and `immutable`, before its default (`nickname: "
    'string immutable renamed from alias = ""`)'
)
_RENAMED_LAST = re.compile(r"\brenamed\s+from$")
_IMMUTABLE_AFTER_RENAMED = re.compile(r"\brenamed\s+from\s+[A-Za-z_][A-Za-z0-9_]*\s+immutable$")


def _renamed_hint(tok: Token, before: str) -> str | None:
    """`renamed from` written out of its place: after the traits, after `immutable` or after the
    default. Out of place, `renamed` reads as the name of a next field, so say where it goes."""
    if tok.type == "RENAMED_FROM":
        return _RENAMED_ORDER
    if _IMMUTABLE_AFTER_RENAMED.search(before):
        return (
            "`immutable` comes before `renamed from`, and the default last: `nickname: string "
            'immutable renamed from alias = ""`'
        )
    if (str(tok) == "from" and before.endswith("renamed")) or _RENAMED_LAST.search(before):
        return _RENAMED_ORDER
    return None


_RECORD_START = re.compile(r"\b[A-Z][A-Za-z0-9_]*\s*(\{\s*[A-Za-z_][A-Za-z0-9_]*\s*)?$")


def _record_hint(tok: Token, before: str) -> str | None:
    """A record expression `Money { … }` where only an expression fits (an operand, the source of
    `if let` / `for`, a condition): the `{` or the first entry's `:` is what fails to parse."""
    if tok.type == "$END" or str(tok) not in ("{", ":"):
        return None
    m = _RECORD_START.search(before)
    if m is None or (str(tok) == "{") != (m.group(1) is None):
        return None
    return (
        "a record `Name { field: value }` is a whole value (a `let`, `return` or `:=` right-hand "
        "side, an entry, an argument, a list item, a default), not an operand nor the source of "
        "`if let` / `for`: bind it first with `let` and use the name here"
    )


_VAR_UNSET = re.compile(r"\bvar\s+([A-Za-z_][A-Za-z0-9_]*)(\s*:[^=\n{}]*)?$")


def _var_hint(tok: Token, before: str) -> str | None:
    """`var total` with no starting value: a var always has one (it is where its type comes
    from, unless declared)."""
    m = _VAR_UNSET.search(before)
    if m is None or str(tok) == "=":
        return None
    name, declared = m.group(1), (m.group(2) or "").strip()
    if declared:
        return f"a `var` starts with a value: `var {name}{declared} = …`"
    return (
        f"a `var` starts with a value: `var {name} = 0`, or, for an empty list, with its type: "
        f"`var {name}: Line[] = []`"
    )


def _acceptable(exc: UnexpectedToken) -> set[str]:
    """The terminals that really fit at the error. LALR merges states, so `exc.expected` can list
    tokens that would fail a step later; simulating each one on a copy of the parser is exact."""
    try:
        accepted = set(exc.interactive_parser.accepts())  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 - only a better message is at stake
        return set(exc.expected)
    return accepted or set(exc.expected)


def _hint(tok: Token, expected: set[str]) -> str | None:
    if str(tok) == "requires" and tok.type != "STRING":
        return (
            "a `requires` gate follows the parameters and the result type, and comes before "
            "`when` (the order they are checked in) and `transactional`: "
            "`operation name(…) requires <who may> when <state> { … }`, "
            "`create(…) requires <who may> { … }`, `commandHandler X(…): T requires <who may> "
            "{ … }`; a reaction, timeout or timer takes none (it runs as the system)"
        )
    if tok.type == "$END":
        return "a `{` is probably missing its `}`"
    if tok.type == "NAME" and "COMMA" in expected:
        return "separate the items with `,`"
    if "NAME" in expected and str(tok).isidentifier() and tok.type != "NAME":
        return f"`{tok}` is a keyword here; choose another name"
    return None
