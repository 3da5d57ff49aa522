"""The import block and the constants of a generated module (codegen/python/imports.py)."""

from __future__ import annotations

from loom.codegen.python.imports import Imports
from loom.codegen.python.modules import module_text


def test_loom_sorts_with_the_third_party_imports() -> None:
    """In a user's project `loom` is installed: one section with fastapi and pydantic."""
    imports = Imports()
    imports.add("pydantic", "BaseModel")
    imports.add("loom.runtime", "Service")
    imports.add("fastapi", "APIRouter")
    imports.add("uuid", "UUID")
    imports.add(".domain", "Order")
    assert imports.lines() == [
        "from uuid import UUID",
        "",
        "from fastapi import APIRouter",
        "from loom.runtime import Service",
        "from pydantic import BaseModel",
        "",
        "from .domain import Order",
    ]


def test_a_constant_is_written_once_after_the_imports() -> None:
    imports = Imports()
    imports.add("loom.runtime", "Service")
    first = imports.constant("ORDERS_PROCESS", '"Shop.Orders"')
    again = imports.constant("ORDERS_PROCESS", '"Shop.Orders"')
    # another value under the same name (two workflow names that snake alike) gets its own name
    other = imports.constant("ORDERS_PROCESS", '"Shop.ORders"')
    assert (first, again, other) == ("ORDERS_PROCESS", "ORDERS_PROCESS", "ORDERS_PROCESS_2")
    text = module_text(["# head"], imports, [["x = ORDERS_PROCESS"]])
    assert text == (
        "# head\n\nfrom loom.runtime import Service\n\n"
        'ORDERS_PROCESS = "Shop.Orders"\nORDERS_PROCESS_2 = "Shop.ORders"\n\nx = ORDERS_PROCESS\n'
    )
