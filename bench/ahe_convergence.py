"""Watch AHE's alpha move: scrape INFO while a workload goes through its phases.

A read-through client replays the ``mixed`` workload (burst -> stable -> scan -> stable,
``bench/workloads.py``) against ferrumkv_py under ``allkeys-ahe``; a second connection
scrapes ``INFO memory`` and ``INFO stats`` several times a second, as a monitoring system
would.  For each configuration (by default the design as written with ``ahe-feedback
window`` and ``lifetime``) it writes a CSV of (time, requests done, phase, ahe_alpha,
ahe_last_hit_ratio, overall hit ratio, hit ratio since the previous scrape) and one plot
with a panel per configuration and seed.  Usage::

    .venv/bin/python bench/ahe_convergence.py                  # ~2 minutes
    .venv/bin/python bench/ahe_convergence.py --seeds 1,2,3 \\
        --configs "ahe-feedback=window;ahe-feedback=lifetime" --rate 20000

Outputs: ``docs/ahe_convergence.csv`` and ``docs/img/ahe_convergence.png``.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.eviction_quality import BATCH, KEY_FMT, VALUE, Conn, Server, key_cost  # noqa: E402
from bench.workloads import WORKLOADS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRAPE_INTERVAL_S = 0.2


def run(config: str, seed: int, args) -> list[dict]:
    stream = WORKLOADS[args.workload](args.requests, args.capacity, seed)
    extra = []
    for item in filter(None, config.split("+")):
        k, _, v = item.partition("=")
        extra += ["--" + k, v]
    srv = Server(["--maxmemory", str(args.capacity * key_cost()),
                  "--maxmemory-policy", args.policy] + extra)
    done = [0]
    rows: list[dict] = []
    stop = threading.Event()
    phase_at = stream.phases

    def phase_of(i: int) -> str:
        for name, a, b in phase_at:
            if a <= i < b:
                return name
        return phase_at[-1][0]

    def scrape() -> None:
        conn = Conn(srv.port)
        t0 = time.perf_counter()
        last_h = last_m = 0
        while not stop.is_set():
            mem, st = conn.info("memory"), conn.info("stats")
            h, m = int(st["keyspace_hits"]), int(st["keyspace_misses"])
            dh, dm = h - last_h, m - last_m
            last_h, last_m = h, m
            rows.append({
                "config": config, "seed": seed, "t": round(time.perf_counter() - t0, 3),
                "requests": done[0], "phase": phase_of(done[0]),
                "alpha": float(mem.get("ahe_alpha", "nan")),
                "last_hit_ratio": float(mem.get("ahe_last_hit_ratio", "nan")),
                "hit_ratio": h / (h + m) if h + m else 0.0,
                "recent_hit_ratio": dh / (dh + dm) if dh + dm else 0.0,
            })
            stop.wait(SCRAPE_INTERVAL_S)
        conn.sock.close()

    th = threading.Thread(target=scrape, daemon=True)
    th.start()
    try:
        keys = stream.keys.tolist()
        interval = BATCH / args.rate if args.rate else 0.0
        t0 = time.perf_counter()
        for start in range(0, len(keys), BATCH):
            names = [KEY_FMT % k for k in keys[start:start + BATCH]]
            replies = srv.conn.pipeline([[b"GET", k] for k in names])
            sets = [[b"SET", k, VALUE] for k, rep in zip(names, replies) if rep is None]
            if sets:
                srv.conn.pipeline(sets)
            done[0] = start + len(names)
            if interval:
                behind = t0 + (start // BATCH + 1) * interval - time.perf_counter()
                if behind > 0:
                    time.sleep(behind)
        time.sleep(SCRAPE_INTERVAL_S * 2)
    finally:
        stop.set()
        th.join(5)
        srv.stop()
    return rows


def plot(rows: list[dict], configs: list[str], seeds: list[int], path: str, phases) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(configs), 1, figsize=(10, 3.2 * len(configs)), squeeze=False)
    for i, cfg in enumerate(configs):
        ax = axes[i][0]
        ax2 = ax.twinx()
        for seed in seeds:
            rs = [r for r in rows if r["config"] == cfg and r["seed"] == seed]
            x = [r["requests"] for r in rs]
            ax.plot(x, [r["alpha"] for r in rs], lw=1.4, label="alpha seed %d" % seed)
            ax2.plot(x, [r["recent_hit_ratio"] for r in rs], lw=0.6, alpha=0.5, ls=":")
            ax2.plot(x, [r["hit_ratio"] for r in rs], lw=0.8, alpha=0.7, ls="--")
        for name, a, b in phases:
            ax.axvspan(a, b, alpha=0.06 if "scan" in name or "burst" in name else 0.0,
                       color="tab:red")
            ax.text((a + b) / 2, 1.02, name, ha="center", fontsize=8,
                    transform=ax.get_xaxis_transform())
        ax.set_ylim(0, 1)
        ax2.set_ylim(0, 1)
        ax.set_ylabel("ahe_alpha (1 = LRU side)")
        ax2.set_ylabel("hit ratio (dashed: overall, dotted: recent)")
        ax.set_title(cfg or "defaults", loc="left", fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
    axes[-1][0].set_xlabel("requests")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--configs", default="ahe-feedback=window;ahe-feedback=lifetime",
                    help="';'-separated configurations, each 'name=value+name=value'")
    ap.add_argument("--policy", default="allkeys-ahe")
    ap.add_argument("--workload", default="mixed")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--capacity", type=int, default=4000)
    ap.add_argument("--rate", type=float, default=0, help="requests/s (0 = unthrottled)")
    ap.add_argument("--csv", default=os.path.join(ROOT, "docs", "ahe_convergence.csv"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "img", "ahe_convergence.png"))
    args = ap.parse_args()
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
    os.makedirs(os.path.dirname(args.csv), exist_ok=True)
    with open(args.csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    phases = WORKLOADS[args.workload](args.requests, args.capacity, seeds[0]).phases
    plot(rows, configs, seeds, args.plot, phases)
    print("wrote", args.csv, "and", args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
