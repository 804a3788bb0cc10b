"""Round 2 of probation (issue 20's synthetic targets): a cheaper ghost and an adaptive
idle threshold, on the AHE-adaptive kernel (research/evsim_ahe/adaptive.py).

Variants (all: every victim in the ghost, return boost 3, no duel on probation victims):
  bloom 2x2C        the server's ghost until now: two generations of 2C ids (exact here)
  fp lanes L x C    the fingerprint ghost: L x C lanes in buckets of 4, each bucket a FIFO
  + adapt s         the idle threshold moves by s in log space per ghost return (up for a
                    probation victim, down for a blend victim), from 0.1, in [0.02, 2]
On the synthetic workloads the capacity is what the live server holds at 257 bytes per key
with the ghost's bytes counted (--synthetic): 8 bytes/key for the Bloom pair, 2L for L lanes.

    .venv/bin/python research/probation/ghost_study.py [--traces] [--synthetic]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "research", "evsim_ahe"))
import adaptive as A  # noqa: E402
from bench.trace_quality import DEFAULT_CAPACITIES, TRACES, dense  # noqa: E402
from ferrumkv_py.eviction.ahe_adaptive import (DUEL_STEP_BUDGET, GHOST_FRACTION,  # noqa: E402
                                              GHOST_MAX, GHOST_MIN, STEP_MAX)

SHOW_RETURNS = "--returns" in sys.argv
KEY_BYTES = 257        # the live benches' bytes per key (allkeys-lru holds C keys)
DUEL_RING_KEYS = 9     # keys the duel ring costs at C = 1,000 (991 held without probation)
# name, prob, pghost, gbucket, padapt, ghost bytes per key, return boost[, prho, noduel,
# prlo, prkeep] (adaptive.params)
VARIANTS = [("no probation", -1.0, 0.0, 0, 0.0, 0, 3),
            ("bloom 2x2C", 0.1, -2.0, 0, 0.0, 8, 3),
            ("fp lanes 2C", 0.1, -2.0, 1, 0.0, 4, 3),
            ("fp lanes 3C", 0.1, -3.0, 1, 0.0, 6, 3),
            ("fp lanes 4C", 0.1, -4.0, 1, 0.0, 8, 3),
            ("fp 3C + adapt 0.02", 0.1, -3.0, 1, 0.02, 6, 3),
            ("fp 3C + adapt 0.05", 0.1, -3.0, 1, 0.05, 6, 3),
            ("fp 2C + adapt 0.05", 0.1, -2.0, 1, 0.05, 4, 3),
            ("fp 3C, p 0.25", 0.25, -3.0, 1, 0.0, 6, 3),
            ("fp 2C boost 2", 0.1, -2.0, 1, 0.0, 4, 2),
            ("fp 3C boost 2", 0.1, -3.0, 1, 0.0, 6, 2),
            ("fp 2C boost 1", 0.1, -2.0, 1, 0.0, 4, 1),
            ("fp 3C boost 1", 0.1, -3.0, 1, 0.0, 6, 1),
            ("fp 1C", 0.1, -1.0, 1, 0.0, 2, 3),
            ("fp 1.5C", 0.1, -1.5, 1, 0.0, 3, 3),
            ("bloom 2x1C", 0.1, -1.0, 0, 0.0, 4, 3),
            ("fp 3C b1 rho 2", 0.1, -3.0, 1, 0.0, 6, 1, 2.0, 1),
            ("fp 3C b1 rho 3", 0.1, -3.0, 1, 0.0, 6, 1, 3.0, 1),
            ("fp 3C b1 rho 2 duel", 0.1, -3.0, 1, 0.0, 6, 1, 2.0, 2),
            ("fp 3C b1 rho 3 duel", 0.1, -3.0, 1, 0.0, 6, 1, 3.0, 2),
            ("fp 3C b1 rho 2/1 duel", 0.1, -3.0, 1, 0.0, 6, 1, 2.0, 2, 1.0),
            ("fp 3C b1 rho 3/1 duel", 0.1, -3.0, 1, 0.0, 6, 1, 3.0, 2, 1.0),
            ("fp 3C b1 rho 2/1.5 duel", 0.1, -3.0, 1, 0.0, 6, 1, 2.0, 2, 1.5),
            # the server's default since round 2 (probation.py: RHO_OFF, RHO_ON, RHO_KEEP)
            ("kept: fp 3C b1 rho 2/0.7 x0.95 duel", 0.1, -3.0, 1, 0.0, 6, 1, 2.0, 2, 0.7,
             0.95)]
# Variants 16-22 were measured (docs/ahe-adaptive.md section 11) before the kernel's
# RHO_MIN_BACK and RHO_WARMUP existed; with them, counts halved at every decision rarely
# reach RHO_MIN_BACK and those switches hardly move.


def ahe_params(C, prob, pghost, gbucket, padapt, gboost=3, prho=0.0, noduel=1, prlo=-1.0, prkeep=0.5):
    G = min(max(C // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
    return A.params(ctrl=A.CT_EXTREME, eta=min(DUEL_STEP_BUDGET / G, STEP_MAX), W=4.0, G=G,
                    hmode=1, ttlP=1.0, ttlT=1.0, prob=prob, pghost=pghost, gboost=gboost, gall=1,
                    noduel=noduel, prho=prho, prlo=prlo, prkeep=prkeep, gbucket=gbucket, padapt=padapt)


def run(keys, ttl, nkeys, C, v, rate, seeds):
    _, prob, pghost, gb, pa, _b, boost, *more = v
    hits = []
    for s in seeds:
        h, _e, _hb, _ab, st = A.sim_adaptive(keys, ttl, nkeys, C, rate,
                                             ahe_params(C, prob, pghost, gb, pa, boost, *more), 1000 + s)
        hits.append(h / len(keys))
        if SHOW_RETURNS:
            print("      blend victims %d back %.3f; probation victims %d back %.3f; off %.2f"
                  % (st[6], st[8] / max(st[6], 1), st[7], st[9] / max(st[7], 1), st[3]))
    return 100 * float(np.mean(hits))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", action="store_true")
    ap.add_argument("--synthetic", action="store_true")
    ap.add_argument("--returns", action="store_true", help="print ghost returns per kind")
    ap.add_argument("--only", default="", help="comma-separated variant indexes")
    args = ap.parse_args()
    vs = [VARIANTS[int(i)] for i in args.only.split(",")] if args.only else VARIANTS
    if args.synthetic:
        from bench.workloads import WORKLOADS
        for wl in WORKLOADS:
            st = WORKLOADS[wl](200_000, 1000, 1)       # the live bench's stream
            uniq, inv = np.unique(st.keys, return_inverse=True)
            ttl = np.array([float(st.ttl.get(int(k), 0)) for k in uniq])
            w = dict(keys=inv.astype(np.int32), ttl=ttl, nkeys=len(uniq))
            for rate in (1000.0, 50000.0):
                row = []
                for v in vs:
                    C = int(1000 * KEY_BYTES / (KEY_BYTES + v[5])) - DUEL_RING_KEYS
                    row.append(run(w["keys"], w["ttl"], w["nkeys"], C, v, rate, (1, 2)))
                print("%-8s %5dk " % (wl, rate // 1000) + " ".join("%6.2f" % h for h in row),
                      flush=True)
    if args.traces:
        for tname, load in TRACES.items():
            keys, nkeys = dense(load())
            keys = keys.astype(np.int32)
            ttl = np.zeros(nkeys)
            for C in DEFAULT_CAPACITIES[tname]:
                row = [run(keys, ttl, nkeys, C, v, 1000.0, (1, 2)) for v in vs]
                print("%-12s %5d " % (tname[:12], C) + " ".join("%6.2f" % h for h in row),
                      flush=True)
    print("columns: " + " | ".join(v[0] for v in vs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
