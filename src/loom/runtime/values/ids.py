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
_VERSION_VARIANT = 0x7 << 76 | 0b10 << 62

# Random bits from the OS, fetched 4 KiB at a time: one getrandom() system call per ~400 ids
# rather than one per id. A forked child must not reuse its parent's bytes.
_BUFFER_SIZE = 4096
_buffer = b""
_offset = _BUFFER_SIZE


def _forget_buffer() -> None:
    global _buffer, _offset
    _buffer, _offset = b"", _BUFFER_SIZE


os.register_at_fork(after_in_child=_forget_buffer)


def _random_bits(nbytes: int) -> int:
    """`nbytes` random bytes as an int (call with `_lock` held)."""
    global _buffer, _offset
    if _offset + nbytes > len(_buffer):
        _buffer, _offset = os.urandom(_BUFFER_SIZE), 0
    start = _offset
    _offset = start + nbytes
    return int.from_bytes(_buffer[start : start + nbytes])


def _next_value() -> int:
    """A fresh UUIDv7 as an int: 48-bit Unix milliseconds, then 74 bits that are random for a new
    millisecond and incremented within the same one, so ids sort in creation order."""
    global _last_ms, _last_tail
    ms = time.time_ns() // 1_000_000
    with _lock:
        if ms <= _last_ms:
            ms = _last_ms
            tail = _last_tail + 1 + (_random_bits(1))
            if tail > _TAIL_MASK:  # counter exhausted: borrow the next millisecond
                ms += 1
                tail = _random_bits(10) & (_TAIL_MASK >> 1)
        else:
            tail = _random_bits(10) & (_TAIL_MASK >> 1)
        _last_ms, _last_tail = ms, tail
    rand_a = tail >> 62  # 12 bits
    rand_b = tail & ((1 << 62) - 1)
    return (ms & 0xFFFF_FFFF_FFFF) << 80 | _VERSION_VARIANT | rand_a << 64 | rand_b


def new_id() -> UUID:
    """A fresh UUIDv7."""
    return UUID(int=_next_value())


def new_id_text() -> str:
    """A fresh UUIDv7 in its canonical text form (`str(new_id())`, without building the UUID)."""
    h = f"{_next_value():032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
