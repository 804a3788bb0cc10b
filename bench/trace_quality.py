"""Eviction quality on real traces: our live policies beside the published state of the art.

Each trace is replayed read-through (a GET per access, a SET on a miss) as an object-count
cache of C keys:
- through libCacheSim's reference implementations (the ``libcachesim`` package): LRU, LFU,
  ARC, S3-FIFO, SIEVE, W-TinyLFU, 2Q and Belady's OPT;
- through this repo's simulator (``bench/exact_sims.py``: exact LRU, OPT), as a
  cross-check of both (they must agree to the request);
- against the live server, one fresh server per policy, maxmemory set so that allkeys-lru
  holds C keys (every policy gets the same maxmemory; ``bench/eviction_quality.py``'s
  ``run_one``, which also reports the litehit shadow's exact LRU of that memory).

Traces (``data/traces/``, sources and licences in its README): the CloudPhysics block I/O
sample (113,872 requests, 48,974 blocks), and the two Mooncake traces as KV-cache blocks (each
request's full 512-token blocks in order): the conversation trace (276,491 accesses) and the
synthetic one (117,888 accesses, 40,148 blocks).

The committed report (``docs/eviction-quality.md``, section "Real traces") is written by
``bench/quality_report.py --docs``, which runs this part with the synthetic matrix from one
list of policy variants.  This script is for ad-hoc runs, written under ``out/``::

    .venv/bin/python bench/trace_quality.py                       # ~6 minutes
    .venv/bin/python bench/trace_quality.py --traces cloudphysics --capacities 2000 \\
        --policies allkeys-lru,allkeys-ahe

Writes ``out/trace-quality.md`` (``--out``) and its plot, and prints each row as it is
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.workloads import Stream  # noqa: E402

TRACES_DIR = os.path.join(ROOT, "data", "traces")
MOONCAKE_BLOCK_TOKENS = 512
DEFAULT_CAPACITIES = {"cloudphysics": (500, 2000, 8000), "mooncake": (500, 2000, 8000),
                      "mooncake-synthetic": (1000, 4000, 16000)}
DEFAULT_POLICIES = "allkeys-lru,allkeys-lfu,allkeys-ahe"
REFERENCE = ("LRU", "LFU", "ARC", "S3-FIFO", "SIEVE", "W-TinyLFU", "2Q", "OPT")
OPT = "OPT"                 # Belady: the bound, not a "published policy" to compete with
CURVE_FACTOR = 2            # the plot's libCacheSim lines: capacities a factor 2 apart,
CURVE_SPAN = 4              # from C_min / CURVE_SPAN to C_max * CURVE_SPAN
WITHIN_BEST_POINTS = 0.5    # issue 20: AHE >= the best published policy - 0.5 point
PLOT_SPREAD = 1.06          # our live points sit this factor apart around C


def load_cloudphysics() -> np.ndarray:
    """One block id per line."""
    return np.loadtxt(os.path.join(TRACES_DIR, "cloudphysics_io.txt"), dtype=np.int64)


def load_mooncake(name: str = "mooncake_conversation_trace.jsonl") -> np.ndarray:
    """Each request's full 512-token blocks, in order (the last partial block is not
    cached, as a KV cache keeps only full blocks)."""
    ids: list = []
    with open(os.path.join(TRACES_DIR, name)) as f:
        for line in f:
            req = json.loads(line)
            ids += req["hash_ids"][:req["input_length"] // MOONCAKE_BLOCK_TOKENS]
    return np.asarray(ids, dtype=np.int64)


def load_mooncake_synthetic() -> np.ndarray:
    return load_mooncake("mooncake_synthetic_trace.jsonl")


TRACES = {"cloudphysics": load_cloudphysics, "mooncake": load_mooncake,
          "mooncake-synthetic": load_mooncake_synthetic}


def dense(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids renumbered 0..n-1 (first-seen order is irrelevant: only equality matters)."""
    _, inv = np.unique(ids, return_inverse=True)
    return inv.astype(np.int64), int(inv.max()) + 1


def next_access(keys: np.ndarray) -> np.ndarray:
    """For each request, the index of the next request of the same key (-1: none, the
    value libCacheSim's Belady reads as "never")."""
    n = len(keys)
    order = np.lexsort((np.arange(n), keys))        # by key, then time
    nxt = np.full(n, -1, dtype=np.int64)
    same = keys[order[1:]] == keys[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def reference_hits(name: str, keys: np.ndarray, nxt: np.ndarray, cap: int) -> int:
    """Hits of libCacheSim's ``name`` on the read-through stream.  Complexity: O(n) calls."""
    import libcachesim as lcs
    cls = {"LRU": lcs.LRU, "LFU": lcs.LFU, "ARC": lcs.ARC, "S3-FIFO": lcs.S3FIFO,
           "SIEVE": lcs.Sieve, "W-TinyLFU": lcs.WTinyLFU, "2Q": lcs.TwoQ,
           "OPT": lcs.Belady}[name]
    cache = cls(cache_size=cap)
    get = cache.get
    req = lcs.Request()
    req.obj_size = 1
    req.op = lcs.ReqOp.OP_GET
    hits = 0
    never = np.iinfo(np.int64).max
    for i, (k, nx) in enumerate(zip(keys.tolist(), nxt.tolist())):
        req.obj_id = k + 1                  # libCacheSim reserves id 0
        req.clock_time = i
        req.next_access_vtime = nx if nx >= 0 else never
        hits += get(req)
    return hits


def simulator_hits(keys: np.ndarray, nkeys: int, cap: int) -> tuple[int, int]:
    """(exact LRU hits, OPT hits) from bench/exact_sims.py (numba: loaded lazily)."""
    from bench import exact_sims as sim
    no_ttl = np.zeros(nkeys)
    k32 = keys.astype(np.int32)
    lru = sim.sim_lru_exact(k32, no_ttl, nkeys, cap, 1.0)[0]
    nx = sim.next_use(k32, nkeys)
    opt = sim.sim_opt(k32, nx, no_ttl, nkeys, cap, 1.0)[0]
    return int(lru), int(opt)


def curve_capacities(caps) -> list:
    """The plot's capacities: powers of CURVE_FACTOR times min(caps) spanning
    [min / CURVE_SPAN, max * CURVE_SPAN], plus the table's own capacities."""
    lo, hi = min(caps) / CURVE_SPAN, max(caps) * CURVE_SPAN
    c, out = min(caps), set(caps)
    while c / CURVE_FACTOR >= lo:
        c /= CURVE_FACTOR
    while c <= hi:
        out.add(max(1, int(round(c))))
        c *= CURVE_FACTOR
    return sorted(out)


class Trace:
    """A loaded trace: dense key ids, next-access indexes (for OPT) and the key count."""

    def __init__(self, name: str):
        self.name = name
        self.keys, self.nkeys = dense(TRACES[name]())
        self.nxt = next_access(self.keys)
        self.n = len(self.keys)


def reference_row(trace: Trace, cap: int, names, with_sim: bool = True) -> dict:
    """libCacheSim's hit rates (and the repo simulator's LRU / OPT) at ``cap`` keys."""
    row = {"trace": trace.name, "capacity": cap, "requests": trace.n,
           "ref": {name: reference_hits(name, trace.keys, trace.nxt, cap) / trace.n
                   for name in names}}
    if with_sim:
        lru, opt = simulator_hits(trace.keys, trace.nkeys, cap)
        row["sim"] = {"LRU": lru / trace.n, "OPT": opt / trace.n}
    return row


def live_hits(policy: str, trace: Trace, cap: int, rate: float = 0) -> dict:
    """One fresh server under ``policy`` (eviction_quality.run_one); the result without
    the bulky per-run curve."""
    from bench.eviction_quality import run_one
    ns = argparse.Namespace(capacity=cap, port=None, host="127.0.0.1", password=None)
    r = run_one(trace.name, policy, ns, Stream(keys=trace.keys), rate)
    keep = ("policy", "rate", "requests", "hit", "exact", "exact_inf", "keys", "evicted",
            "alpha", "seconds", "achieved_rate")
    out = {k: r[k] for k in keep}
    out.update(trace=trace.name, capacity=cap)
    return out


# ---- report ----

def best_published(ref: dict) -> tuple[str, float]:
    """(name, hit rate) of the best libCacheSim policy of a row, OPT left out."""
    name = max((k for k in ref if k != OPT), key=lambda k: ref[k])
    return name, ref[name]


def report_lines(rows: list, live: list, labels: dict, plot_name: str | None,
                 heading: str = "###") -> list:
    """The real-trace section's markdown body: the table, the cross-check of the three exact
    LRUs, the issue-20 verdicts and the plot.  ``rows`` are :func:`reference_row` results,
    ``live`` :func:`live_hits` results, ``labels`` maps a policy spec to its column name (the
    column order)."""
    if not rows:
        return ["", "(No trace was measured in this run.)"]
    refs = list(dict.fromkeys(k for r in rows for k in r["ref"]))
    policies = [p for p in labels if any(x["policy"] == p for x in live)]
    by = {(x["trace"], x["capacity"], x["policy"]): x for x in live}
    head = ["trace", "C"] + refs + (["shadow exact LRU"] if policies else []) + [
        labels[p] for p in policies]
    lines = ["Hit rates in %%, read-through (GET, SET on a miss), object-count caches of C "
             "keys.  libCacheSim columns: %s (OPT = Belady, the bound); **bold** = the best "
             "published policy of the row (OPT left out)." % ", ".join(refs)
             + ("  `shadow exact LRU`: the live server's litehit shadow, an exact LRU of the "
                "same maxmemory.  Ours: a fresh live server per cell, maxmemory set so that "
                "allkeys-lru holds C keys (the same for every policy), unthrottled client."
                if policies else "")
             + ("  Columns: %s." % "; ".join("`%s` = `%s`" % (labels[p], p) for p in policies
                                             if labels[p] != p)
                if any(labels[p] != p for p in policies) else ""), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        bname, _ = best_published(r["ref"])
        cells = [("**%.2f**" if k == bname else "%.2f") % (100 * r["ref"][k])
                 if k in r["ref"] else "" for k in refs]
        xs = [by.get((r["trace"], r["capacity"], p)) for p in policies]
        if policies:
            shadow = next((x["exact"] for x in xs if x), None)
            cells.append("%.2f" % (100 * shadow) if shadow is not None else "")
        cells += ["%.2f" % (100 * x["hit"]) if x else "" for x in xs]
        lines.append("| %s | %d | %s |" % (r["trace"], r["capacity"], " | ".join(cells)))
    lines += cross_check(rows, live)
    lines += trace_verdicts(rows, live, labels)
    if plot_name:
        lines += ["", "![real traces](img/%s)" % plot_name]
    lines.append("")
    return lines


def cross_check(rows: list, live: list) -> list:
    """One paragraph: do libCacheSim's LRU / OPT, the repo simulator's and the shadow agree?"""
    out = []
    checked = [r for r in rows if "sim" in r]
    diffs = [abs(r["ref"][k] - r["sim"][k]) * r["requests"] for r in checked
             for k in ("LRU", OPT) if k in r["ref"]]
    if diffs:
        worst = int(round(max(diffs)))
        out.append("libCacheSim's LRU and OPT against this repo's simulator "
                   "(`bench/exact_sims.py`): %s on all %d rows." % (
                       "identical to the request" if worst == 0 else
                       "up to %d requests apart" % worst, len(checked)))
        out[-1] = out[-1].replace("on all 1 rows", "on its one row")
    lru = {(r["trace"], r["capacity"]): r["ref"]["LRU"] for r in rows if "LRU" in r["ref"]}
    gaps = [abs(x["exact"] - lru[(x["trace"], x["capacity"])]) for x in live
            if (x["trace"], x["capacity"]) in lru]
    if gaps:
        out.append("The live shadows' exact LRU is within %.2f point of libCacheSim's LRU in "
                   "all %d live runs." % (100 * max(gaps), len(gaps)))
    return ["", " ".join(out)] if out else []


def trace_verdict_rows(rows: list, live: list, policies: list) -> list:
    """Issue 20's target per row: (row, best published name, its hit rate, {policy: live hit
    rate minus it, in points}) for the AHE policies among ``policies`` that were measured."""
    ahes = [p for p in policies if "ahe" in p and any(x["policy"] == p for x in live)]
    by = {(x["trace"], x["capacity"], x["policy"]): x["hit"] for x in live}
    out = []
    for r in rows:
        bname, best = best_published(r["ref"])
        deltas = {p: 100 * (by[(r["trace"], r["capacity"], p)] - best) for p in ahes
                  if (r["trace"], r["capacity"], p) in by}
        out.append((r, bname, best, deltas))
    return out


def trace_verdicts(rows: list, live: list, labels: dict) -> list:
    """Issue 20's target for every AHE variant measured, as markdown lines: its live hit
    rate minus the row's best published policy, in points (met: >= -WITHIN_BEST_POINTS)."""
    vrows = trace_verdict_rows(rows, live, list(labels))
    ahes = list(dict.fromkeys(p for _, _, _, d in vrows for p in d))
    if not ahes:
        return []
    out = ["", "### Issue 20 target (points)", "",
           "Each AHE variant's live hit rate minus the best published policy of the row "
           "(libCacheSim, OPT left out); target: >= -%.1f on every row." % WITHIN_BEST_POINTS,
           "", "| trace | C | best published | " + " | ".join(labels[p] for p in ahes) + " |",
           "|---|---|---|" + "---|" * len(ahes)]
    for r, bname, best, deltas in vrows:
        cells = ["%+.2f %s" % (deltas[p], "met" if deltas[p] >= -WITHIN_BEST_POINTS
                               else "**missed**") if p in deltas else "" for p in ahes]
        out.append("| %s | %d | %s %.2f | %s |" % (r["trace"], r["capacity"], bname,
                                                     100 * best, " | ".join(cells)))
    out += ["", "Met on: " + "; ".join("`%s` %d of %d rows" % (
        labels[p], sum(d[p] >= -WITHIN_BEST_POINTS for _, _, _, d in vrows if p in d),
        sum(p in d for _, _, _, d in vrows)) for p in ahes) + "."]
    return out


def plot(rows: list, curves: list, live: list, labels: dict, path: str) -> None:
    """Per trace: libCacheSim's hit rate against capacity (a line per policy, OPT dashed),
    the live shadow's exact LRU (crosses) and our live policies (markers spread a little
    around each measured C)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter
    traces = list(dict.fromkeys(r["trace"] for r in rows))
    if not traces:
        return
    policies = [p for p in labels if any(x["policy"] == p for x in live)]
    fig, axes = plt.subplots(1, len(traces), figsize=(5.2 * len(traces), 4.6), squeeze=False)
    handles = {}
    markers = "osD^vP*Xh<>"
    ours = plt.get_cmap("Dark2")        # our points: colours apart from the lines' (tab10)
    for ax, t in zip(axes[0], traces):
        pts = sorted((c for c in curves + rows if c["trace"] == t),
                     key=lambda c: c["capacity"])
        pts = list({c["capacity"]: c for c in pts}.values())
        names = list(dict.fromkeys(k for c in pts for k in c["ref"]))
        for i, name in enumerate(names):
            xy = [(c["capacity"], 100 * c["ref"][name]) for c in pts if name in c["ref"]]
            style = dict(color="k", ls="--", lw=1.2) if name == OPT else dict(
                color="C%d" % (i % 10), lw=1.1, alpha=0.8)
            line, = ax.plot([x for x, _ in xy], [y for _, y in xy], **style)
            handles["libCacheSim " + name] = line
        xs = [x for x in live if x["trace"] == t]
        caps = sorted({x["capacity"] for x in xs})
        shadow = {}
        for x in xs:
            shadow.setdefault(x["capacity"], x["exact"])
        if shadow:
            h, = ax.plot(list(shadow), [100 * v for v in shadow.values()], "kx", ms=7, mew=1.5,
                         ls="none")
            handles["exact LRU (live shadow)"] = h
        for j, p in enumerate(policies):
            for c in caps:
                x = by_key(xs, c, p)
                if x is None:
                    continue
                pos = c * PLOT_SPREAD ** (j - (len(policies) - 1) / 2)
                h, = ax.plot([pos], [100 * x["hit"]], markers[j % len(markers)], ms=6,
                             mfc="none", mew=1.6, color=ours(j % ours.N), ls="none")
                handles["ours: " + labels[p]] = h
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        table_caps = sorted(r["capacity"] for r in rows if r["trace"] == t)
        ax.set_xticks(table_caps, [str(c) for c in table_caps])
        ax.set_title(t, fontsize=10)
        ax.set_xlabel("capacity (keys)")
        ax.set_ylabel("hit rate %")
        ax.grid(alpha=0.3)
    ncol = min(len(handles), 2 * len(traces) + 1)
    fig.legend(list(handles.values()), list(handles), fontsize=8, loc="lower center",
               ncol=ncol, frameon=False)
    fig.tight_layout(rect=(0, 0.05 * ((len(handles) + ncol - 1) // ncol), 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def by_key(xs: list, cap: int, policy: str):
    return next((x for x in xs if x["capacity"] == cap and x["policy"] == policy), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--capacities", help="comma-separated keys (default: per trace)")
    ap.add_argument("--policies", default=DEFAULT_POLICIES, help="live server policies")
    ap.add_argument("--reference", default=",".join(REFERENCE), help="libCacheSim policies")
    ap.add_argument("--rate", type=float, default=0, help="requests/s (0 = unthrottled)")
    ap.add_argument("--no-live", action="store_true", help="simulators only")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "trace-quality.md"))
    args = ap.parse_args()
    rows, live, curves = [], [], []
    policies = [] if args.no_live else args.policies.split(",")
    for tname in args.traces.split(","):
        trace = Trace(tname)
        caps = ([int(c) for c in args.capacities.split(",")] if args.capacities
                else DEFAULT_CAPACITIES[tname])
        print("== %s: %d requests, %d keys" % (tname, trace.n, trace.nkeys), flush=True)
        for cap in curve_capacities(caps):
            t0 = time.time()
            if cap in caps:
                row = reference_row(trace, cap, args.reference.split(","))
                rows.append(row)
            else:
                curves.append(reference_row(trace, cap, args.reference.split(","), False))
                continue
            print("C=%-6d %s  (%.0f s)" % (cap, "  ".join(
                "%s %.2f" % (k, 100 * v) for k, v in row["ref"].items()), time.time() - t0),
                flush=True)
            for policy in policies:
                r = live_hits(policy, trace, cap, args.rate)
                live.append(r)
                print("   ours %-36s %.2f  (keys held %d, shadow exact LRU %.2f)" % (
                    policy, 100 * r["hit"], r["keys"], 100 * r["exact"]), flush=True)
    labels = {p: p for p in policies}
    plot_path = os.path.splitext(args.out)[0] + ".png"
    lines = ["# Eviction quality on real traces", "",
             "Generated by `.venv/bin/python bench/trace_quality.py %s` on %s." % (
                 " ".join(sys.argv[1:]), time.strftime("%Y-%m-%d")), ""]
    lines += report_lines(rows, live, labels, os.path.basename(plot_path))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    plot(rows, curves, live, labels, plot_path)
    print("wrote", args.out, "and", plot_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
