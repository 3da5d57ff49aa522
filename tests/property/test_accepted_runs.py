"""A model `loom check` accepts builds, imports and starts.

For every model of the corpus (tests/property/corpus.py: the examples, the conformance cases, the
docs' blocks, the compiler's and the end-to-end tests' models that compile with no error) and for
models hypothesis derives from it (tests/property/mutations.py), the generated service must import
under a fresh name, start on a fresh SQLite file, answer its OpenAPI document and its list routes
with no 5xx, and carry no pyflakes finding (ruff's F rules: an undefined name, an unused import…).

LOOM_PROPERTY_EXAMPLES=500 explores more mutants than the 40 a run of the suite affords.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import ParameterSet
from hypothesis import HealthCheck, assume, given, note, settings

from tests.property.corpus import Model, accepted, corpus
from tests.property.mutations import Mutant, mutants
from tests.property.service import pyflakes_findings, start_and_probe, write_service

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# CI explores the same examples on every run, and keeps no example database between runs.
DETERMINISTIC: dict[str, Any] = {"derandomize": True, "database": None} if CI else {}
MUTANTS = int(os.environ.get("LOOM_PROPERTY_EXAMPLES", "40"))

# Corpus models that fail today: model id -> (why, what the test raises). Each runs as a strict
# xfail: once fixed it passes, the xfail fails, and its entry must go (with its pattern in
# KNOWN_FINDINGS, if any); failing with another exception fails too.
KNOWN_FAILURES: dict[str, tuple[str, type[Exception]]] = {}
# The same failures as they show in a mutant's findings, which the mutant test lets through: why
# (as in KNOWN_FAILURES) -> a pattern of the finding, e.g. re.compile(r"^\w+/tables\.py:\d+: F401 ").
KNOWN_FINDINGS: dict[str, re.Pattern[str]] = {}


def _params() -> list[ParameterSet]:
    params = []
    for m in corpus():
        marks: list[pytest.MarkDecorator] = []
        if m.id in KNOWN_FAILURES:
            reason, raises = KNOWN_FAILURES[m.id]
            marks.append(pytest.mark.xfail(strict=True, reason=reason, raises=raises))
        params.append(pytest.param(m, id=m.id, marks=marks))
    return params


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path | Exception]:
    """Every corpus model generated once, by id: its package folder, or what generating raised."""
    root = tmp_path_factory.mktemp("accepted")
    out: dict[str, Path | Exception] = {}
    for model in corpus():
        try:
            out[model.id] = write_service(model.sources, root)
        except Exception as exc:  # noqa: BLE001 (reported by that model's test, not the whole module)
            out[model.id] = exc
    return out


@pytest.fixture(scope="module")
def findings(built: dict[str, Path | Exception]) -> dict[Path, list[str]]:
    """Ruff's F rules over every generated package, in one run."""
    return pyflakes_findings([p for p in built.values() if isinstance(p, Path)])


@pytest.mark.parametrize("model", _params())
def test_corpus_model_builds_imports_and_starts(
    model: Model,
    built: dict[str, Path | Exception],
    findings: dict[Path, list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = built[model.id]
    if isinstance(out, Exception):
        raise out
    assert findings[out] == []
    start_and_probe(out, tmp_path / "service.db", monkeypatch)


@settings(
    max_examples=MUTANTS,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    **DETERMINISTIC,
)
@given(mutants([m for m in corpus() if m.id not in KNOWN_FAILURES]))
def test_accepted_mutant_builds_imports_and_starts(mutant: Mutant) -> None:
    assume(bool(mutant.edits) and accepted(mutant.sources) is not None)
    note(f"{mutant.base} + {', '.join(mutant.edits)}")
    for file, text in mutant.sources.items():
        note(f"--- {file}\n{text}")
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        out = write_service(mutant.sources, Path(tmp))
        found = pyflakes_findings([out])[out]
        assert [f for f in found if not any(p.search(f) for p in KNOWN_FINDINGS.values())] == []
        start_and_probe(out, Path(tmp) / "service.db", monkeypatch)
