#!/usr/bin/env python3
"""Cross-check: the server's controller (ferrumkv_py/eviction/ahe_adaptive.py, pure Python)
against the numba kernel (adaptive.py) on the same evsim streams.

The Python side drives the real classes the server uses (Keyspace, EvictionPool, the
controller, the Morris counter touch without decay) in a read-through loop that mirrors the
Evictor: 5 samples per eviction into the 16-entry pool, best live entry evicted, on_evict
before unlink, on_miss from the keyspace's miss hook.  Random streams differ (Python's
random vs numba's), so agreement is statistical.  Smaller than run.py (C and n below):

    python3 crosscheck.py --n 600000 --C 2000 --workloads zipf,shift40,burst,mixed
"""
import argparse
import os
import random
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)              # this directory's sim/workloads first
import adaptive as A  # noqa: E402
import workloads as W  # noqa: E402
from ferrumkv_py.clock import ManualClock  # noqa: E402
from ferrumkv_py.eviction import lfu  # noqa: E402
from ferrumkv_py.eviction.ahe import AheSettings  # noqa: E402
from ferrumkv_py.eviction.ahe_adaptive import (DUEL_STEP_BUDGET, GHOST_FRACTION, GHOST_MAX,  # noqa: E402
                                              GHOST_MIN, STEP_MAX, AdaptiveController)
from ferrumkv_py.eviction.pool import EvictionPool  # noqa: E402
from ferrumkv_py.keyspace import Keyspace  # noqa: E402

SAMPLES = 5
BUCKET = 5000


def python_run(keys, C, R, seed):
    clock = ManualClock(0)
    ks = Keyspace(databases=1, clock=clock, rng=random.Random(seed))
    ks.lfu_on = True
    ks.lfu_touch = lfu.make_touch(10, 0, ks.rng.random)
    ctl = AdaptiveController(ks, AheSettings())
    ks.miss_hook = ctl.on_miss
    db = ks.dbs[0]
    pool = EvictionPool()
    alphas = []
    asum = 0.0
    for i, k in enumerate(keys.tolist()):
        now = i * 1000 // int(R)
        if now != clock.ms:
            clock.ms = now
            ks.refresh_time()
        key = b"%d" % k
        if db.lookup_read(key) is None:
            if len(db.data) >= C:
                victim = None
                while victim is None:
                    ents = db.sample(SAMPLES)
                    for s, e in zip(ctl.scores(ents, now), ents):
                        pool.offer(s, 0, e.key)
                    while victim is None and len(pool):
                        victim = db.data.get(pool.pop_best()[-1])   # (..., key)
                ctl.on_evict(victim, now)
                db.unlink(victim)
            db.add(key, b"")
        asum += ctl.alpha
        if (i + 1) % BUCKET == 0:
            alphas.append(asum / BUCKET)
            asum = 0.0
    return ks.hits / len(keys), np.array(alphas), ctl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600_000)
    ap.add_argument("--C", type=int, default=2000)
    ap.add_argument("--R", type=float, default=50_000.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workloads", default="zipf,shift40,burst,mixed")
    a = ap.parse_args()
    G = min(max(a.C // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
    p = A.params(ctrl=A.CT_EXTREME, eta=min(DUEL_STEP_BUDGET / G, STEP_MAX), W=4.0, G=G,
                 hmode=1, ttlP=1.0, ttlT=1.0)
    print(f"C={a.C} n={a.n} R={a.R:.0f}")
    print("| workload | numba hit % | Python hit % | numba mean alpha | Python mean alpha "
          "| alpha correlation (5k buckets) | Python s |")
    print("|---|---|---|---|---|---|---|")
    for wl in a.workloads.split(","):
        w = W.WORKLOADS[wl](a.seed, n=a.n)
        keys = w["keys"]
        h, ev, hb, ab, st = A.sim_adaptive(keys, w["ttl"], w["nkeys"], a.C, a.R, p,
                                           1000 + a.seed)
        t0 = time.time()
        hp, abp, ctl = python_run(keys, a.C, a.R, a.seed)
        dt = time.time() - t0
        m = min(len(ab), len(abp))
        corr = float(np.corrcoef(ab[:m], abp[:m])[0, 1]) if np.std(ab[:m]) > 0 else float("nan")
        print(f"| {wl} | {100 * h / len(keys):.2f} | {100 * hp:.2f} | {ab.mean():.3f} | "
              f"{abp.mean():.3f} | {corr:.2f} | {dt:.0f} |", flush=True)


if __name__ == "__main__":
    main()
