"""Stable 64-bit block ids for byte-string keys (FNV-1a 64, compiled with numba).

The server's shadow turns every key it sees into a block id with this hash, so a recorded
trace replays the same on any machine and in any process (Python's own ``hash`` is salted
per process).  Keys arrive as one joined buffer plus offsets, so a whole batch is hashed in
one compiled call::

    buf     = b"user:1user:22k"          offsets = [0, 6, 13, 14]
    hash_keys(buf, offsets) -> int64[3]  (FNV-1a of b"user:1", b"user:22", b"k")

FNV-1a: ``h = 0xcbf29ce484222325; for byte: h = (h ^ byte) * 0x100000001b3 mod 2^64``,
returned as a signed int64 (two's complement), the trace format's key type.

Complexity: O(total bytes).
"""
from __future__ import annotations

import numpy as np
from numba import njit

FNV64_OFFSET = np.uint64(0xCBF29CE484222325)
FNV64_PRIME = np.uint64(0x100000001B3)


@njit(cache=True)
def _fnv1a_batch(buf, offsets, out):
    n = offsets.shape[0] - 1
    for i in range(n):
        h = FNV64_OFFSET
        for j in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(buf[j])) * FNV64_PRIME
        out[i] = h


def hash_keys(buf: bytes, offsets: np.ndarray) -> np.ndarray:
    """Block ids (int64) of the keys ``buf[offsets[i]:offsets[i+1]]``."""
    data = np.frombuffer(buf, dtype=np.uint8) if buf else np.zeros(1, dtype=np.uint8)
    out = np.empty(max(len(offsets) - 1, 0), dtype=np.uint64)
    _fnv1a_batch(data, np.asarray(offsets, dtype=np.int64), out)
    return out.view(np.int64)

