"""UUIDv7 identifiers (RFC 9562), monotonic within the process."""

from __future__ import annotations

import os
import threading
import time
from uuid import UUID

_lock = threading.Lock()
_last_ms = 0
_last_tail = 0  # 74 random/counter bits below the timestamp
_TAIL_MASK = (1 << 74) - 1


def new_id() -> UUID:
    """A fresh UUIDv7: 48-bit Unix milliseconds, then 74 bits that are random for a new
    millisecond and incremented within the same one, so ids sort in creation order."""
    global _last_ms, _last_tail
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            tail = _last_tail + 1 + (int.from_bytes(os.urandom(2)) & 0xFF)
            if tail > _TAIL_MASK:  # counter exhausted: borrow the next millisecond
                ms += 1
                tail = int.from_bytes(os.urandom(10)) & (_TAIL_MASK >> 1)
        else:
            tail = int.from_bytes(os.urandom(10)) & (_TAIL_MASK >> 1)
        _last_ms, _last_tail = ms, tail
    rand_a = tail >> 62  # 12 bits
    rand_b = tail & ((1 << 62) - 1)
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return UUID(int=value)
