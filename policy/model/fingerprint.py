"""Fingerprints: the 8-byte digests loop state stores for calls, batches and results.

They are identical in every process (state can live in Redis) and never all
zero bytes, which mark a discarded entry.
"""

from __future__ import annotations

import hashlib

SIZE = 8
"""Bytes per fingerprint."""
LONG = 1024
"""From this many bytes on, SHA-256 (which CPUs compute in hardware) is faster than BLAKE2b."""

_blake2b = hashlib.blake2b
_ZERO = bytes(SIZE)
_ONE = (1).to_bytes(SIZE, "big")


def digest(data: bytes) -> bytes:
    """The fingerprint of ``data``."""
    if len(data) < LONG:
        value = _blake2b(data, digest_size=SIZE).digest()
    else:
        value = hashlib.sha256(data).digest()[:SIZE]
    return value if value != _ZERO else _ONE


def fingerprint(text: str) -> bytes:
    """The fingerprint of ``text`` (as UTF-8; lone surrogates kept): ``digest`` of it, a short
    text (a call's key, every turn) hashed here without a second call."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) >= LONG:
        return digest(data)
    value = _blake2b(data, digest_size=SIZE).digest()
    return value if value != _ZERO else _ONE
