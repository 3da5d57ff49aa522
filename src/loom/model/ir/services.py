"""Domain services: methods in the operation vocabulary over aggregate parameters."""

from __future__ import annotations

from dataclasses import dataclass

from loom.model.ir.members import Parameter
from loom.model.ir.origin import Origin
from loom.model.ir.statements import Stmt
from loom.model.ir.types import Type


@dataclass(frozen=True, slots=True)
class ServiceMethod:
    """A method of a domain service: aggregate-typed and value parameters, a body in the operation
    vocabulary over them (operation calls on aggregate parameters, precondition, let, emit, return).
    `mutates` lists the aggregate parameters it calls operations on."""

    name: str
    params: tuple[Parameter, ...]
    result: Type | None
    body: tuple[Stmt, ...]
    mutates: tuple[str, ...]
    origin: Origin


@dataclass(frozen=True, slots=True)
class DomainService:
    name: str
    context: str
    methods: tuple[ServiceMethod, ...]
    origin: Origin
