"""A process that froze what its start made (`gc.freeze`, as `loom run` does before it serves)
gets what the service's start made frozen too, out of the collector's sight; a process that froze
nothing keeps its collector as it was (`runtime/service/app.py`, `_freeze_start`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runtime.sample_service import build_app


def seen_by_the_collector(thing: object) -> bool:
    # `gc.get_objects()` lists the objects of the collector's generations, not the frozen ones
    return any(found is thing for found in gc.get_objects())


@pytest.fixture
def unfrozen() -> Iterator[None]:
    """The test's process with nothing frozen, before and after (the freezing is undone)."""
    assert gc.get_freeze_count() == 0
    try:
        yield
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("unfrozen")
async def test_a_process_that_froze_nothing_keeps_its_collector(tmp_path: Path) -> None:
    app = build_app(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    async with app.router.lifespan_context(app):
        assert gc.get_freeze_count() == 0
        assert seen_by_the_collector(app.state.loom)


@pytest.mark.usefixtures("unfrozen")
async def test_a_process_that_froze_its_start_gets_the_services_start_frozen(
    tmp_path: Path,
) -> None:
    app = build_app(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    gc.freeze()  # as `loom run` does once the app is made, before it serves
    frozen = gc.get_freeze_count()
    async with app.router.lifespan_context(app):
        service = app.state.loom  # made by the lifespan, after the freeze
        assert gc.get_freeze_count() > frozen
        assert not seen_by_the_collector(service)
        assert gc.is_tracked(service)  # still a live object, only out of the collector's sight
