"""The VS Code extension's grammars as VS Code runs them (editors/vscode/test/tokenize.mjs, on npm's
vscode-textmate and vscode-oniguruma), and what Loom's own lexer reads in the same text (lark's
contextual lexer, every token kept), for the grammar tests to compare."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from lark import Lark, Token

from loom.lang.syntax.grammar import GRAMMAR

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editors/vscode"
TMLANGUAGE = EXTENSION / "syntaxes/loom.tmLanguage.json"

# A scope, one per character: the stack of scopes of the token that character is in.
Scopes = tuple[str, ...]


def node_or_skip(package: str) -> str:
    """`node`, once the extension's npm packages are installed (`scripts/setup.sh test`); without
    them the test skips, or fails under LOOM_REQUIRE_NODE=1 (scripts/test.sh)."""
    node = shutil.which("node")
    if node is None or not (EXTENSION / "node_modules" / package).is_dir():
        message = f"Node or npm's {package} is missing: run `bash scripts/setup.sh test`"
        if os.environ.get("LOOM_REQUIRE_NODE"):
            pytest.fail(message)
        pytest.skip(message)
    return node


def tokenize(texts: dict[str, tuple[str, str]]) -> dict[str, list[list[Scopes]]]:
    """name -> (scope name of the grammar, text) in; name -> per line, per character, its scopes
    out (a line's characters only: the end of a line has none)."""
    node = node_or_skip("vscode-textmate")
    inputs = [{"name": n, "scope": s, "text": t} for n, (s, t) in texts.items()]
    done = subprocess.run(
        [node, str(EXTENSION / "test/tokenize.mjs")],
        input=json.dumps(inputs),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, list[list[Scopes]]] = {}
    for name, lines in json.loads(done.stdout).items():
        out[name] = [
            [tuple(scopes) for start, end, scopes in line for _ in range(start, end)]
            for line in lines
        ]
    return out


@dataclass(frozen=True)
class Lexeme:
    """A token of Loom's lexer: where (1-based line, 0-based columns), what and its text."""

    line: int
    start: int
    end: int
    kind: str  # keyword, name, string, number or comment
    text: str


@functools.cache
def _lark() -> tuple[Lark, list[Token]]:
    comments: list[Token] = []
    parser = Lark(
        GRAMMAR.read_text(encoding="utf-8"),
        parser="lalr",
        lexer="contextual",
        keep_all_tokens=True,  # the keywords too, which the compiler's parser drops
        propagate_positions=True,
        maybe_placeholders=False,
        lexer_callbacks={"LINE_COMMENT": comments.append, "BLOCK_COMMENT": comments.append},
    )
    return parser, comments


@functools.cache
def keyword_terminals() -> dict[str, str]:
    """The grammar's keywords: lark terminal -> the word (`AGGREGATE` -> `aggregate`)."""
    return {
        t.name: t.pattern.value
        for t in _lark()[0].terminals
        if t.pattern.type == "str" and t.pattern.value.isidentifier()
    }


_KINDS = {
    "NAME": "name",
    "STRING": "string",
    "INT": "number",
    "DECIMAL": "number",
    "DURATION": "number",
    "RENAMED_FROM": "keyword",  # `renamed from`: a keyword of two words
    "LINE_COMMENT": "comment",
    "BLOCK_COMMENT": "comment",
}


def lexemes(text: str) -> list[Lexeme] | None:
    """Every word, literal and comment of `text` as Loom's lexer reads it in its place (a word
    spelled like a keyword is a name where the grammar accepts no keyword), one line each (a
    block comment, one per line it spans); None when the text does not parse."""
    parser, comments = _lark()
    comments.clear()
    try:
        tree = parser.parse(text)
    except Exception:  # noqa: BLE001  # any syntax error: the text is not a model to compare with
        return None
    keywords = keyword_terminals()
    found: list[Lexeme] = []
    # iter_subtrees, not scan_values: it does not recurse (a test's deeply nested expression)
    words = [c for t in tree.iter_subtrees() for c in t.children if isinstance(c, Token)]
    for tok in [*words, *comments]:
        kind = "keyword" if tok.type in keywords else _KINDS.get(tok.type)
        if kind is None:
            continue  # punctuation and operators
        assert tok.line is not None and tok.column is not None
        for i, part in enumerate(str(tok).split("\n")):
            start = tok.column - 1 if i == 0 else 0
            found.append(Lexeme(tok.line + i, start, start + len(part), kind, part))
    return found
