"""IR types as Python annotations in one generated module, and the names of the wire models of
value objects and payloads."""

from __future__ import annotations

from dataclasses import dataclass

from loom.codegen.python.imports import Imports
from loom.codegen.python.keyed import state_class
from loom.codegen.python.model_info import ModelInfo
from loom.model import ir, naming


def record_classes(context: ir.Context) -> dict[str, tuple[str, str]]:
    """The wire models of each value object and payload of a context, in `schemas.py`: name ->
    (request model, response model), `MoneyInput` / `MoneyOut` unless a domain name took them."""
    alloc = naming.NameAlloc(
        {naming.pascal(a.name) for a in context.aggregates}
        | {naming.pascal(e.name) for e in context.enums}
        | {naming.pascal(e.name) for e in context.events}
        | {naming.id_type(a.name) for a in context.aggregates}
        | {naming.pascal(r.name) for r in context.records}
        | {state_class(wf) for wf in context.workflows}
        | {state_class(p) for p in context.projections}
    )
    out: dict[str, tuple[str, str]] = {}
    for r in context.records:
        base = naming.pascal(r.name)
        out[r.name] = (alloc.take(base + "Input"), alloc.take(base + "Out"))
    return out


@dataclass
class TypeNames:
    """Renders IR types as Python annotations for one generated module.

    `mode` is "domain" (plain Python types), "input" (JSON request bodies: JsonInt64, JsonBool,
    WireDecimal, WireText, WireDatetime, WireDate), "query" (query parameters, which arrive as
    text: QueryInt64 and QueryBool where a body has JsonInt64 and JsonBool) or "output"
    (responses: Int64, DecimalOut, DatetimeOut). `in_domain` says the module is `domain.py`
    itself, which defines its context's
    domain names rather than importing them from `.domain`. Value objects and payloads are their domain dataclasses in "domain" mode, else their wire models
    (imported from `.schemas` unless `in_schemas`).
    """

    info: ModelInfo
    context: ir.Context
    imports: Imports
    mode: str = "domain"
    in_domain: bool = False
    in_schemas: bool = False

    def domain_name(self, context: str, name: str) -> str:
        """A class/NewType defined in a context's domain module, imported as needed."""
        if context == self.context.name:
            if not self.in_domain:
                self.imports.add(".domain", name)
            return name
        other = naming.context_module(self.info.context(context))
        self.imports.add(f"..{other}.domain", name)
        return name

    def id_name(self, context: str, aggregate: str) -> str:
        """An aggregate's id type, imported from its context's `ids.py` (by every module, the
        domain's own included: domain modules never import each other, whose contexts may hold
        each other's ids)."""
        name = naming.id_type(aggregate)
        if context == self.context.name:
            self.imports.add(".ids", name)
        else:
            self.imports.add(f"..{naming.context_module(self.info.context(context))}.ids", name)
        return name

    def enum_ref(self, name: str, context: str) -> str:
        return self.domain_name(context, naming.pascal(name))

    def schema_name(self, t: ir.ValueType | ir.PayloadType) -> str:
        """The wire model of a value object or payload, for this module's mode."""
        context = self.info.context(t.context)
        cls = record_classes(context)[t.name][0 if self.mode in ("input", "query") else 1]
        if t.context == self.context.name:
            if not self.in_schemas:
                self.imports.add(".schemas", cls)
        else:
            self.imports.add(f"..{naming.context_module(context)}.schemas", cls)
        return cls

    def render(self, t: ir.Type) -> str:
        if isinstance(t, ir.PrimitiveType):
            if t.max_length is not None and self.mode in ("input", "query"):
                # `string(N)`: the length first, so a too-long value's message counts characters
                self.imports.add("typing", "Annotated")
                self.imports.add("annotated_types", "MaxLen")
                self.imports.add("loom.runtime", "TEXT_CHECK")
                return f"Annotated[str, MaxLen({t.max_length}), TEXT_CHECK]"
            if t.precision is not None and self.mode != "domain":
                return self._scaled(t)
            return self._primitive(t.name)
        if isinstance(t, ir.IdType):
            return self.id_name(t.context, t.aggregate)
        if isinstance(t, ir.EnumType):
            return self.enum_ref(t.name, t.context)
        if isinstance(t, ir.ListType):
            return f"list[{self.render(t.element)}]"
        if isinstance(t, ir.OptionalType):
            return f"{self.render(t.inner)} | None"
        if isinstance(t, ir.AggregateType):
            return self.domain_name(t.context, naming.pascal(t.name))
        if isinstance(t, ir.EventType):
            return self.domain_name(t.context, naming.pascal(t.name))
        if isinstance(t, ir.ValueType | ir.PayloadType):
            if self.mode == "domain":
                return self.domain_name(t.context, naming.pascal(t.name))
            return self.schema_name(t)
        if isinstance(t, ir.VoidType):
            return "None"
        raise TypeError(f"unknown type {t!r}")

    def _scaled(self, t: ir.PrimitiveType) -> str:
        """A `decimal(P, S)` on the wire (`loom.runtime.values.scaled`): refused unless it fits on input,
        padded to S places on output."""
        self.imports.add("typing", "Annotated")
        bound = f"{t.precision}, {t.scale}"
        if self.mode in ("input", "query"):
            self.imports.add("loom.runtime", "DecimalIn")
            return f"Annotated[{self._primitive('decimal')}, DecimalIn({bound})]"
        self.imports.add("loom.runtime", "DecimalScaleOut")
        self.imports.add("decimal", "Decimal")
        return f"Annotated[Decimal, DecimalScaleOut({bound})]"

    def _primitive(self, name: str) -> str:
        wire = self.mode in ("input", "query")
        if name == "string":
            if wire:
                self.imports.add("loom.runtime", "WireText")
                return "WireText"
            return "str"
        if name == "bool":
            # JSON true / false only; a query string's is the text `true` / `false`
            if wire:
                cls = "JsonBool" if self.mode == "input" else "QueryBool"
                self.imports.add("loom.runtime", cls)
                return cls
            return "bool"
        if name == "int":
            if self.mode == "domain":
                return "int"
            # a JSON body's int is a JSON integer; a query parameter's is digits
            cls = {"input": "JsonInt64", "query": "QueryInt64"}.get(self.mode, "Int64")
            self.imports.add("loom.runtime", cls)
            return cls
        if name == "decimal":
            if wire:
                self.imports.add("loom.runtime", "WireDecimal")
                return "WireDecimal"
            if self.mode == "output":
                self.imports.add("loom.runtime", "DecimalOut")
                return "DecimalOut"
            self.imports.add("decimal", "Decimal")
            return "Decimal"
        if name == "datetime":
            if wire:
                self.imports.add("loom.runtime.times", "WireDatetime")
                return "WireDatetime"
            if self.mode == "output":
                self.imports.add("loom.runtime.times", "DatetimeOut")
                return "DatetimeOut"
            self.imports.add("datetime", "datetime")
            return "datetime"
        if name == "date":
            if wire:
                self.imports.add("loom.runtime.times", "WireDate")
                return "WireDate"
            self.imports.add("datetime", "date")
            return "date"
        if name == "duration":
            if wire:
                self.imports.add("loom.runtime.times", "WireDuration")
                return "WireDuration"
            if self.mode == "output":
                self.imports.add("loom.runtime.times", "DurationOut")
                return "DurationOut"
            self.imports.add("datetime", "timedelta")
            return "timedelta"
        raise TypeError(f"unknown primitive {name}")
