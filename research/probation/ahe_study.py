"""Probation on the real AHE-adaptive kernel (research/evsim_ahe/adaptive.py, the server's
controller: extremes duel, turnover-scaled recency, W 4): the real traces and the seven
synthetic workloads, with and without probation + ghost.

    .venv/bin/python research/probation/ahe_study.py [--synthetic]
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

RATE = 1000.0          # requests/s of the simulated clock (the traces have no usable time)
VARIANTS = [("AHE-adaptive", -1.0, 0.0), ("+ probation 0.1, ghost C", 0.1, 1.0),
            ("+ probation 0.25, ghost C", 0.25, 1.0), ("+ probation 0.1, ghost 2C", 0.1, 2.0),
            ("+ probation 0.1, 2 gens of C", 0.1, -1.0),
            ("+ probation 0.1, 2 gens of 2C", 0.1, -2.0),
            ("+ probation 0.1, 2 gens of 4C", 0.1, -4.0)]


def ahe_params(C: int, prob: float, pghost: float):
    G = min(max(C // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
    return A.params(ctrl=A.CT_EXTREME, eta=min(DUEL_STEP_BUDGET / G, STEP_MAX), W=4.0, G=G,
                    hmode=1, ttlP=1.0, ttlT=1.0, prob=prob, pghost=pghost)


def run(keys, ttl, nkeys, C, prob, pghost, seeds=(1, 2)) -> tuple[float, float]:
    hits, alphas = [], []
    for s in seeds:
        h, ev, hb, ab, st = A.sim_adaptive(keys, ttl, nkeys, C, RATE,
                                           ahe_params(C, prob, pghost), 1000 + s)
        hits.append(h / len(keys))
        alphas.append(float(ab.mean()))
    return 100 * float(np.mean(hits)), float(np.mean(alphas))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--synthetic", action="store_true", help="also the seven workloads")
    args = ap.parse_args()
    for tname, load in TRACES.items():
        keys, nkeys = dense(load())
        keys = keys.astype(np.int32)
        ttl = np.zeros(nkeys)
        for C in DEFAULT_CAPACITIES[tname]:
            print("== %s C=%d" % (tname, C), flush=True)
            for name, prob, g in VARIANTS:
                h, a = run(keys, ttl, nkeys, C, prob, g)
                print("   %-28s %6.2f   mean alpha %.2f" % (name, h, a), flush=True)
    if args.synthetic:
        import workloads as W
        for wl in W.WORKLOADS:
            w = W.WORKLOADS[wl](0, n=300_000)
            for C in (1000,):
                print("== %s C=%d" % (wl, C), flush=True)
                for name, prob, g in VARIANTS[:2]:
                    h, a = run(w["keys"], w["ttl"], w["nkeys"], C, prob, g, seeds=(1,))
                    print("   %-28s %6.2f   mean alpha %.2f" % (name, h, a), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
