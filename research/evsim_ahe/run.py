#!/usr/bin/env python3
"""Run every workload x request rate x seed x policy; write results.json.

  python3 run.py                      # full grid (about 10-15 min on 2 cores)
  python3 run.py --seeds 0 --n 1000000 --workloads zipf,mixed   # quick look
"""
import argparse
import json
import os
import sys
import time
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sim as S  # noqa: E402
import workloads as W  # noqa: E402
import adaptive as A  # noqa: E402

C = 10_000
RATES = [1_000.0, 50_000.0]

# name -> kwargs for sim_sampled (policy, samples, use_pool, ctrl, alpha0,
# horizon_mode, horizon, hk, win, step, margin_z, ghost_n, eta)
BASE = dict(policy=S.POL_AHE, samples=5, use_pool=1, ctrl=S.CT_FIXED, alpha0=0.5,
            horizon_mode=0, horizon=600.0, hk=2.0, win=64, step=0.05,
            margin_z=0.0, ghost_n=0, eta=0.0)


def V(**kw):
    d = dict(BASE)
    d.update(kw)
    return d


VARIANTS = {
    "sLRU-5": V(policy=S.POL_LRU),
    "sLRU-5-nopool": V(policy=S.POL_LRU, use_pool=0),
    "sLRU-10": V(policy=S.POL_LRU, samples=10),
    "LFU-5": V(policy=S.POL_LFU),
    "random": V(policy=S.POL_RANDOM),
    # AHE as specified
    "AHE-window": V(ctrl=S.CT_WINDOW),
    "AHE-lifetime": V(ctrl=S.CT_LIFETIME),
    "AHE-window-nopool": V(ctrl=S.CT_WINDOW, use_pool=0),
    # references: AHE with alpha frozen
    "AHE-a0.05": V(alpha0=0.05),
    "AHE-a0.5": V(alpha0=0.5),
    "AHE-a0.95": V(alpha0=0.95),
    # improvement 1a: recency horizon = 2 x EWMA(idle of sampled keys)
    "AHE-H-a0.5": V(alpha0=0.5, horizon_mode=1),
    # improvement 1b: both terms scaled to the cache (idle and counter EWMAs)
    "AHE-N-a0.2": V(alpha0=0.2, horizon_mode=2),
    "AHE-N-a0.5": V(alpha0=0.5, horizon_mode=2),
    "AHE-N-a0.8": V(alpha0=0.8, horizon_mode=2),
    "AHE-N-window": V(ctrl=S.CT_WINDOW, horizon_mode=2),
    # improvement 2: controllers
    "AHE-margin": V(ctrl=S.CT_MARGIN, win=512, step=0.05, margin_z=2.0),
    "AHE-ghost": V(ctrl=S.CT_GHOST, ghost_n=1024, eta=0.01),
    "AHE-N-ghost": V(ctrl=S.CT_GHOST, horizon_mode=2, ghost_n=1024, eta=0.01),
    # AHE-adaptive (adaptive.py): turnover-scaled terms + recency-vs-frequency duels
    "AHE-adaptive": dict(adaptive=A.params(ctrl=A.CT_EXTREME, eta=0.06, W=4.0, G=C // 20,
                                           hmode=1, ttlP=1.0, ttlT=1.0)),
    "AHE-adaptive-ring10": dict(adaptive=A.params(ctrl=A.CT_EXTREME, eta=0.06, W=4.0,
                                                  G=C // 10, hmode=1, ttlP=1.0, ttlT=1.0)),
    # issue 8, round 2 (the server's controller now): step = DUEL_STEP_BUDGET / ring slots
    # (0.08 at C = 10k) and the ring's bytes charged against the cache as maxmemory does
    # (15,052 bytes at C = 10k = 56 keys of 269 bytes); see server_adaptive()
    "AHE-adaptive-v2": None,
    "AHE-adaptive-fixed0.5": dict(adaptive=A.params(ctrl=A.CT_FIXED, alpha0=0.5, W=4.0,
                                                    G=C // 10, hmode=1)),
}


def server_adaptive(c, key_bytes=269):
    """(kernel params, charged keys) of the server's adaptive controller at cache size c:
    its ring size, its step, and its ghost bytes in keys of ``key_bytes``."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    from ferrumkv_py.eviction import ahe_adaptive as SA
    g = min(max(c // SA.GHOST_FRACTION, SA.GHOST_MIN), SA.GHOST_MAX)
    cells = 1 << (SA.TABLE_LOAD * g - 1).bit_length()
    ghost = g * SA.RING_SLOT_BYTES + cells * SA.TABLE_CELL_BYTES + SA.RING_OBJ_BYTES
    p = A.params(ctrl=A.CT_EXTREME, eta=min(SA.DUEL_STEP_BUDGET / g, SA.STEP_MAX), W=4.0,
                 G=g, hmode=1, ttlP=1.0, ttlT=1.0)
    return p, -(-ghost // key_bytes)


VARIANTS["AHE-adaptive-v2"] = dict(zip(("adaptive", "charged_keys"), server_adaptive(C)))


def phase_stats(phases, hb, ab, n):
    """Merge phases by name; hit ratio and mean alpha per phase name."""
    B = S.BUCKET
    out = {}
    for name, a, b in phases:
        ba, bb = a // B, (b + B - 1) // B
        req = b - a
        h = int(hb[ba:bb].sum())
        al = float(ab[ba:bb].sum() * B) if ab is not None else 0.0
        o = out.setdefault(name, [0, 0, 0.0])
        o[0] += h
        o[1] += req
        o[2] += al
    return {k: dict(hit=v[0] / v[1], alpha=v[2] / v[1], req=v[1]) for k, v in out.items()}


def task(args):
    wname, seed, n, variants, keep_series = args
    w = W.WORKLOADS[wname](seed, n=n)
    keys, ttl, nk, ph = w["keys"], w["ttl"], w["nkeys"], w["phases"]
    n = len(keys)
    res = []
    has_ttl = bool((ttl > 0).any())
    nx = S.next_use(keys, nk)
    cache_rind = {}
    for R in RATES:
        for name in ["OPT", "LRU-exact"]:
            t0 = time.time()
            if not has_ttl and name in cache_rind:
                h, hb = cache_rind[name]
            elif name == "OPT":
                h, hb = S.sim_opt(keys, nx, ttl, nk, C, R)
            else:
                h, hb = S.sim_lru_exact(keys, ttl, nk, C, R)
            cache_rind[name] = (h, hb)
            r = dict(workload=wname, seed=seed, R=R, variant=name, hit=h / n,
                     phases=phase_stats(ph, hb, None, n), secs=time.time() - t0)
            if keep_series:
                r["hb"] = hb.tolist()
            res.append(r)
        for name in variants:
            kw = VARIANTS[name]
            t0 = time.time()
            if "adaptive" in kw:
                h, ev, hb, ab, st = A.sim_adaptive(keys, ttl, nk, C - kw.get("charged_keys", 0),
                                                   R, kw["adaptive"], 1000 + seed)
                r = dict(workload=wname, seed=seed, R=R, variant=name, hit=h / n,
                         evictions=int(ev), updates=int(st[5]), duel_stats=st.tolist(),
                         alpha_mean=float(ab.mean()),
                         phases=phase_stats(ph, hb, ab, n), secs=time.time() - t0)
                if keep_series:
                    r["hb"] = hb.tolist()
                    r["ab"] = ab.tolist()
                res.append(r)
                continue
            h, ev, hb, ab, nupd = S.sim_sampled(
                keys, ttl, nk, C, R, kw["policy"], kw["samples"], kw["use_pool"],
                kw["ctrl"], kw["alpha0"], kw["horizon_mode"], kw["horizon"],
                kw["hk"], kw["win"], kw["step"], kw["margin_z"], kw["ghost_n"],
                kw["eta"], 1000 + seed)
            r = dict(workload=wname, seed=seed, R=R, variant=name, hit=h / n,
                     evictions=int(ev), updates=int(nupd),
                     alpha_mean=float(ab.mean()),
                     phases=phase_stats(ph, hb, ab, n), secs=time.time() - t0)
            if keep_series:
                r["hb"] = hb.tolist()
                r["ab"] = ab.tolist()
            res.append(r)
    print(f"done {wname} seed={seed} ({sum(x['secs'] for x in res):.0f}s)", flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", default=",".join(W.WORKLOADS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--n", type=int, default=4_000_000)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    a = ap.parse_args()
    seeds = [int(s) for s in a.seeds.split(",")]
    variants = a.variants.split(",")
    tasks = [(wl, sd, a.n, variants, True)
             for wl in a.workloads.split(",") for sd in seeds]
    # compile once in the parent so the workers hit the numba cache
    w = W.zipf(0, n=20_000)
    S.sim_sampled(w["keys"], w["ttl"], w["nkeys"], 100, 1000.0, 3, 5, 1, 1, 0.5, 0,
                  600.0, 2.0, 64, 0.05, 0.0, 16, 0.01, 0)
    S.sim_opt(w["keys"], S.next_use(w["keys"], w["nkeys"]), w["ttl"], w["nkeys"], 100, 1000.0)
    A.sim_adaptive(w["keys"], w["ttl"], w["nkeys"], 100, 1000.0, VARIANTS["AHE-adaptive"]["adaptive"], 0)
    S.sim_lru_exact(w["keys"], w["ttl"], w["nkeys"], 100, 1000.0)
    t0 = time.time()
    with Pool(a.procs) as p:
        out = [r for rs in p.imap_unordered(task, tasks) for r in rs]
    json.dump(dict(C=C, rates=RATES, n=a.n, seeds=seeds, results=out), open(a.out, "w"))
    print(f"wrote {a.out} ({len(out)} rows, {time.time() - t0:.0f}s)")


if __name__ == "__main__":
    main()
