"""Each model type as JSON Schema: how the generated service writes it in JSON, on the HTTP surface
and in an event's payload on the outbox and the broker. The one definition of that mapping; the
AsyncAPI document (`asyncapi.py`) takes its payloads from it, and tests/codegen/test_asyncapi.py
checks it against what Pydantic emits for the generated response models (`/openapi.json`) and
against events encoded by `loom.runtime.values.codec.encode`.

    string, string(N)   {"type": "string"}, with "maxLength": N
    int                 {"type": "integer", "format": "int64"}   (OpenAPI: the same range as
                                                                 minimum / maximum)
    decimal             {"type": "string"}                       exact, never a JSON number
    decimal(P, S)       {"type": "string", "pattern": …, "x-loom-decimal": {P, S}}  (wire_decimals)
    bool                {"type": "boolean"}
    datetime            {"type": "string", "format": "date-time"}   ISO 8601
    date                {"type": "string", "format": "date"}
    duration            {"type": "string", "format": "duration"}   ISO 8601 (`PT10M`)
    Customer id         {"type": "string", "format": "uuid"}
    enum Color          {"$ref": "#/components/schemas/<Context>.Color"}: a string of its members
    value Money         {"$ref": "#/components/schemas/<Context>.Money"}: an object of its fields
    T[]                 {"type": "array", "items": T}
    T?                  {"anyOf": [T, {"type": "null"}]}

A record (an event's payload, a value object) is an object of every field, each always present
(an optional one as null): keyed by the field's model name (`failPayment`), as on the HTTP
surface: the key `encode` writes (the generated class's `wire_names`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from loom.model import ir
from loom.model.wire_decimals import decimal_schema

REF_PREFIX = "#/components/schemas/"

_PRIMITIVES: dict[ir.Primitive, dict[str, Any]] = {
    "string": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "decimal": {"type": "string"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "duration": {"type": "string", "format": "duration"},
}


def named_key(context: str, name: str) -> str:
    """The key of an enum's or value object's schema: `Orders.OrderStatus`."""
    return f"{context}.{name}"


class Schemas:
    """Schemas of a model's types; `named` collects the enums and value objects they refer to
    (by `$ref`), in first-use order, each once."""

    def __init__(self, model: ir.Model) -> None:
        self._contexts = {c.name: c for c in model.contexts}
        self.named: dict[str, dict[str, Any]] = {}

    def of(self, t: ir.Type) -> dict[str, Any]:
        """The schema of a field of type `t`."""
        if isinstance(t, ir.PrimitiveType) and t.precision is not None and t.scale is not None:
            return decimal_schema(t.precision, t.scale)
        if isinstance(t, ir.PrimitiveType):
            schema = dict(_PRIMITIVES[t.name])
            if t.max_length is not None:
                schema["maxLength"] = t.max_length
            return schema
        if isinstance(t, ir.IdType):
            return {"type": "string", "format": "uuid"}
        if isinstance(t, ir.ListType):
            return {"type": "array", "items": self.of(t.element)}
        if isinstance(t, ir.OptionalType):
            return {"anyOf": [self.of(t.inner), {"type": "null"}]}
        if isinstance(t, ir.EnumType):
            return self._ref(t.context, t.name, lambda: self._enum(t))
        if isinstance(t, ir.ValueType | ir.PayloadType):
            record = self._contexts[t.context].record(t.name)
            return self._ref(t.context, t.name, lambda: self.record(record.fields))
        raise TypeError(f"no JSON schema for a field of type {t!r}")

    def record(self, fields: Sequence[ir.Field]) -> dict[str, Any]:
        """An object of `fields`, every one required (written even when null)."""
        names = [f.name for f in fields]
        return {
            "type": "object",
            "properties": {name: self.of(f.type) for name, f in zip(names, fields, strict=True)},
            "required": names,
        }

    def _ref(self, context: str, name: str, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        key = named_key(context, name)
        if key not in self.named:
            self.named[key] = {}  # taken first: a value object holding itself stays finite
            self.named[key] = build()
        return {"$ref": REF_PREFIX + key}

    def _enum(self, t: ir.EnumType) -> dict[str, Any]:
        enum = next(e for e in self._contexts[t.context].enums if e.name == t.name)
        return {"type": "string", "enum": list(enum.members)}
