"""The VS Code extension's TextMate grammar (editors/vscode/syntaxes) against the language itself:
its keywords are grammar.lark's, and every `.loom` file of the repository and every ```loom block
of the docs, tokenised as VS Code does, has each keyword, string, number and comment scoped as
such wherever Loom's lexer reads one (and a word spelled like a keyword that Loom reads as a name
is not scoped as a keyword). Golden scopes for a few files; ```loom fences of Markdown scoped as
the `.loom` files are.

Without Node or the extension's npm packages the tokenising tests skip, unless LOOM_REQUIRE_NODE=1
(scripts/test.sh)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loom.lang.names.type_refs import PRIMITIVES
from loom.lang.syntax.unknown_declaration import DECLARATION_WORDS, TOP_LEVEL_WORDS
from loom.model.builtins import BUILTINS
from tests.docs.test_docs_examples import BLOCK, DOCS
from tests.editors.textmate import (
    ROOT,
    TMLANGUAGE,
    Scopes,
    keyword_terminals,
    lexemes,
    tokenize,
)

GOLDEN = Path(__file__).parent / "golden"
# The samples whose every token's scopes are kept (tests/editors/golden/NAME.scopes): files of
# their own, so an edit of the docs or the examples leaves the golden files alone
GOLDEN_FILES = ("tests/editors/data/highlight.loom", "tests/editors/data/fences.md")
# The Markdown file whose ```loom fences are compared with the same text as a `.loom` file
FENCED = "docs/language.md"
LOOM = "source.loom"
MARKDOWN = "text.html.markdown"

# What a kind of token must be scoped as (some scope of the character starts with one of these)
EXPECTED = {
    "keyword": ("keyword.", "storage.", "constant.language."),
    "string": ("string.",),
    "number": ("constant.numeric.",),
    "comment": ("comment.",),
}


def _grammar() -> dict[str, Any]:
    return dict(json.loads(TMLANGUAGE.read_text(encoding="utf-8")))


def _words(pattern: str) -> set[str]:
    """The words of a `\\b(?:a|b|c)\\b` alternation (escapes such as `\\b` and `\\s` aside)."""
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"\\.", " ", pattern)))


def test_the_grammars_keywords_are_the_languages() -> None:
    repository = _grammar()["repository"]
    listed = [w for p in repository["keywords"]["patterns"] for w in _words(p["match"])]
    assert sorted(listed) == sorted(set(listed)), "a keyword listed twice"
    assert set(listed) == set(keyword_terminals().values())
    # the declaring words scoped with the name they declare: keywords, or the words that start a
    # declaration without being keywords (`channel`, `deployable`, ...)
    declaring = {*keyword_terminals().values(), *DECLARATION_WORDS, *TOP_LEVEL_WORDS}
    for p in repository["declarations"]["patterns"]:
        head = p["match"].split("\\s+")[0]
        assert _words(head) <= declaring, head


def test_the_grammars_types_and_functions_are_the_compilers() -> None:
    repository = _grammar()["repository"]
    assert _words(repository["types"]["match"]) == set(PRIMITIVES)
    builtins = repository["calls"]["patterns"][0]["match"].split("(?=")[0]
    assert _words(builtins) == set(BUILTINS)


def _sources() -> dict[str, str]:
    """Every `.loom` file of the repository and every ```loom block of the docs, by a name."""
    files = subprocess.run(
        ["git", "ls-files", "*.loom"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    texts = {f: (ROOT / f).read_text(encoding="utf-8") for f in files}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("body")) + 1
            texts[f"{doc.relative_to(ROOT)}:{line}"] = m.group("body")
    return texts


@pytest.fixture(scope="module")
def scoped() -> tuple[dict[str, str], dict[str, list[list[Scopes]]]]:
    texts = _sources()
    texts |= {
        f: (ROOT / f).read_text(encoding="utf-8") for f in GOLDEN_FILES if f.endswith(".loom")
    }
    markdown = {
        f: (ROOT / f).read_text(encoding="utf-8")
        for f in {*GOLDEN_FILES, FENCED}
        if f.endswith(".md")
    }
    lines = tokenize(
        {
            **{n: (LOOM, t) for n, t in texts.items()},
            **{n: (MARKDOWN, t) for n, t in markdown.items()},
        }
    )
    return {**texts, **markdown}, lines


def test_every_model_text_is_scoped_as_loom_reads_it(
    scoped: tuple[dict[str, str], dict[str, list[list[Scopes]]]],
) -> None:
    texts, lines = scoped
    wrong: list[str] = []
    compared = 0
    for name, text in texts.items():
        if name.endswith(".md"):
            continue
        found = lexemes(text)
        if found is None:
            continue  # a test's text with a syntax error on purpose
        compared += 1
        for lex in found:
            chars = lines[name][lex.line - 1][lex.start : lex.end]
            marks = [c for c, ch in zip(chars, lex.text, strict=True) if not ch.isspace()]
            keyword_like = any(s.startswith(EXPECTED["keyword"]) for c in marks for s in c)
            if lex.kind == "name":
                ok = lex.text not in keyword_terminals().values() or not keyword_like
            else:
                ok = all(any(s.startswith(EXPECTED[lex.kind]) for s in c) for c in marks)
            if not ok:
                scopes = sorted({s for c in marks for s in c} - {LOOM})
                wrong.append(f"{name}:{lex.line}:{lex.start + 1} {lex.kind} `{lex.text}` {scopes}")
    assert compared > 300
    assert not wrong, f"{len(wrong)} mis-scoped tokens:\n" + "\n".join(wrong[:40])


def test_the_grammar_names_no_word_the_language_does_not_have() -> None:
    """Every word in the grammar's patterns is a keyword, a primitive type, a built-in function or
    a word that starts a declaration, so a renamed keyword cannot linger in a pattern."""
    known = {*keyword_terminals().values(), *PRIMITIVES, *BUILTINS}
    known |= {*DECLARATION_WORDS, *TOP_LEVEL_WORDS, "renamed", "from", "ms", "s", "m", "h", "d"}

    def patterns(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [v for k, v in node.items() if k in ("match", "begin", "end")]
            return found + [p for v in node.values() for p in patterns(v)]
        return [p for v in node for p in patterns(v)] if isinstance(node, list) else []

    for pattern in patterns(_grammar()):
        # escapes first (`\\[` is a bracket), then character classes
        bare = re.sub(r"\[[^\]]*\]", " ", re.sub(r"\\.", " ", pattern))
        assert _words(bare) <= known, pattern
        # a list of the primitive types or the built-ins, wherever one is, is the whole list
        for group in re.findall(r"\(\?:([A-Za-z_|]+)\)", pattern):
            words = set(group.split("|"))
            assert not words & set(PRIMITIVES) or set(PRIMITIVES) <= words, pattern
            assert not words & set(BUILTINS) or set(BUILTINS) == words, pattern


def _render(text: str, lines: list[list[Scopes]]) -> str:
    """Each line, and under it a caret line per token (its spaces aside) with its scopes (the
    file's own root scope left out)."""
    out = []
    for line, chars in zip(text.split("\n"), lines, strict=True):
        out.append(line)
        start = 0
        while start < len(chars):
            end = start
            while end < len(chars) and chars[end] == chars[start]:
                end += 1
            word = line[start:end]
            if word.strip():
                at = start + len(word) - len(word.lstrip())
                scopes = " ".join(chars[start][1:]) or "-"  # `-`: the file's root scope only
                out.append(" " * at + "^" * len(word.strip()) + " " + scopes)
            start = end
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_golden_scopes(
    name: str,
    scoped: tuple[dict[str, str], dict[str, list[list[Scopes]]]],
    update_snapshots: bool,
) -> None:
    texts, lines = scoped
    got = _render(texts[name], lines[name])
    golden = GOLDEN / f"{Path(name).name}.scopes"
    if update_snapshots:
        golden.write_text(got, encoding="utf-8")
    assert golden.exists(), f"no {golden.name}: run pytest with --update-snapshots"
    assert got == golden.read_text(encoding="utf-8"), (
        f"tests/editors/golden/{golden.name} differs (run with --update-snapshots)"
    )


def test_loom_fences_of_markdown_are_scoped_as_loom_files(
    scoped: tuple[dict[str, str], dict[str, list[list[Scopes]]]],
) -> None:
    """Inside a ```loom fence of a docs page, opened as Markdown, every character has the scopes it
    has in the same text opened as a `.loom` file, under the fence's embedded-Loom scope."""
    texts, lines = scoped
    fenced = [n for n in texts if n.startswith(f"{FENCED}:")]
    assert len(fenced) > 20
    embedded = (MARKDOWN, "markup.fenced_code.block.markdown", "meta.embedded.block.loom")
    page = lines[FENCED]
    for name in fenced:
        first = int(name.rsplit(":", 1)[1]) - 1
        alone = lines[name][:-1]  # the body ends with the newline before the closing fence
        for i, chars in enumerate(alone):
            inside = page[first + i]
            assert [c[: len(embedded)] for c in inside] == [embedded] * len(chars), (name, i)
            assert [c[len(embedded) :] for c in inside] == [c[1:] for c in chars], (name, i)
        after = page[first + len(alone)]  # the closing fence: Markdown's again
        assert all("meta.embedded.block.loom" not in c for c in after), name
