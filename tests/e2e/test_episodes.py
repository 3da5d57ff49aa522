"""Processes that run again (docs/processes.md#episodes), over HTTP on SQLite and PostgreSQL with
a virtual clock (tests/e2e/models/dunning.loom): after `complete`, the next starter for the same
key starts a new episode with its own state and timeout; the ended episodes stay listed; a
non-starter for an ended instance is still ignored; a `once` workflow ignores a late starter and
logs it; concurrent starters for one ended instance start one episode, never two."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from loom.testing import ServiceClient, VirtualClock, serve

MODEL = [Path(__file__).parent / "models" / "dunning.loom"]
START = datetime(2030, 5, 6, 9, 0, tzinfo=UTC)
DUNNING = "/api/workflows/dunning/instances"


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


@pytest.fixture
async def clock() -> AsyncIterator[VirtualClock]:
    with VirtualClock(start=START) as c:
        yield c


@pytest.fixture
async def billing(database_url: str, clock: VirtualClock) -> AsyncIterator[ServiceClient]:
    async with serve(MODEL, database_url, clock=clock) as client:
        yield client


async def get(c: ServiceClient, path: str) -> Any:
    r = await c.get(path)
    assert r.status_code == 200, r.text
    return r.json()


async def post(c: ServiceClient, path: str, body: dict[str, Any] | None = None) -> Any:
    r = await c.post(path, json=body or {})
    assert r.status_code in (200, 204), r.text
    return r.json() if r.status_code == 200 else None


async def subscribe(c: ServiceClient) -> str:
    return str(await post(c, "/api/workflows/open_subscription", {"customer": "Ada"}))


def ignored_once(caplog: pytest.LogCaptureFixture, key: str) -> list[dict[str, Any]]:
    found = [json.loads(r.getMessage()) for r in caplog.records if r.name == "loom.events"]
    return [
        x
        for x in found
        if x["event"] == "process_ignored_ended" and x["key"] == key and x.get("once") is True
    ]


async def test_a_starter_after_complete_starts_the_next_episode(
    billing: ServiceClient, clock: VirtualClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="loom.events")
    sub = await subscribe(billing)
    await post(billing, f"/api/subscriptions/{sub}/fail")  # episode 1, grace due at START + 3d
    first = await get(billing, f"{DUNNING}/{sub}")
    assert (first["episode"], first["ended"], first["failures"]) == (1, False, 1)
    assert first["startedAt"] == _iso(START) and first["endedAt"] is None
    assert [(t["name"], t["dueAt"]) for t in first["timeouts"]] == [
        ("grace", _iso(START + timedelta(days=3)))
    ]

    await clock.advance(timedelta(hours=1))
    await post(billing, f"/api/subscriptions/{sub}/pay")  # completes episode 1
    ended = await get(billing, f"{DUNNING}/{sub}")
    assert (ended["episode"], ended["ended"], ended["timeouts"]) == (1, True, [])
    assert ended["endedAt"] == _iso(START + timedelta(hours=1))

    await clock.advance(timedelta(hours=1))
    await post(billing, f"/api/subscriptions/{sub}/fail")  # the next starter: episode 2
    second = await get(billing, f"{DUNNING}/{sub}")
    assert (second["episode"], second["ended"], second["failures"]) == (2, False, 1)
    assert second["startedAt"] == _iso(START + timedelta(hours=2)) and second["endedAt"] is None
    assert [(t["name"], t["dueAt"]) for t in second["timeouts"]] == [
        ("grace", _iso(START + timedelta(hours=2, days=3)))
    ]

    # episode 1's grace would have been due now: it was disarmed, nothing fires
    assert await clock.advance(timedelta(days=3) - timedelta(hours=2)) == 0
    assert (await get(billing, f"/api/subscriptions/{sub}"))["status"] == "PastDue"
    # episode 2's own grace fires, into episode 2
    assert await clock.advance(timedelta(hours=2)) == 1
    assert (await get(billing, f"/api/subscriptions/{sub}"))["status"] == "Cancelled"
    last = await get(billing, f"{DUNNING}/{sub}")
    assert (last["episode"], last["ended"]) == (2, True)
    assert last["endedAt"] == _iso(START + timedelta(hours=2, days=3))

    # a non-starter for the ended instance is still ignored: no third episode
    await post(billing, f"/api/subscriptions/{sub}/pay")
    assert (await get(billing, f"{DUNNING}/{sub}"))["episode"] == 2

    episodes = await get(billing, f"{DUNNING}/{sub}/episodes")
    assert [
        (e["episode"], e["startedAt"], e["endedAt"], e["status"], e["state"]["failures"])
        for e in episodes
    ] == [
        (1, _iso(START), _iso(START + timedelta(hours=1)), "completed", 1),
        (
            2,
            _iso(START + timedelta(hours=2)),
            _iso(START + timedelta(hours=2, days=3)),
            "completed",
            1,
        ),
    ]
    assert episodes[0]["state"]["subscription"] == sub
    assert (episodes[0]["state"]["episode"], episodes[0]["state"]["ended"]) == (1, True)

    # `once`: FirstNotice ran for the first failure only, and logged the second as ignored
    assert (await get(billing, f"/api/subscriptions/{sub}"))["notices"] == 1
    notice = await get(billing, f"/api/workflows/first_notice/instances/{sub}")
    assert (notice["episode"], notice["ended"]) == (1, True)
    assert len(await get(billing, f"/api/workflows/first_notice/instances/{sub}/episodes")) == 1
    [line] = ignored_once(caplog, sub)
    assert (line["process"], line["handler"]) == (
        "Billing.FirstNotice",
        "Billing.FirstNotice.create(PaymentFailed)",
    )


async def test_a_command_create_after_complete_starts_the_next_episode(
    billing: ServiceClient, clock: VirtualClock
) -> None:
    sub = await subscribe(billing)
    for wf in ("hold", "hold_once"):
        await post(billing, f"/api/workflows/{wf}", {"subscription": sub})
    assert await clock.advance(timedelta(hours=1)) == 2  # both lapse: both episodes end
    await clock.advance(timedelta(minutes=5))
    again = await billing.post("/api/workflows/hold", json={"subscription": sub})
    assert again.status_code == 204, again.text
    hold = await get(billing, f"/api/workflows/hold/instances/{sub}")
    assert (hold["episode"], hold["ended"]) == (2, False)
    assert [(t["name"], t["dueAt"]) for t in hold["timeouts"]] == [
        ("lapse", _iso(START + timedelta(hours=2, minutes=5)))
    ]
    refused = await billing.post("/api/workflows/hold_once", json={"subscription": sub})
    assert refused.status_code == 409, refused.text
    assert "runs once per key" in refused.json()["detail"]
    once = await get(billing, f"/api/workflows/hold_once/instances/{sub}")
    assert (once["episode"], once["ended"], once["timeouts"]) == (1, True, [])


async def test_the_episodes_route_is_in_the_openapi_document(billing: ServiceClient) -> None:
    doc = await get(billing, "/openapi.json")
    route = doc["paths"]["/api/workflows/dunning/instances/{id}/episodes"]["get"]
    answer = route["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer["items"]["$ref"] == "#/components/schemas/Episode"
    episode = doc["components"]["schemas"]["Episode"]["properties"]
    assert sorted(episode) == ["endedAt", "episode", "startedAt", "state", "status"]
    instance = doc["components"]["schemas"]["DunningInstanceOut"]["properties"]
    assert {"episode", "startedAt", "endedAt"} <= set(instance)


async def test_episodes_of_an_unknown_key_is_404(billing: ServiceClient) -> None:
    sub = await subscribe(billing)  # a subscription, but no dunning instance
    r = await billing.get(f"{DUNNING}/{sub}/episodes")
    assert r.status_code == 404, r.text
    assert r.json()["type"] == "urn:loom:problem:not-found"
    r = await billing.get(f"{DUNNING}/not-a-uuid/episodes")
    assert r.status_code == 422, r.text


async def test_a_running_episode_is_listed_as_running(billing: ServiceClient) -> None:
    sub = await subscribe(billing)
    await post(billing, f"/api/subscriptions/{sub}/fail")
    await post(billing, f"/api/subscriptions/{sub}/fail")  # a second starter continues episode 1
    [running] = await get(billing, f"{DUNNING}/{sub}/episodes")
    assert (running["episode"], running["status"], running["endedAt"]) == (1, "running", None)
    assert running["state"]["failures"] == 2


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
@pytest.mark.parametrize("locked", [True, False], ids=["queued", "version-checked"])
async def test_concurrent_starters_start_one_episode(billing: ServiceClient, locked: bool) -> None:
    # queued: each starter locks the instance row and the later ones continue the new episode;
    # version-checked (reads not locked): the starters race, and the version check (and the
    # archive row's key) lets one start the episode; a loser's reaction is refused
    billing.service.lock_reads = locked
    sub = await subscribe(billing)
    await post(billing, f"/api/subscriptions/{sub}/fail")
    await post(billing, f"/api/subscriptions/{sub}/pay")  # episode 1 ended
    reports = [
        billing.post("/api/workflows/report_failure", json={"subscription": sub}) for _ in range(8)
    ]
    answers = await asyncio.gather(*reports)
    assert [r.status_code for r in answers] == [204] * 8
    episodes = await get(billing, f"{DUNNING}/{sub}/episodes")
    assert [(e["episode"], e["status"]) for e in episodes] == [(1, "completed"), (2, "running")]
    current = await get(billing, f"{DUNNING}/{sub}")
    assert current["episode"] == 2
    assert 1 <= current["failures"] <= 8  # the losers of a race are dropped or continue it
    assert [t["name"] for t in current["timeouts"]] == ["grace"]
