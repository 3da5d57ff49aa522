"""How many times NATS has handed a message out, read from its ack subject as nats-py reads it
(the conformance suite checks the count against a real server; here every form of the subject)."""

from __future__ import annotations

from typing import Any

import pytest
from nats.aio.msg import Msg

from loom.runtime.messaging.transports.nats import _delivered


@pytest.mark.parametrize(
    "reply",
    [
        "$JS.ACK.ORDERS.Shop_Fulfil.3.10.7.1700000000000000000.0",
        "$JS.ACK.hub.ACCHASH.ORDERS.Shop_Fulfil.3.10.7.1700000000000000000.0.rnd",
        "$JS.ACK._.ACCHASH.ORDERS.Shop_Fulfil.3.10.7.1700000000000000000.0",
    ],
)
def test_the_delivery_count_is_the_one_of_the_ack_subject(reply: str) -> None:
    client: Any = None
    assert _delivered(Msg(client, reply=reply)) == 3
    assert Msg(client, reply=reply).metadata.num_delivered == 3
