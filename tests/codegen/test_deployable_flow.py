"""The shop's choreography across two generated deployables: `loom build`'s two packages, each a
real service on its own SQLite database, their channels (with the durable consumers the generator
lists) on one broker. Only the broker is handed in: the in-process one, given to each service's
`create_app` as the runtime's `brokers`, where a deployed service gets it from --broker."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from loom.build.package import build_model, import_package
from loom.lang import compile_sources
from loom.runtime import create_app
from loom.runtime.transports import MemoryBroker, MemoryTransport
from tests.codegen.util import ROOT
from tests.waiting import until

SPLIT = """
deployable OrderDesk { contexts: Orders }
deployable Warehouse { contexts: Inventory, Payment }
"""


def _packages(tmp_path: Path) -> dict[str, ModuleType]:
    source = (ROOT / "examples/shop/shop.loom").read_text() + SPLIT
    result = compile_sources({"shop.loom": source})
    assert result.model is not None, [d.message for d in result.diagnostics]
    build_model(result.model, tmp_path / "out")
    return {name: import_package(tmp_path / "out" / name) for name in ("order_desk", "warehouse")}


def _app(main: ModuleType, url: str, broker: MemoryBroker) -> Any:
    # the generated build_app, on the broker: what --broker gives a deployed service
    main.create_app = functools.partial(  # type: ignore[attr-defined]
        create_app,
        brokers={"": MemoryTransport(broker, ack_wait=0.5)},
        relay_options={"poll_interval": 0.05},
        consumer_options={"fetch_timeout": 0.05},
    )
    return main.build_app(url)


@pytest.mark.parametrize("fail_payment", [False, True])
async def test_the_shop_runs_as_two_deployables_on_one_broker(
    tmp_path: Path, fail_payment: bool
) -> None:
    mains = _packages(tmp_path)
    assert mains["order_desk"].CONTEXTS == ("Orders",)
    broker = MemoryBroker()
    desk = _app(mains["order_desk"], f"sqlite+aiosqlite:///{tmp_path / 'desk.db'}", broker)
    house = _app(mains["warehouse"], f"sqlite+aiosqlite:///{tmp_path / 'house.db'}", broker)
    async with desk.router.lifespan_context(desk), house.router.lifespan_context(house):
        orders = httpx.AsyncClient(transport=httpx.ASGITransport(app=desk), base_url="http://o")
        stock = httpx.AsyncClient(transport=httpx.ASGITransport(app=house), base_url="http://w")
        async with orders, stock:
            placed = []
            for i in range(3):
                r = await orders.post(
                    "/api/workflows/place_order",
                    json={"sku": f"A-{i}", "quantity": 1, "failPayment": fail_payment},
                )
                assert r.status_code == 200, r.text
                placed.append(r.json())
            final = "Cancelled" if fail_payment else "Paid"
            # placed, reserved, failed, released, cancelled / placed, reserved, paid
            steps = 5 if fail_payment else 3

            async def settled() -> bool:
                """Every order final and its progress folded: the projection reads Inventory's
                and Payment's events from the broker, and one may come after the order's own."""
                for order in placed:
                    r = await orders.get(f"/api/orders/{order}")
                    if r.json()["status"] != final:
                        return False
                    r = await orders.get(f"/api/projections/order_progress/{order}")
                    if r.status_code != 200 or r.json()["steps"] < steps:
                        return False
                return True

            await until(settled, timeout=20, what=f"every order {final}, its progress folded")
            charges = (await stock.get("/api/charges")).json()
            reservations = (await stock.get("/api/reservations")).json()["items"]
            progress = [
                (await orders.get(f"/api/projections/order_progress/{o}")).json() for o in placed
            ]
    released = sum(r["released"] for r in reservations)
    print(
        f"orders {len(placed)} {final}; charges {charges['total']}, reservations "
        f"{len(reservations)} ({released} released); progress steps "
        f"{[p['steps'] for p in progress]}"
    )
    # each reaction applied once, in the deployable that holds it, on its own database
    assert charges["total"] == len(placed)
    assert len(reservations) == len(placed)
    assert released == (len(placed) if fail_payment else 0)
    # OrderProgress (Orders) folds Inventory's and Payment's events, read from the broker, once
    assert [p["steps"] for p in progress] == [steps] * len(placed)
