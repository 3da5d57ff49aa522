"""A `duration` field added to an existing aggregate: the migration adds a BIGINT column of
microseconds, and the existing rows read back with the field's default (SQLite and PostgreSQL)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Column, Integer, MetaData, Table, Uuid, insert, select

from loom.migrate.database import apply
from loom.runtime import Service
from loom.runtime.times import DurationMicros
from tests.migrate.kit import info, write_versions

ID = uuid.UUID("0190f000-0000-7000-8000-000000000001")


def bookings(version: int) -> MetaData:
    """1. no stay; 2. + stay: duration = 1d"""
    md = MetaData()
    cols: list[Column[object]] = [
        Column("id", Uuid, primary_key=True),
        Column("version", Integer, nullable=False),
    ]
    if version >= 2:
        stay = info(field="stay", default=86_400_000_000)
        cols.append(Column("stay", DurationMicros, nullable=False, info=stay))
    Table("hotel_bookings", md, *cols, info=info(origin="Hotel.Booking"))
    return md


async def test_a_duration_column_is_added_with_its_default(
    database_url: str, tmp_path: Path
) -> None:
    revs = write_versions(tmp_path / "migrations", bookings(1), bookings(2))
    assert (await apply(database_url, revs[:1])).applied == ["0001_version_1"]
    v1 = bookings(1)
    service = Service.from_url(database_url, v1)
    try:
        async with service.engine.begin() as conn:
            await conn.execute(insert(v1.tables["hotel_bookings"]), {"id": ID, "version": 1})
    finally:
        await service.dispose()
    assert (await apply(database_url, revs)).applied == ["0002_version_2"]
    v2 = bookings(2)
    service = Service.from_url(database_url, v2)
    try:
        async with service.engine.begin() as conn:
            rows = (await conn.execute(select(v2.tables["hotel_bookings"]))).all()
    finally:
        await service.dispose()
    assert [(r.id, r.stay) for r in rows] == [(ID, timedelta(days=1))]
