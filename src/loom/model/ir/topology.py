"""The model's topology: which contexts run together (deployables) and the brokers channels may be
placed on (channel sources). Declarations only; the walkers over them are in `deployables.py`.

A deployable is one service: its contexts' code, tables and routes, one database. A channel
source names a broker by kind; where it runs (its URL) is configuration, never model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from loom.model.messaging import BrokerKind

if TYPE_CHECKING:
    from loom.model.ir.origin import Origin

# The name of the one deployable a model without `deployable` declarations runs as (every context,
# one process, one database): no name, so nothing on the command line or in a file is named after
# it that was not before.
IMPLICIT: Final = ""


@dataclass(frozen=True, slots=True)
class Deployable:
    """`deployable Name { contexts: A, B }`: contexts served together by one process on one
    database, in the order written. The implicit one (no declaration in the model) is named
    `IMPLICIT`, holds every context in model order and has no origin."""

    name: str
    contexts: tuple[str, ...]
    origin: Origin | None

    @property
    def implicit(self) -> bool:
        return self.name == IMPLICIT


@dataclass(frozen=True, slots=True)
class ChannelSource:
    """`channelSource Name { kind: nats }`: a broker of that kind, which a channel is placed on
    with `source: Name`. Its URL is given when the service runs (`--broker Name=URL`)."""

    name: str
    kind: BrokerKind
    origin: Origin
