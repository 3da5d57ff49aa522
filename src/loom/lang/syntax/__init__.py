"""Pass 1, syntax: each file's text to its syntax tree (`ast.File`), every node with its `Span`.

`grammar.lark` is the grammar, `grammar.py` the parser built from it, `parser.py` the syntax-error
messages, `tree_to_ast.py` the tree builder (which `reduce.py` runs as the parser reduces; its
rules in the `tree_*.py` modules) and the package `ast` the nodes. `descent.py` is a faster parser
for text that parses (with `descent_*.py`), feeding the same builder; lark parses whatever it
gives up on. A file with a syntax error contributes an empty `ast.File`
(and its diagnostic); the compiler stops after this pass then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loom.lang.diagnostics import Sink
from loom.lang.syntax import ast, descent
from loom.lang.syntax.parser import parse_file
from loom.lang.syntax.tree_to_ast import Build


@dataclass
class SyntaxResult:
    files: list[ast.File]  # one per source, in the order given


def parse(sources: Mapping[str, str], sink: Sink) -> SyntaxResult:
    """Parse every source (file name -> text); syntax errors go to `sink`."""
    return SyntaxResult([_parse_file(name, text, sink) for name, text in sources.items()])


def _parse_file(file: str, text: str, sink: Sink) -> ast.File:
    found = Sink()
    tree: ast.File | None = descent.parse(text, Build(file, found))
    if tree is not None:
        sink.items += found.items
        return tree
    # lark decides (and words any syntax error); what the fast parser's builder reported is dropped
    return parse_file(file, text, sink)


__all__ = ["SyntaxResult", "ast", "parse"]
