"""Eviction quality: each policy's real hit rate against the exact LRU at the same capacity.

A read-through client (GET; on a miss SET the value, with its TTL if it has one) replays the
workloads of ``bench/workloads.py`` against a fresh ferrumkv_py per (workload, policy), with
the litehit shadow on.  Every key costs the same modelled bytes, so ``maxmemory`` holds
exactly C keys and ``litehit-block-bytes`` is that cost: the shadow's
``litehit_exact_hit_rate`` is then an exact LRU of C keys over the same access stream.

Prints a table (hit rates in %), writes ``docs/eviction-quality.md`` and a plot
(``docs/img/eviction_quality.png``): per workload the exact LRU curve (LITEHIT CURVE) with
each policy's point at its capacity.  Usage::

    .venv/bin/python bench/eviction_quality.py                   # about 5 minutes
    .venv/bin/python bench/eviction_quality.py --quick
    .venv/bin/python bench/eviction_quality.py --policies allkeys-lru,allkeys-ahe \\
        --workloads mixed --rate 1000 --requests 60000

A policy is ``NAME[/SAMPLES][+config=value...]``, e.g. ``allkeys-lru/10`` or
``allkeys-ahe+ahe-feedback=lifetime``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time

import hiredis

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench.workloads import WORKLOADS  # noqa: E402
from ferrumkv_py import memory  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_POLICIES = "allkeys-lru,allkeys-lru/10,allkeys-lfu,allkeys-random,allkeys-ahe"
VALUE = b"v" * 32
KEY_FMT = b"key:%012d"
BATCH = 64


def key_cost() -> int:
    """Modelled bytes of one key of this benchmark (they are all the same size)."""
    return memory.entry_cost(KEY_FMT % 0, VALUE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A ferrumkv_py subprocess on a free port (stopped by PID)."""

    def __init__(self, args: list[str]):
        self.port = free_port()
        cmd = [sys.executable, "-m", "ferrumkv_py", "--port", str(self.port)] + args
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                self.conn = Conn(self.port)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        self.conn.sock.close()
        self.proc.terminate()
        self.proc.wait(10)


class Conn:
    """A pipelining RESP client on a raw socket, hiredis for the replies."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.reader = hiredis.Reader()

    def pipeline(self, commands: list[list[bytes]]) -> list:
        out = []
        for argv in commands:
            out.append(b"*%d\r\n" % len(argv))
            for a in argv:
                out.append(b"$%d\r\n%b\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))
        replies = []
        while len(replies) < len(commands):
            reply = self.reader.gets()
            if reply is False:
                self.reader.feed(self.sock.recv(1 << 20))
                continue
            replies.append(reply)
        return replies

    def info(self, section: str) -> dict:
        text = self.pipeline([[b"INFO", section.encode()]])[0].decode()
        return dict(line.split(":", 1) for line in text.splitlines()
                    if ":" in line and not line.startswith("#"))


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


def run_one(workload: str, policy_spec: str, args, stream) -> dict:
    cost = key_cost()
    _, pargs = parse_policy(policy_spec)
    srv = Server(["--maxmemory", str(args.capacity * cost), "--litehit-shadow", "yes",
                  "--litehit-block-bytes", str(cost), "--hz", "10"] + pargs)
    try:
        conn = srv.conn
        keys = stream.keys.tolist()
        ttls = stream.ttl
        hits = 0
        phase_hits = [0] * len(stream.phases)
        phase_of = [0] * len(keys)
        for i, (_, a, b) in enumerate(stream.phases):
            for j in range(a, b):
                phase_of[j] = i
        interval = BATCH / args.rate if args.rate else 0.0
        t0 = time.perf_counter()
        for start in range(0, len(keys), BATCH):
            batch = keys[start:start + BATCH]
            names = [KEY_FMT % k for k in batch]
            replies = conn.pipeline([[b"GET", k] for k in names])
            sets = []
            for j, (k, rep) in enumerate(zip(batch, replies)):
                if rep is None:
                    t = ttls.get(k)
                    sets.append([b"SET", names[j], VALUE] + ([b"EX", b"%d" % t] if t else []))
                else:
                    hits += 1
                    phase_hits[phase_of[start + j]] += 1
            if sets:
                for rep in conn.pipeline(sets):
                    if isinstance(rep, hiredis.ReplyError):
                        raise RuntimeError("server error: %s" % rep)
            if interval:
                behind = t0 + (start // BATCH + 1) * interval - time.perf_counter()
                if behind > 0:
                    time.sleep(behind)
        elapsed = time.perf_counter() - t0
        lit = conn.info("litehit")
        mem = conn.info("memory")
        stats = conn.info("stats")
        curve = conn.pipeline([[b"LITEHIT", b"CURVE", b"24"]])[0]
        return {
            "workload": workload, "policy": policy_spec, "requests": len(keys),
            "hit": hits / len(keys), "exact": float(lit["litehit_exact_hit_rate"]),
            "exact_inf": float(lit["litehit_exact_hit_rate_inf"]),
            "capacity": int(lit["litehit_capacity_blocks"]),
            "evicted": int(stats["evicted_keys"]), "alpha": mem.get("ahe_alpha", ""),
            "phases": [(name, phase_hits[i] / max(b - a, 1))
                       for i, (name, a, b) in enumerate(stream.phases)],
            "curve": [(int(c), float(r)) for c, r in curve], "seconds": elapsed,
        }
    finally:
        srv.stop()


def write_report(results: list, args, path: str, plot_path: str) -> None:
    policies = list(dict.fromkeys(r["policy"] for r in results))
    workloads = list(dict.fromkeys(r["workload"] for r in results))
    by = {(r["workload"], r["policy"]): r for r in results}
    cmd = "bench/eviction_quality.py " + " ".join(sys.argv[1:])
    lines = ["# Eviction quality: real hit rate against exact LRU", "",
             "Generated by `%s` on %s: %d requests per run, capacity %d keys, read-through "
             "client (GET, SET on a miss), %s." % (cmd.strip(), time.strftime("%Y-%m-%d"),
                                                   args.requests, args.capacity,
                                                   "%d requests/s" % args.rate if args.rate
                                                   else "as fast as the server answers"),
             "", "Hit rates in %. `exact LRU` is the shadow's exact LRU at the same capacity "
             "(same access stream); `inf` is the compulsory-miss limit.", "",
             "| workload | " + " | ".join(policies) + " | exact LRU | inf |",
             "|---|" + "---|" * (len(policies) + 2)]
    for w in workloads:
        row = [w] + ["%.2f" % (100 * by[(w, p)]["hit"]) if (w, p) in by else "" for p in policies]
        any_r = next(by[(w, p)] for p in policies if (w, p) in by)
        row += ["%.2f" % (100 * any_r["exact"]), "%.2f" % (100 * any_r["exact_inf"])]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "![curves](img/%s)" % os.path.basename(plot_path), ""]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines))
    plot(results, workloads, policies, plot_path)
    print("wrote", path, "and", plot_path)


def plot(results, workloads, policies, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cols = min(3, len(workloads))
    rows = (len(workloads) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.8 * rows), squeeze=False)
    markers = "osD^vP*X"
    for i, w in enumerate(workloads):
        ax = axes[i // cols][i % cols]
        rs = [r for r in results if r["workload"] == w]
        curve = rs[0]["curve"]
        ax.plot([c for c, _ in curve], [100 * h for _, h in curve], "k-", lw=1.2,
                label="exact LRU")
        for j, r in enumerate(rs):
            ax.plot([r["capacity"]], [100 * r["hit"]], markers[j % len(markers)], ms=7,
                    label=r["policy"], alpha=0.8)
        ax.set_xscale("log")
        ax.set_title(w)
        ax.set_xlabel("capacity (keys)")
        ax.set_ylabel("hit rate %")
        ax.grid(alpha=0.3)
        if i == 0:
            ax.legend(fontsize=7)
    for k in range(len(workloads), rows * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--policies", default=DEFAULT_POLICIES)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--capacity", type=int, default=4000, help="cache size in keys")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rate", type=float, default=0, help="requests/s (0 = unthrottled)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "eviction-quality.md"))
    ap.add_argument("--plot", default=os.path.join(ROOT, "docs", "img", "eviction_quality.png"))
    args = ap.parse_args()
    if args.quick:
        args.requests, args.capacity = 40_000, 1000
    results = []
    print("%-8s %-34s %8s %8s %8s %8s %7s" % ("workload", "policy", "hit%", "exact%",
                                             "inf%", "evicted", "alpha"))
    for w in args.workloads.split(","):
        stream = WORKLOADS[w](args.requests, args.capacity, args.seed)
        for p in args.policies.split(","):
            r = run_one(w, p, args, stream)
            results.append(r)
            print("%-8s %-34s %8.2f %8.2f %8.2f %8d %7s  (%.1fs)" % (
                w, p, 100 * r["hit"], 100 * r["exact"], 100 * r["exact_inf"], r["evicted"],
                r["alpha"], r["seconds"]), flush=True)
    write_report(results, args, args.out, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
