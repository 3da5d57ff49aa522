"""Fixtures of the chaos suite: a way to print its counts into any pytest output (captured or
not), and a PostgreSQL cluster of its own that a scenario may crash."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import _REQUIRE_PG
from tests.pgcluster import PostgresUnavailable

from .servers import CrashableCluster, crashable_cluster

Report = Callable[[list[str]], None]


@pytest.fixture
def report(capsys: pytest.CaptureFixture[str]) -> Report:
    """Print a scenario's counts past pytest's capture, so they show in every CI log."""

    def emit(lines: list[str]) -> None:
        with capsys.disabled():
            print("\n" + "\n".join(lines), flush=True)

    return emit


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[CrashableCluster]:
    """Not the session's shared cluster: this one gets restarted with `-m immediate`."""
    try:
        with crashable_cluster() as cluster:
            yield cluster
    except PostgresUnavailable as exc:
        if _REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required for this run but could not start: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
