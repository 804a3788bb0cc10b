"""Vectorised preprocessing of many requests at once (the offline replay's key preparation).

``litehit.preprocess.normalize_request`` is the per-request reference; here the same
rules 6-8 run over a whole chunk held in CSR form (request r owns
``keys[offsets[r]:offsets[r + 1]]``) with numpy and one compiled loop, so no Python runs
per block. The tests check both agree request by request.

    keys     [a b c d e | f g]          offsets [0, 5, 7]
    prefix   [A B C D E | F G]          A = h(0, a), B = h(A, b), ...; restarts per request
    k = 2    [  B   D   |   G]          keep fine blocks k-1, 2k-1, ... (E dropped: tail < k)
                                        offsets [0, 2, 3]

Complexity: O(N) for N keys in every function here.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from litehit.preprocess import PREFIX_HASH_GOLDEN

PREFIX_HASH_LEFT_SHIFT_BITS = 12
PREFIX_HASH_RIGHT_SHIFT_BITS = 32


@njit(cache=True)
def _prefix_hash_kernel(raw, offsets, out, golden, left_bits, right_bits):
    """Chain ``raw`` (uint64 view) per request into ``out`` (uint64); wraps mod 2^64."""
    for r in range(offsets.shape[0] - 1):
        h = np.uint64(0)
        for j in range(offsets[r], offsets[r + 1]):
            h = h ^ (raw[j] + golden + (h << left_bits) + (h >> right_bits))
            out[j] = h


def prefix_hash_flat(keys: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``apply_prefix_hash`` on every request of a CSR batch; returns new int64 keys.

    Complexity: O(N).
    """
    out = np.empty(len(keys), dtype=np.uint64)
    if len(keys):
        _prefix_hash_kernel(np.ascontiguousarray(keys).view(np.uint64), offsets, out,
                            np.uint64(PREFIX_HASH_GOLDEN),
                            np.uint64(PREFIX_HASH_LEFT_SHIFT_BITS),
                            np.uint64(PREFIX_HASH_RIGHT_SHIFT_BITS))
    return out.view(np.int64)


def lengths_of(offsets: np.ndarray) -> np.ndarray:
    """Number of keys per request.  Complexity: O(R)."""
    return np.diff(offsets)


def offsets_of(lengths: np.ndarray) -> np.ndarray:
    """CSR offsets from lengths (a leading 0).  Complexity: O(R)."""
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out


def reblock_flat(keys: np.ndarray, offsets: np.ndarray, factor: int):
    """Keep keys ``factor-1, 2*factor-1, ...`` of every request (rule 8).

    Returns ``(keys, offsets)``; the input is returned as is when ``factor == 1``.
    Complexity: O(N).
    """
    if factor == 1:
        return keys, offsets
    lengths = lengths_of(offsets)
    new_offsets = offsets_of(lengths // factor)
    first = offsets[:-1]
    # index of the j-th kept key of request r: first[r] + (j + 1) * factor - 1
    j = np.arange(new_offsets[-1], dtype=np.int64) - np.repeat(new_offsets[:-1],
                                                              lengths // factor)
    idx = np.repeat(first, lengths // factor) + (j + 1) * factor - 1
    return keys[idx], new_offsets


def gather_flat(keys: np.ndarray, offsets: np.ndarray, rows: np.ndarray):
    """The sub-batch of requests ``rows`` (ascending or not), as ``(keys, offsets)``.

    Complexity: O(R + kept keys).
    """
    lengths = offsets[rows + 1] - offsets[rows]
    new_offsets = offsets_of(lengths)
    idx = np.repeat(offsets[rows] - new_offsets[:-1], lengths) + np.arange(
        new_offsets[-1], dtype=np.int64)
    return keys[idx], new_offsets


def normalize_flat(keys: np.ndarray, offsets: np.ndarray, enable_prefix_hash: bool,
                   factor: int):
    """Rules 7-8 on a CSR batch whose length contract was already checked.

    Complexity: O(N).
    """
    if enable_prefix_hash:
        keys = prefix_hash_flat(keys, offsets)
    return reblock_flat(keys, offsets, factor)
