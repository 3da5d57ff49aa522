"""The compiler boundary: unreadable files, internal errors, and the public API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loom import lang
from loom.cli.main import app
from loom.lang import REGISTRY, compile_files, compile_sources, compiler, render_text
from loom.lang.check.checker import Checker
from loom.lang.diagnostics import suggest


def test_unreadable_file_is_a_diagnostic(tmp_path: Path) -> None:
    missing = tmp_path / "nope.loom"
    result = compile_files([missing])
    assert not result.ok and result.model is None
    (d,) = result.diagnostics
    assert d.code == "loom.file-unreadable" and d.span.file == str(missing)
    assert "nope.loom" in render_text(result.diagnostics, result.sources)


def test_unreadable_file_next_to_a_good_one(tmp_path: Path) -> None:
    good = tmp_path / "a.loom"
    good.write_text("context A { enum E { X } }")
    bad = tmp_path / "b.loom"
    bad.write_bytes(b"\xff\xfe\x00garbage")
    result = compile_files([good, bad])
    assert [d.code for d in result.diagnostics] == ["loom.file-unreadable"]


def test_internal_error_is_a_diagnostic_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: object, *args: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr(Checker, "__init__", boom)
    result = compile_sources({"x.loom": "context A { }"})
    (d,) = result.diagnostics
    assert d.code == "loom.internal-error" and d.severity == "error"
    assert "kaboom" in d.message and "bug in Loom" in (d.help or "")
    assert result.model is None


def test_public_api() -> None:
    for name in (
        "compile_files",
        "compile_sources",
        "render_text",
        "render_json",
        "Diagnostic",
        "REGISTRY",
        "CompileResult",
    ):
        assert hasattr(lang, name)
    result = compile_sources({"x.loom": "context A { aggregate B { n: int } }"})
    assert (
        result.ok
        and result.model is not None
        and result.sources == {"x.loom": "context A { aggregate B { n: int } }"}
    )


def test_registry_is_well_formed() -> None:
    for code, info in REGISTRY.items():
        assert code == info.code and code.startswith("loom.")
        assert info.severity in ("error", "warning") and info.summary
        assert info.anchor.endswith("#" + code)


def test_diagnostics_are_sorted() -> None:
    result = compile_sources(
        {
            "b.loom": "context A { aggregate X { n: strin } }",
            "a.loom": "context A { aggregate Y { n: nt  m: strng } }",
        }
    )
    keys = [(d.span.file, d.span.line, d.span.column) for d in result.diagnostics]
    assert keys == sorted(keys) and len(keys) == 3


def test_syntax_errors_of_every_file_are_reported_and_nothing_else() -> None:
    # b.loom's `X id` would be "unknown" only because a.loom did not parse: not reported.
    result = compile_sources(
        {
            "a.loom": "context A { aggregate X { n: } }",
            "b.loom": "context A { aggregate Y { x: X id  m: } }",
        }
    )
    assert [(d.span.file, d.code) for d in result.diagnostics] == [
        ("a.loom", "loom.syntax-error"),
        ("b.loom", "loom.syntax-error"),
    ]


@pytest.mark.parametrize(
    ("name", "candidates", "expected"),
    [
        ("amout", ["amount", "balance"], "amount"),
        ("cerate", ["create"], "create"),
        ("x", ["amount"], None),
        ("Account", ["account"], "account"),
        ("serialisable", ["serializable", "read_committed"], "serializable"),
    ],
)
def test_did_you_mean(name: str, candidates: list[str], expected: str | None) -> None:
    assert suggest(name, candidates) == expected


def test_loom_build_checks_the_model_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`loom build` compiles once and generates from that result: the check is not run again."""
    runs: list[int] = []
    real = compiler.check

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(compiler, "check", counted)
    model = Path(__file__).resolve().parents[2] / "examples" / "banking" / "banking.loom"
    result = CliRunner().invoke(app, ["build", str(model), "-o", str(tmp_path / "bank")])
    assert result.exit_code == 0, result.output
    assert len(runs) == 1
