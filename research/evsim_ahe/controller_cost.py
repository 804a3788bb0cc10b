#!/usr/bin/env python3
"""In-process cost of the AHE controllers per eviction: scores() of one 5-key sample plus
on_evict(), in a read-through loop on a Zipf stream at the limit (no sockets, no RESP).

    python3 controller_cost.py [--keys 200000] [--requests 600000]

Prints µs per eviction spent inside each controller, the ghost memory, and the whole loop's
µs per request with each controller (LRU scoring as the reference)."""
import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from ferrumkv_py.clock import ManualClock  # noqa: E402
from ferrumkv_py.eviction import lfu  # noqa: E402
from ferrumkv_py.eviction.ahe import AheSettings, SpecController  # noqa: E402
from ferrumkv_py.eviction.ahe_adaptive import AdaptiveController  # noqa: E402
from ferrumkv_py.eviction.pool import EvictionPool  # noqa: E402
from ferrumkv_py.keyspace import Keyspace  # noqa: E402


class Timed:
    """Wraps a controller and accumulates the time spent in it."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.t = 0.0
        self.n = 0

    def scores(self, ents, now):
        t0 = time.perf_counter()
        s = self.ctl.scores(ents, now)
        self.t += time.perf_counter() - t0
        return s

    def on_evict(self, e, now):
        t0 = time.perf_counter()
        self.ctl.on_evict(e, now)
        self.t += time.perf_counter() - t0
        self.n += 1

    def on_miss(self, key):
        t0 = time.perf_counter()
        self.ctl.on_miss(key)
        self.t += time.perf_counter() - t0


def run(kind, keys, cap, seed=1):
    clock = ManualClock(0)
    ks = Keyspace(databases=1, clock=clock, rng=random.Random(seed))
    ks.lfu_on = kind != "lru"
    ks.lfu_touch = lfu.make_touch(10, 0 if kind == "adaptive" else 1, ks.rng.random)
    db = ks.dbs[0]
    pool = EvictionPool()
    ctl = None
    if kind == "spec":
        ctl = Timed(SpecController(ks, AheSettings()))
    elif kind == "adaptive":
        ctl = Timed(AdaptiveController(ks, AheSettings()))
        ks.miss_hook = ctl.on_miss
    t0 = time.perf_counter()
    for i, k in enumerate(keys):
        now = i // 20                      # 20k requests per second
        if now != clock.ms:
            clock.ms = now
            ks.refresh_time()
        key = b"key:%d" % k
        if db.lookup_read(key) is None:
            if len(db.data) >= cap:
                victim = None
                while victim is None:
                    ents = db.sample(5)
                    sc = ctl.scores(ents, now) if ctl else [-e.lru for e in ents]
                    for s, e in zip(sc, ents):
                        pool.offer(s, 0, e.key)
                    while victim is None and len(pool):
                        victim = db.data.get(pool.pop_best()[-1])   # (..., key)
                if ctl:
                    ctl.on_evict(victim, now)
                db.unlink(victim)
            db.add(key, b"x" * 100)
    wall = time.perf_counter() - t0
    hit = ks.hits / len(keys)
    return wall, ctl, hit, ks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=200_000)
    ap.add_argument("--requests", type=int, default=600_000)
    a = ap.parse_args()
    rnd = random.Random(3)
    universe = 10 * a.keys
    # Zipf(0.9) ranks by inverse transform on a truncated continuous approximation
    s = 0.9
    hi = universe ** (1 - s)
    keys = [int((rnd.random() * (hi - 1) + 1) ** (1 / (1 - s))) - 1 for _ in range(a.requests)]
    print(f"{a.keys} keys at the limit, {a.requests} requests (Zipf 0.9 over {universe})")
    print("| controller | hit % | µs per request (whole loop) | evictions "
          "| µs per eviction in the controller | extra memory | bytes per cached key |")
    print("|---|---|---|---|---|---|---|")
    for kind in ("lru", "spec", "adaptive"):
        wall, ctl, hit, ks = run(kind, keys, a.keys)
        us_req = 1e6 * wall / len(keys)
        if ctl is None:
            print(f"| lru scoring | {100 * hit:.2f} | {us_req:.2f} | – | – | – | – |")
            continue
        mem = ctl.ctl.extra_memory_bytes()
        print(f"| {kind} | {100 * hit:.2f} | {us_req:.2f} | {ctl.n} | "
              f"{1e6 * ctl.t / max(ctl.n, 1):.2f} | {mem} B | {mem / a.keys:.2f} |")


if __name__ == "__main__":
    main()
