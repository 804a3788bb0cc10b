"""Key streams that stress eviction, shared by the eviction benchmarks.

Each generator takes (n requests, capacity C in keys, seed) and returns a ``Stream``: one
key id per request, an optional TTL (seconds) per key id, and named phases.  Sizes scale
with C so the same shapes hold at any cache size:

  zipf     Zipf(0.9) over a key space 50x the capacity (frequency-friendly)
  shift    the Zipf hot set moves to other keys 8 times (recency must follow)
  burst    background Zipf; every n/8 requests a burst sends half the requests to 0.2C
           brand-new keys that are never seen again
  scan     hot Zipf; in every second eighth half the requests read cold keys
           sequentially from a range 20x the capacity (scan pollution)
  mixed    burst -> stable -> scan -> stable, a quarter each
  ttl      stable Zipf; 30% of the keys carry a 10, 60 or 300 s TTL

Complexity: O(n) numpy work per stream.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ZIPF_S = 0.9
KEYSPACE_PER_CAPACITY = 50
SCAN_RANGE_PER_CAPACITY = 20
BURST_KEYS_PER_CAPACITY = 0.2


@dataclass
class Stream:
    keys: np.ndarray                 # int64 key id per request
    ttl: dict = field(default_factory=dict)   # key id -> TTL seconds (absent = none)
    phases: list = field(default_factory=list)  # (name, start, end)


def _zipf(rng, universe: int, n: int, salt: int) -> np.ndarray:
    w = 1.0 / np.arange(1, universe + 1, dtype=np.float64) ** ZIPF_S
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    rank = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), universe - 1)
    # a fixed permutation so hot keys are not the small ids (prime stride mod universe)
    stride = 1_000_003 if universe % 1_000_003 else 999_983
    return (rank.astype(np.int64) * stride + salt) % universe


def zipf(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    return Stream(_zipf(rng, cap * KEYSPACE_PER_CAPACITY, n, 1), phases=[("stable", 0, n)])


def shift(n: int, cap: int, seed: int, phases: int = 8) -> Stream:
    rng = np.random.default_rng(seed)
    per = n // phases
    universe = cap * KEYSPACE_PER_CAPACITY
    parts = [_zipf(rng, universe, per if p < phases - 1 else n - per * p, 7919 * (p + 1))
             for p in range(phases)]
    return Stream(np.concatenate(parts),
                  phases=[("p%d" % p, p * per, min((p + 1) * per, n)) for p in range(phases)])


def _bursts(rng, keys: np.ndarray, cap: int, first_new: int, period: int, blen: int):
    nhot = max(1, int(cap * BURST_KEYS_PER_CAPACITY))
    phases, pos, start, nxt = [], 0, period - blen, first_new
    while start < len(keys):
        end = min(start + blen, len(keys))
        phases += [("bg", pos, start), ("burst", start, end)]
        idx = start + np.flatnonzero(rng.random(end - start) < 0.5)
        keys[idx] = nxt + rng.integers(0, nhot, idx.size)
        nxt += nhot
        pos, start = end, start + period
    if pos < len(keys):
        phases.append(("bg", pos, len(keys)))
    return phases, nxt


def burst(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    phases, _ = _bursts(rng, keys, cap, universe, max(n // 8, 1), max(n // 40, 1))
    return Stream(keys, phases=phases)


def _scans(rng, keys: np.ndarray, cap: int, base: int, period: int, slen: int):
    scan_range = cap * SCAN_RANGE_PER_CAPACITY
    phases, pos, start, cursor = [], 0, period - slen, 0
    while start < len(keys):
        end = min(start + slen, len(keys))
        phases += [("hot", pos, start), ("scan", start, end)]
        idx = start + np.flatnonzero(rng.random(end - start) < 0.5)
        keys[idx] = base + (cursor + np.arange(idx.size)) % scan_range
        cursor = (cursor + idx.size) % scan_range
        pos, start = end, start + period
    if pos < len(keys):
        phases.append(("hot", pos, len(keys)))
    return phases


def scan(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    phases = _scans(rng, keys, cap, universe, max(n // 4, 1), max(n // 8, 1))
    return Stream(keys, phases=phases)


def mixed(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    q = n // 4
    b = _zipf(rng, universe, q, 1)
    _bursts(rng, b, cap, universe + cap * SCAN_RANGE_PER_CAPACITY, max(q // 4, 1),
            max(q // 16, 1))
    s1 = _zipf(rng, universe, q, 1)
    sc = _zipf(rng, universe, q, 1)
    _scans(rng, sc, cap, universe, max(q // 4, 1), max(q // 8, 1))
    s2 = _zipf(rng, universe, n - 3 * q, 1)
    return Stream(np.concatenate([b, s1, sc, s2]),
                  phases=[("burst", 0, q), ("stable1", q, 2 * q), ("scan", 2 * q, 3 * q),
                          ("stable2", 3 * q, n)])


def ttl(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    bucket = (np.unique(keys) * 2_654_435_761) % 1000
    ids = np.unique(keys)
    ttls = {}
    for lo, hi, seconds in ((0, 100, 10), (100, 200, 60), (200, 300, 300)):
        for k in ids[(bucket >= lo) & (bucket < hi)].tolist():
            ttls[k] = seconds
    return Stream(keys, ttl=ttls, phases=[("stable", 0, n)])


WORKLOADS = {"zipf": zipf, "shift": shift, "burst": burst, "scan": scan, "mixed": mixed,
             "ttl": ttl}
