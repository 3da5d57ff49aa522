"""`loom fix handle`: each `cases/<name>.in.loom` is rewritten into exactly `cases/<name>.out.loom`,
the rewrite is idempotent, and the real command line behaves (subprocess, exit codes, messages).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loom.codemod import MARKER, fix_files, fix_sources
from loom.lang import compile_files

HERE = Path(__file__).parent
CASES = HERE / "cases"
FOLDER = HERE / "folder"
ROOT = HERE.parents[1]
LOOM = [sys.executable, "-m", "loom.cli"]

# case -> (handles lifted, {handle left in place: a phrase its reason must contain})
EXPECTED: dict[str, tuple[list[str], dict[str, str]]] = {
    "lift_basic": (["close"], {}),
    "lift_transactional": (["pay", "adjust", "settle"], {}),
    "lift_one_line": (["flip"], {}),
    "lift_tricky": (["retitle"], {}),
    "lift_layout": (["bump", "reset", "again"], {}),
    "keep_state": (
        ["nudge"],
        {
            "retry": "reads the workflow's own state (`attempts`)",
            "expedite": "calls the workflow's function (`slaDays`)",
            "poke": "reads the workflow's own state (`this`)",
        },
    ),
    "keep_event_sourced": ([], {"refund": "workflow `Ledger` is eventSourced"}),
    # a header gate moves with the handler; one in the body, or over the state, stays
    "keep_requires": (
        ["ban"],
        {"silence": "`requires` statement", "audit": "`requires` gate reads the workflow's own"},
    ),
    "keep_param_id": ([], {"finish": "a parameter is named `id`"}),
    "keep_two_aggregates": (
        ["reorder", "closeTwo"],
        {"closeAndCharge": "more than one aggregate (`Order`, `Customer`)"},
    ),
    "keep_name_taken": (
        ["reopen"],
        {
            "close": "already taken by commandHandler `close`",
            "isOpen": "already taken by queryHandler `isOpen`",
            "reopen": "already taken by the handle lifted from workflow `Settle`",
        },
    ),
    "already_marked": (["end"], {"close": "own state", "shut": "named `id`"}),
}
# Outputs that use only constructs today's compiler knows; they must compile, apart from one
# `loom.workflow-handle-removed` per handle left in place.
COMPILES = [
    "lift_basic",
    "lift_transactional",
    "lift_one_line",
    "lift_tricky",
    "lift_layout",
    "keep_two_aggregates",
    "keep_name_taken",
    "keep_param_id",
    "already_marked",
]


def _pair(case: str) -> tuple[Path, Path]:
    return CASES / f"{case}.in.loom", CASES / f"{case}.out.loom"


def test_every_case_file_is_listed() -> None:
    found = {p.name.removesuffix(".in.loom") for p in CASES.glob("*.in.loom")}
    assert found == set(EXPECTED)
    assert all(_pair(c)[1].exists() for c in found)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_rewrite_matches_expected(case: str) -> None:
    src, out = _pair(case)
    result = fix_sources({str(src): src.read_text()})[str(src)]
    assert result.error is None
    assert result.text == out.read_text()
    lifted, left = EXPECTED[case]
    assert [x.name for x in result.lifted] == lifted
    assert sorted(x.name for x in result.left) == sorted(left)
    for x in result.left:
        assert left[x.name] in x.reason, (x.name, x.reason)
        if not x.already_marked:
            # The marker sits on the line right above the member, at the reported place.
            lines = result.text.split("\n")
            assert lines[x.line - 1][x.column - 1 :].startswith(f"handle {x.name}")
            assert lines[x.line - 2].strip() == MARKER + x.reason


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_second_run_is_a_no_op(case: str) -> None:
    out = _pair(case)[1]
    text = out.read_text()
    result = fix_sources({str(out): text})[str(out)]
    assert result.text == text and not result.changed
    assert result.lifted == []
    assert all(x.already_marked for x in result.left)


@pytest.mark.parametrize("case", COMPILES)
def test_output_compiles(case: str) -> None:
    out = _pair(case)[1]
    result = compile_files([out])
    codes = [d.code for d in result.diagnostics]
    left = EXPECTED[case][1]
    assert codes == ["loom.workflow-handle-removed"] * len(left), [
        d.message for d in result.diagnostics
    ]


def _without(text: str, keyword: str) -> list[str]:
    """The lines of `text` minus each `keyword name(…) { … }` member, the comment lines right
    above it, and blank lines (the rewrite may drop the blank line that separated a member)."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith(keyword + " "):
            j = i - 1
            while j >= 0 and lines[j].lstrip().startswith("//"):
                keep[j] = False
                j -= 1
            depth, k = 0, i
            while True:
                depth += lines[k].count("{") - lines[k].count("}")
                keep[k] = False
                if depth <= 0:
                    break
                k += 1
            i = k
        i += 1
    return [line for line, kept in zip(lines, keep, strict=True) if kept and line.strip()]


@pytest.mark.parametrize("case", ["lift_basic", "lift_transactional", "keep_state"])
def test_other_text_is_kept_byte_for_byte(case: str) -> None:
    # Apart from the lifted members (and the markers), every line is kept, in the same order.
    src, out = _pair(case)
    text = src.read_text()
    new = "\n".join(line for line in out.read_text().split("\n") if MARKER not in line)
    lifted = EXPECTED[case][0]
    before = fix_sources({"x": text})["x"]
    assert [x.name for x in before.lifted] == lifted
    # Drop exactly the lifted members from the input (marked ones stay).
    kept_in = _without(_rename(text, lifted), "LIFTED")
    assert _without(new, "commandHandler") == kept_in


def _rename(text: str, names: list[str]) -> str:
    for n in names:
        text = text.replace(f"handle {n}(", f"LIFTED {n}(")
    return text


def test_crlf_and_bom_are_preserved(tmp_path: Path) -> None:
    src, out = _pair("lift_basic")
    f = tmp_path / "crlf.loom"
    f.write_bytes(b"\xef\xbb\xbf" + src.read_text().replace("\n", "\r\n").encode())
    [result] = fix_files([f], write=True)
    assert result.error is None and result.changed
    assert f.read_bytes() == b"\xef\xbb\xbf" + out.read_text().replace("\n", "\r\n").encode()


def test_a_context_split_across_files_shares_handler_names() -> None:
    orders, settle = FOLDER / "orders.in.loom", FOLDER / "sub" / "settle.in.loom"
    results = fix_sources({str(orders): orders.read_text(), str(settle): settle.read_text()})
    assert not results[str(orders)].changed
    assert results[str(settle)].text == (FOLDER / "sub" / "settle.out.loom").read_text()
    # Alone, the same file has nothing named `close` to collide with.
    alone = fix_sources({"s.loom": settle.read_text()})["s.loom"]
    assert [x.name for x in alone.lifted] == ["close", "archive"]


def test_a_workflow_left_empty_is_reported() -> None:
    text = """context C {
  aggregate A { n: int  operation bump() { n += 1 } }
  repository As for A { }
  workflow W {
    handle bump(a: A id) {
      let x = As.getById(a)
      x.bump()
    }
  }
}
"""
    result = fix_sources({"w.loom": text})["w.loom"]
    assert [x.name for x in result.lifted] == ["bump"]
    assert result.notes == ["workflow `W` has no member left; give it a `create` or delete it"]
    assert "  workflow W {\n  }\n  commandHandler bump(a: A id) {\n" in result.text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'context A {\n  workflow W {\n    handle x(a: int) { let s = "oops\n',
            "unterminated string",
        ),
        ("context A {\n  workflow W {\n    handle x(a: int) {\n  }\n", "is never closed"),
        ("context A {\n  workflow W {\n    handle x { }\n  }\n}\n", "must be followed by its"),
        ("context A {\n  /* open\n", "unterminated block comment"),
        ("context A { workflow W { create() { ) } } }\n", "does not close"),
        ("context A {\n  workflow W {\n    handle x()\n  }\n}\n", "has no body"),
    ],
)
def test_unscannable_text_is_an_error_not_a_rewrite(text: str, message: str) -> None:
    result = fix_sources({"bad.loom": text})["bad.loom"]
    assert result.error is not None and message in result.error
    assert result.error.startswith("bad.loom:")
    assert result.text == text and not result.changed


# --------------------------------------------------------------------------------------------------
# The real command line


def loom(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*LOOM, *args], check=False, capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def _copy_cases(dest: Path, cases: list[str]) -> dict[Path, Path]:
    """Copy the inputs as `<case>.loom` into dest; returns written file -> expected output."""
    dest.mkdir(parents=True, exist_ok=True)
    out = {}
    for case in cases:
        src, expected = _pair(case)
        target = dest / f"{case}.loom"
        shutil.copyfile(src, target)
        out[target] = expected
    return out


def test_cli_rewrites_files_and_reports(tmp_path: Path) -> None:
    files = _copy_cases(tmp_path, ["lift_basic"])
    files |= _copy_cases(tmp_path / "other", ["keep_param_id"])
    r = loom("fix", "handle", *map(str, files))
    assert r.returncode == 0, r.stdout + r.stderr
    for written, expected in files.items():
        assert written.read_text() == expected.read_text()
    basic, param = (str(p) for p in files)
    assert f"{basic}: lifted 1 handle(s) (close)" in r.stdout
    assert f"{param}: marked 1 handle(s) not lifted" in r.stdout
    assert (
        f"{param}:11:5: handle `finish` of workflow `Checkout` left in place — "
        "a parameter is named `id`"
    ) in r.stdout
    assert "2 file(s) changed" in r.stdout
    # Second run: nothing to write; the marked member is still reported.
    again = loom("fix", "handle", *map(str, files))
    assert again.returncode == 0
    assert "lifted" not in again.stdout and "nothing to change" in again.stdout
    assert "left in place (marked earlier)" in again.stdout
    assert all(w.read_text() == e.read_text() for w, e in files.items())


def test_cli_check_writes_nothing(tmp_path: Path) -> None:
    files = _copy_cases(tmp_path, ["lift_transactional", "keep_requires"])
    before = {p: p.read_text() for p in files}
    r = loom("fix", "handle", "--check", str(tmp_path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert {p: p.read_text() for p in files} == before
    assert "would lift 3 handle(s) (pay, adjust, settle)" in r.stdout
    assert "would lift 1 handle(s) (ban)" in r.stdout
    assert "would mark 2 handle(s) not lifted" in r.stdout
    # Reported positions are those of the files as they are on disk.
    assert "keep_requires.loom:15:5: handle `silence`" in r.stdout
    assert "2 file(s) would change" in r.stdout
    # Once fixed, --check is clean.
    assert loom("fix", "handle", str(tmp_path)).returncode == 0
    clean = loom("fix", "handle", "--check", str(tmp_path))
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "nothing to change" in clean.stdout


def test_cli_folder_argument(tmp_path: Path) -> None:
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    shutil.copyfile(FOLDER / "orders.in.loom", model / "orders.loom")
    shutil.copyfile(FOLDER / "sub" / "settle.in.loom", model / "sub" / "settle.loom")
    (model / "README.txt").write_text("handle this(x: int) { }")  # not a .loom file: ignored
    r = loom("fix", "handle", str(model))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (model / "orders.loom").read_text() == (FOLDER / "orders.out.loom").read_text()
    assert (model / "sub" / "settle.loom").read_text() == (
        FOLDER / "sub" / "settle.out.loom"
    ).read_text()
    assert "(2 file(s) scanned)" in r.stdout
    assert (model / "README.txt").read_text() == "handle this(x: int) { }"


def test_cli_errors_are_sentences(tmp_path: Path) -> None:
    (tmp_path / "bin.loom").write_bytes(b"\xff\xfe not text")
    (tmp_path / "broken.loom").write_text('context A {\n  workflow W {\n    handle x() { "\n')
    good = _copy_cases(tmp_path, ["lift_basic"])
    r = loom("fix", "handle", str(tmp_path), str(tmp_path / "missing.loom"))
    out = r.stdout + r.stderr
    assert "Traceback" not in out
    assert r.returncode == 2
    assert f"error: {tmp_path / 'missing.loom'}: no such file or folder" in r.stderr
    assert f"error: {tmp_path / 'bin.loom'}: cannot read: not UTF-8 text" in r.stderr
    assert f"error: {tmp_path / 'broken.loom'}:3:18: unterminated string literal" in r.stderr
    # The good file is still fixed; the broken ones are untouched.
    assert all(w.read_text() == e.read_text() for w, e in good.items())
    assert (tmp_path / "bin.loom").read_bytes() == b"\xff\xfe not text"
    # A syntax error alone is exit 1.
    r = loom("fix", "handle", str(tmp_path / "broken.loom"))
    assert r.returncode == 1 and "Traceback" not in r.stdout + r.stderr


def test_cli_existing_commands_are_unchanged() -> None:
    r = loom("--help")
    assert r.returncode == 0
    for name in ("check", "build", "run", "fix"):
        assert name in r.stdout


def test_docs_example_is_what_the_codemod_writes() -> None:
    doc = (ROOT / "docs" / "codemods.md").read_text()
    section = doc[doc.index("## Migrating `handle` members") :]
    before, after = (b.split("```", 1)[0] for b in section.split("```loom\n")[1:3])
    result = fix_sources({"settle.loom": before})["settle.loom"]
    assert result.text == after
    assert [x.name for x in result.lifted] == ["close"]


def _all_models() -> list[Path]:
    found = [
        *(p for p in (ROOT / "examples").rglob("*.loom") if p.is_file()),
        *(ROOT / "tests" / "lang" / "data").rglob("*.loom"),
    ]
    return sorted(p for p in found if p.is_file())  # not a `.loom/` build folder


def test_never_raises_and_is_stable_on_every_model_of_the_repo() -> None:
    for path in _all_models():
        text = path.read_text()
        first = fix_sources({str(path): text})[str(path)]
        if first.error is None:
            second = fix_sources({str(path): first.text})[str(path)]
            assert second.text == first.text, path


@pytest.mark.parametrize("case", ["lift_transactional", "keep_state", "lift_tricky"])
def test_never_raises_on_truncated_text(case: str) -> None:
    text = _pair(case)[0].read_text()
    for cut in range(0, len(text), 7):
        result = fix_sources({"t.loom": text[:cut]})["t.loom"]
        assert result.error is not None or result.text is not None
