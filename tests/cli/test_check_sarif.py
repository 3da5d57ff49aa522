"""`loom check --format sarif`: a SARIF 2.1.0 log, valid against the standard's own schema (vendored
in data/sarif, see its README), with one result per diagnostic, for code-scanning tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs

from tests.cli.test_cli import loom

SCHEMA = json.loads((Path(__file__).parent / "data/sarif/sarif-schema-2.1.0.json").read_text())
MODEL = """\
context Shop {
  enum Status { Open, Closed }
  event Opened { n: int }
  aggregate Item {
    name: string
    status: Status = Open
    operation close() when status == Open {
      status := Closed
      emit Opened { n: 1 }
    }
  }
  event Seen { n: int }
  workflow watch {
    on(e: Opened) { emit Seen { n: e.n } }
  }
}
"""
BROKEN = """\
context Shop {
  aggregate Item {
    name: string
    operation rename(n: int) { name := n }
  }
}
"""


def _sarif(tmp_path: Path, text: str, expect_rc: int) -> dict[str, Any]:
    model = tmp_path / "my model.loom"  # a space: the URI must escape it
    model.write_text(text)
    r = loom("check", str(model.name), "--format", "sarif", cwd=tmp_path)
    assert r.returncode == expect_rc, r.stderr
    log: dict[str, Any] = json.loads(r.stdout)
    jsonschema_rs.validator_for(SCHEMA).validate(log)
    return log


def test_warnings_are_a_valid_sarif_log(tmp_path: Path) -> None:
    log = _sarif(tmp_path, MODEL, 0)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] == "loom"
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert rules == ["loom.event-unconsumed", "loom.state-dead-end"]
    by_rule = {r["ruleId"]: r for r in run["results"]}
    dead_end = by_rule["loom.state-dead-end"]
    assert dead_end["level"] == "warning"
    assert rules[dead_end["ruleIndex"]] == "loom.state-dead-end"
    assert "`Closed` is not declared terminal" in dead_end["message"]["text"]
    assert "help: if the flow ends there" in dead_end["message"]["text"]
    (where,) = dead_end["locations"]
    assert where["physicalLocation"] == {
        "artifactLocation": {"uri": "my%20model.loom"},
        "region": {"startLine": 2, "startColumn": 23, "endLine": 2, "endColumn": 29},
    }
    related = dead_end["relatedLocations"]
    assert related[0]["message"]["text"] == "the state field"
    assert related[0]["physicalLocation"]["region"]["startLine"] == 6


def test_errors_are_a_valid_sarif_log_and_fail_the_check(tmp_path: Path) -> None:
    log = _sarif(tmp_path, BROKEN, 1)
    (result,) = log["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("loom.type-mismatch", "error")


def test_a_clean_model_is_an_empty_run(tmp_path: Path) -> None:
    log = _sarif(tmp_path, "context Shop { }\n", 0)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_only_check_offers_sarif() -> None:
    r = loom("timers", "--help")
    assert "sarif" not in r.stdout


def test_absolute_paths_are_file_uris_and_other_files_related_locations(tmp_path: Path) -> None:
    """An absolute file name is a `file:` URI; a secondary span in another file is a related
    location there (the cycle's second call, in the other context's file)."""
    first, second = tmp_path / "directory.loom", tmp_path / "dispatch.loom"
    first.write_text(
        "context Directory {\n"
        "  resource dispatch { kind: api  context: Dispatch }\n"
        "  queryHandler Rank(tech: string): int {\n"
        "    let n = dispatch.Load(tech: tech)\n"
        "    return n\n"
        "  }\n"
        "}\n"
    )
    second.write_text(
        "context Dispatch {\n"
        "  resource directory { kind: api  context: Directory }\n"
        "  queryHandler Load(tech: string): int {\n"
        "    let n = directory.Rank(tech: tech)\n"
        "    return n\n"
        "  }\n"
        "}\n"
    )
    r = loom("check", str(first), str(second), "--format", "sarif", cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    log = json.loads(r.stdout)
    jsonschema_rs.validator_for(SCHEMA).validate(log)
    (result,) = log["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("loom.context-cycle", "error")
    where = result["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == first.as_uri()
    assert where["region"]["startLine"] == 4
    (related,) = result["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == second.as_uri()
    assert related["message"]["text"] == "`Dispatch` calls `Directory`"
