"""The schema of a model: the SQLAlchemy MetaData of its generated service (the model's tables
plus the runtime tables it uses, as `Service.schema()` decides), got by building the
model (`loom.build.cache`'s cached build, the one `loom run` uses) and importing it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from sqlalchemy import MetaData

from loom.build.package import import_package
from loom.migrate.snapshot import Snapshot
from loom.migrate.tables import Locate, snapshot_of
from loom.runtime import Service

if TYPE_CHECKING:  # the IR only as a type: `loom run` of a built model never loads it
    from loom.model import ir

__all__ = ["locator", "service_metadata", "service_schema", "snapshot_of_build"]


def service_schema(main: ModuleType) -> tuple[MetaData, ...]:
    """The metadatas of the tables of the service of a generated `main` module: its model's and
    the runtime's it uses. The service is put together as `create_app` does (its channels, its
    subscriptions, which register any timeout handler), never connected."""
    service = Service.from_url("sqlite://", main.metadata, channels=getattr(main, "CHANNELS", ()))
    subscribe = getattr(main, "subscribe", None)
    if subscribe is not None:
        subscribe(service)
    return service.schema()


def service_metadata(main: ModuleType) -> MetaData:
    """All the tables of the service of a generated `main` module (`service_schema`), copied onto
    one MetaData."""
    merged = MetaData()
    for metadata in service_schema(main):
        for table in metadata.tables.values():
            table.to_metadata(merged)
    return merged


def snapshot_of_build(out: Path, model: ir.Model | None = None) -> Snapshot:
    """The snapshot of the service built in `out`; with the model's IR, each table and column
    says where in the model it comes from."""
    main = import_package(out)
    return snapshot_of(service_metadata(main), locator(model) if model is not None else None)


def locator(model: ir.Model) -> Locate:
    """Where a table or column comes from in `model`, by the `origin` and `field` of its info
    (`Context.Aggregate`, `Context.Workflow` or `Context.Projection`)."""
    places: dict[tuple[str, str | None], ir.Origin] = {}
    for context in model.contexts:
        for agg in context.aggregates:
            places[(f"{context.name}.{agg.name}", None)] = agg.origin
            for f in agg.fields:
                places[(f"{context.name}.{agg.name}", f.name)] = f.origin
        for wf in context.workflows:
            places[(f"{context.name}.{wf.name}", None)] = wf.origin
            for f in wf.state:
                places[(f"{context.name}.{wf.name}", f.name)] = f.origin
        for projection in context.projections:
            places[(f"{context.name}.{projection.name}", None)] = projection.origin
            for f in projection.fields:
                places[(f"{context.name}.{projection.name}", f.name)] = f.origin

    def locate(table_info: Mapping[str, Any], column_info: Mapping[str, Any] | None) -> str | None:
        origin = table_info.get("origin")
        if not isinstance(origin, str):
            return None
        field = column_info.get("field") if column_info is not None else None
        place = places.get((origin, field if isinstance(field, str) else None))
        return f"{place.file}:{place.line}:{place.column}" if place is not None else None

    return locate
