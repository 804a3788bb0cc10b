"""Issue 15 groundwork: what a slot-array keyspace would buy, measured in-process.

Two layouts of N keys of 100-byte values, side by side in one process:

  entries  today's: dict key -> Entry(key, value, lru, lfu, exp) (__slots__, GC-tracked),
           plus the sample list of entries
  slots    dict key -> slot (int), values[slot] in a list, per-key metadata in numpy
           arrays indexed by slot (lru ms int64, lfu uint8, exp int64, bytes uint32),
           keys[slot] in a list for unlinking; nothing GC-tracked per key

For each: RSS growth per key (tracemalloc is blind to numpy's arrays, so RSS), the time of a
full ``gc.collect()`` (the stop-the-world walk a cache pays at millions of keys), and for
``slots`` the in-process cost per evicted key of a numba-compiled sampled-LRU victim
selection (5 random slots per pass, Redis's 16-entry pool, one call per write that evicts,
Python unlinking the victims).

    .venv/bin/python research/fullcache/prototype.py [--keys 3000000]
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import time

import numpy as np
from numba import njit

POOL = 16
SAMPLES = 5


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Entry:
    __slots__ = ("key", "value", "lru", "lfu", "exp")

    def __init__(self, key, value, lru):
        self.key, self.value, self.lru, self.lfu, self.exp = key, value, lru, 5, 0


def build_entries(n: int, value: bytes):
    data, alist = {}, []
    for i in range(n):
        k = b"key:%012d" % i
        e = Entry(k, value, i)
        data[k] = e
        alist.append(e)
    return data, alist


def build_slots(n: int, value: bytes):
    data, keys, values = {}, [], []
    lru = np.zeros(n, np.int64)
    lfu = np.full(n, 5, np.uint8)
    exp = np.zeros(n, np.int64)
    size = np.zeros(n, np.uint32)
    for i in range(n):
        k = b"key:%012d" % i
        data[k] = i
        keys.append(k)
        values.append(value)
    lru[:] = np.arange(n)
    size[:] = 200
    return data, keys, values, lru, lfu, exp, size


def timed_gc(rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        gc.collect()
        best = min(best, time.perf_counter() - t0)
    return best


@njit(cache=True)
def pick_victims(lru, live_n, pool_slot, pool_score, need, seed_state):
    """Sampled LRU: fill Redis's pool from random slots in [0, live_n), return ``need``
    victims (slots, best first).  Slots stay dense (the caller swap-removes), so every
    draw lands on a live key."""
    out = np.empty(need, np.int64)
    got = 0
    while got < need:
        for _ in range(SAMPLES):
            s = np.random.randint(live_n)
            score = -lru[s]                         # older = higher
            # insert into the ascending pool unless already there or worse than all
            dup = False
            for q in range(POOL):
                if pool_slot[q] == s:
                    dup = True
            if dup:
                continue
            if pool_slot[0] != -1 and score <= pool_score[0]:
                continue
            q = 0
            while q < POOL - 1 and (pool_slot[q + 1] == -1 or pool_score[q + 1] < score):
                pool_slot[q] = pool_slot[q + 1]
                pool_score[q] = pool_score[q + 1]
                q += 1
            pool_slot[q] = s
            pool_score[q] = score
        for q in range(POOL - 1, -1, -1):
            if pool_slot[q] != -1:
                out[got] = pool_slot[q]
                pool_slot[q] = -1
                got += 1
                break
    return out


def evict_cost(n_keys: int, evictions: int) -> float:
    """us per evicted key: a write loop where every SET evicts one key (slots layout)."""
    data, keys, values, lru, lfu, exp, size = build_slots(n_keys, b"v" * 100)
    pool_slot = np.full(POOL, -1, np.int64)
    pool_score = np.zeros(POOL, np.int64)
    pick_victims(lru, len(keys), pool_slot, pool_score, 1, 0)
    live = len(keys)
    now = n_keys
    t0 = time.perf_counter()
    for i in range(evictions):
        v = int(pick_victims(lru, live, pool_slot, pool_score, 1, 0)[0])
        # unlink v: swap the last slot into its place (a real keyspace also fixes the pool
        # entries that point at the moved slot)
        last = live - 1
        del data[keys[v]]
        if v != last:
            k = keys[last]
            keys[v], values[v] = k, values[last]
            lru[v] = lru[last]
            data[k] = v
        keys.pop()
        values.pop()
        live -= 1
        # the write that needed the room
        k = b"new:%012d" % i
        data[k] = live
        keys.append(k)
        values.append(b"v" * 100)
        lru[live] = now
        live += 1
        now += 1
        for q in range(POOL):           # pool entries of moved / freed slots go stale
            if pool_slot[q] in (v, last):
                pool_slot[q] = -1
    return (time.perf_counter() - t0) / evictions * 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=3_000_000)
    ap.add_argument("--evictions", type=int, default=300_000)
    args = ap.parse_args()
    value = b"v" * 100
    gc.collect()
    r0 = rss()
    layout = build_entries(args.keys, value)
    r1 = rss()
    print("entries: %.1f bytes/key RSS, full gc.collect() %.1f ms" % (
        (r1 - r0) / args.keys, 1e3 * timed_gc()))
    del layout
    gc.collect()
    r0 = rss()
    layout = build_slots(args.keys, value)
    r1 = rss()
    print("slots:   %.1f bytes/key RSS, full gc.collect() %.1f ms" % (
        (r1 - r0) / args.keys, 1e3 * timed_gc()))
    del layout
    gc.collect()
    random.seed(1)
    np.random.seed(1)
    print("slots: compiled sampled-LRU eviction, %.2f us per evicted key (one call per "
          "write, Python unlinks)" % evict_cost(args.keys, args.evictions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
