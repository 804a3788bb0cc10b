"""Issue 20, round 3: TinyLFU's frequency sketch on top of the server's probation.

Every variant is the server's default allkeys-ahe as the simulator models it (the
AHE-adaptive kernel of research/evsim_ahe/adaptive.py with round 2's probation: fingerprint
ghost of 3C lanes, return boost 1, the rho switch 2 / 0.7, counts x0.95; ghost_study.py's
"kept" variant) plus a count-min sketch of 4-bit counters (``adaptive.params(sk=1, ...)``):

  seed t[+b]      a new key whose estimate (this access included) is >= t starts off
                  probation at counter 5 + b (+ bp x (estimate - t)): TinyLFU's knowledge
                  of keys *not* in the cache, where the ghost only knows recent victims
  score s         the blend reads counter + s x estimate (the sketch's linear resolution at
                  small counts, where the Morris counter is coarse)
  ghost boost     a key back from the ghost starts at 5 + 1 + min(max, b x (estimate - 2))
  ghost gate t    a key back from the ghost skips probation only with an estimate >= t
  duel            W-TinyLFU's admit-or-not in the pool: probation's pick stays (and leaves
                  probation) when its estimate exceeds that of the pool's best blend candidate
  w / win         counters per key (all rows; w / 2 bytes per key) / reset window in C
  miss            only misses increment (no hook on the hit path)
  cu              conservative update
  no ghost        the ghost is dropped (pghost 0: no returns, so no switch either)

Rows: the nine trace rows of docs/eviction-quality.md (object-count C, simulated 1,000
requests/s) and the seven synthetic workloads of ``ghost_study.py --synthetic`` (the live
bench's streams, C = 1,000 at 257 bytes per key net of the ghost's and the sketch's bytes) at
1k and 50k requests/s; mean of two seeds.  Printed as hit %, then ours minus target (trace
rows: the best published policy; synthetic: the better of live LRU and LFU, both from the
report on 3f2823d), then ours minus the base (the server's default), with a summary per
variant: CloudPhysics 8,000's gain and the worst loss elsewhere (issue 20's bar for keeping a
variant: >= +1 point there, no loss beyond 0.2 point on any other row).

    .venv/bin/python research/probation/sketch_study.py [--only 0,3] [--json out/sk.json]
    .venv/bin/python research/probation/sketch_study.py --reuse    # why seeding loses

One process, no pool (the machine is shared); about 3 minutes for the 58 variants.
Results and verdict: docs/ahe-adaptive.md section 12 (none kept).
"""

from __future__ import annotations

import argparse
import json
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

KEY_BYTES = 257        # the live benches' bytes per key (allkeys-lru holds C keys)
DUEL_RING_KEYS = 9     # keys the duel ring costs at C = 1,000
GHOST_BYTES = 6        # the fingerprint ghost's bytes per key (3 lanes of 16 bits)
SEEDS = (1, 2)
TRACE_RATE = 1000.0    # simulated requests/s on the traces (ghost_study.py's)
SYN_REQUESTS = 200_000
SYN_C = 1000
# issue 20's targets: the best published policy per trace row, libCacheSim, and the better
# of live allkeys-lru / allkeys-lfu per synthetic workload and rate (docs/eviction-quality.md
# on 3f2823d)
TRACE_TARGET = {("cloudphysics", 500): 17.26, ("cloudphysics", 2000): 18.48,
                ("cloudphysics", 8000): 29.94, ("mooncake", 500): 5.09,
                ("mooncake", 2000): 7.91, ("mooncake", 8000): 20.53,
                ("mooncake-synthetic", 1000): 9.76, ("mooncake-synthetic", 4000): 25.78,
                ("mooncake-synthetic", 16000): 57.99}
SYN_TARGET = {("zipf", 1): 42.30, ("zipf", 50): 42.64, ("shift", 1): 33.76,
              ("shift", 50): 33.78, ("shift40", 1): 32.16, ("shift40", 50): 32.13,
              ("burst", 1): 45.59, ("burst", 50): 44.38, ("scan", 1): 33.31,
              ("scan", 50): 33.67, ("mixed", 1): 38.97, ("mixed", 50): 37.89,
              ("ttl", 1): 41.54, ("ttl", 50): 42.71}
KEY_ROW = ("cloudphysics", 8000)
KEEP_GAIN_POINTS = 1.0      # issue 20's bar: CloudPhysics 8,000 up by this much ...
KEEP_LOSS_POINTS = 0.2      # ... and no other row down by more than this
TABLE_COLUMNS = 10          # variants per printed block

# name, sketch params (adaptive.params keywords; {} = the base, the server's default)
VARIANTS = [
    ("base (server default)", {}),
    # 1. seeded admission counters (ghost kept, every access counted, 16 counters per key)
    ("seed 2", dict(sk=1, skt=2)),
    ("seed 2+1", dict(sk=1, skt=2, skb=1)),
    ("seed 3", dict(sk=1, skt=3)),
    ("seed 3+1", dict(sk=1, skt=3, skb=1)),
    ("seed 2 +0.5/est", dict(sk=1, skt=2, skbp=0.5)),
    ("seed 2+1 no ghost", dict(sk=1, skt=2, skb=1, pghost=0.0)),
    ("seed 2+1 ghost ignored", dict(sk=1, skt=2, skb=1, skgh=0)),
    ("seed 2+1 miss", dict(sk=1, skt=2, skb=1, skmiss=1)),
    # score term / tie-breaker (no seeding)
    ("score 0.05", dict(sk=1, skt=-1, sks=0.05)),
    ("score 0.25", dict(sk=1, skt=-1, sks=0.25)),
    ("score 1", dict(sk=1, skt=-1, sks=1.0)),
    # 2. TinyLFU admission duel (no seeding)
    ("duel", dict(sk=1, skt=-1, skduel=1)),
    ("duel miss", dict(sk=1, skt=-1, skduel=1, skmiss=1)),
    # the sketch as the blend's frequency (aged by the halving; the Morris counter never is)
    ("freq=sketch 0.5", dict(sk=1, skt=-1, sks=0.5, sksrc=1)),
    ("freq=sketch 1", dict(sk=1, skt=-1, sks=1.0, sksrc=1)),
    ("freq=sketch 2", dict(sk=1, skt=-1, sks=2.0, sksrc=1)),
    ("freq=min(counter, sketch 1)", dict(sk=1, skt=-1, sks=1.0, sksrc=2)),
    ("freq=min(counter, sketch 2)", dict(sk=1, skt=-1, sks=2.0, sksrc=2)),
    ("freq=sketch 1, duel picks too", dict(sk=1, skt=-1, sks=1.0, sksrc=4)),
    ("score 0.05, duel picks too", dict(sk=1, skt=-1, sks=0.05, sksrc=3)),
    ("score 0.05 miss", dict(sk=1, skt=-1, sks=0.05, skmiss=1)),
    ("score 0.1", dict(sk=1, skt=-1, sks=0.1)),
    # the sketch as a gate on the ghost's returns / higher seeding thresholds
    ("ghost gate 3", dict(sk=1, skt=-1, skgate=3)),
    ("ghost gate 4", dict(sk=1, skt=-1, skgate=4)),
    ("seed 5", dict(sk=1, skt=5)),
    ("seed 8", dict(sk=1, skt=8)),
    # 3. size / window around the best score term (score 0.1)
    ("score 0.1 w8 (4 B)", dict(sk=1, skt=-1, sks=0.1, skw=8.0)),
    ("score 0.1 w4 (2 B)", dict(sk=1, skt=-1, sks=0.1, skw=4.0)),
    ("score 0.1 w32 (16 B)", dict(sk=1, skt=-1, sks=0.1, skw=32.0)),
    ("score 0.1 win 5", dict(sk=1, skt=-1, sks=0.1, skwin=5.0)),
    ("score 0.1 win 20", dict(sk=1, skt=-1, sks=0.1, skwin=20.0)),
    ("score 0.1 win 40", dict(sk=1, skt=-1, sks=0.1, skwin=40.0)),
    ("score 0.1 cu", dict(sk=1, skt=-1, sks=0.1, skcu=1)),
    ("score 0.1 + duel", dict(sk=1, skt=-1, sks=0.1, skduel=1)),
    # the sketch in the ghost's place: a short window (the ghost remembers ~3C victims)
    ("seed 2+1 no ghost win 2", dict(sk=1, skt=2, skb=1, pghost=0.0, skwin=2.0)),
    ("seed 2+1 no ghost win 4", dict(sk=1, skt=2, skb=1, pghost=0.0, skwin=4.0)),
    ("seed 2+1 no ghost win 2 w8", dict(sk=1, skt=2, skb=1, pghost=0.0, skwin=2.0, skw=8.0)),
    ("seed 2+1 ghost ignored win 2", dict(sk=1, skt=2, skb=1, skgh=0, skwin=2.0)),
    ("seed 2+1 miss no ghost win 2", dict(sk=1, skt=2, skb=1, pghost=0.0, skwin=2.0, skmiss=1)),
    # the best score terms, wider (bytes per key: w / 2)
    ("score 0.1 cu w32 (16 B)", dict(sk=1, skt=-1, sks=0.1, skcu=1, skw=32.0)),
    ("score 0.2 cu, duel picks too", dict(sk=1, skt=-1, sks=0.2, skcu=1, sksrc=3)),
    ("score 0.1 w64 (32 B)", dict(sk=1, skt=-1, sks=0.1, skw=64.0)),
    ("freq=sketch 0.5 w64, no probation", dict(sk=1, skt=-1, sks=0.5, skw=64.0, sksrc=4,
                                               prob=-1.0)),
    ("score 0.3 cu, duel picks too", dict(sk=1, skt=-1, sks=0.3, skcu=1, sksrc=3)),
    ("score 0.5 cu, duel picks too", dict(sk=1, skt=-1, sks=0.5, skcu=1, sksrc=3)),
    ("score 0.2 cu, duel picks too, w8 (4 B)", dict(sk=1, skt=-1, sks=0.2, skcu=1, sksrc=3,
                                                     skw=8.0)),
    ("score 0.2 cu, duel picks too, w32", dict(sk=1, skt=-1, sks=0.2, skcu=1, sksrc=3,
                                               skw=32.0)),
    # references without a sketch: more samples per eviction (maxmemory-samples), to place
    # the sketch's ceiling beside another lever
    ("reference: samples 10, no sketch", dict(samples=10)),
    ("reference: samples 20, no sketch", dict(samples=20)),
    ("samples 10 + score 0.2 cu, duel picks too", dict(samples=10, sk=1, skt=-1, sks=0.2,
                                                       skcu=1, sksrc=3)),
    ("samples 20 + score 0.2 cu, duel picks too", dict(samples=20, sk=1, skt=-1, sks=0.2,
                                                       skcu=1, sksrc=3)),
    ("samples 20 + seed 2+1", dict(samples=20, sk=1, skt=2, skb=1)),
    ("samples 20 + duel", dict(samples=20, sk=1, skt=-1, skduel=1)),
    # the ghost's return boost scaled by the estimate (section 11: a flat boost of 3 helped
    # CloudPhysics 8,000 and hurt zipf): 5 + 1 + min(max, b x (estimate - 2))
    ("ghost boost +1/est, max 3", dict(sk=1, skt=-1, skgb=1.0, skgmax=3)),
    ("ghost boost +0.5/est, max 3", dict(sk=1, skt=-1, skgb=0.5, skgmax=3)),
    ("ghost boost +1/est, max 6", dict(sk=1, skt=-1, skgb=1.0, skgmax=6)),
    ("ghost boost +1/est max 3 + score 0.2 cu, picks", dict(sk=1, skt=-1, skgb=1.0, skgmax=3,
                                                            sks=0.2, skcu=1, sksrc=3)),
]


def base_params(C, **sk):
    """ghost_study.py's "kept" variant (the server's default) + sketch keywords."""
    G = min(max(C // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
    kw = dict(ctrl=A.CT_EXTREME, eta=min(DUEL_STEP_BUDGET / G, STEP_MAX), W=4.0, G=G,
              hmode=1, ttlP=1.0, ttlT=1.0, prob=0.1, pghost=-3.0, gboost=1, gall=1,
              noduel=2, prho=2.0, prlo=0.7, prkeep=0.95, gbucket=1, padapt=0.0)
    kw.update(sk)
    return A.params(**kw)


def extra_bytes(sk: dict) -> float:
    """Bytes per cached key the variant adds to the keys' own (ghost + sketch)."""
    ghost = GHOST_BYTES if sk.get("pghost", -3.0) != 0.0 else 0
    sketch = sk.get("skw", 16.0) / 2 if sk.get("sk", 0) else 0
    return ghost + sketch


def hit_pct(keys, ttl, nkeys, C, rate, sk) -> float:
    hits = [A.sim_adaptive(keys, ttl, nkeys, C, rate, base_params(C, **sk), 1000 + s)[0]
            for s in SEEDS]
    return 100.0 * float(np.mean(hits)) / len(keys)


def rows():
    """(row name, target, keys, ttl, nkeys, capacity function of the variant, rate)."""
    for tname, load in TRACES.items():
        keys, nkeys = dense(load())
        keys = keys.astype(np.int32)
        ttl = np.zeros(nkeys)
        for C in DEFAULT_CAPACITIES[tname]:
            yield ("%s %d" % (tname, C), TRACE_TARGET[(tname, C)], keys, ttl, nkeys,
                   (lambda sk, C=C: C), TRACE_RATE)
    from bench.workloads import WORKLOADS
    for wl in WORKLOADS:
        st = WORKLOADS[wl](SYN_REQUESTS, SYN_C, 1)       # the live bench's stream
        uniq, inv = np.unique(st.keys, return_inverse=True)
        ttl = np.array([float(st.ttl.get(int(k), 0)) for k in uniq])
        for rate in (1000.0, 50000.0):
            yield ("%s %dk" % (wl, rate // 1000), SYN_TARGET[(wl, int(rate // 1000))],
                   inv.astype(np.int32), ttl, len(uniq),
                   (lambda sk: int(SYN_C * KEY_BYTES / (KEY_BYTES + extra_bytes(sk)))
                    - DUEL_RING_KEYS), rate)


def reuse_table(rows_wanted=(("cloudphysics", 8000), ("mooncake", 2000))) -> None:
    """Why seeding loses: for each access, by how long ago its key was last requested (in
    turnovers T = C / miss ratio of the base, in accesses), the share whose *next* request
    comes within one turnover (a hit for a key kept that long), within 3 T (the ghost's
    horizon, ~3C victims) or never.  Keys the sketch knows and the ghost does not (last
    request 3 T to 20 C accesses ago) against brand-new keys.  Complexity: O(n)."""
    for tname, C in rows_wanted:
        keys, nkeys = dense(TRACES[tname]())
        keys = keys.astype(np.int32)
        hit = hit_pct(keys, np.zeros(nkeys), nkeys, C, TRACE_RATE, {}) / 100.0
        T = C / (1.0 - hit)
        n = len(keys)
        prev = np.full(n, -1, np.int64)
        nxt = np.full(n, -1, np.int64)
        last = np.full(nkeys, -1, np.int64)
        for i, k in enumerate(keys):
            if last[k] >= 0:
                prev[i] = i - last[k]
                nxt[last[k]] = i - last[k]
            last[k] = i
        print("%s %d: turnover T = %.0f accesses (base hit %.2f %%)" % (tname, C, T, 100 * hit))
        for lo, hi, name in ((-1, 0, "first request"), (1, T, "last < T ago"),
                             (T, 3 * T, "T-3T ago (ghost)"),
                             (3 * T, 20 * C, "3T-20C ago (sketch only)")):
            m = (prev == -1) if lo < 0 else (prev >= lo) & (prev < hi)
            nx = nxt[m]
            print("  %-26s %7d accesses: next within T %.3f, within 3T %.3f, never %.3f"
                  % (name, m.sum(), np.mean((nx > 0) & (nx < T)),
                     np.mean((nx > 0) & (nx < 3 * T)), np.mean(nx < 0)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="comma-separated variant indexes (0 = base, "
                    "always run)")
    ap.add_argument("--json", default="", help="write {variant: {row: hit %%}} here")
    ap.add_argument("--reuse", action="store_true", help="only the reuse-distance table")
    args = ap.parse_args()
    if args.reuse:
        reuse_table()
        return 0
    idx = [0] + [int(i) for i in args.only.split(",") if i and int(i) != 0] if args.only \
        else list(range(len(VARIANTS)))
    vs = [VARIANTS[i] for i in idx]
    res: dict = {v[0]: {} for v in vs}
    targets = {}
    for name, target, keys, ttl, nkeys, cap, rate in rows():
        targets[name] = target
        for vname, sk in vs:
            res[vname][name] = hit_pct(keys, ttl, nkeys, cap(sk), rate, sk)
        print("%-24s" % name + "".join("%7.2f" % res[v[0]][name] for v in vs), flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(dict(variants=[[v[0], v[1], extra_bytes(v[1])] for v in vs],
                           targets=targets, hit=res), f, indent=1)
    base = res[vs[0][0]]
    key = "%s %d" % KEY_ROW
    for title, ref in (("ours minus target (trace rows: the best published policy; "
                        "synthetic: the better of live LRU / LFU)", targets),
                       ("ours minus base (the server's default)", base)):
        for lo in range(0, len(vs), TABLE_COLUMNS):
            block = list(zip(idx, vs))[lo:lo + TABLE_COLUMNS]
            print("\n%s, variants %d-%d" % (title, block[0][0], block[-1][0]))
            print("%-24s" % "row" + "".join("%7d" % i for i, _ in block))
            for name in targets:
                print("%-24s" % name + "".join("%+7.2f" % (res[v[0]][name] - ref[name])
                                               for _, v in block))
    print("\nsummary: CP 8,000 against the base / the worst other row / kept (>= +%.1f "
          "there, nothing below -%.1f)?" % (KEEP_GAIN_POINTS, KEEP_LOSS_POINTS))
    for i, (vname, sk) in zip(idx, vs):
        d = {n: res[vname][n] - base[n] for n in targets}
        worst = min((x, n) for n, x in d.items() if n != key)
        keep = d[key] >= KEEP_GAIN_POINTS and worst[0] >= -KEEP_LOSS_POINTS
        print("%2d %-26s %4.1f B/key  CP8000 %+5.2f  worst %+5.2f (%s)  %s"
              % (i, vname, extra_bytes(sk), d[key], worst[0], worst[1],
                 "KEEP" if keep else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
