"""Workflow instances outlive a migration (SQLite and PostgreSQL): a process manager of
examples/scheduling, with its timeout armed, gains a state field; after `loom migrate apply` the
running instance holds the field's zero, and its timeout, armed before, fires on the new code."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from loom.cli.main import app
from loom.testing import serve
from loom.testing._clock import VirtualClock

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2030, 1, 7, 9, 0, tzinfo=UTC)
STATE = "  workflow ConfirmationDeadline {\n    appointment: Appointment id\n"


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def _migrate(model: Path, url: str, *flags: str) -> str:
    runner = CliRunner()
    new = runner.invoke(app, ["migrate", "new", str(model), *flags])
    assert new.exit_code == 0, new.output
    applied = runner.invoke(app, ["migrate", "apply", str(model), "--database-url", url])
    assert applied.exit_code == 0, applied.output
    return new.output


async def _request(model: Path, url: str) -> str:
    with VirtualClock(start=START) as clock:
        async with serve([model], url) as http:
            clock.attach(http.service)
            body = {
                "patient": "Ada",
                "practitioner": "Dr Who",
                "startsAt": _iso(START + timedelta(days=1)),
                "confirmBefore": _iso(START + timedelta(hours=1)),
            }
            r = await http.post("/api/workflows/request_appointment", json=body)
            assert r.status_code == 200, r.text
            return str(r.json())


async def _after(model: Path, url: str, appointment: str) -> tuple[dict[str, Any], str]:
    with VirtualClock(start=START + timedelta(minutes=30)) as clock:
        async with serve([model], url) as http:
            clock.attach(http.service)
            path = f"/api/workflows/confirmation_deadline/instances/{appointment}"
            before: dict[str, Any] = (await http.get(path)).json()
            await clock.advance(timedelta(minutes=30))  # the deadline armed by the old code
            status = (await http.get(f"/api/appointments/{appointment}")).json()["status"]
            return before, str(status)


def test_a_new_state_field_reaches_running_instances(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the virtual clock drives the scheduler
    text = (ROOT / "examples/scheduling/scheduling.loom").read_text(encoding="utf-8")
    assert STATE in text
    model = tmp_path / "scheduling.loom"
    model.write_text(text, encoding="utf-8")
    _migrate(model, database_url)
    appointment = asyncio.run(_request(model, database_url))

    model.write_text(text.replace(STATE, STATE + "    reminders: int\n"), encoding="utf-8")
    plan = _migrate(model, database_url)
    assert (
        "add column scheduling_confirmation_deadline_instances.reminders (BigInteger), default 0"
        in plan
    )
    instance, status = asyncio.run(_after(model, database_url, appointment))
    assert (instance["reminders"], instance["ended"]) == (0, False)
    assert [t["name"] for t in instance["timeouts"]] == ["deadline"]
    assert status == "Expired"


CREATE = "      schedule deadline at e.confirmBefore\n"


def test_a_renamed_state_field_keeps_its_value_in_running_instances(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the virtual clock drives the scheduler
    text = (ROOT / "examples/scheduling/scheduling.loom").read_text(encoding="utf-8")
    assert STATE in text and CREATE in text
    v1 = text.replace(STATE, STATE + "    deadlineAt: datetime?\n").replace(
        CREATE, CREATE + "      deadlineAt := e.confirmBefore\n"
    )
    model = tmp_path / "scheduling.loom"
    model.write_text(v1, encoding="utf-8")
    _migrate(model, database_url)
    appointment = asyncio.run(_request(model, database_url))

    v2 = v1.replace(
        "    deadlineAt: datetime?\n", "    expiresAt: datetime? renamed from deadlineAt\n"
    )
    model.write_text(v2.replace("deadlineAt := ", "expiresAt := "), encoding="utf-8")
    plan = _migrate(model, database_url)
    assert "rename column scheduling_confirmation_deadline_instances.deadline_at" in plan, plan
    instance, status = asyncio.run(_after(model, database_url, appointment))
    assert instance["expiresAt"] == _iso(START + timedelta(hours=1)), instance
    assert "deadlineAt" not in instance
    assert [t["name"] for t in instance["timeouts"]] == ["deadline"]
    assert status == "Expired"  # the timeout armed by the old code fired on the new


def test_an_optional_state_field_reaches_running_instances_as_null(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An optional field's zero is null: the column is added with no server default (a default
    of the text 'null' would fill a datetime column with what no reader can parse)."""
    monkeypatch.setenv("LOOM_SCHEDULER", "off")  # the virtual clock drives the scheduler
    text = (ROOT / "examples/scheduling/scheduling.loom").read_text(encoding="utf-8")
    model = tmp_path / "scheduling.loom"
    model.write_text(text, encoding="utf-8")
    _migrate(model, database_url)
    appointment = asyncio.run(_request(model, database_url))

    model.write_text(text.replace(STATE, STATE + "    remindedAt: datetime?\n"), encoding="utf-8")
    plan = _migrate(model, database_url)
    assert "scheduling_confirmation_deadline_instances.reminded_at" in plan, plan
    instance, status = asyncio.run(_after(model, database_url, appointment))
    assert (instance["remindedAt"], instance["ended"]) == (None, False), instance
    assert status == "Expired"
