"""Key streams that stress eviction, shared by the eviction benchmarks.

Each generator takes (n requests, capacity C in keys, seed) and returns a ``Stream``: one
key id per request, an optional TTL (seconds) per key id, named phases and the burst / scan
windows inside them.  Every length is a multiple of C, so a stream has the same shape,
*relative to the cache*, at any cache size; n only decides how many periods it holds.  The
shapes follow the shared simulator's workloads (``/work/shared/tools/evsim``, C = 10k there),
so live results can be set beside the simulator's:

  zipf     Zipf(0.9) over a key space 100 C (a cache holds the head; frequency helps)
  shift    the Zipf hot set moves to fresh keys 8 times (phases of n/8: recency must follow)
  shift40  the same with 40 phases of n/40 (at n = 300 C a phase is 7.5 C requests)
  burst    background Zipf; at the end of every 50 C requests a 10 C-request burst sends
           half the requests to 0.2 C brand-new keys (uniform), never seen again
  scan     hot Zipf; at the end of every 50 C requests a 20 C-request scan window sends
           half the requests to cold keys read in order from a 40 C cyclic range
  mixed    burst -> stable -> scan -> stable, n/4 each; bursts of 2.5 C every 10 C
           requests, scans of 5 C every 10 C requests (same shares and key counts)
  ttl      stable Zipf; 30% of the keys (by id) carry a 10, 60 or 300 s TTL, 10% each

    burst, n = 150 C:   |bg ...... 40C ......|B 10C|bg .... 40C ....|B 10C|bg ... 40C ...|B|
    mixed, n = 4 q:     |bursts every 10C    |stable1            |scans every 10C |stable2|

TTLs are in seconds, so ``ttl`` is the one stream whose content depends on the request rate
(a 10 s TTL is 10k requests at 1k req/s and 500k at 50k req/s).  Streams shorter than
``MIN_PERIODS`` burst/scan periods are allowed but flagged by :func:`check_size`.

Complexity: O(n) numpy work per stream (plus O(key space) once for the Zipf CDF).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ZIPF_S = 0.9
KEYSPACE_PER_CAPACITY = 100          # Zipf key space, in cache sizes
SHIFT_PHASES = 8
SHIFT40_PHASES = 40
BURST_PERIOD_C = 50                  # requests between burst starts, in cache sizes
BURST_LEN_C = 10                     # requests per burst, in cache sizes
BURST_KEYS_C = 0.2                   # new keys per burst, in cache sizes
BURST_SHARE = 0.5                    # share of a burst's requests that go to its new keys
SCAN_PERIOD_C = 50
SCAN_LEN_C = 20
SCAN_SHARE = 0.5                     # share of a scan window's requests that scan
SCAN_RANGE_C = 40                    # cyclic range of scanned keys, in cache sizes
MIXED_PERIOD_C = 10                  # burst / scan period inside mixed's phases
MIXED_BURST_LEN_C = 2.5
MIXED_SCAN_LEN_C = 5
TTL_BUCKETS = ((0, 100, 10), (100, 200, 60), (200, 300, 300))   # per-mille of ids, seconds
TTL_HASH_MULT = 2_654_435_761        # Knuth's multiplicative hash, picks TTL keys by id
PER_MILLE = 1000
PERM_STRIDE = 1_000_003              # prime stride: Zipf rank -> key id bijection
PERM_STRIDE_ALT = 999_983
SHIFT_SALT = 7919                    # moves the hot set to other ids in every phase
MIN_PERIODS = 3


@dataclass
class Stream:
    keys: np.ndarray                            # int64 key id per request
    ttl: dict = field(default_factory=dict)     # key id -> TTL seconds (absent = none)
    phases: list = field(default_factory=list)  # (name, start, end), covering the stream
    events: list = field(default_factory=list)  # ("burst"|"scan", start, end) windows


_CDF: dict = {}


def _zipf(rng, universe: int, n: int, salt: int) -> np.ndarray:
    """n Zipf(ZIPF_S) draws over ``universe`` ids; rank r -> (r*stride + salt) mod universe,
    so the hot keys are spread over the ids and a new salt gives a new hot set."""
    cdf = _CDF.get(universe)
    if cdf is None:
        w = 1.0 / np.arange(1, universe + 1, dtype=np.float64) ** ZIPF_S
        cdf = _CDF[universe] = np.cumsum(w) / w.sum()
    rank = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), universe - 1)
    stride = PERM_STRIDE if universe % PERM_STRIDE else PERM_STRIDE_ALT
    return (rank.astype(np.int64) * stride + salt) % universe


def _len(c_units: float, cap: int) -> int:
    return max(1, int(round(c_units * cap)))


def zipf(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    return Stream(_zipf(rng, cap * KEYSPACE_PER_CAPACITY, n, 1), phases=[("stable", 0, n)])


def shift(n: int, cap: int, seed: int, phases: int = SHIFT_PHASES) -> Stream:
    rng = np.random.default_rng(seed)
    per = n // phases
    universe = cap * KEYSPACE_PER_CAPACITY
    parts = [_zipf(rng, universe, per if p < phases - 1 else n - per * p, SHIFT_SALT * (p + 1))
             for p in range(phases)]
    return Stream(np.concatenate(parts),
                  phases=[("p%d" % p, p * per, (p + 1) * per if p < phases - 1 else n)
                          for p in range(phases)])


def shift40(n: int, cap: int, seed: int) -> Stream:
    return shift(n, cap, seed, SHIFT40_PHASES)


def _windows(n: int, period: int, length: int):
    """(start, end) of the windows that close each period: [k*period - length, k*period)."""
    start = period - length
    while start < n:
        yield start, min(start + length, n)
        start += period


def _bursts(rng, keys: np.ndarray, cap: int, first_new: int, period: int, blen: int):
    """Overwrite BURST_SHARE of each window's requests with uniform draws over that burst's
    own BURST_KEYS_C * cap new ids.  Returns the windows and the next unused id."""
    nhot = _len(BURST_KEYS_C, cap)
    wins, nxt = [], first_new
    for a, b in _windows(len(keys), period, blen):
        idx = a + np.flatnonzero(rng.random(b - a) < BURST_SHARE)
        keys[idx] = nxt + rng.integers(0, nhot, idx.size)
        nxt += nhot
        wins.append(("burst", a, b))
    return wins, nxt


def _scans(rng, keys: np.ndarray, cap: int, base: int, period: int, slen: int, cursor=0):
    """Overwrite SCAN_SHARE of each window's requests with the next ids of a cyclic
    SCAN_RANGE_C * cap range starting at ``base`` (a key comes back only a range later)."""
    scan_range = _len(SCAN_RANGE_C, cap)
    wins = []
    for a, b in _windows(len(keys), period, slen):
        idx = a + np.flatnonzero(rng.random(b - a) < SCAN_SHARE)
        keys[idx] = base + (cursor + np.arange(idx.size)) % scan_range
        cursor = (cursor + idx.size) % scan_range
        wins.append(("scan", a, b))
    return wins, cursor


def _fill(n: int, wins: list, gap: str) -> list:
    """Phases covering [0, n): the windows with ``gap`` phases between them."""
    out, pos = [], 0
    for name, a, b in wins:
        if a > pos:
            out.append((gap, pos, a))
        out.append((name, a, b))
        pos = b
    if pos < n:
        out.append((gap, pos, n))
    return out


def burst(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    wins, _ = _bursts(rng, keys, cap, universe, _len(BURST_PERIOD_C, cap),
                      _len(BURST_LEN_C, cap))
    return Stream(keys, phases=_fill(n, wins, "bg"), events=wins)


def scan(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    wins, _ = _scans(rng, keys, cap, universe, _len(SCAN_PERIOD_C, cap), _len(SCAN_LEN_C, cap))
    return Stream(keys, phases=_fill(n, wins, "hot"), events=wins)


def mixed(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    q = n // 4
    period = _len(MIXED_PERIOD_C, cap)
    b = _zipf(rng, universe, q, 1)
    bwins, _ = _bursts(rng, b, cap, universe + _len(SCAN_RANGE_C, cap), period,
                       _len(MIXED_BURST_LEN_C, cap))
    s1 = _zipf(rng, universe, q, 1)
    sc = _zipf(rng, universe, q, 1)
    swins, _ = _scans(rng, sc, cap, universe, period, _len(MIXED_SCAN_LEN_C, cap))
    s2 = _zipf(rng, universe, n - 3 * q, 1)
    events = bwins + [(name, a + 2 * q, e + 2 * q) for name, a, e in swins]
    return Stream(np.concatenate([b, s1, sc, s2]), events=events,
                  phases=[("burst", 0, q), ("stable1", q, 2 * q), ("scan", 2 * q, 3 * q),
                          ("stable2", 3 * q, n)])


def ttl(n: int, cap: int, seed: int) -> Stream:
    rng = np.random.default_rng(seed)
    universe = cap * KEYSPACE_PER_CAPACITY
    keys = _zipf(rng, universe, n, 1)
    ids = np.unique(keys)
    bucket = (ids * TTL_HASH_MULT) % PER_MILLE
    ttls = {}
    for lo, hi, seconds in TTL_BUCKETS:
        for k in ids[(bucket >= lo) & (bucket < hi)].tolist():
            ttls[k] = seconds
    return Stream(keys, ttl=ttls, phases=[("stable", 0, n)])


WORKLOADS = {"zipf": zipf, "shift": shift, "shift40": shift40, "burst": burst, "scan": scan,
             "mixed": mixed, "ttl": ttl}


def check_size(workload: str, n: int, cap: int) -> str:
    """A warning when n is too short for the workload's shape to show (else '')."""
    if workload in ("burst", "scan") and n < MIN_PERIODS * BURST_PERIOD_C * cap:
        return "%s: n = %.0f C holds fewer than %d periods of %d C" % (
            workload, n / cap, MIN_PERIODS, BURST_PERIOD_C)
    if workload == "mixed" and n // 4 < MIN_PERIODS * MIXED_PERIOD_C * cap:
        return "mixed: a quarter (%.0f C) holds fewer than %d bursts" % (n / 4 / cap, MIN_PERIODS)
    return ""
