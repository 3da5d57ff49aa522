"""An implementation of case 29's externs that forgets `relabel`: the service must refuse to start,
naming the missing method."""

from __future__ import annotations

from typing import Any


class OrderExterns:
    def stamp(self, order: Any) -> None:
        order.label = "stamped"
