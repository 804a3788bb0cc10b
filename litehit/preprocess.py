"""Request preprocessing shared by the online and offline paths.

``normalize_request`` validates a request's length contract, optionally chains raw
per-block hashes into prefix keys, and coarsens trace-native blocks into analysis blocks.
Its checks run in a fixed order and each failure is a ``ValueError`` whose message starts
with the rule it broke (``"rule 4: ..."``), so callers can fail fast with a clear reason.

Prefix keys
-----------
Under full attention, block j's KV depends on every token of blocks 1..j, so a usable key
must encode the whole prefix.  Given independent per-block hashes, a rolling 64-bit hash
(a Jenkins-style combine on unsigned arithmetic with a logical right shift) chains them::

    h_0 = 0;  h_j = h_{j-1} XOR (raw_j + GOLDEN + (h_{j-1} << 12) + (h_{j-1} >> 32))  mod 2^64

and each ``h_j`` is reported as a signed (two's complement) int64.

Re-blocking (coarsening only)
-----------------------------
With ``k = block_size_tokens // trace_block_size_tokens``, the chained key of fine block
``j*k`` already encodes the first j coarse blocks, so no hashing is redone: keep every
k-th chained key and drop an incomplete tail (its tokens stay in the denominator)::

    k = 2   fine keys  h1 h2 h3 h4 h5     ->  coarse keys  h2 h4     (h5 dropped)

Complexity: O(m) per request of m trace blocks.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "NormalizedRequest",
    "normalize_request",
    "prefix_hash_next",
    "apply_prefix_hash",
    "to_int64",
]

UINT64_MASK = (1 << 64) - 1
INT64_SIGN_BIT = 1 << 63
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MODULUS = 1 << 64
PREFIX_HASH_GOLDEN = 0x9E3779B97F4A7C15   # 2^64 / phi, the Jenkins/boost constant
PREFIX_HASH_LEFT_SHIFT_BITS = 12
PREFIX_HASH_RIGHT_SHIFT_BITS = 32


def to_int64(value: int) -> int:
    """Wrap any integer to a signed 64-bit value (two's complement of ``value mod 2^64``)."""
    v = int(value) & UINT64_MASK
    return v - UINT64_MODULUS if v & INT64_SIGN_BIT else v


def prefix_hash_next(prev: int, raw: int) -> int:
    """One step of the prefix chain: combine the previous chained key with a raw hash.

    Both inputs are taken mod 2^64; the result is a signed int64.
    Complexity: O(1).
    """
    h = int(prev) & UINT64_MASK
    v = int(raw) & UINT64_MASK
    rhs = (v + PREFIX_HASH_GOLDEN + ((h << PREFIX_HASH_LEFT_SHIFT_BITS) & UINT64_MASK)
           + (h >> PREFIX_HASH_RIGHT_SHIFT_BITS)) & UINT64_MASK
    return to_int64(h ^ rhs)


def apply_prefix_hash(raws: Iterable[int]) -> list:
    """Chain raw per-block hashes from h = 0; returns every intermediate key.

    Complexity: O(m).
    """
    out = []
    h = 0
    mask = UINT64_MASK
    golden = PREFIX_HASH_GOLDEN
    for raw in raws:
        rhs = ((int(raw) & mask) + golden + ((h << 12) & mask) + (h >> 32)) & mask
        h ^= rhs
        out.append(h - UINT64_MODULUS if h & INT64_SIGN_BIT else h)
    return out


@dataclass(frozen=True, slots=True)
class NormalizedRequest:
    """A request ready for the core: analysis-granularity keys and the token denominator."""

    block_keys: tuple            # signed int64 keys, one per full analysis block
    input_token_len: int         # authoritative denominator (includes any partial tail)
    block_size_tokens: int       # analysis tokens per block (hit_tokens = hits * this)

    def _check(self) -> None:
        assert self.block_size_tokens > 0
        assert self.input_token_len >= 0
        assert len(self.block_keys) * self.block_size_tokens <= self.input_token_len
        assert all(-INT64_SIGN_BIT <= k < INT64_SIGN_BIT for k in self.block_keys)


def normalize_request(
    block_keys: Sequence[int],
    input_token_len: int,
    block_size_tokens: int,
    enable_prefix_hash: bool,
    trace_block_size_tokens: int = 0,
) -> NormalizedRequest:
    """Validate, chain and re-block one request (rules 1-8, checked in this order).

    1. ``block_size_tokens`` must be positive.
    2. ``input_token_len`` must not be negative.
    3. ``trace_block_size_tokens == 0`` means "same as block_size_tokens" (negative: error).
    4. ``block_size_tokens`` must be a multiple of ``trace_block_size_tokens``.
    5. ``input_token_len <= 0`` is missing: derive ``len(keys) * trace_block_size_tokens``.
    6. ``len(keys)`` must equal ``input_token_len // trace_block_size_tokens``.
    7. With ``enable_prefix_hash``, raw hashes become prefix-chained keys.
    8. Re-block by ``k = block_size_tokens // trace_block_size_tokens``: keep keys
       ``k-1, 2k-1, ...``; a tail of fewer than k fine blocks is dropped.

    Keys are wrapped to signed int64.
    Complexity: O(m).
    """
    if block_size_tokens <= 0:
        raise ValueError(f"rule 1: block_size_tokens must be positive, got {block_size_tokens}")
    if input_token_len < 0:
        raise ValueError(f"rule 2: input_token_len must not be negative, got {input_token_len}")
    if trace_block_size_tokens < 0:
        raise ValueError(
            f"rule 3: trace_block_size_tokens must be >= 0 (0 = same as block_size_tokens), "
            f"got {trace_block_size_tokens}")
    trace_bs = trace_block_size_tokens or block_size_tokens
    if block_size_tokens % trace_bs != 0:
        raise ValueError(
            f"rule 4: block_size_tokens ({block_size_tokens}) must be a multiple of "
            f"trace_block_size_tokens ({trace_bs}); only coarsening is possible")
    keys = list(block_keys)
    if input_token_len <= 0:
        input_token_len = len(keys) * trace_bs
    expected = input_token_len // trace_bs
    if len(keys) != expected:
        raise ValueError(
            f"rule 6: length contract violated: {len(keys)} block keys but input_token_len "
            f"{input_token_len} // trace block size {trace_bs} = {expected}")
    if enable_prefix_hash:
        keys = apply_prefix_hash(keys)
    elif keys and (min(keys) < INT64_MIN or max(keys) > INT64_MAX):
        keys = [to_int64(k) for k in keys]
    factor = block_size_tokens // trace_bs
    if factor > 1:
        keys = keys[factor - 1::factor]
    return NormalizedRequest(tuple(keys), int(input_token_len), int(block_size_tokens))
