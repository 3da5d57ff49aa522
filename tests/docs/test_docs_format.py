"""The docs' `loom` examples are in `loom fmt`'s layout, as the repository's `.loom` files are
(scripts/lint.sh): a block that parses is its own formatted text, unless a `<!-- loom fmt: off …
-->` comment right above it (or above its `<!-- expect: … -->`) says why its layout is the point.
`python -m tests.docs.test_docs_format` rewrites the blocks that are not."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang.format import format_source

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(
    r"(?P<off><!-- loom fmt: off[^>]*-->\s*)?(?:<!-- expect: [^>]*? -->\s*)?```loom\n(?P<body>.*?)```",
    re.DOTALL,
)


def formatted(text: str) -> str:
    """`text` with each of its blocks formatted (those that parse and are not marked off)."""

    def block(m: re.Match[str]) -> str:
        new = format_source(m["body"]).text
        if m["off"] or new is None:
            return m[0]
        return m[0][: m.start("body") - m.start()] + new + "```"

    return BLOCK.sub(block, text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_doc_blocks_are_formatted(doc: Path) -> None:
    text = doc.read_text()
    assert formatted(text) == text, f"run `python -m tests.docs.test_docs_format` ({doc.name})"


if __name__ == "__main__":
    for doc in DOCS:
        doc.write_text(formatted(doc.read_text()))
