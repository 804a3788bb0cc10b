"""Eviction quality: each policy's real hit rate against the exact LRU at the same capacity.

A read-through client (GET; on a miss SET the value, with its TTL if it has one) replays the
workloads of ``bench/workloads.py`` against a fresh ferrumkv_py per (workload, policy, rate),
with the litehit shadow on.  Every key costs the same modelled bytes, so ``maxmemory`` holds
exactly C keys and ``litehit-block-bytes`` is that cost: the shadow's
``litehit_exact_hit_rate`` is then an exact LRU of C keys over the same access stream.
(Controller memory, such as AHE-adaptive's duel ghosts, counts against the same maxmemory,
so such a policy holds fewer keys; the ``keys held`` row shows how many it held at the end.)

The client pipelines (two batches of GETs in flight) and keeps the semantics of one request
at a time: a batch is cut before a key that is already in it or in the batch in flight, and
the SETs of a batch's misses travel in front of a later batch's GETs, so a key that misses is
SET before it is read again (``workloads.replay``).  ``--rate`` paces batches to the
target request rate (GETs per second) in ``PACE_S`` slices; the achieved rate is reported,
and a run that falls short of its target by more than ``RATE_SHORTFALL`` is flagged.

The committed ``docs/eviction-quality.md`` is written by ``bench/quality_report.py --docs``
(this matrix and the real traces of ``bench/trace_quality.py``, one list of policy variants);
this script is for ad-hoc matrices, written under ``out/``.

Prints a table (hit rates in %), writes a markdown report (``--out``), a plot (``--plot``:
per workload the exact LRU curve from LITEHIT CURVE with each policy's point at its
capacity) and optionally every result as JSON (``--json``; ``--from-json`` redraws the
report and plot from it).  A ``## Findings`` section at the end of ``--out`` is hand-written
and kept when the report is regenerated.  With lru, lfu and AHE policies
and several rates, the report adds issue 8's verdicts (AHE against the better of LRU and LFU,
and the same stream at each rate).  Usage::

    .venv/bin/python bench/eviction_quality.py                   # 10-15 minutes
    .venv/bin/python bench/eviction_quality.py --quick
    .venv/bin/python bench/eviction_quality.py --policies allkeys-lru,allkeys-ahe \\
        --workloads mixed --rates 1000,50000 --requests 160000 --capacity 1000 --parallel

A policy is ``NAME[/SAMPLES][+config=value...]``, e.g. ``allkeys-lru/10`` or
``allkeys-ahe+ahe-controller=spec+ahe-feedback=lifetime`` (name the AHE controller: the
server's default has changed before).  ``--parallel`` runs the policies of a workload side by
side (one server each), but only at paced rates up to ``PARALLEL_MAX_RATE``: it shares the
machine between light clients (a 1k req/s run then takes n/1000 s once, not once per
policy); faster and unthrottled rates always run one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.workloads import (WORKLOADS, _stop_all, add_target_args, check_size,  # noqa: E402
                             key_cost, replay, target_server)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_POLICIES = ("allkeys-lru,allkeys-lru/10,allkeys-lfu,allkeys-random,"
                    "allkeys-ahe+ahe-controller=spec,"
                    "allkeys-ahe+ahe-controller=spec+ahe-feedback=lifetime,"
                    "allkeys-ahe+ahe-controller=adaptive")
RATE_SHORTFALL = 0.95       # achieved / target below this: the run is flagged
CURVE_POINTS = 64
WITHIN_POINTS = 0.5         # issue 8: AHE within this of the better of LRU and LFU
PARITY_POINTS = 1.0         # issue 8: same stream at two rates within this
ABOVE_BOTH = ("shift", "shift40", "mixed")
PARALLEL_MAX_RATE = 5000    # --parallel only runs paced rates up to this side by side
DOCS_OUT = os.path.join(ROOT, "docs", "eviction-quality.md")  # bench/quality_report.py --docs
DOCS_PLOT = os.path.join(ROOT, "docs", "img", "eviction_quality.png")
DEFAULT_OUT = os.path.join(ROOT, "out", "eviction-quality.md")
NOTES_HEADING = "\n## Findings"   # from this heading on, --out is kept when rewritten
PLOT_SPAN = 8               # the plot shows capacities from C / PLOT_SPAN to C * PLOT_SPAN
PLOT_SPREAD = 1.07          # the policies' points sit this factor apart around C


def parse_policy(spec: str) -> tuple[str, list[str]]:
    name, *extras = spec.split("+")
    policy, _, samples = name.partition("/")
    args = ["--maxmemory-policy", policy]
    if samples:
        args += ["--maxmemory-samples", samples]
    for extra in extras:
        k, _, v = extra.partition("=")
        args += ["--" + k, v]
    return policy, args


def curve_points(reply) -> list:
    """(capacity in keys, exact hit rate) pairs from a RESP2 LITEHIT CURVE reply."""
    top = dict(zip(reply[::2], reply[1::2]))
    points = [dict(zip(p[::2], p[1::2])) for p in top[b"points"]]
    return [(int(p[b"capacity_keys"]), float(p[b"exact_hit_rate"])) for p in points]


def run_one(workload: str, policy_spec: str, args, stream, rate: float) -> dict:
    cost = key_cost()
    _, pargs = parse_policy(policy_spec)
    srv = target_server(args, ["--maxmemory", str(args.capacity * cost), "--litehit-shadow",
                               "yes", "--litehit-block-bytes", str(cost), "--hz", "10"] + pargs)
    try:
        conn = srv.conn
        hit, elapsed = replay(conn, stream, rate)
        lit, mem = conn.info("litehit"), conn.info("memory")
        stats, ks = conn.info("stats"), conn.info("keyspace")
        curve = conn.pipeline([[b"LITEHIT", b"CURVE", b"%d" % CURVE_POINTS]])[0]
    finally:
        srv.stop()
    n = len(hit)
    db0 = dict(kv.split("=") for kv in ks.get("db0", "keys=0").split(","))
    return {
        "workload": workload, "policy": policy_spec, "rate": rate, "requests": n,
        "hit": sum(hit) / n, "exact": float(lit["litehit_exact_hit_rate"]),
        "exact_inf": float(lit["litehit_exact_hit_rate_inf"]),
        "shadow_real": float(lit["litehit_real_hit_rate"]),
        "capacity": int(lit["litehit_capacity_blocks"]), "keys": int(db0["keys"]),
        "evicted": int(stats["evicted_keys"]), "expired": int(stats["expired_keys"]),
        "alpha": mem.get("ahe_alpha", ""), "ahe_extra_memory": int(mem.get("ahe_extra_memory", 0)),
        "duels": {k: int(v) for k, v in mem.items() if k.startswith("ahe_duels")},
        "phases": [(name, sum(hit[a:b]) / max(b - a, 1)) for name, a, b in stream.phases],
        "curve": curve_points(curve), "seconds": elapsed,
        "achieved_rate": n / elapsed,
    }


def fmt_row(r: dict) -> str:
    short = r["rate"] and r["achieved_rate"] < RATE_SHORTFALL * r["rate"]
    return "%-8s %-36s %6s %7.2f %7.2f %7.2f %6d %8d %7s %8.0f/s%s" % (
        r["workload"], r["policy"], rate_name(r["rate"]), 100 * r["hit"], 100 * r["exact"],
        100 * r["exact_inf"], r["keys"], r["evicted"], r["alpha"][:5], r["achieved_rate"],
        "  (SHORT of the target rate)" if short else "")


def short(policy: str) -> str:
    """A policy spec as a column name: ``allkeys-ahe+ahe-controller=spec`` -> ``ahe spec``."""
    name = policy.replace("allkeys-", "")
    for prefix in ("+ahe-controller=", "+ahe-feedback=", "+"):
        name = name.replace(prefix, " ")
    return name


def rate_name(rate: float) -> str:
    if not rate:
        return "max"
    return "%gk" % (rate / 1000) if rate >= 1000 else "%g" % rate


# ---- report ----

def shown_command(argv: list, script: str = "bench/eviction_quality.py") -> str:
    """The command line a report names: output-only flags (--json, --from-json) left out."""
    argv = list(argv)
    for flag in ("--json", "--from-json"):
        while flag in argv[:-1]:
            k = argv.index(flag)
            del argv[k:k + 2]
    return (".venv/bin/python %s %s" % (script, " ".join(argv))).strip()


def report_lines(results: list, meta: dict, plot_name: str, labels: dict | None = None,
                 heading: str = "###") -> list:
    """The synthetic report's markdown body (no title): the parameters, one hit-rate table per
    rate, issue 8's verdicts and the plot.  ``meta`` holds cmd, requests, capacity, seed
    and code; ``labels`` maps a policy spec to its column name (default: :func:`short`)."""
    name = label_of(labels)
    policies = list(dict.fromkeys(r["policy"] for r in results))
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    rates = list(dict.fromkeys(r["rate"] for r in results))
    by = {(r["workload"], r["policy"], r["rate"]): r for r in results}
    lines = [("Generated by `%s` on %s (server code: %s): " % (
                 meta["cmd"], meta.get("date") or time.strftime("%Y-%m-%d"),
                 meta.get("code", "?")) if meta.get("cmd") else "")
             + "%s requests per run, capacity C = %s keys (%d bytes each), seed %s, "
             "read-through client (GET, SET on a miss)." % (
                 meta["requests"], meta["capacity"], key_cost(), meta["seed"]), "",
             "Columns: %s." % "; ".join("`%s` = `%s`" % (name(p), p) for p in policies
                                        if name(p) != p), "",
             "Hit rates in %%. `exact LRU` is the shadow's exact LRU of C keys over the same "
             "access stream (from the first policy's run; the other runs' shadows agree "
             "within %.2f points); `inf` is the compulsory-miss limit.  `keys held`: the "
             "median over the workloads of the keys held at the end (controller memory "
             "counts against maxmemory; expired keys leave room unused)." % (
                 100 * max_exact_spread(results))]
    for rate in rates:
        achieved = [by[k]["achieved_rate"] for k in by if k[2] == rate]
        lines += ["", "%s %s" % (heading, "paced at %d requests/s" % rate if rate else
                                  "unthrottled (as fast as client and server go)"),
                  "", "Achieved: %.0f-%.0f requests/s (median %.0f)." % (
                      min(achieved), max(achieved), median(achieved)), "",
                  "| workload | " + " | ".join(map(name, policies)) + " | exact LRU | inf |",
                  "|---|" + "---|" * (len(policies) + 2)]
        for w in workloads:
            rs = [by.get((w, p, rate)) for p in policies]
            ref = next(r for r in rs if r)
            lines.append("| %s | %s | %.2f | %.2f |" % (
                w, " | ".join("%.2f" % (100 * r["hit"]) if r else "" for r in rs),
                100 * ref["exact"], 100 * ref["exact_inf"]))
        lines.append("| keys held (median) | %s | %s | |" % (" | ".join(
            str(median([r["keys"] for r in results if r["policy"] == p and r["rate"] == rate]))
            for p in policies), meta["capacity"]))
    lines += verdicts(results, workloads, rates, labels, heading)
    lines += ["", "![curves](img/%s)" % plot_name, ""]
    return lines


def label_of(labels: dict | None):
    """A policy spec -> column name function: ``labels`` first, else :func:`short`."""
    labels = labels or {}
    return lambda p: labels.get(p) or short(p)


def write_markdown(path: str, lines: list) -> None:
    """Write ``lines`` to ``path``, keeping the hand-written part of an existing file (from
    NOTES_HEADING on)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    notes = ""
    if os.path.exists(path):        # hand-written notes survive a regeneration
        with open(path) as f:
            old = f.read()
        if NOTES_HEADING in old:
            notes = old[old.index(NOTES_HEADING):]
    with open(path, "w") as f:
        f.write("\n".join(lines) + ("\n" + notes if notes else ""))


def write_report(results: list, args, path: str, plot_path: str) -> None:
    meta = {"cmd": shown_command(sys.argv[1:]), "requests": args.requests,
            "capacity": args.capacity, "seed": args.seed, "code": getattr(args, "code", "?")}
    lines = ["# Eviction quality: real hit rate against exact LRU", ""]
    lines += report_lines(results, meta, os.path.basename(plot_path))
    write_markdown(path, lines)
    plot(results, list(dict.fromkeys(r["workload"] for r in results)), plot_path)
    print("wrote", path, "and", plot_path)


def code_version() -> str:
    """The commit the servers ran, and whether ferrumkv_py/ had uncommitted changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "ferrumkv_py"],
                               cwd=ROOT, text=True, capture_output=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes in ferrumkv_py/" if dirty else "")


def median(values: list):
    return sorted(values)[len(values) // 2]


def max_exact_spread(results: list) -> float:
    spread = 0.0
    for w in {r["workload"] for r in results}:
        ex = [r["exact"] for r in results if r["workload"] == w]
        spread = max(spread, max(ex) - min(ex))
    return spread


def verdict_rows(results: list, workloads: list, rates: list) -> list:
    """Issue 8's targets for every AHE policy present: (policy, workload, [AHE minus the
    better of allkeys-lru and allkeys-lfu per rate, in points], parity or None, [what is
    missed]).  Empty when a workload or rate lacks LRU or LFU."""
    by = {(r["workload"], r["policy"], r["rate"]): 100 * r["hit"] for r in results}
    ahes = [p for p in dict.fromkeys(r["policy"] for r in results) if "ahe" in p]
    if not ahes or not all((w, p, rt) in by for w in workloads for rt in rates
                           for p in ("allkeys-lru", "allkeys-lfu")):
        return []
    out = []
    for p in ahes:
        for w in workloads:
            if not all((w, p, rt) in by for rt in rates):
                continue
            deltas = [by[(w, p, rt)] - max(by[(w, "allkeys-lru", rt)],
                                           by[(w, "allkeys-lfu", rt)]) for rt in rates]
            bad = []
            for rt, d in zip(rates, deltas):
                if w in ABOVE_BOTH and d <= 0:
                    bad.append("not above both at %s by %.2f" % (rate_name(rt), -d))
                elif d < -WITHIN_POINTS:
                    bad.append("below best at %s by %.2f" % (rate_name(rt), -d))
            par = None
            if len(rates) > 1:
                par = by[(w, p, rates[0])] - by[(w, p, rates[-1])]
                if abs(par) > PARITY_POINTS:
                    bad.append("parity off by %.2f" % (abs(par) - PARITY_POINTS))
            out.append((p, w, deltas, par, bad))
    return out


def verdicts(results: list, workloads: list, rates: list, labels: dict | None = None,
             heading: str = "###") -> list:
    """Issue 8's targets for every AHE policy present, as markdown lines."""
    name = label_of(labels)
    rows = verdict_rows(results, workloads, rates)
    if not rows:
        return []
    out = ["", "%s Issue 8 targets (points)" % heading, "",
           "`vs best` = AHE minus the better of allkeys-lru and allkeys-lfu at that rate "
           "(target: >= -%.1f everywhere, > 0 on %s)" % (WITHIN_POINTS, ", ".join(ABOVE_BOTH))
           + ("; `parity` = AHE at %s minus at %s (target: within %.1f)." % (
               rate_name(rates[0]), rate_name(rates[-1]), PARITY_POINTS)
              if len(rates) > 1 else "."), ""]
    head = ["policy", "workload"] + ["vs best %s" % rate_name(rt) for rt in rates]
    if len(rates) > 1:
        head.append("parity")
    out += ["| " + " | ".join(head) + " | verdict |", "|---" * (len(head) + 1) + "|"]
    for p, w, deltas, par, bad in rows:
        row = [name(p), w] + ["%+.2f" % d for d in deltas]
        if par is not None:
            row.append("%+.2f" % par)
        out.append("| " + " | ".join(row) + " | %s |" % ("; ".join(bad) or "met"))
    return out


def plot(results, workloads, path: str, labels: dict | None = None) -> None:
    """Per workload: the shadow's exact LRU curve, and each policy's hit rate at C (the
    points are spread a little around C so they do not hide each other)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter
    name = label_of(labels)
    cols = min(4, len(workloads))
    rows = (len(workloads) + cols - 1) // cols
    policies = list(dict.fromkeys(r["policy"] for r in results))
    rates = list(dict.fromkeys(r["rate"] for r in results))
    labels = [(p, rt) for p in policies for rt in rates
              if any(r["policy"] == p and r["rate"] == rt for r in results)]
    multi_rate = len(rates) > 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols, 3.6 * rows + 0.15 * len(labels)),
                             squeeze=False)
    markers = "osD^vP*Xh<>"
    handles = {}
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        rs = [r for r in results if r["workload"] == w]
        cap = rs[0]["capacity"]
        curve = [(c, h) for c, h in rs[0]["curve"] if cap / PLOT_SPAN <= c <= cap * PLOT_SPAN]
        line, = ax.plot([c for c, _ in curve], [100 * h for _, h in curve], "k-", lw=1.2)
        handles["exact LRU (shadow)"] = line
        for r in rs:
            j = labels.index((r["policy"], r["rate"]))
            pi, ri = policies.index(r["policy"]), rates.index(r["rate"])
            x = cap * PLOT_SPREAD ** (j - (len(labels) - 1) / 2)
            lab = name(r["policy"]) + (" @ " + rate_name(r["rate"]) if multi_rate else "")
            pt, = ax.plot([x], [100 * r["hit"]], markers[pi % len(markers)], ms=6,
                          color="C%d" % (pi % 10), ls="none", alpha=0.85,
                          mfc="none" if ri % 2 else "C%d" % (pi % 10), mew=1.3)
            handles[lab] = pt
        ax.axvline(cap, color="grey", lw=0.5, ls=":")
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_title("%s (C = %d keys)" % (w, cap), fontsize=10)
        ax.set_xlabel("capacity (keys)")
        ax.set_ylabel("hit rate %")
        ax.grid(alpha=0.3)
    spare = [axes[k // cols][k % cols] for k in range(len(workloads), rows * cols)]
    for ax in spare:
        ax.axis("off")
    if spare and len(handles) <= 12:
        spare[0].legend(list(handles.values()), list(handles), fontsize=8, loc="center")
        fig.tight_layout()
    else:
        ncol = 2 if len(handles) > 4 else len(handles)
        fig.legend(list(handles.values()), list(handles), fontsize=8, loc="lower center",
                   ncol=ncol, frameon=False)
        fig.tight_layout(rect=(0, 0.035 * ((len(handles) + ncol - 1) // ncol), 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--policies", default=DEFAULT_POLICIES)
    ap.add_argument("--requests", type=int, default=400_000)
    ap.add_argument("--capacity", type=int, default=2000, help="cache size in keys")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rates", default="0",
                    help="comma-separated requests/s targets (0 = unthrottled)")
    ap.add_argument("--rate", type=float, help="one rate (same as --rates R)")
    ap.add_argument("--parallel", action="store_true",
                    help="rates up to %d/s: run a workload's policies side by side"
                    % PARALLEL_MAX_RATE)
    ap.add_argument("--quick", action="store_true")
    add_target_args(ap)
    ap.add_argument("--out", default=DEFAULT_OUT, help="report (default out/eviction-quality.md)")
    ap.add_argument("--plot", help="plot (default: --out with .png)")
    ap.add_argument("--json", help="also write every result here")
    ap.add_argument("--from-json", help="only rewrite --out and --plot from a saved --json")
    args = ap.parse_args()
    if args.port and args.parallel:
        ap.error("--parallel needs a server per policy: it cannot share one --port server")
    if args.plot is None:
        args.plot = os.path.splitext(args.out)[0] + ".png"
    signal.signal(signal.SIGTERM, _stop_all)
    signal.signal(signal.SIGINT, _stop_all)
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        sys.argv[1:] = saved["argv"]
        for name in ("requests", "capacity", "seed", "code"):
            setattr(args, name, saved["args"].get(name, "?"))
        write_report(saved["results"], args, args.out, args.plot)
        return 0
    if args.quick:
        args.requests, args.capacity = 100_000, 500
    args.code = code_version()
    rates = [args.rate] if args.rate is not None else [float(x) for x in args.rates.split(",")]
    policies = args.policies.split(",")
    results = []
    print("%-8s %-36s %6s %7s %7s %7s %6s %8s %7s %10s" % (
        "workload", "policy", "rate", "hit%", "exact%", "inf%", "keys", "evicted", "alpha",
        "achieved"))
    for rate in rates:
        for w in args.workloads.split(","):
            warn = check_size(w, args.requests, args.capacity)
            if warn:
                print("warning:", warn)
            stream = WORKLOADS[w](args.requests, args.capacity, args.seed)
            if args.parallel and 0 < rate <= PARALLEL_MAX_RATE:
                got = [None] * len(policies)

                def work(k: int, p: str, stream=stream, w=w, rate=rate) -> None:
                    got[k] = run_one(w, p, args, stream, rate)

                threads = [threading.Thread(target=work, args=(k, p))
                           for k, p in enumerate(policies)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if any(g is None for g in got):
                    raise RuntimeError("a parallel run failed (see above)")
            else:
                got = (run_one(w, p, args, stream, rate) for p in policies)
            for r in got:
                results.append(r)
                print(fmt_row(r), flush=True)
    write_report(results, args, args.out, args.plot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "argv": sys.argv[1:], "results": results}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
