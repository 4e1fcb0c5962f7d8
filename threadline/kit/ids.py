"""Opaque, prefixed, time-ordered identifiers (``thr_01jq…``).

The body is a ULID in lower-case Crockford base32: 48 bits of milliseconds then 80 random bits. Within one
process and one millisecond the random part is incremented, so ids sort in creation order, which lets every
cursor paginate on the id alone.
"""

from __future__ import annotations

import secrets
import threading
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_LENGTH = 26
_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def _encode(value: int) -> str:
    chars = []
    for _ in range(_LENGTH):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_id(prefix: str) -> str:
    global _last_ms, _last_random
    with _lock:
        now_ms = time.time_ns() // 1_000_000
        if now_ms <= _last_ms:
            now_ms = _last_ms
            _last_random = (_last_random + 1) & ((1 << 80) - 1)
        else:
            _last_ms = now_ms
            _last_random = secrets.randbits(80)
        value = (now_ms << 80) | _last_random
    return f"{prefix}_{_encode(value)}"
