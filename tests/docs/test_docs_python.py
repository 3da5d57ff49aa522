"""Every `python` block of the docs marked `<!-- run -->` right above it runs as documented: the
block is executed from the repository's root (so it names example models by their paths), then
each `test_*` function it defines is called."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"<!-- run -->\s*```python\n(?P<body>.*?)```", re.DOTALL)


def _blocks() -> list[pytest.ParameterSet]:
    params = []
    for doc in DOCS:
        text = doc.read_text()
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start("body")) + 1
            params.append(pytest.param(doc, line, m.group("body"), id=f"{doc.name}:{line}"))
    return params


def test_the_docs_have_blocks_to_run() -> None:
    assert _blocks()


@pytest.mark.parametrize(("doc", "line", "body"), _blocks())
def test_doc_python_runs(doc: Path, line: int, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    # padded so a failure's traceback names the block's line in the doc
    code = compile("\n" * (line - 1) + body, str(doc), "exec")
    namespace: dict[str, object] = {"__name__": f"doc_{doc.stem}_{line}"}
    exec(code, namespace)  # noqa: S102 - the docs' own examples
    tests = [f for name, f in namespace.items() if name.startswith("test_") and callable(f)]
    assert tests, "a block to run defines test_* functions"
    for test in tests:
        test()
