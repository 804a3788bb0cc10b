"""ferrumkv_py against redis-server, side by side, in one run.

Both servers start with matching settings (no persistence, loopback); each server is pinned
to CPU 0 and redis-benchmark to CPU 1 (``taskset``), and the tests are interleaved
(ferrumkv, redis, ferrumkv, redis ...) so drift on a noisy machine hits both alike.

Parts:
  1. throughput and latency: SET GET INCR LPUSH LPOP SADD HSET ZADD MSET LRANGE_100 at
     ``-c 50 -r 100000 -d 100`` with ``-P 1`` and ``-P 16``;
  2. eviction: SET/GET with maxmemory 64mb over a key space several times larger, for
     allkeys-lru and allkeys-ahe against the same server's noeviction throughput;
  3. the litehit shadow's cost: SET/GET -P 16 with the shadow on against off;
  4. memory: RSS growth per key after loading 1M 100-byte string values.

It prints ops/s, p50/p99 and the ratio to redis-server per test and writes a Markdown table
(``--out``, default docs/benchmarks.md).  Usage::

    .venv/bin/python bench/server_bench.py            # full run (~10 minutes)
    .venv/bin/python bench/server_bench.py --quick    # a smoke run (~1 minute)
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = ["set", "get", "incr", "lpush", "lpop", "sadd", "hset", "zadd", "mset", "lrange_100"]
SERVER_CPU, CLIENT_CPU = "0", "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 20.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server on port %d did not start" % port)


def taskset(cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and os.cpu_count() > 1 else []


class Proc:
    """A server subprocess on a free port, stopped by PID."""

    def __init__(self, kind: str, extra: list[str]):
        self.kind = kind
        self.port = free_port()
        if kind == "redis":
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no"] + extra
        else:
            cmd = [sys.executable, "-m", "ferrumkv_py", "--port", str(self.port)] + extra
        self.p = subprocess.Popen(taskset(SERVER_CPU) + cmd, cwd=ROOT,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port)

    def cpu_s(self) -> float:
        """User + system CPU seconds the server has used (from /proc, 0 elsewhere)."""
        try:
            with open("/proc/%d/stat" % self.p.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss(self) -> int:
        with open("/proc/%d/statm" % self.p.pid) as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port)] + list(args),
                              capture_output=True, text=True, timeout=60).stdout

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def bench(proc: "Proc", test: str, n: int, pipeline: int, keyspace: int = 100000,
          data: int = 100) -> dict:
    """One redis-benchmark run; returns rps, p50, p99 (ms) and the server's CPU us per op.

    CPU per op (``/proc/PID/stat``) is the steadier number on a shared machine: ops/s drops
    when another process takes the server's core, CPU time per op hardly moves.
    """
    port = proc.port
    cpu0 = proc.cpu_s()
    cmd = taskset(CLIENT_CPU) + ["redis-benchmark", "-p", str(port), "-c", "50", "-n", str(n),
                                 "-r", str(keyspace), "-d", str(data), "-P", str(pipeline),
                                 "-t", test, "--csv"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError("redis-benchmark failed: %s" % (out.stderr or out.stdout)[-500:])
    cpu_us = (proc.cpu_s() - cpu0) * 1e6
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    row = rows[-1]
    # LRANGE_100 runs an LPUSH fill first: charge the CPU to all the requests sent
    return {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
            "p99": float(row["p99_latency_ms"]), "cpu": cpu_us / (n * len(rows))}


def median_result(results: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def part_throughput(args, table: list) -> None:
    ours, ref = Proc("ferrumkv", []), Proc("redis", [])
    try:
        for pipeline in (1, 16):
            n = args.requests * (4 if pipeline == 16 else 1)
            for test in args.tests.split(","):
                got = {"ferrumkv": [], "redis": []}
                for _ in range(args.reps):
                    for proc in (ours, ref):
                        got[proc.kind].append(bench(proc, test, n, pipeline))
                a, b = median_result(got["ferrumkv"]), median_result(got["redis"])
                row = ("%s -P %d" % (test.upper(), pipeline), a, b)
                table.append(row)
                print_row(*row)
    finally:
        ours.stop()
        ref.stop()


def part_eviction(args, table: list) -> None:
    n = args.requests * 4
    keyspace = 2_000_000
    results = {}
    for policy in ("noeviction", "allkeys-lru", "allkeys-ahe"):
        extra = [] if policy == "noeviction" else ["--maxmemory", "64mb",
                                                   "--maxmemory-policy", policy]
        proc = Proc("ferrumkv", extra)
        try:
            for test in ("set", "get"):
                runs = [bench(proc, test, n, 16, keyspace=keyspace)
                        for _ in range(args.reps)]
                results[(policy, test)] = median_result(runs)
            info = proc.cli("info", "stats")
            evicted = [l for l in info.splitlines() if l.startswith("evicted_keys")]
            print("  %-12s %s" % (policy, evicted[0].strip() if evicted else ""))
        finally:
            proc.stop()
    for policy in ("allkeys-lru", "allkeys-ahe"):
        for test in ("set", "get"):
            row = ("%s -P 16 %s vs noeviction" % (test.upper(), policy),
                   results[(policy, test)], results[("noeviction", test)])
            table.append(row)
            print_row(*row)


def part_shadow(args, table: list) -> None:
    """The litehit shadow's cost: SET/GET -P 16 with the shadow on against off."""
    n = args.requests * 4
    results = {}
    for mode in ("no", "yes"):
        proc = Proc("ferrumkv", ["--litehit-shadow", mode])
        try:
            for test in ("set", "get"):
                runs = [bench(proc, test, n, 16) for _ in range(args.reps)]
                results[(mode, test)] = median_result(runs)
        finally:
            proc.stop()
    for test in ("set", "get"):
        row = ("%s -P 16 shadow on vs off" % test.upper(), results[("yes", test)],
               results[("no", test)])
        table.append(row)
        print_row(*row)


def load_keys(port: int, count: int) -> None:
    """SET key:<i> <100 bytes> for i < count through redis-cli --pipe."""
    value = b"x" * 100
    chunks = []
    for i in range(count):
        key = b"key:%d" % i
        chunks.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%b\r\n$100\r\n%b\r\n" % (len(key), key, value))
    data = b"".join(chunks)
    subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=data, check=True,
                   stdout=subprocess.DEVNULL, timeout=600)


def part_memory(args, table: list) -> None:
    per_key = {}
    for kind in ("ferrumkv", "redis"):
        proc = Proc(kind, [])
        try:
            before = proc.rss()
            load_keys(proc.port, args.keys)
            time.sleep(0.5)
            after = proc.rss()
            per_key[kind] = (after - before) / args.keys
            print("  %-9s RSS %7.1f MB -> %7.1f MB: %.1f bytes/key" % (
                kind, before / 2**20, after / 2**20, per_key[kind]))
        finally:
            proc.stop()
    ratio = per_key["ferrumkv"] / per_key["redis"]
    table.append(("RSS per key, %d x 100-byte values" % args.keys,
                  {"bytes": per_key["ferrumkv"]}, {"bytes": per_key["redis"]}))
    print("  ratio ferrumkv/redis: %.2f" % ratio)


def print_row(name: str, a: dict, b: dict) -> None:
    print("%-34s ours %8.0f/s p50 %5.2f p99 %6.2f %5.2fus | ref %8.0f/s p50 %5.2f p99 %6.2f"
          " %5.2fus | ratio %.2f cpu %.2f"
          % (name, a["rps"], a["p50"], a["p99"], a["cpu"], b["rps"], b["p50"], b["p99"],
             b["cpu"], a["rps"] / b["rps"], b["cpu"] / a["cpu"] if a["cpu"] else 0),
          flush=True)


def write_markdown(path: str, table: list, args) -> None:
    lines = ["# Benchmarks: ferrumkv_py against redis-server", "",
             "Generated by `%s` on %s (%d CPUs). Servers pinned to CPU %s, redis-benchmark "
             "to CPU %s; `-c 50 -r 100000 -d 100`; median of %d interleaved runs."
             % (" ".join(["bench/server_bench.py"] + sys.argv[1:]),
                time.strftime("%Y-%m-%d"), os.cpu_count(), SERVER_CPU, CLIENT_CPU, args.reps),
             "", "| test | ferrumkv ops/s | p50 ms | p99 ms | reference ops/s | p50 ms | p99 ms "
             "| ratio |", "|---|---|---|---|---|---|---|---|"]
    for name, a, b in table:
        if "bytes" in a:
            lines.append("| %s | %.0f B/key | | | %.0f B/key (redis) | | | %.2f |"
                         % (name, a["bytes"], b["bytes"], a["bytes"] / b["bytes"]))
        else:
            ref = ("noeviction" if "vs noeviction" in name else
                   "shadow off" if "shadow on" in name else "redis")
            lines.append("| %s | %.0f | %.2f | %.2f | %.0f (%s) | %.2f | %.2f | %.2f |"
                         % (name, a["rps"], a["p50"], a["p99"], b["rps"], ref, b["p50"],
                            b["p99"], a["rps"] / b["rps"]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small counts, one repetition")
    ap.add_argument("--requests", type=int, default=100000, help="requests per -P 1 run")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--keys", type=int, default=1_000_000, help="keys for the RSS test")
    ap.add_argument("--tests", default=",".join(TESTS), help="throughput tests to run")
    ap.add_argument("--parts", default="throughput,eviction,shadow,memory")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    args = ap.parse_args()
    if args.quick:
        args.requests, args.reps, args.keys = 20000, 1, 100000
    for exe in ("redis-server", "redis-benchmark", "redis-cli"):
        if not shutil.which(exe):
            print("missing %s (apt-get install redis-server redis-tools)" % exe)
            return 2
    table: list = []
    parts = args.parts.split(",")
    if "throughput" in parts:
        print("== throughput (-c 50 -r 100000 -d 100)")
        part_throughput(args, table)
    if "eviction" in parts:
        print("== eviction: maxmemory 64mb, 2M-key space, -P 16")
        part_eviction(args, table)
    if "shadow" in parts:
        print("== litehit shadow on vs off, -P 16")
        part_shadow(args, table)
    if "memory" in parts:
        print("== memory: RSS per key")
        part_memory(args, table)
    write_markdown(args.out, table, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
