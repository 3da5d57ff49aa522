"""The broker names `loom.model.messaging` derives: JetStream durable consumer names."""

from __future__ import annotations

import re

from loom.model.messaging import jetstream_durable

# what JetStream refuses in a consumer name (and what is a path on file storage)
_FORBIDDEN = re.compile(r"[.*>\s/\\]")


def test_a_consumer_name_maps_to_a_readable_durable() -> None:
    name = jetstream_durable("Inventory.reserveStock.on(Orders.OrderPlaced)")
    assert name == "Inventory-reserveStock-on(Orders-OrderPlaced)"


def test_no_two_consumer_names_share_a_durable() -> None:
    tricky = [
        "A.b",
        "A-b",
        "A~2e~b",
        "A~b",
        "A_b",
        "A b",
        "A*b",
        "A>b",
        "A/b",
        "A.b.on(C.D)",
        "A-b.on(C.D)",
        "Ä.b",
    ]
    durables = [jetstream_durable(n) for n in tricky]
    assert len(set(durables)) == len(tricky), dict(zip(tricky, durables, strict=True))
    for durable in durables:
        assert not _FORBIDDEN.search(durable), durable


def test_a_long_name_is_cut_with_a_digest_of_the_whole() -> None:
    long_a, long_b = "A." + "x" * 300 + ".a", "A." + "x" * 300 + ".b"
    a, b = jetstream_durable(long_a), jetstream_durable(long_b)
    assert len(a) == len(b) == 255
    assert a != b
    assert a == jetstream_durable(long_a)  # deterministic
