"""User implementation of the extern operations of tests/conformance/29_extern_from_workflow.loom.

The service imports this module (named by `build_app(..., extern_module=...)`) and calls the
methods of the class named like the generated protocol, `OrderExterns`, with the aggregate first.
"""

from __future__ import annotations

from typing import Any


class OrderExterns:
    def stamp(self, order: Any) -> None:
        order.label = f"stamped:{order.code}"

    def relabel(self, order: Any, to: str) -> None:
        order.label = to
