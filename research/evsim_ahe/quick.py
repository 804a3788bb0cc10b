#!/usr/bin/env python3
"""Quick experiments: python3 quick.py --n 1000000 --wl zipf,shift --R 1000,50000 name:key=val,key=val ...
Prints hit % per (variant, workload, R), averaged over seeds, plus alpha / duel stats."""
import argparse, json, math, os, sys, time
from multiprocessing import Pool
import numpy as np
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sim as S, workloads as W, adaptive as A, run as RUN

def parse(spec):
    name, _, kv = spec.partition(":")
    d = {}
    for item in filter(None, kv.split(",")):
        k, v = item.split("=")
        d[k] = float(v)
    return name, d

def live_stream(wl, seed, n, cap):
    """bench/workloads.py's stream (the live benchmark's shapes, in multiples of cap) in the
    simulator's format: dense key ids, a TTL array, the phases."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
    from bench import workloads as LW
    st = LW.WORKLOADS[wl if wl != "ttlmix" else "ttl"](n, cap, seed)
    ids, dense = np.unique(st.keys, return_inverse=True)
    ttl = np.zeros(len(ids), np.float64)
    if st.ttl:
        pos = {int(k): i for i, k in enumerate(ids.tolist())}
        for k, sec in st.ttl.items():
            if k in pos:
                ttl[pos[k]] = sec
    return dict(keys=dense.astype(np.int32), nkeys=len(ids), ttl=ttl, phases=st.phases,
                events=st.events)


def adaptive_setup(kw, C):
    """Ring size, charged capacity and step for the adaptive kernel.

    frac/gmin/gmax: ring = clamp(C // frac, gmin, gmax) (else G as given);
    gb: ghost bytes per ring slot charged against the cache (keyb bytes per key), so the
    kernel runs with C - ceil(ring * gb / keyb) keys, as the server's maxmemory would;
    etaref/etapow: eta * (etaref / ring)^etapow (the step scales with the ring size);
    srv=1: all of that as the server's controller does it (run.server_adaptive)."""
    kw = dict(kw)
    if kw.pop("srv", 0):                     # the server's ring, step and ghost bytes
        p, charged = RUN.server_adaptive(C)
        kw.update(ctrl=A.CT_EXTREME, W=4.0, hmode=1, G=int(p[A.P_G]), eta=float(p[A.P_ETA]))
        return kw, C - charged
    if "frac" in kw:
        g = int(C // kw.pop("frac"))
        g = max(g, int(kw.pop("gmin", 1)))
        g = min(g, int(kw.pop("gmax", 1 << 30)))
        kw["G"] = g
    G = int(kw.get("G", 2048))
    ceff = C - int(math.ceil(G * kw.pop("gb", 0.0) / kw.pop("keyb", 269.0)))
    if "etaref" in kw:
        kw["eta"] = kw.get("eta", 0.06) * (kw.pop("etaref") / G) ** kw.pop("etapow", 1.0)
    return kw, ceff


def task(args):
    wl, seed, n, R, specs, live = args
    C = live or RUN.C
    w = live_stream(wl, seed, n, C) if live else W.WORKLOADS[wl](seed, n=n)
    out = []
    for name, kw in specs:
        t0 = time.time()
        if name in RUN.VARIANTS:
            v = RUN.VARIANTS[name]
            h, ev, hb, ab, nupd = S.sim_sampled(w["keys"], w["ttl"], w["nkeys"], C, R, v["policy"], v["samples"], v["use_pool"], v["ctrl"], v["alpha0"], v["horizon_mode"], v["horizon"], v["hk"], v["win"], v["step"], v["margin_z"], v["ghost_n"], v["eta"], 1000 + seed)
            st = np.zeros(6)
        else:
            kw2, ceff = adaptive_setup(kw, C)
            p = A.params(**{k: (int(v) if k in ("samples","poolmode","recmode","decay","ctrl","G","dirmode","hmode","trace") else v) for k, v in kw2.items()})
            h, ev, hb, ab, st = A.sim_adaptive(w["keys"], w["ttl"], w["nkeys"], ceff, R, p, 1000 + seed)
        ph = RUN.phase_stats(w["phases"], hb, ab, len(w["keys"]))
        if len(st) > 6 and w.get("events"):
            # peak alpha inside each burst window, mean alpha elsewhere by phase name
            tr = int(kw.get("trace")); a_t = np.asarray(st[10:])
            peaks = [float(a_t[a0 // tr:max(b0 // tr, a0 // tr + 1)].max())
                     for ev_name, a0, b0 in w["events"] if ev_name == "burst"]
            st = np.asarray(st[:6])
            ph["_burst_peaks"] = peaks
        out.append(dict(name=name, wl=wl, seed=seed, R=R, hit=h / len(w["keys"]), alpha=float(ab.mean()), st=st.tolist(), phases=ph, secs=time.time()-t0, ab=ab.tolist()))
    return out

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--wl", default="zipf,shift,shift40,burst,scan,mixed,ttl")
    ap.add_argument("--R", default="1000,50000")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--out", default="")
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--live", type=int, default=0,
                    help="cache size C: replay bench/workloads.py's streams (the live "
                         "benchmark's shapes) at this C instead of evsim's at C = 10k")
    ap.add_argument("specs", nargs="+")
    a = ap.parse_args()
    specs = [parse(s) for s in a.specs]
    tasks = [(wl, int(sd), a.n, float(R), specs, a.live) for wl in a.wl.split(",") for sd in a.seeds.split(",") for R in a.R.split(",")]
    with Pool(a.procs) as p:
        res = [r for rs in p.imap_unordered(task, tasks) for r in rs]
    if a.out:
        json.dump(res, open(a.out, "w"))
    wls = a.wl.split(","); Rs = [float(x) for x in a.R.split(",")]
    cols = [(w, R) for w in wls for R in Rs]
    print("variant".ljust(22) + "".join(f"{w[:7]}{int(R/1000)}k".rjust(10) for w, R in cols))
    for name, _ in specs:
        row = name[:22].ljust(22)
        arow = " alpha".ljust(22)
        for w, R in cols:
            xs = [r for r in res if r["name"] == name and r["wl"] == w and r["R"] == R]
            row += f"{100*np.mean([x['hit'] for x in xs]):10.2f}"
            arow += f"{np.mean([x['alpha'] for x in xs]):10.3f}"
        print(row); print(arow)
    for name, _ in specs:
        xs = [r for r in res if r["name"] == name]
        stt = np.array([x["st"] for x in xs]).sum(0)
        if stt[0]:
            print(f"{name}: duels {stt[0]:.0f} right {stt[1]/stt[0]:.3f} wrong {stt[2]/stt[0]:.3f} noinfo {stt[3]/stt[0]:.3f}  meanH(req) {np.mean([x['st'][4] for x in xs]):.0f}")
    for name, _ in specs:
        for w, R in cols:
            for x in sorted((r for r in res if r["name"] == name and r["wl"] == w and r["R"] == R), key=lambda r: r["seed"]):
                if "_burst_peaks" in x["phases"]:
                    print(f"{name} {w} {int(R)} seed {x['seed']} burst peaks: " + " ".join(f"{v:.2f}" for v in x["phases"].pop("_burst_peaks")))
    if a.phases:
        for name, _ in specs:
            for w, R in cols:
                xs = [r for r in res if r["name"] == name and r["wl"] == w and r["R"] == R]
                if len(xs[0]["phases"]) > 1:
                    print(name, w, int(R), " ".join(f"{k}:{100*np.mean([x['phases'][k]['hit'] for x in xs]):.2f}/a{np.mean([x['phases'][k]['alpha'] for x in xs]):.2f}" for k in xs[0]["phases"]))

if __name__ == "__main__":
    main()
