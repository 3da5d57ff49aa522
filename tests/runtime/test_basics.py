"""Database-free pieces: ids, clock, errors, column encodings, error classification."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from uuid import UUID

import pytest
from sqlalchemy.exc import OperationalError

from loom.runtime import (
    AggregateRoot,
    ConcurrencyConflict,
    NotFound,
    Refused,
    clock,
    new_id,
    now,
    require,
)
from loom.runtime.storage.dberrors import classify
from loom.runtime.types import decode_list, encode_list_item

from .sample_service import Incremented, Item, Level


def test_new_id_is_a_time_ordered_uuid7() -> None:
    ids = [new_id() for _ in range(20_000)]
    assert all(i.version == 7 and i.variant == "specified in RFC 4122" for i in ids)
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert [i.hex for i in ids] == sorted(i.hex for i in ids)  # SQLite stores hex text
    ms = ids[0].int >> 80
    assert abs(ms - time.time() * 1000) < 5_000


def test_clock_is_replaceable() -> None:
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=1)))
    with clock.frozen(at):
        assert now() == at and now().tzinfo is UTC
        assert Item(name="x").happened_at == at
    assert now() > at - timedelta(days=10_000) and now().tzinfo is UTC
    clock.set_clock(lambda: datetime(2001, 1, 1))
    try:
        assert now() == datetime(2001, 1, 1, tzinfo=UTC)
    finally:
        clock.reset_clock()


def test_errors_and_require() -> None:
    require(True, kind="precondition", rule="r", detail="d")
    with pytest.raises(Refused) as caught:
        require(False, kind="state-gate", rule="A.op: when x", detail="not now")
    err = caught.value
    assert (err.status, err.type, err.rule, err.detail) == (
        422,
        "urn:loom:problem:state-gate-refused",
        "A.op: when x",
        "not now",
    )
    with pytest.raises(ValueError):
        Refused("nonsense", "r", "d")  # type: ignore[arg-type]
    nf = NotFound("Account", 7)
    assert (nf.status, nf.extensions(), nf.detail) == (
        404,
        {"aggregate": "Account"},
        "Account 7 does not exist",
    )
    assert ConcurrencyConflict("Account", 7).status == 409


def test_aggregate_event_bookkeeping() -> None:
    item = Item(name="e")
    assert item._take_events() == [] and item._loom_version == 0
    item.increment(2)
    item.increment(3)
    assert item._take_events() == [Incremented(item=item.id, by=2), Incremented(item=item.id, by=3)]
    assert item._take_events() == []
    assert "_loom_events" not in set(Item.__dataclass_fields__)
    assert isinstance(item, AggregateRoot)


def test_list_encoding_is_lossless() -> None:
    values = [Decimal("1.10"), datetime(2020, 1, 1, tzinfo=UTC), UUID(int=5), Level.HIGH, True, 7]
    encoded = [encode_list_item(v) for v in values]
    assert encoded == ["1.10", "2020-01-01T00:00:00.000000Z", str(UUID(int=5)), "High", True, 7]
    as_decimals, as_levels = decode_list(Decimal), decode_list(Level)
    assert as_decimals is not None and as_decimals(["1.10"]) == [Decimal("1.10")]
    assert as_levels is not None and as_levels(["High"]) == [Level.HIGH]
    assert decode_list(str) is None
    with pytest.raises(TypeError):
        encode_list_item(1.5)


def _wrapped(orig: BaseException) -> OperationalError:
    return OperationalError("UPDATE ...", {}, orig)


def test_race_errors_are_conflicts() -> None:
    assert classify(_wrapped(sqlite3.OperationalError("database is locked"))) == "conflict"

    class PgError(Exception):
        def __init__(self, sqlstate: str) -> None:
            super().__init__(sqlstate)
            self.sqlstate = sqlstate

    assert classify(_wrapped(PgError("40001"))) == "conflict"
    assert classify(_wrapped(PgError("40P01"))) == "conflict"
    assert classify(_wrapped(PgError("23505"))) == "duplicate"
    assert classify(_wrapped(PgError("22003"))) == "data"
    # a table or column gone under a replica: its schema changed (a 503, issue 26 §5.10)
    assert classify(_wrapped(PgError("42P01"))) == "schema"
    assert classify(_wrapped(PgError("42703"))) == "schema"
    assert classify(_wrapped(sqlite3.OperationalError("no such column: note"))) == "schema"
    assert classify(_wrapped(PgError("42601"))) == "other"


def test_wire_model_reads_an_aggregate_by_attributes() -> None:
    from .sample_service import ItemOut

    item = Item(name="w", tags=["t"])
    item.__dict__["_loom_version"] = 4
    out = ItemOut.model_validate(item, from_attributes=True)
    assert out.version == item.version == 4 and out.tags == ["t"]
    assert out.happened_at == item.happened_at


def test_plain_urls_get_async_drivers() -> None:
    from loom.runtime.storage.engine import async_url

    assert async_url("postgresql://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert async_url("sqlite:///./x.db") == "sqlite+aiosqlite:///./x.db"
    assert async_url("sqlite+aiosqlite:///x.db") == "sqlite+aiosqlite:///x.db"
