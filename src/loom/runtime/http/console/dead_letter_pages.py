# ruff: noqa: B008  (FastAPI query parameters as defaults)
"""The console's dead letters (docs/console.md, "Dead letters"), on the functions of the
dead-letter admin routes (`admin.py`, `dead_letter_admin.py`) and the model's consumers
(`event_consumers.py`):

GET  /_loom/dead-letters[?archived=true]    -> the groups (channel, event, consumer, error
                                               fingerprint) with counts, then the letters
GET  /_loom/dead-letters/redrive?group=…|ids=…  -> the redrive dialog: what will run, the rate
POST /_loom/dead-letters/redrive            -> redrive the group or the selection at that rate
POST /_loom/dead-letters/{id}/redrive       -> redrive one at once (the instance page's button)
POST /_loom/dead-letters/{id}/archive       -> set one aside (listed with ?archived=true)

The dialog is a page of its own, reached by a link (a group's, a letter's) or by the letters'
checkboxes (a GET form): it works without JavaScript. It lists, from the model, what will run:
each consumer of the event (the one whose failure it records marked), its deployable, and the
operations it calls with their gates; for a dead timeout, its process's handler.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import FastAPI, Query, Request
from starlette.responses import Response

from loom.runtime.http.admin import archived_counts, dead_page, redrive
from loom.runtime.http.audit import audited
from loom.runtime.http.console.access import PREFIX, Viewer
from loom.runtime.http.console.kit import PAGE, Screens, fields, paged, writable
from loom.runtime.http.dead_letter_admin import (
    MAX_IDS,
    GroupKey,
    GroupOut,
    RedriveIn,
    archive,
    groups,
    keys_of,
    paced_redrive,
)
from loom.runtime.http.event_consumers import consumers_of, read_events
from loom.runtime.values.errors import InvalidValue, LoomError, NotFound

DEAD_LETTERS = f"{PREFIX}/dead-letters"
DEFAULT_RATE = 10.0  # letters a second: gentle on what the consumers call, done in seconds


def add_dead_letter_pages(app: FastAPI, screens: Screens) -> None:
    events = read_events(screens.views())  # the model's: read once, at the console's first request

    @app.get("/dead-letters", include_in_schema=False)
    async def dead_letters(
        request: Request, archived: bool = Query(False), offset: int = Query(0, ge=0)
    ) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            service = screens.service(request)
            counts = await archived_counts(service, viewer.tenant) if archived else None
            items, total = await dead_page(service, PAGE, offset, None, viewer.tenant, counts)
            query = {"archived": "true"} if archived else {}
            return {
                **paged(request, items, total, offset, query),
                "groups": await groups(service, archived, viewer.tenant),
                "archived": archived,
            }

        return await screens.screen(request, "dead_letters.html", load)

    @app.get("/dead-letters/redrive", include_in_schema=False)
    async def redrive_dialog(
        request: Request,
        group: str = Query(""),
        ids: list[UUID] = Query([], max_length=MAX_IDS),
    ) -> Response:
        async def load(viewer: Viewer) -> dict[str, Any]:
            writable(viewer)
            service = screens.service(request)
            chosen = await _group(service, group, viewer.tenant) if group else None
            selected: list[UUID] = []
            if chosen is not None:
                keys = [chosen.group] * chosen.count
            else:
                found = await keys_of(service, ids, viewer.tenant)
                selected = [i for i in dict.fromkeys(ids) if i in found]
                keys = [found[i] for i in selected]
                if not keys:
                    raise InvalidValue(
                        "choose the dead letters to redrive: none of those given is dead "
                        "(redriven or archived meanwhile?)",
                        path="query.ids",
                    )
            return {
                "group": chosen,
                "ids": selected,
                "count": len(keys),
                "will_run": _will_run(events, keys),
                "rate": DEFAULT_RATE,
            }

        return await screens.screen(request, "redrive.html", load)

    @app.post("/dead-letters/redrive", include_in_schema=False)
    async def redrive_selection(request: Request) -> Response:
        async def run(viewer: Viewer) -> str:
            service = screens.service(request)
            rate, gid, ids = _redrive_form(await fields(request))
            if gid:  # the group as the viewer sees it now
                key = (await _group(service, gid, viewer.tenant)).group
                body = RedriveIn(ids=None, group=key, rate_per_second=rate)
            else:  # the viewer's dead letters among them: another tenant's is none of its
                found = await keys_of(service, ids, viewer.tenant)
                if not found:
                    raise NotFound("DeadLetter", ids[0], "none of the chosen letters is dead")
                body = RedriveIn(ids=[i for i in ids if i in found], rate_per_second=rate)
            done = await paced_redrive(service, request, body, viewer.tenant)
            left = f", {done.remaining} left: redrive again" if done.remaining else ""
            missing = f", {done.missing} no longer dead" if done.missing else ""
            return f"{done.redriven} redriven at {done.rate_per_second:g}/s{missing}{left}"

        return await screens.act(request, DEAD_LETTERS, run)

    @app.post("/dead-letters/{id}/redrive", include_in_schema=False)
    async def redrive_one(request: Request, id: UUID) -> Response:
        async def run(viewer: Viewer) -> str:
            service = screens.service(request)
            if not await redrive(service, id, viewer.tenant):
                raise NotFound("DeadLetter", id, f"no dead letter has the id {id}")
            await audited(service, request, "redrive", [id], {}, "redriven=1")
            return "redriven"

        return await screens.act(request, DEAD_LETTERS, run)

    @app.post("/dead-letters/{id}/archive", include_in_schema=False)
    async def archive_one(request: Request, id: UUID) -> Response:
        async def run(viewer: Viewer) -> str:
            await archive(screens.service(request), request, id, viewer.tenant)
            return "archived"

        return await screens.act(request, DEAD_LETTERS, run)


async def _group(service: Any, gid: str, tenant: str | None) -> GroupOut:
    """The dead letters' group `gid` (its `group_id`) as `tenant` sees it now."""
    for g in await groups(service, False, tenant):
        if g.group_id == gid:
            return g
    raise NotFound(
        "DeadLetterGroup", gid, f"no group of dead letters is {gid}: redriven or archived meanwhile"
    )


def _redrive_form(form: list[tuple[str, str]]) -> tuple[float, str, list[UUID]]:
    """The redrive dialog's form: `rate_per_second`, and `group` (a group id) or `ids`."""
    values: dict[str, list[str]] = {}
    for name, value in form:
        values.setdefault(name, []).append(value.strip())
    rate_text = (values.get("rate_per_second") or [""])[-1] or str(DEFAULT_RATE)
    try:
        rate = float(rate_text)
    except ValueError:
        rate = -1.0
    if not 0 < rate <= 10_000:
        raise InvalidValue(
            f"{rate_text!r} is no rate: give the letters a second, over 0 and at most 10000",
            path="body.rate_per_second",
        )
    group = (values.get("group") or [""])[-1]
    if group:
        return rate, group, []
    try:
        ids = [UUID(i) for i in values.get("ids", []) if i]
    except ValueError:
        raise InvalidValue("a selected dead letter id is no UUID", path="body.ids") from None
    if not ids or len(ids) > MAX_IDS:
        raise InvalidValue(f"choose from 1 to {MAX_IDS} dead letters", path="body.ids")
    return rate, "", ids


def _will_run(events: dict[str, Any], keys: list[GroupKey]) -> list[dict[str, Any]]:
    """What a redrive of letters with these keys sets off, per event (or timeout), from the
    model: its consumers, the ones whose failures the letters record marked."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for key in keys:
        entry = out.setdefault(
            (key.kind, key.event_type),
            {"kind": key.kind, "event": key.event_type, "count": 0, "failed": set()},
        )
        entry["count"] += 1
        if key.consumer:
            entry["failed"].add(key.consumer)
        if key.kind == "event" and "consumers" not in entry:
            try:
                entry["consumers"] = consumers_of(events, key.event_type)
            except LoomError:  # not in the model this service was built from
                entry["consumers"] = None
    return list(out.values())
