"""Probation for sampled eviction (issue 20): does S3-FIFO's "quick demotion" of one-hit
wonders help a Redis-style sampled policy on the real traces?

A small numba simulator of sampled eviction (``SAMPLES`` random cached keys per eviction,
Redis's 16-entry pool, the highest score evicted), read-through, object-count capacity C:

  score = alpha * idle / turnover + (1 - alpha) * W * (255 - Morris counter) / 255   (base)

and the probation rule on top: a key is *on probation* from its insertion until its first
hit.  A probationary key idle for more than ``p`` turnovers scores above every non-
probationary key (it leaves first: S3-FIFO's small FIFO holds new keys for ~10 % of the
cache).  A key evicted while on probation is remembered in a ghost set of ``G * C`` ids
(a FIFO of hashes); re-inserted while remembered, it skips probation (S3-FIFO's ghost
queue sends such keys straight to the main queue).

    .venv/bin/python research/probation/study.py
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from numba import njit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
from bench.trace_quality import DEFAULT_CAPACITIES, TRACES, dense  # noqa: E402

SAMPLES = 5
POOL = 16
LFU_INIT = 5


@njit(cache=True)
def simulate(keys, nkeys, C, alpha, W, p, G, seed):
    """Hits of the sampled policy; p < 0 turns probation off, G = 0 the ghost."""
    np.random.seed(seed)
    n = keys.shape[0]
    slot_of = np.full(nkeys, -1, np.int64)
    slots = np.empty(C, np.int64)
    last = np.zeros(nkeys, np.int64)
    cnt = np.zeros(nkeys, np.int64)
    prob = np.zeros(nkeys, np.uint8)
    ghost_ring = np.full(max(int(G * C), 1), -1, np.int64)
    in_ghost = np.zeros(nkeys, np.int64)          # times present in the ring
    gpos = 0
    pk = np.full(POOL, -1, np.int64)
    ps = np.zeros(POOL, np.float64)
    ncached = 0
    hits = 0
    evictions = 0
    turnover = float(C)                            # requests for the cache to turn over
    ev_t0 = 0
    for i in range(n):
        k = keys[i]
        if slot_of[k] >= 0:
            hits += 1
            c = cnt[k]
            if c < 255:
                base = c - LFU_INIT
                if base < 0:
                    base = 0
                if np.random.random() < 1.0 / (base * 10.0 + 1.0):
                    cnt[k] = c + 1
            last[k] = i
            prob[k] = 0
            continue
        if ncached >= C:
            victim = -1
            while victim < 0:
                for j in range(SAMPLES):
                    kk = slots[np.random.randint(ncached)]
                    idle = (i - last[kk]) / turnover
                    sc = alpha * idle + (1.0 - alpha) * W * (255 - cnt[kk]) / 255.0
                    if p >= 0.0 and prob[kk] == 1 and idle > p:
                        sc += 1.0e6 + idle
                    # pool insert (ascending scores, evict from the top)
                    dup = False
                    for q in range(POOL):
                        if pk[q] == kk:
                            dup = True
                    if dup:
                        continue
                    if pk[0] != -1 and sc <= ps[0]:
                        continue
                    q = 0
                    while q < POOL - 1 and (pk[q + 1] == -1 or ps[q + 1] < sc):
                        pk[q] = pk[q + 1]
                        ps[q] = ps[q + 1]
                        q += 1
                    pk[q] = kk
                    ps[q] = sc
                for q in range(POOL - 1, -1, -1):
                    kk = pk[q]
                    if kk == -1:
                        continue
                    pk[q] = -1
                    if slot_of[kk] >= 0:
                        victim = kk
                        break
            # unlink the victim
            s = slot_of[victim]
            lastk = slots[ncached - 1]
            slots[s] = lastk
            slot_of[lastk] = s
            slot_of[victim] = -1
            ncached -= 1
            if G > 0 and prob[victim] == 1:
                old = ghost_ring[gpos]
                if old >= 0:
                    in_ghost[old] -= 1
                ghost_ring[gpos] = victim
                in_ghost[victim] += 1
                gpos = (gpos + 1) % ghost_ring.shape[0]
            evictions += 1
            if evictions % 1024 == 0:
                turnover = C * (i - ev_t0) / 1024.0
                ev_t0 = i
        # insert k
        slots[ncached] = k
        slot_of[k] = ncached
        ncached += 1
        last[k] = i
        cnt[k] = LFU_INIT
        prob[k] = 0 if (G > 0 and in_ghost[k] > 0) or p < 0.0 else 1
    return hits


def main() -> int:
    configs = [("LRU-like (alpha .95)", 0.95, 1.0, -1.0, 0.0),
               ("LFU-like (alpha .05)", 0.05, 1.0, -1.0, 0.0),
               ("blend .5", 0.5, 1.0, -1.0, 0.0)]
    for a in (0.95, 0.5, 0.05):
        for p in (0.05, 0.1, 0.25):
            for g in (0.0, 1.0):
                configs.append(("alpha %.2f prob %.2f ghost %.0fC" % (a, p, g), a, 1.0, p, g))
    for tname, load in TRACES.items():
        keys, nkeys = dense(load())
        for cap in DEFAULT_CAPACITIES[tname]:
            t0 = time.time()
            print("== %s C=%d" % (tname, cap))
            for name, a, w, p, g in configs:
                h = np.mean([simulate(keys, nkeys, cap, a, w, p, g, s) for s in (1, 2)])
                print("   %-36s %6.2f" % (name, 100 * h / len(keys)), flush=True)
            print("   (%.0f s)" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
