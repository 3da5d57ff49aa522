"""The model revision (issue 11 §4): a digest of the model's files, the same for the same model
wherever it is built, and different for a different text. The end-to-end test, events stamped with
it and consumers logging it, is tests/e2e/test_event_revisions.py."""

from __future__ import annotations

import hashlib
from pathlib import Path

from loom.codegen.python import generate
from loom.lang import compile_files, compile_sources
from loom.lang.lower import model_revision

MODEL = """context Desk {
  aggregate Ticket with crudish { email: string }
  repository Tickets for Ticket {}
}
"""
OTHER = MODEL.replace("email: string", "email: string\n  priority: int = 0")


def revision_of(files: list[Path]) -> str:
    result = compile_files(files)
    assert result.ok and result.model is not None
    return result.model.revision


def write(folder: Path, name: str, text: str, newline: str = "\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(text.replace("\n", newline).encode())
    return path


def test_the_revision_is_the_documented_digest() -> None:
    # docs/architecture.md#model-revisions: per file, in name order, its base name, its length
    # in bytes and its text; the first 12 hex digits of the sha256
    data = MODEL.encode()
    expected = hashlib.sha256(b"desk.loom\0%d\0" % len(data) + data).hexdigest()[:12]
    result = compile_sources({"desk.loom": MODEL})
    assert result.model is not None and result.model.revision == expected


def test_the_same_model_built_twice_has_the_same_revision(tmp_path: Path) -> None:
    here = write(tmp_path / "a", "desk.loom", MODEL)
    # another checkout: another folder, Windows line endings, a byte-order mark
    there = write(tmp_path / "b" / "deeper", "desk.loom", "\ufeff" + MODEL, newline="\r\n")
    assert revision_of([here]) == revision_of([there]) == revision_of([here])
    assert len(revision_of([here])) == 12


def test_a_different_text_has_another_revision(tmp_path: Path) -> None:
    one = write(tmp_path / "a", "desk.loom", MODEL)
    two = write(tmp_path / "b", "desk.loom", OTHER)
    renamed = write(tmp_path / "c", "helpdesk.loom", MODEL)
    assert len({revision_of([one]), revision_of([two]), revision_of([renamed])}) == 3


def test_the_order_files_are_given_in_does_not_change_it() -> None:
    second = "context Billing {\n  aggregate Invoice with crudish { total: int }\n}\n"
    forward = model_revision({"desk.loom": MODEL, "billing.loom": second})
    backward = model_revision({"billing.loom": second, "desk.loom": MODEL})
    assert forward == backward != model_revision({"desk.loom": MODEL + second})


def test_the_generated_package_holds_it_once() -> None:
    result = compile_sources({"desk.loom": MODEL})
    assert result.model is not None
    main = generate(result.model, package="desk")["main.py"]
    assert f'MODEL_REVISION = "{result.model.revision}"' in main
    assert main.count(result.model.revision) == 1
    assert "model_revision=MODEL_REVISION" in main
