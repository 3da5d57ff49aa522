"""Every event carries the model revision that wrote it, and a consumer logs which revision it
read (issue 11 §4), over HTTP on SQLite and PostgreSQL:

- a durable event's outbox row holds the writing service's `MODEL_REVISION`, the relay reads it
  back, and the consumer's log lines name it beside the reader's own revision; a newer model's
  service delivering an older one's pending rows says so;
- an in-process delivery carries the revision on its envelope too;
- a dead letter keeps it, and the admin listing shows it;
- a row from before rows had a revision (NULL), and an outbox created before the column existed,
  are delivered as before, logged as "unknown".
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import column, select, table, text

from loom.migrate.serve import prepare_database
from loom.runtime import SchemaMismatch
from loom.testing import ServiceClient, build_service, serve

OUTBOX = table("__loom_outbox", column("event_type"), column("status"), column("model_revision"))

OLD = """
context Desk {
  aggregate Ticket with crudish {
    email: string
    operation resolve() { emit Resolved { ticket: id, email: email } }
    operation ping() { emit Pinged { ticket: id } }
  }
  repository Tickets for Ticket {}
  event Resolved { ticket: Ticket id, email: string }
  event Pinged { ticket: Ticket id }

  aggregate Survey { ticket: Ticket id  email: string }
  repository Surveys for Survey {}
  // the consumer of the durable event; it refuses one address, which dead-letters the event
  workflow FollowUp {
    ticket: Ticket id
    create(e: Resolved) by e.ticket {
      precondition e.email != "boom@example.test" message "no survey for boom"
      let s = Survey.create({ ticket: e.ticket, email: e.email })
    }
  }
  // the consumer of the in-process one
  projection Pings {
    ticket: Ticket id
    count: int = 0
    on(e: Pinged) by e.ticket { count += 1 }
  }
  channel Support { carries: Resolved  retention: log  maxAttempts: 1 }
}
"""
# the next version of the model: an event field with a default, the same tables
NEW = OLD.replace(
    "event Resolved { ticket: Ticket id, email: string }",
    'event Resolved { ticket: Ticket id, email: string, source: string = "web" }',
)


def model(tmp_path: Path, name: str, text: str) -> list[Path]:
    path = tmp_path / name / "desk.loom"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    return [path]


def revision(c: ServiceClient) -> str:
    found = c.module("main").MODEL_REVISION
    assert isinstance(found, str) and len(found) == 12
    return found


def lines(caplog: pytest.LogCaptureFixture, fact: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [x for x in found if x["event"] == fact]


def read_by(caplog: pytest.LogCaptureFixture, handler: str) -> list[tuple[str, str, str]]:
    """(event type, writer's revision, reader's revision) of each event `handler` read."""
    return [
        (x["event_type"], x["model_revision"], x["reader_revision"])
        for x in lines(caplog, "event_handled")
        if x["handler"] == handler
    ]


async def ok(c: ServiceClient, method: str, path: str, body: Any = None) -> Any:
    r = await c.request(method, path, json=body)
    assert r.status_code < 300, r.text
    return r.json() if r.content else None


async def resolved(c: ServiceClient, email: str = "ann@example.test") -> str:
    ticket = (await ok(c, "POST", "/api/tickets", {"email": email}))["id"]
    await ok(c, "POST", f"/api/tickets/{ticket}/resolve")
    return str(ticket)


async def stored(c: ServiceClient) -> list[tuple[str, str | None]]:
    async with c.service.engine.connect() as conn:
        rows = await conn.execute(select(OUTBOX.c.status, OUTBOX.c.model_revision))
        return sorted((r.status, r.model_revision) for r in rows)


CONSUMER = "Desk.FollowUp.create(Resolved)"


async def test_a_durable_event_carries_the_revision_that_wrote_it(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    async with serve(model(tmp_path, "old", OLD), database_url, settle=False) as old:
        await old.service.stop_relay()  # the old version stops before delivering
        old_revision = revision(old)
        await resolved(old)
        assert await stored(old) == [("pending", old_revision)]
        await old.settle()  # the old version's own consumer reads its own revision
        assert read_by(caplog, CONSUMER) == [("Desk.Resolved", old_revision, old_revision)]
        await resolved(old)  # left pending for the next version

    caplog.clear()
    async with serve(model(tmp_path, "new", NEW), database_url, settle=False) as new:
        await new.service.stop_relay()
        new_revision = revision(new)
        assert new_revision != old_revision  # two model texts, two revisions
        await new.settle()
        # the new version's consumer read an event the old version wrote, and says so
        assert read_by(caplog, CONSUMER) == [("Desk.Resolved", old_revision, new_revision)]
        (dispatched,) = lines(caplog, "event_dispatched")
        assert (dispatched["model_revision"], dispatched["reader_revision"]) == (
            old_revision,
            new_revision,
        )
        await resolved(new)
        assert await stored(new) == sorted(
            [("delivered", old_revision)] * 2 + [("pending", new_revision)]
        )

    # the same model built again (another folder, another build) has the same revision
    async with serve(model(tmp_path, "again", NEW), database_url, settle=False) as again:
        assert revision(again) == new_revision


async def test_an_in_process_delivery_carries_it_too(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    async with serve(model(tmp_path, "m", OLD), database_url) as c:
        ticket = (await ok(c, "POST", "/api/tickets", {"email": "ann@example.test"}))["id"]
        await ok(c, "POST", f"/api/tickets/{ticket}/ping")
        assert (await ok(c, "GET", f"/api/projections/pings/{ticket}"))["count"] == 1
        (line,) = [x for x in lines(caplog, "event_handled") if x["event_type"] == "Desk.Pinged"]
        assert (line["model_revision"], line["reader_revision"]) == (revision(c), revision(c))
        assert "channel" not in line  # it did not go through the outbox


async def test_a_dead_letter_keeps_its_revision(tmp_path: Path, database_url: str) -> None:
    async with serve(model(tmp_path, "m", OLD), database_url) as c:
        await resolved(c, "boom@example.test")  # maxAttempts 1: dead at once
        page = await ok(c, "GET", "/api/admin/dead-letters")
        (dead,) = page["items"]
        assert (dead["event_type"], dead["model_revision"]) == ("Desk.Resolved", revision(c))
        assert "no survey for boom" in dead["last_error"]


async def test_a_row_without_a_revision_is_delivered_as_unknown(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    files = model(tmp_path, "m", OLD)
    async with serve(files, database_url, settle=False) as c:
        await c.service.stop_relay()
        await resolved(c)
        # the outbox as a Loom from before revisions created it: no such column, so no value
        async with c.service.engine.begin() as conn:
            await conn.execute(text("ALTER TABLE __loom_outbox DROP COLUMN model_revision"))

    # Loom's own tables change like the model's: the service refuses the old outbox, and the
    # additive change is applied as `loom run --migrate` applies it (the old row's revision NULL)
    with pytest.raises(SchemaMismatch, match=r"column __loom_outbox.model_revision is missing"):
        async with serve(files, database_url, settle=False):
            pass
    notes = await prepare_database(
        files, build_service(files), database_url, f" --database-url {database_url}", migrate=True
    )
    assert notes == ["  --migrate: add column __loom_outbox.model_revision (String, optional)"]

    caplog.clear()
    async with serve(files, database_url, settle=False) as c:
        await c.service.stop_relay()
        await c.settle()
        assert read_by(caplog, CONSUMER) == [("Desk.Resolved", "unknown", revision(c))]
        await resolved(c, "boom@example.test")
        await c.settle()
        assert await stored(c) == [("dead", revision(c)), ("delivered", None)]
        page = await ok(c, "GET", "/api/admin/dead-letters")
        assert [d["model_revision"] for d in page["items"]] == [revision(c)]
