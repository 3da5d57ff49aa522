"""`loom fmt` as a user runs it: files rewritten in place, `--check` and `--diff` that write
nothing, `-` for standard input, a folder as its `.loom` files, a file that does not parse left
untouched with its diagnostics printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.test_cli import LOOM

MESSY = "context Shop {\n    aggregate Item { name: string  size:int }\n}\n"
TIDY = "context Shop {\n  aggregate Item {\n    name: string\n    size: int\n  }\n}\n"
BROKEN = "context Shop {\n  aggregate Item { name: }\n}\n"


def fmt(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOM, "fmt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_files_are_rewritten_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.loom").write_text(MESSY)
    (tmp_path / "b.loom").write_text(TIDY)
    r = fmt("a.loom", "b.loom", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.loom").read_text() == TIDY
    assert "1 file(s) reformatted, 1 unchanged" in r.stderr
    again = fmt("a.loom", "b.loom", cwd=tmp_path)
    assert again.returncode == 0 and "0 file(s) reformatted, 2 unchanged" in again.stderr


def test_check_lists_the_files_that_would_change_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.loom").write_text(MESSY)
    (tmp_path / "b.loom").write_text(TIDY)
    r = fmt("--check", "a.loom", "b.loom", cwd=tmp_path)
    assert (r.returncode, r.stdout) == (1, "a.loom\n")
    assert (tmp_path / "a.loom").read_text() == MESSY
    tidy = fmt("--check", "b.loom", cwd=tmp_path)
    assert (tidy.returncode, tidy.stdout) == (0, "")


def test_diff_prints_a_unified_diff_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.loom").write_text(MESSY)
    r = fmt("--diff", "a.loom", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stdout.startswith("--- a.loom\n+++ a.loom\n@@")
    assert "-    aggregate Item { name: string  size:int }\n+  aggregate Item {\n" in r.stdout
    assert (tmp_path / "a.loom").read_text() == MESSY


def test_a_folder_is_its_loom_files(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model/a.loom").write_text(MESSY)
    (tmp_path / "model/notes.txt").write_text(MESSY)
    r = fmt("model", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "model/a.loom").read_text() == TIDY
    assert (tmp_path / "model/notes.txt").read_text() == MESSY
    (tmp_path / "empty").mkdir()
    empty = fmt("empty", cwd=tmp_path)
    assert empty.returncode == 2 and "no .loom file in empty" in empty.stderr


def test_dash_reads_stdin_and_writes_stdout(tmp_path: Path) -> None:
    r = fmt("-", cwd=tmp_path, stdin=MESSY)
    assert (r.returncode, r.stdout) == (0, TIDY)
    check = fmt("--check", "-", cwd=tmp_path, stdin=MESSY)
    assert (check.returncode, check.stdout) == (1, "<stdin>\n")


def test_a_file_that_does_not_parse_is_untouched_and_its_diagnostics_printed(
    tmp_path: Path,
) -> None:
    (tmp_path / "bad.loom").write_text(BROKEN)
    (tmp_path / "good.loom").write_text(MESSY)
    r = fmt("bad.loom", "good.loom", "--color", "never", cwd=tmp_path)
    assert r.returncode == 1
    assert "bad.loom:2:26: error[loom.syntax-error]" in r.stderr
    assert "Traceback" not in r.stderr
    assert (tmp_path / "bad.loom").read_text() == BROKEN
    assert (tmp_path / "good.loom").read_text() == TIDY  # the others are still formatted
    stdin = fmt("-", cwd=tmp_path, stdin=BROKEN)
    assert (stdin.returncode, stdin.stdout) == (1, "")
    assert "<stdin>:2:26: error[loom.syntax-error]" in stdin.stderr


def test_a_missing_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    r = fmt("nowhere.loom", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.startswith("error: cannot read nowhere.loom:")
