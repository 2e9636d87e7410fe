"""Time-ordered unique ids (ULID layout: 48-bit milliseconds + 80 random bits, Crockford base32).

Ids sort by creation time as strings, so journals, warehouse tables and listings all
order naturally, and they never collide across machines of a fleet.
"""

from __future__ import annotations

import os
import threading
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_lock = threading.Lock()
_last_ms = 0
_last_rand = 0


def _encode(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_id(prefix: str = "") -> str:
    """A new id, strictly increasing within this process (monotonic within one millisecond)."""
    global _last_ms, _last_rand
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last_ms:
            ms = _last_ms
            rand = _last_rand + 1
        else:
            rand = int.from_bytes(os.urandom(10), "big") >> 1  # leave headroom for increments
        _last_ms, _last_rand = ms, rand
    return prefix + _encode(ms, 10) + _encode(rand, 16)
