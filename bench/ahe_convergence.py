"""Watch AHE's alpha move: scrape INFO while a workload goes through its phases.

A read-through client (``workloads.replay``) replays the ``mixed`` workload (bursts ->
stable -> scans -> stable, ``bench/workloads.py``) against ferrumkv_py under ``allkeys-ahe``,
paced at ``--rate``; a second connection scrapes ``INFO memory`` and ``INFO stats`` every
``SCRAPE_INTERVAL_S``, as a monitoring system would.  For each configuration and seed it
records (time, requests done, phase, inside a burst/scan window or not, ahe_alpha,
ahe_last_hit_ratio, overall hit ratio, hit ratio since the previous scrape), and writes:

* a CSV of every scrape (``--csv``);
* a plot (``--plot``): one panel per configuration, one alpha line per seed, burst windows
  shaded red and scan windows blue, the phases named on top, the hit ratio since the
  previous scrape (thin, right axis) for the first seed;
* a summary per configuration and seed on stdout (markdown): mean alpha inside the burst
  windows, in the gaps between them, in the stable phases and in the scan phase.

Usage::

    .venv/bin/python bench/ahe_convergence.py                  # 3 configs x 3 seeds, ~10 min
    .venv/bin/python bench/ahe_convergence.py --seeds 1 --configs "ahe-controller=adaptive" \\
        --requests 100000 --rate 5000

A configuration is ``name=value+name=value`` (server config), configurations are separated
by ``;``.  Outputs: ``out/ahe_convergence.csv`` and ``.png`` (``--docs``: the committed
``research/ahe_convergence.csv`` and ``docs/img/ahe_convergence.png``).
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.workloads import (WORKLOADS, Conn, _stop_all, add_target_args, key_cost,  # noqa: E402
                             replay, target_server)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRAPE_INTERVAL_S = 0.1
DEFAULT_CONFIGS = ("ahe-controller=spec+ahe-feedback=window;"
                   "ahe-controller=spec+ahe-feedback=lifetime;ahe-controller=adaptive")
EVENT_COLOURS = {"burst": "tab:red", "scan": "tab:blue"}


def locate(stream, i: int) -> tuple[str, str]:
    """(phase name, event name or '') of request index i."""
    phase = stream.phases[-1][0]
    for name, a, b in stream.phases:
        if a <= i < b:
            phase = name
            break
    for name, a, b in stream.events:
        if a <= i < b:
            return phase, name
    return phase, ""


def run(config: str, seed: int, args) -> list[dict]:
    stream = WORKLOADS[args.workload](args.requests, args.capacity, seed)
    extra = []
    for item in filter(None, config.split("+")):
        k, _, v = item.partition("=")
        extra += ["--" + k, v]
    srv = target_server(args, ["--maxmemory", str(args.capacity * key_cost()),
                               "--maxmemory-policy", args.policy, "--hz", "10"] + extra)
    done = [0]
    rows: list[dict] = []
    stop = threading.Event()

    def scrape() -> None:
        conn = Conn(srv.port, getattr(srv, "host", "127.0.0.1"))
        if args.password:
            conn.pipeline([[b"AUTH", args.password.encode()]])
        t0 = time.perf_counter()
        last_h = last_m = 0
        while not stop.is_set():
            at = done[0]
            mem, st = conn.info("memory"), conn.info("stats")
            h, m = int(st["keyspace_hits"]), int(st["keyspace_misses"])
            dh, dm = h - last_h, m - last_m
            last_h, last_m = h, m
            phase, event = locate(stream, at)
            rows.append({
                "config": config, "seed": seed, "t": round(time.perf_counter() - t0, 3),
                "requests": at, "phase": phase, "event": event,
                "alpha": float(mem.get("ahe_alpha", "nan")),
                "last_hit_ratio": float(mem.get("ahe_last_hit_ratio", "nan")),
                "hit_ratio": round(h / (h + m), 5) if h + m else 0.0,
                "recent_hit_ratio": round(dh / (dh + dm), 5) if dh + dm else 0.0,
            })
            stop.wait(SCRAPE_INTERVAL_S)
        conn.sock.close()

    th = threading.Thread(target=scrape, daemon=True)
    th.start()
    try:
        replay(srv.conn, stream, args.rate, progress=lambda i: done.__setitem__(0, i))
        time.sleep(SCRAPE_INTERVAL_S * 2)
    finally:
        stop.set()
        th.join(5)
        srv.stop()
    return rows


def summary(rows: list[dict], configs: list[str], seeds: list[int]) -> list[str]:
    """Markdown: mean alpha per part of the mixed workload, per configuration and seed."""
    parts = [("in bursts", lambda r: r["event"] == "burst"),
             ("between bursts", lambda r: r["phase"] == "burst" and r["event"] != "burst"),
             ("stable1", lambda r: r["phase"] == "stable1"),
             ("scan phase", lambda r: r["phase"] == "scan"),
             ("stable2", lambda r: r["phase"] == "stable2")]
    out = ["| config | seed | " + " | ".join(p for p, _ in parts) + " | peak in bursts "
           "(per burst) | final hit ratio |", "|---" * (len(parts) + 4) + "|"]
    for cfg in configs:
        for seed in seeds:
            rs = [r for r in rows if r["config"] == cfg and r["seed"] == seed]
            means = []
            for _, keep in parts:
                vals = [r["alpha"] for r in rs if keep(r)]
                means.append("%.2f" % (sum(vals) / len(vals)) if vals else "-")
            peaks, cur = [], None
            for r in rs:        # one peak per burst window (consecutive burst scrapes)
                if r["event"] == "burst":
                    cur = r["alpha"] if cur is None else max(cur, r["alpha"])
                elif cur is not None:
                    peaks.append(cur)
                    cur = None
            out.append("| %s | %d | %s | %s | %.4f |" % (
                cfg, seed, " | ".join(means), " ".join("%.2f" % p for p in peaks),
                rs[-1]["hit_ratio"] if rs else float("nan")))
    return out


def plot(rows: list[dict], configs: list[str], seeds: list[int], path: str, stream) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(configs), 1, figsize=(12, 2.9 * len(configs)), squeeze=False,
                             sharex=True)
    for i, cfg in enumerate(configs):
        ax = axes[i][0]
        for name, a, b in stream.events:
            ax.axvspan(a, b, alpha=0.15, color=EVENT_COLOURS.get(name, "grey"), lw=0)
        for name, a, b in stream.phases:
            ax.axvline(a, color="k", lw=0.6)
            ax.text((a + b) / 2, 1.01, name, ha="center", va="bottom", fontsize=8,
                    transform=ax.get_xaxis_transform())
        ax2 = ax.twinx()
        for k, seed in enumerate(seeds):
            rs = [r for r in rows if r["config"] == cfg and r["seed"] == seed]
            x = [r["requests"] for r in rs]
            ax.plot(x, [r["alpha"] for r in rs], lw=1.3, color="C%d" % k,
                    label="alpha, seed %d" % seed)
            if k == 0:
                ax2.plot(x, [r["recent_hit_ratio"] for r in rs], lw=0.5, color="grey",
                         alpha=0.7, label="hit ratio since last scrape (seed %d)" % seed)
        ax.set_ylim(0, 1)
        ax2.set_ylim(0, 1)
        ax.set_ylabel("ahe_alpha\n(1 = recency)")
        ax2.set_ylabel("hit ratio", color="grey")
        ax.set_title(cfg or "defaults", loc="left", fontsize=9, pad=14)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="center right", ncol=1, framealpha=0.8)
    axes[-1][0].set_xlabel("requests (red: burst windows, blue: scan windows)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="';'-separated configurations, each 'name=value+name=value'")
    ap.add_argument("--policy", default="allkeys-ahe")
    ap.add_argument("--workload", default="mixed")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--requests", type=int, default=300_000)
    ap.add_argument("--capacity", type=int, default=1000)
    ap.add_argument("--rate", type=float, default=5000, help="requests/s (0 = unthrottled)")
    add_target_args(ap)
    ap.add_argument("--csv", default=os.path.join(ROOT, "out", "ahe_convergence.csv"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "out", "ahe_convergence.png"))
    ap.add_argument("--docs", action="store_true", help="write the committed "
                    "research/ahe_convergence.csv and docs/img/ahe_convergence.png")
    args = ap.parse_args()
    if args.docs:
        args.csv = os.path.join(ROOT, "research", "ahe_convergence.csv")
        args.plot = os.path.join(ROOT, "docs", "img", "ahe_convergence.png")
    signal.signal(signal.SIGTERM, _stop_all)
    signal.signal(signal.SIGINT, _stop_all)
    configs = args.configs.split(";")
    seeds = [int(s) for s in args.seeds.split(",")]
    rows: list[dict] = []
    for cfg in configs:
        for seed in seeds:
            got = run(cfg, seed, args)
            rows += got
            last = got[-1] if got else {}
            print("%-40s seed %d: %d scrapes, final alpha %.3f, hit ratio %.4f" % (
                cfg, seed, len(got), last.get("alpha", float("nan")),
                last.get("hit_ratio", float("nan"))), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    stream = WORKLOADS[args.workload](args.requests, args.capacity, seeds[0])
    plot(rows, configs, seeds, args.plot, stream)
    print("\n".join(["", "Mean ahe_alpha per part (%s, %d requests, C = %d, %g req/s):" % (
        args.workload, args.requests, args.capacity, args.rate), ""] +
        summary(rows, configs, seeds)))
    print("wrote", args.csv, "and", args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
