"""The timing points the deployables of bench/broker.py send the bench, Loom's
(bench/_broker_apps.py) and the hand-written reference's (bench/_broker_ref.py) alike, so both pay
the same for being measured. Imports nothing of Loom: the reference must not.

Each process sends one UDP datagram per ping, `<n> <kind>=<time> ...`, to `BENCH_UDP_PORT` on
loopback (never blocking). The times are `time.monotonic()`, CLOCK_MONOTONIC, one clock for every
process of the machine. Kinds: Sender `c` committed, `w` the relay's claim began, `k` claimed, `p`
publishing, `a` JetStream acked; Receiver `f` fetched, `s` reaction started, `d` reaction
committed (its inbox row with it).
"""

from __future__ import annotations

import os
import socket


class Points:
    """The timing points of each ping in this process, sent as one datagram when the `last` of
    them is noted (a syscall per point would cost more than the point); a point of a ping already
    sent (a commit noted after its publish, a redelivery) goes alone."""

    def __init__(self, last: str) -> None:
        self.last = last
        self.pending: dict[int, dict[str, float]] = {}
        self.sent: set[int] = set()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.to = ("127.0.0.1", int(os.environ["BENCH_UDP_PORT"]))

    def note(self, kind: str, n: int, at: float) -> None:
        points = self.pending.setdefault(n, {})
        points[kind] = at
        if kind == self.last or n in self.sent:
            del self.pending[n]
            self.sent.add(n)
            text = " ".join(f"{k}={t!r}" for k, t in points.items())
            self.sock.sendto(f"{n} {text}".encode(), self.to)
