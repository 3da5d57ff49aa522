"""`decimal(P, S)` on the wire. Generated schemas write `Annotated[WireDecimal, DecimalIn(P, S)]`
for an input and `Annotated[Decimal, DecimalScaleOut(P, S)]` for an output:

- in: a value with more than S digits after the point, or more than P - S before it, is a 422
  naming the member (never rounded); one that fits is held padded to S places (`"12.5"` is 12.50);
- out: the value as a JSON string with exactly S digits after the point (`"12.50"`), its JSON
  schema a string with a `pattern` of the bound and `x-loom-decimal: {precision, scale}`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from loom.model.wire_decimals import decimal_schema
from loom.runtime.values import decimals

__all__ = ["DecimalIn", "DecimalScaleOut"]


class DecimalIn:
    """The bound of a `decimal(P, S)` input, after `WireDecimal` has read the value; its JSON
    schema (a number or a string, as any decimal input) states it as `x-loom-decimal`."""

    def __init__(self, precision: int, scale: int) -> None:
        self.precision = precision
        self.scale = scale

    def _check(self, value: Decimal) -> Decimal:
        try:
            return decimals.to_scale(value, self.precision, self.scale)
        except ValueError as exc:
            raise PydanticCustomError("decimal_scale", str(exc)) from None

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        out = dict(handler(schema))
        out["x-loom-decimal"] = {"precision": self.precision, "scale": self.scale}
        return out


class DecimalScaleOut:
    """The answer of a `decimal(P, S)`: a string padded to S places, never an exponent."""

    def __init__(self, precision: int, scale: int) -> None:
        self.precision = precision
        self.scale = scale
        self._quantum = Decimal(1).scaleb(-scale)

    def _write(self, value: Decimal) -> str:
        return format(value.quantize(self._quantum, context=decimals.ARITHMETIC), "f")

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        schema = dict(handler(source))
        schema["serialization"] = core_schema.plain_serializer_function_ser_schema(
            self._write, return_schema=core_schema.str_schema(), when_used="json"
        )
        return schema

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        if handler.mode == "serialization":
            return decimal_schema(self.precision, self.scale)
        return handler(schema)
