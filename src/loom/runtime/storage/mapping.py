"""Row <-> aggregate mapping, computed once per (aggregate class, table).

Columns are the dataclass field names (a field `from_` may use the column `from`), plus `id`
and `version`. Enum fields are stored as their values; `list[T]` fields as JSON lists whose
elements are rebuilt from `T`. Nothing is reflected per row.

A loaded (or saved) object keeps the values its fields had then (`LOADED_ATTR`), so that saving it
again writes only the columns that changed (`Mapper.changes`).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable
from operator import itemgetter
from typing import Any
from uuid import UUID

from sqlalchemy import Column, Table

from loom.model.telemetry import STEPS_COLUMN, TRACE_CONTEXT_COLUMN
from loom.runtime.values.errors import StoredValueUnknown
from loom.runtime.values.types import JsonList, decode_list

VERSION_ATTR = "_loom_version"
DELETED_ATTR = "_loom_deleted"  # set by Repository.delete; a later save is skipped
LOADED_ATTR = "_loom_loaded"  # the field values as last loaded or saved (Mapper.snapshot)
Converter = Callable[[Any], Any]
# Values that are unchanged when equal: immutable, and stored alike whenever equal (unlike
# Decimal("1.0") and Decimal("1.00"), or one instant in two time zones, which are written
# unless they are the very object loaded).
TENANT_COLUMN = "tenant"


def _marked(table: Table, name: str, mark: str) -> Column[str] | None:
    """`table`'s column `name` when its info marks it as Loom's `mark` (no field), else None."""
    column = table.c.get(name)
    if column is not None and column.info.get("loom", {}).get(mark):
        return column
    return None


def tenant_column(table: Table) -> Column[str] | None:
    """A tenanted context's table's `tenant` column (its info says so), None in any other table.
    It is no field of the aggregate: the repository writes and filters it (`storage/repository.py`)."""
    return _marked(table, TENANT_COLUMN, "tenant")


def trace_column(table: Table) -> Column[str] | None:
    """A workflow instance table's `_trace_context` column (its info says so), else None."""
    return _marked(table, TRACE_CONTEXT_COLUMN, "trace")


def steps_column(table: Table) -> Column[str] | None:
    """A workflow instance table's `_steps` column, its journal (`storage/journal.py`), else
    None."""
    return _marked(table, STEPS_COLUMN, "steps")


_EQUAL_MEANS_SAME = frozenset({int, str, bool, UUID})
# Lists, dicts and sets may change in place (an extern's code may append to a list field): the
# snapshot keeps a copy of them, compared element by element with `_stored_alike`.
_MUTABLE = frozenset({list, dict, set})


def _copy(value: Any) -> Any:
    """A copy of a list / dict / set field's value, down through nested ones (what they hold
    otherwise is immutable: primitives, enums, frozen value objects)."""
    kind = type(value)
    if kind is list:
        return [_copy(v) if type(v) in _MUTABLE else v for v in value]
    if kind is dict:
        return {k: _copy(v) if type(v) in _MUTABLE else v for k, v in value.items()}
    if kind is set:
        return set(value)
    return value


def _stored_alike(new: Any, old: Any) -> bool:
    """Whether two values are written alike: equal, of the same types all the way down (so a
    Decimal keeps its scale), value objects compared field by field."""
    if new is old:
        return True
    kind = type(new)
    if kind is not type(old):
        return False
    if kind in _EQUAL_MEANS_SAME:
        return bool(new == old)
    if kind is list:
        return len(new) == len(old) and all(map(_stored_alike, new, old))
    if kind is dict:
        return new.keys() == old.keys() and all(_stored_alike(v, old[k]) for k, v in new.items())
    if kind is set:
        return new == old and all(type(v) in _EQUAL_MEANS_SAME for v in new)
    if dataclasses.is_dataclass(new):
        return all(
            _stored_alike(getattr(new, f.name), getattr(old, f.name))
            for f in dataclasses.fields(new)
        )
    if isinstance(new, enum.Enum):
        return new is old
    return False  # Decimal, datetime and the rest: written unless the very object loaded


def _unwrap(tp: Any) -> tuple[Any, bool]:
    """Strip NewType / Annotated / Optional; answer (core type, optional?)."""
    optional = False
    while True:
        if hasattr(tp, "__supertype__"):  # NewType
            tp = tp.__supertype__
            continue
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
            continue
        if origin is typing.Union or origin is types.UnionType:
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(args) != len(typing.get_args(tp)):
                optional = True
            if len(args) == 1:
                tp = args[0]
                continue
        return tp, optional


def _none_safe(fn: Converter) -> Converter:
    def convert(value: Any) -> Any:
        return None if value is None else fn(value)

    return convert


def _enum_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _enum_loader(cls: type[enum.Enum], table: str, column: str) -> Converter:
    """A stored value to its member; a value the enum has no member for (a member removed while
    rows held it) is `StoredValueUnknown`, a 503 naming it, not a ValueError's 500."""

    def convert(value: Any) -> Any:
        if value is None:
            return None
        try:
            return cls(value)
        except ValueError:
            raise StoredValueUnknown(table, column, value, cls.__name__) from None

    return convert


def _load_converter(tp: Any, column: Column[Any]) -> Converter | None:
    core, _ = _unwrap(tp)
    column_type = column.type
    if isinstance(core, type) and issubclass(core, enum.Enum):
        return _enum_loader(core, column.table.name, column.name)
    if typing.get_origin(core) is list:
        if isinstance(column_type, JsonList) and column_type.item_type is not None:
            return None  # the column type decodes elements itself
        (item,) = typing.get_args(core) or (Any,)
        item, _ = _unwrap(item)
        decode = decode_list(item)
        if decode is not None and isinstance(item, type) and issubclass(item, enum.Enum):
            return _enum_list_loader(decode, item, column.table.name, column.name)
        return decode
    return None


def _enum_list_loader(
    decode: Converter, cls: type[enum.Enum], table: str, column: str
) -> Converter:
    """A stored list of members, as `_enum_loader` takes one: an element the enum has no member
    for is `StoredValueUnknown` (the first such element named), not a ValueError's 500."""

    def convert(value: Any) -> Any:
        try:
            return decode(value)
        except ValueError:
            known = {m.value for m in cls}
            bad = next(v for v in value if v is not None and v not in known)
            raise StoredValueUnknown(table, column, bad, cls.__name__) from None

    return convert


def _dump_converter(tp: Any) -> Converter | None:
    core, _ = _unwrap(tp)
    if isinstance(core, type) and issubclass(core, enum.Enum):
        return _enum_value
    return None


def _is_collection(tp: Any) -> bool:
    core, _ = _unwrap(tp)
    return typing.get_origin(core) in (list, dict, set) or core in (list, dict, set, Any)


def _snapshot_taker(
    attrs: list[str], collections: set[str]
) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """The function that takes the snapshot of a field dict: the values in `attrs` order, lists,
    dicts and sets (the `collections` fields) copied."""
    if not attrs:
        return lambda _d: ()
    getter = itemgetter(*attrs)
    plain = getter if len(attrs) > 1 else lambda d: (getter(d),)  # one name: the bare value
    copied = [i for i, attr in enumerate(attrs) if attr in collections]
    if not copied:
        return plain

    def take(d: dict[str, Any]) -> tuple[Any, ...]:
        values = list(plain(d))
        for i in copied:
            values[i] = _copy(values[i])
        return tuple(values)

    return take


class Mapper:
    """How one aggregate class maps onto one table."""

    __slots__ = (
        "attrs",
        "cls",
        "columns",
        "dump_converted",
        "dump_plain",
        "fields",
        "key",
        "loaders",
        "name",
        "table",
        "take_snapshot",
        "uses_dict",
    )

    def __init__(self, cls: type, table: Table, key: str = "id") -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be stored")
        self.cls = cls
        self.table = table
        self.key = key
        self.name = cls.__name__
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if key not in fields:
            raise TypeError(f"{cls.__name__} has no `{key}` field")
        if "version" not in table.c or key not in table.c:
            raise TypeError(f"table {table.name} needs `{key}` and `version` columns")
        attrs: list[str] = []
        loaders: list[tuple[str, Converter]] = []
        plain: list[tuple[str, str]] = []
        converted: list[tuple[str, str, Converter]] = []
        seen: set[str] = set()
        # written by the stores, no fields: compared by identity (`==` builds SQL)
        apart = {id(tenant_column(table)), id(trace_column(table)), id(steps_column(table))}
        stored = [c for c in table.c if id(c) not in apart]
        for column in stored:
            if column.key == "version":
                attrs.append(VERSION_ATTR)
                continue
            attr = column.key if column.key in fields else f"{column.key}_"
            if attr not in fields:
                raise TypeError(
                    f"column {table.name}.{column.key} matches no field of {cls.__name__}"
                )
            seen.add(attr)
            attrs.append(attr)
            tp = hints.get(attr, Any)
            load = _load_converter(tp, column)
            if load is not None:
                loaders.append((attr, load))
            dump = _dump_converter(tp)
            if dump is None:
                plain.append((column.key, attr))
            else:
                converted.append((column.key, attr, dump))
        missing = sorted(set(fields) - seen)
        if missing:
            raise TypeError(f"{cls.__name__} fields without a column in {table.name}: {missing}")
        self.columns = tuple(stored)
        self.attrs = tuple(attrs)
        self.loaders = tuple(loaders)
        self.dump_plain = tuple(plain)
        self.dump_converted = tuple(converted)
        dumps = {attr: convert for _, attr, convert in converted}
        # (column, attribute, dump converter) of every column but the key and `version`
        self.fields = tuple(
            (column, attr, dumps.get(attr))
            for column, attr in ((c.key, a) for c, a in zip(stored, attrs, strict=True))
            if column not in (key, "version")
        )
        self.take_snapshot = _snapshot_taker(
            [attr for _, attr, _ in self.fields],
            {attr for _, attr, _ in self.fields if _is_collection(hints.get(attr, Any))},
        )
        self.uses_dict = hasattr(object.__new__(cls), "__dict__")

    def load(self, row: Any) -> Any:
        """Build an aggregate from a row (columns in table order) without running __init__."""
        obj = object.__new__(self.cls)
        if self.uses_dict:
            d = obj.__dict__
            d.update(zip(self.attrs, row, strict=False))
            for attr, convert in self.loaders:
                d[attr] = convert(d[attr])
            d[LOADED_ATTR] = self.take_snapshot(d)
        else:  # pragma: no cover - slotted aggregates
            for attr, value in zip(self.attrs, row, strict=False):
                object.__setattr__(obj, attr, value)
            for attr, convert in self.loaders:
                object.__setattr__(obj, attr, convert(getattr(obj, attr)))
        return obj

    def snapshot(self, obj: Any) -> None:
        """Remember the field values as they are now stored (after a save)."""
        if self.uses_dict:
            d = obj.__dict__
            d[LOADED_ATTR] = self.take_snapshot(d)

    def changes(self, obj: Any) -> dict[str, Any]:
        """Column values of the fields that changed since the object was loaded or last saved
        (every field of an object without that record), without the key and `version`."""
        d = obj.__dict__ if self.uses_dict else {}
        loaded = d.get(LOADED_ATTR)
        if loaded is None:
            params = self.dump(obj)
            del params[self.key]
            return params
        params = {}
        for (column, attr, convert), old in zip(self.fields, loaded, strict=True):
            new = d[attr]
            kind = type(new)
            if new is old and kind not in _MUTABLE:
                continue
            if kind is type(old) and (
                (kind in _EQUAL_MEANS_SAME and new == old)
                or (kind in _MUTABLE and _stored_alike(new, old))
            ):
                continue
            params[column] = new if convert is None else convert(new)
        return params

    def dump(self, obj: Any) -> dict[str, Any]:
        """Column values of an aggregate, without `version`."""
        if self.uses_dict:
            d = obj.__dict__
            params = {key: d[attr] for key, attr in self.dump_plain}
            for key, attr, convert in self.dump_converted:
                params[key] = convert(d[attr])
        else:  # pragma: no cover
            params = {key: getattr(obj, attr) for key, attr in self.dump_plain}
            for key, attr, convert in self.dump_converted:
                params[key] = convert(getattr(obj, attr))
        return params
