"""`loom.migrate-pending-events`, data-driven: each folder under events_data/ holds a model before
and after a change of its events, with `// error: loom.migrate-pending-events` on the line of each
finding (in `before.loom` for an event the new model no longer has), or `// migrate: none` first in
`after.loom` when the change keeps every stored event decodable. Every stored event type is taken to
have a stored event each break affects (the database's count is tests/e2e/test_events_in_flight.py);
the docs section's two examples are checked the same way. Also: a snapshot written before snapshots
had an events section is still read, and has none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loom.lang import compile_files, compile_sources, render_text
from loom.migrate.events import Break, EventsSnap, breaks, events_in, events_of, with_events
from loom.migrate.pending import Pending, event_findings
from loom.migrate.snapshot import dumps, empty, read
from tests.lang.test_docs_diagnostics import SECTIONS
from tests.migrate.test_lint_data import expected_of

DATA = Path(__file__).parent / "events_data"
CODE = "loom.migrate-pending-events"


def _events(path: Path) -> EventsSnap:
    result = compile_files([str(path)])
    assert result.ok and result.model is not None, render_text(result.diagnostics, result.sources)
    return events_of(result.model)


def _found(found: list[Break]) -> set[tuple[str, int, str, str]]:
    pending = [Pending(b, {"pending": 1}) for b in found]
    out: set[tuple[str, int, str, str]] = set()
    for d, _ in event_findings(pending, fallback_file="?", old_label="the last migration"):
        name = Path(d.span.file.partition(" ")[0]).name
        out.add((name.removesuffix(".loom"), d.span.line, d.severity, d.code))
    return out


@pytest.mark.parametrize("case", sorted(p for p in DATA.iterdir() if p.is_dir()), ids=str)
def test_case(case: Path) -> None:
    found = breaks(_events(case / "before.loom"), _events(case / "after.loom"))
    assert _found(found) == expected_of(case), [b.describe() for b in found]


def test_docs_section_examples() -> None:
    blocks = re.findall(r"```loom\n(.*?)```", SECTIONS[CODE], re.DOTALL)
    assert len(blocks) == 2, f"{CODE}: expected a before and an after"
    snaps = []
    for text in blocks:
        result = compile_sources({"model.loom": text})
        assert result.ok and result.model is not None, [d.message for d in result.diagnostics]
        snaps.append(events_of(result.model))
    assert {code for *_, code in _found(breaks(*snaps))} == {CODE}


def test_a_snapshot_without_events_is_read(tmp_path: Path) -> None:
    path = tmp_path / "0001_initial_schema.json"
    path.write_text(dumps(empty()))
    assert events_in(read(path)) is None


def test_the_events_section_round_trips(tmp_path: Path) -> None:
    events = _events(DATA / "required-field" / "after.loom")
    path = tmp_path / "0001_initial_schema.json"
    path.write_text(dumps(with_events(empty(), events, DATA)))
    again = events_in(read(path))
    assert again is not None and set(again) == {"Bank.Credited"}
    fields = {f["name"]: f for f in again["Bank.Credited"]["fields"]}
    assert (fields["source"]["default"], fields["channel"]["default"]) == (False, True)
    # relative to the model's folder, as the tables' sources are
    assert str(again["Bank.Credited"]["source"]).startswith("required-field/after.loom:")


def test_what_a_break_affects() -> None:
    old = _events(DATA / "required-field" / "before.loom")
    (missing,) = breaks(old, _events(DATA / "required-field" / "after.loom"))
    assert missing.affects({"account": "a", "amount": 1})
    assert not missing.affects({"account": "a", "amount": 1, "source": "web"})
    old = _events(DATA / "type-change" / "before.loom")
    (changed,) = breaks(old, _events(DATA / "type-change" / "after.loom"))
    assert changed.affects({"amount": 1}) and not changed.affects({"amount": None})


def test_an_event_no_channel_carries_is_never_stored() -> None:
    before = _events(DATA / "removed-event" / "before.loom")
    assert before["Bank.Credited"]["durable"]
    in_process: EventsSnap = {
        **before,
        "Bank.Credited": {**before["Bank.Credited"], "durable": False},
    }
    (removed,) = breaks(in_process, _events(DATA / "removed-event" / "after.loom"))
    assert not removed.durable  # `loom migrate new` prints no line about it
