"""A cache at the scale it lives at: millions of keys, full, evicting (issue 15's table).

Side by side in one run, each server pinned to CPU 0 (``taskset``), redis-benchmark to CPU 1:

1. **Growing** (noeviction): a fresh server of each kind takes
   ``redis-benchmark -t set -n GROW_N -r UNIVERSE -d 100 -P 16 -c 50`` (keys grow towards
   UNIVERSE); meanwhile another client (a thread of this process, which runs on the
   client's CPU) sends a PING every PING_GAP_S and records each round trip (worst, p99.9).
   Then RSS per key (INFO ``used_memory_rss`` / DBSIZE), and the RSS growth per key: from
   the RSS after a warm-up burst of pipelined GET misses, which makes ours load its numba frame
   scanner (~120 MB: at 1.9M keys that alone is ~65 bytes of "RSS per key").
2. **Full**, per policy: a fresh server with ``maxmemory MAXMEMORY`` is filled past its
   limit (FILL_N SETs), then timed on MEASURE_N more SETs (nearly every one evicts).  Ours
   under allkeys-lru / allkeys-lfu / allkeys-ahe against redis-server under its own lru /
   lfu / lfu (it has no ahe).  Printed: SET/s both, the ratio, and each server's own
   eviction-on / eviction-off ratio (full SET/s over growing SET/s), the fair comparison of
   what eviction costs each; plus our INFO evicted_keys and eviction_kernel_calls.
3. With ``--ref-root DIR`` (another checkout, e.g. a worktree of an older commit): GET on a
   hit at -P 16 under lru, lfu and ahe, ours against that code, the ratio printed.

Results go to out/full_cache.md (and .json) unless ``--out``; nothing under docs/ is
written unless ``--docs`` (then docs/full-cache.md).  ``--quick``: 300k keys, 16 MB.

Usage::

    .venv/bin/python bench/full_cache.py                 # 3M keys, ~10 min
    .venv/bin/python bench/full_cache.py --quick         # ~2 min
    .venv/bin/python bench/full_cache.py --ref-root /tmp/old --only get
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

from _ports import free_port, info_of, redis_cli, wait_port
from workloads import stop_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_START_S = 60           # numba kernels may compile at a first start
SERVER_CPU, CLIENT_CPU = "0", "1"
UNIVERSE = 3_000_000          # -r: distinct keys
GROW_N = 3_000_000            # SETs of the growing phase
MAXMEMORY = "64mb"            # the full phase's limit
FILL_N = 1_000_000            # SETs that fill a full-phase server past its limit
MEASURE_N = 1_000_000         # timed SETs on a full server
GET_N = 1_000_000             # GETs of the --ref-root comparison
PING_GAP_S = 0.001            # the watcher's pause between PINGs
WARMUP_S = 5                  # after the warm-up burst: ours loads its scanner (~2 s)
VALUE_BYTES = 100
POLICIES = (("allkeys-lru", "allkeys-lru"), ("allkeys-lfu", "allkeys-lfu"),
            ("allkeys-ahe", "allkeys-lfu"))   # (ours, redis-server's counterpart)
GET_POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-ahe")   # of the --ref-root GETs


def taskset(cpu: str) -> list:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 \
        else []


class Server:
    """ferrumkv_py (from ``root``) or redis-server on a free port, stopped by its PID."""

    def __init__(self, engine: str, args: list, root: str = ROOT):
        self.engine = engine
        self.port = free_port()
        if engine == "redis":
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save",
                   "", "--appendonly", "no"] + args
            py_root = None
        else:
            py = os.path.join(root, ".venv", "bin", "python")
            cmd = [py if os.path.exists(py) else sys.executable, "-m", "ferrumkv_py",
                   "--save", "", "--port", str(self.port)] + args
            py_root = root
        self.proc = subprocess.Popen(taskset(SERVER_CPU) + cmd, cwd=py_root or ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(self.port, self.proc, SERVER_START_S)
        except RuntimeError:
            self.stop()
            raise

    def cli(self, *args: str) -> str:
        return redis_cli(self.port, *args)

    def info(self) -> dict:
        return info_of(self.port)

    def stop(self) -> None:
        stop_process(self.proc, 30)


def benchmark(port: int, test: str, n: int, universe: int) -> float:
    """redis-benchmark's requests per second for one test."""
    out = subprocess.run(taskset(CLIENT_CPU) + [
        "redis-benchmark", "-p", str(port), "-t", test, "-n", str(n), "-r", str(universe),
        "-d", str(VALUE_BYTES), "-P", "16", "-c", "50", "-q"],
        capture_output=True, text=True, timeout=3600).stdout
    m = re.findall(r"([0-9.]+) requests per second", out)
    if not m:
        raise RuntimeError("redis-benchmark said: %r" % out[-300:])
    return float(m[-1])


class Watcher:
    """Another client PINGing every PING_GAP_S; keeps every round trip in ms."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rtts: list = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            t = time.perf_counter()
            self.sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            got = b""
            while not got.endswith(b"\r\n"):
                got += self.sock.recv(64)
            self.rtts.append((time.perf_counter() - t) * 1000)
            time.sleep(PING_GAP_S)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)
        self.sock.close()

    def summary(self) -> dict:
        r = sorted(self.rtts) or [0.0]
        return {"pings": len(self.rtts), "worst_ms": r[-1],
                "p999_ms": r[min(len(r) - 1, int(len(r) * 0.999))],
                "median_ms": statistics.median(r)}


def grow(engine: str, args) -> dict:
    srv = Server(engine, [])
    try:
        # warm-up: a pipelined burst of GET misses (reads of 256+ bytes) makes ours load
        # its frame scanner (numba: ~120 MB of RSS, resp_scan.py); the RSS after it is the
        # base of "RSS growth per key"
        subprocess.run(taskset(CLIENT_CPU) + [
            "redis-benchmark", "-p", str(srv.port), "-t", "get", "-n", "20000", "-r", "1000",
            "-P", "16", "-q"], capture_output=True, timeout=600)
        time.sleep(WARMUP_S)
        base_rss = int(srv.info().get("used_memory_rss", 0))
        srv.cli("config", "resetstat")  # ours: the collector's counts are the fill's alone
        with Watcher(srv.port) as w:
            ops = benchmark(srv.port, "set", args.grow_n, args.universe)
        info = srv.info()
        keys = int(srv.cli("dbsize").strip() or 0)
        rss = int(info.get("used_memory_rss", 0))
        gc = {k: float(info[k]) for k in ("gc_gen2_collections", "gc_gen2_max_ms",
                                           "gc_gen1_max_ms") if k in info}
        return {"set_per_s": ops, "keys": keys, "rss_per_key": rss / max(keys, 1),
                "rss_growth_per_key": (rss - base_rss) / max(keys, 1), "base_rss": base_rss,
                **w.summary(), **gc}
    finally:
        srv.stop()


def full(engine: str, policy: str, args) -> dict:
    srv = Server(engine, ["--maxmemory", args.maxmemory, "--maxmemory-policy", policy])
    try:
        benchmark(srv.port, "set", args.fill_n, args.universe)
        ops = benchmark(srv.port, "set", args.measure_n, args.universe)
        info = srv.info()
        return {"set_per_s": ops, "evicted": int(info.get("evicted_keys", 0)),
                "kernel_calls": int(info.get("eviction_kernel_calls", 0)),
                "keys": int(srv.cli("dbsize").strip() or 0)}
    finally:
        srv.stop()


def get_hits(root: str, policy: str, args) -> float:
    srv = Server("ferrumkv", ["--maxmemory-policy", policy], root=root)
    try:
        benchmark(srv.port, "set", min(args.universe, 300_000), 100_000)   # fill 100k keys
        return benchmark(srv.port, "get", args.get_n, 100_000)
    finally:
        srv.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=("grow", "full", "get"), action="append")
    ap.add_argument("--ref-root", help="another checkout to compare GET hits with")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "full_cache"))
    ap.add_argument("--docs", action="store_true", help="write docs/full-cache.md")
    args = ap.parse_args(argv)
    args.universe, args.grow_n, args.fill_n, args.measure_n, args.get_n = \
        UNIVERSE, GROW_N, FILL_N, MEASURE_N, GET_N
    args.maxmemory = MAXMEMORY
    if args.quick:
        args.universe = args.grow_n = 300_000
        args.fill_n = args.measure_n = args.get_n = 200_000
        args.maxmemory = "16mb"
    only = set(args.only or ("grow", "full", "get"))
    if taskset(CLIENT_CPU) and hasattr(os, "sched_setaffinity"):
        # this process is a client too (the PING watcher): on the server's CPU it would
        # take the server's time slices, a scheduler tick (4 ms) at a time
        os.sched_setaffinity(0, {int(CLIENT_CPU)})
    res: dict = {"args": {k: v for k, v in vars(args).items() if k != "only"}}
    lines = ["# Full cache: ours vs redis-server, same run", "",
             "%d-key universe, %d-byte values, -P 16 -c 50, servers on CPU %s, client on "
             "CPU %s." % (args.universe, VALUE_BYTES, SERVER_CPU, CLIENT_CPU), ""]
    if "grow" in only or "full" in only:
        print("growing to %d keys (noeviction) ..." % args.universe, flush=True)
        g = {e: grow(e, args) for e in ("ferrumkv", "redis")}
        res["grow"] = g
        lines += ["## Growing (noeviction)", "",
                  "| | ours | redis-server | ratio |", "|---|---|---|---|",
                  "| SET/s | %.0f | %.0f | %.2f |" % (g["ferrumkv"]["set_per_s"],
                                                   g["redis"]["set_per_s"],
                                                   g["ferrumkv"]["set_per_s"]
                                                   / g["redis"]["set_per_s"]),
                  "| PING worst ms | %.1f | %.1f | |" % (g["ferrumkv"]["worst_ms"],
                                                       g["redis"]["worst_ms"]),
                  "| PING p99.9 ms | %.2f | %.2f | |" % (g["ferrumkv"]["p999_ms"],
                                                        g["redis"]["p999_ms"]),
                  "| RSS bytes/key | %.0f | %.0f | %.2f |" % (
                      g["ferrumkv"]["rss_per_key"], g["redis"]["rss_per_key"],
                      g["ferrumkv"]["rss_per_key"] / g["redis"]["rss_per_key"]),
                  "| RSS growth bytes/key (RSS after a warm-up burst as the base: %.0f / "
                  "%.0f MB) | %.0f | %.0f | %.2f |" % (
                      g["ferrumkv"]["base_rss"] / 2**20, g["redis"]["base_rss"] / 2**20,
                      g["ferrumkv"]["rss_growth_per_key"], g["redis"]["rss_growth_per_key"],
                      g["ferrumkv"]["rss_growth_per_key"] / g["redis"]["rss_growth_per_key"]),
                  "| our full GC collections during the fill / longest (ms) | %d / %.1f | | |" % (
                      g["ferrumkv"].get("gc_gen2_collections", -1),
                      g["ferrumkv"].get("gc_gen2_max_ms", -1)), ""]
        print("\n".join(lines[-11:]), flush=True)
    if "full" in only:
        rows = []
        for ours, theirs in POLICIES:
            print("full cache, %s vs redis %s ..." % (ours, theirs), flush=True)
            a, b = full("ferrumkv", ours, args), full("redis", theirs, args)
            res.setdefault("full", {})[ours] = {"ours": a, "redis": b}
            own_a = a["set_per_s"] / g["ferrumkv"]["set_per_s"]
            own_b = b["set_per_s"] / g["redis"]["set_per_s"]
            rows.append("| %s vs %s | %.0f | %.0f | %.2f | %.2f | %.2f | %d / %d |" % (
                ours, theirs, a["set_per_s"], b["set_per_s"], a["set_per_s"] / b["set_per_s"],
                own_a, own_b, a["evicted"], a["kernel_calls"]))
            print(rows[-1], flush=True)
        lines += ["## Full (maxmemory %s), SET" % args.maxmemory, "",
                  "| policy | ours SET/s | redis SET/s | ratio | ours on/off | redis on/off "
                  "| our evictions / kernel calls |", "|---|---|---|---|---|---|---|"] + rows + [""]
    if "get" in only and args.ref_root:
        rows = []
        for pol in GET_POLICIES:
            print("GET hits, %s, this code vs %s ..." % (pol, args.ref_root), flush=True)
            new, old = get_hits(ROOT, pol, args), get_hits(args.ref_root, pol, args)
            res.setdefault("get", {})[pol] = {"this": new, "ref": old}
            rows.append("| %s | %.0f | %.0f | %.2f |" % (pol, new, old, new / old))
            print(rows[-1], flush=True)
        lines += ["## GET on a hit, -P 16, this code vs %s" % args.ref_root, "",
                  "| policy | this GET/s | ref GET/s | ratio |", "|---|---|---|---|"] + rows + [""]
    out = os.path.join(ROOT, "docs", "full-cache") if args.docs else args.out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(out + ".json", "w") as f:
        json.dump(res, f, indent=1)
    print("wrote %s.md" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
