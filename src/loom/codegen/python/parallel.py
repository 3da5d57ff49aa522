"""Generating a large model on two cores: the second half of the contexts in a forked process.

The contexts' packages are generated independently of one another, so a child process forked once
the model is built (it inherits the model, nothing is sent to it) generates half of them while
this process generates the rest, and sends back its texts. The result is the same as generating
them all here, in the same order; a small model, a platform without `fork`, a process with other
threads (forking one is unsafe), a single core or a machine with no core to spare generate here, and
so does anything the child failed to do.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# The total weight (aggregates, workflows, handlers) below which a fork costs more than it saves:
# forking, pickling and reading back take some 20 ms, generating one aggregate about 0.6 ms.
MIN_WEIGHT = 200


def halves(items: Sequence[T], work: Callable[[T], R], *, weight: Callable[[T], int]) -> list[R]:
    """`[work(x) for x in items]`, its second half (by weight) done by a forked child when that
    pays off."""
    weights = [weight(x) for x in items]
    total = sum(weights)
    if total < MIN_WEIGHT or not _may_fork():
        return [work(x) for x in items]
    split, acc = 0, 0
    while split < len(items) and acc + weights[split] <= total // 2:
        acc += weights[split]
        split += 1
    split = max(1, min(split, len(items) - 1))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its half, pickled into the pipe, then gone without any clean-up
        status = 1
        try:
            os.close(read_end)
            data = pickle.dumps([work(x) for x in items[split:]], pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        first = [work(x) for x in items[:split]]
    finally:
        with os.fdopen(read_end, "rb") as source:
            data = source.read()
        _, status = os.waitpid(pid, 0)
    if status != 0:
        return first + [work(x) for x in items[split:]]  # the child failed: do its half here
    second: list[R] = pickle.loads(data)
    return first + second


def _may_fork() -> bool:
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    # Only with a core to spare: on a machine already busy the two halves share the cores with the
    # rest and each runs at less than half speed, which is slower than one process (measured). The
    # load average counts this process too (and a script's previous commands, about one).
    cores = os.cpu_count() or 1
    return cores > 1 and os.getloadavg()[0] < cores - 0.5
