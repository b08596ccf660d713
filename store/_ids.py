"""UUIDv7 agent ids (RFC 9562): time-ordered, printable, 36 characters.

48 bits of Unix milliseconds, version 7, a 12-bit counter seeded at random
each millisecond (so ids made in the same millisecond by this process still
sort in creation order), the variant, and 62 random bits.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

_lock = threading.Lock()
_last_ms = 0
_counter = 0


def uuid7() -> str:
    """A new UUIDv7 string, strictly greater than every earlier one from this process."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms > _last_ms:
            _last_ms = ms
            # the top bit stays clear so a burst has room to count up
            _counter = int.from_bytes(os.urandom(2), "big") & 0x7FF
        else:  # same millisecond, or the clock stepped back: keep counting
            _counter += 1
            if _counter > 0xFFF:
                _last_ms += 1
                _counter = 0
        ms, counter = _last_ms, _counter
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | rand
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def uuid7_time(value: str) -> datetime:
    """The creation time encoded in a UUIDv7 string (millisecond precision, UTC)."""
    ms = int(value.replace("-", "")[:12], 16)
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
