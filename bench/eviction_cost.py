"""What eviction costs: SET and GET throughput under each maxmemory policy against noeviction.

One run, same machine state: a fresh ferrumkv_py per policy (``python -m ferrumkv_py``,
pinned to CPU 0 with ``taskset``), redis-benchmark pinned to CPU 1::

    redis-benchmark -p P -t set|get -n N -r UNIVERSE -d 100 -P 16 -c 50 -q

Set-up per server: KEYS keys (default 1M) ``key:%012d`` with 100-byte values are loaded with
``redis-cli --pipe`` (with ``EX 86400`` under volatile policies, so they have candidates),
taking every other id of a universe of ``KEYS / FILL`` ids (FILL 0.5 -> 2M).  A policy
server then gets ``maxmemory`` = its used_memory after loading, so it sits exactly at the
limit; the noeviction server has no limit.  During the SET run about ``1 - FILL`` of the
SETs create a key: on the policy servers each of those evicts one key first, on the baseline
the data set grows.  Both servers insert the same keys, so the ratio isolates the eviction
work (sampling, scoring, pool, unlink, AHE feedback) plus the per-command ``make_room()``
check.  GET runs first, on the same data everywhere (LFU / AHE pay the Morris counter update
on each hit).  Under volatile policies the SETs create keys without TTL, so volatile candidates
shrink slowly during the run; they never run out at these sizes.

noeviction runs first and last; the ratios use the mean of the two, and the spread between
them shows the machine's drift.  Besides ops/s it reports the server's CPU time per request
(utime + stime from /proc), whose ratio holds up better on a shared, noisy machine.  Usage::

    .venv/bin/python bench/eviction_cost.py               # ~1M keys, all policies (~5 min)
    .venv/bin/python bench/eviction_cost.py --quick       # 200k keys, ~1.5 min
    .venv/bin/python bench/eviction_cost.py --policies allkeys-lru,allkeys-ahe --keys 500000
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER_CPU, CLIENT_CPU = "0", "1"
ALL_POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "allkeys-ahe",
                "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                "volatile-ahe")
VALUE_BYTES = 100
TTL_S = 86400
GOAL_RATIO = 0.85


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def taskset(cpu: str) -> list:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 \
        else []


class Server:
    """A ferrumkv_py subprocess on a free port, stopped by its PID."""

    def __init__(self, policy: str):
        self.port = free_port()
        cmd = taskset(SERVER_CPU) + [sys.executable, "-m", "ferrumkv_py", "--port",
                                     str(self.port), "--maxmemory-policy", policy]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("server did not start")
                time.sleep(0.05)

    def cpu_s(self) -> float:
        """User + system CPU seconds the server process has used so far."""
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def cli(self, *args: str) -> str:
        return subprocess.run(["redis-cli", "-p", str(self.port)] + list(args),
                              capture_output=True, text=True, timeout=120).stdout

    def info(self) -> dict:
        out = {}
        for line in self.cli("info", "everything").splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                out[k] = v.strip()
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def load_protocol(keys: int, universe: int, ttl: bool) -> bytes:
    """RESP for SET key:%012d <100 bytes> [EX ttl] over every other id of the universe."""
    step = max(1, universe // keys)
    value = b"x" * VALUE_BYTES
    tail = b"$2\r\nEX\r\n$%d\r\n%d\r\n" % (len(str(TTL_S)), TTL_S) if ttl else b""
    head = b"*5\r\n$3\r\nSET\r\n" if ttl else b"*3\r\n$3\r\nSET\r\n"
    parts = []
    for i in range(keys):
        key = b"key:%012d" % (i * step)
        parts.append(b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n%s" % (head, len(key), key, VALUE_BYTES,
                                                         value, tail))
    return b"".join(parts)


def load(srv: Server, data: bytes) -> None:
    subprocess.run(["redis-cli", "-p", str(srv.port), "--pipe"], input=data, check=True,
                   stdout=subprocess.DEVNULL, timeout=900)


def bench(port: int, test: str, n: int, universe: int) -> float:
    cmd = taskset(CLIENT_CPU) + ["redis-benchmark", "-p", str(port), "-t", test, "-n", str(n),
                                 "-r", str(universe), "-d", str(VALUE_BYTES), "-P", "16",
                                 "-c", "50", "-q"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    text = out.stdout + out.stderr
    m = re.findall(r"([\d.]+) requests per second", text)
    if out.returncode != 0 or not m:
        raise RuntimeError("redis-benchmark failed: %s" % text[-400:])
    return float(m[-1])


def ttl_supported(srv: Server) -> bool:
    reply = srv.cli("set", "bench:probe", "x", "ex", "100").strip()
    srv.cli("del", "bench:probe")
    return reply == "OK"


def run_policy(policy: str, args, protos: dict) -> dict:
    srv = Server(policy)
    try:
        vol = policy.startswith("volatile-")
        if vol and not ttl_supported(srv):
            return {"skipped": "SET ... EX not supported by this build"}
        load(srv, protos[vol])
        info = srv.info()
        keys_loaded = int(info.get("db0", "keys=0").split(",")[0].split("=")[1])
        if policy != "noeviction":
            srv.cli("config", "set", "maxmemory", info["used_memory"])
        res = {"keys": keys_loaded}
        for test in ("get", "set"):      # GET first: both servers hold the same keys
            cpu0 = srv.cpu_s()
            res[test] = bench(srv.port, test, args.requests, args.universe)
            res[test + "_cpu_us"] = (srv.cpu_s() - cpu0) / args.requests * 1e6
        info = srv.info()
        res.update(evicted=int(info["evicted_keys"]), hits=int(info["keyspace_hits"]),
                   misses=int(info["keyspace_misses"]), used=int(info["used_memory"]),
                   maxmemory=int(info["maxmemory"]), rss=int(info["used_memory_rss"]),
                   alpha=info.get("ahe_alpha", ""))
        return res
    finally:
        srv.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="200k keys, 200k requests per test")
    ap.add_argument("--keys", type=int, default=1_000_000, help="keys held by each server")
    ap.add_argument("--fill", type=float, default=0.5,
                    help="share of the key universe that fits (universe = keys / fill)")
    ap.add_argument("--requests", type=int, default=600_000, help="requests per test")
    ap.add_argument("--policies", default=",".join(ALL_POLICIES))
    args = ap.parse_args()
    if args.quick:
        args.keys, args.requests = 200_000, 200_000
    args.universe = int(args.keys / args.fill)
    for exe in ("redis-benchmark", "redis-cli"):
        if not shutil.which(exe):
            print("missing %s (apt-get install redis-tools)" % exe)
            return 2
    policies = [p for p in args.policies.split(",") if p]
    print("eviction cost: %d keys held, universe %d, %d requests per test, -P 16 -c 50 -d %d"
          % (args.keys, args.universe, args.requests, VALUE_BYTES), flush=True)
    protos = {False: load_protocol(args.keys, args.universe, False),
              True: load_protocol(args.keys, args.universe, True)}
    t0 = time.time()
    results = {"noeviction#1": run_policy("noeviction", args, protos)}
    show("noeviction#1", results["noeviction#1"], None)
    for policy in policies:
        results[policy] = run_policy(policy, args, protos)
        show(policy, results[policy], None)
    results["noeviction#2"] = run_policy("noeviction", args, protos)
    show("noeviction#2", results["noeviction#2"], None)
    a, b = results["noeviction#1"], results["noeviction#2"]
    fields = ("set", "get", "set_cpu_us", "get_cpu_us")
    base = {t: (a[t] + b[t]) / 2 for t in fields}
    print("\nbaseline noeviction: SET %.0f/s (runs %.0f, %.0f), GET %.0f/s (runs %.0f, %.0f);"
          " server CPU per request SET %.2f us, GET %.2f us"
          % (base["set"], a["set"], b["set"], base["get"], a["get"], b["get"],
             base["set_cpu_us"], base["get_cpu_us"]))
    print("ratios to noeviction: throughput (ops/s) and CPU (noeviction CPU per request /"
          " this policy's)")
    print("%-16s %9s %6s %6s %9s %6s %6s %9s %7s" % (
        "policy", "SET/s", "ratio", "cpu", "GET/s", "ratio", "cpu", "evicted", "hit%"))
    worst_tp = worst_cpu = 1.0
    for policy in policies:
        r = results[policy]
        if "skipped" in r:
            print("%-16s skipped: %s" % (policy, r["skipped"]))
            continue
        rs, rg = r["set"] / base["set"], r["get"] / base["get"]
        cs = base["set_cpu_us"] / r["set_cpu_us"]
        cg = base["get_cpu_us"] / r["get_cpu_us"]
        worst_tp, worst_cpu = min(worst_tp, rs, rg), min(worst_cpu, cs, cg)
        hit = 100.0 * r["hits"] / max(1, r["hits"] + r["misses"])
        print("%-16s %9.0f %6.2f %6.2f %9.0f %6.2f %6.2f %9d %6.1f%%  %s" % (
            policy, r["set"], rs, cs, r["get"], rg, cg, r["evicted"], hit,
            "used<=max" if r["used"] <= r["maxmemory"] else "OVER LIMIT"))
    print("\nworst ratio: throughput %.2f, CPU %.2f (goal >= %.2f); %.0f s"
          % (worst_tp, worst_cpu, GOAL_RATIO, time.time() - t0))
    return 0


def show(name: str, r: dict, _base) -> None:
    if "skipped" in r:
        print("  %-14s skipped (%s)" % (name, r["skipped"]), flush=True)
        return
    print("  %-14s keys %8d  GET %9.0f/s (%.2f us CPU)  SET %9.0f/s (%.2f us CPU)  evicted"
          " %8d  rss %5.0f MB" % (name, r["keys"], r["get"], r["get_cpu_us"], r["set"],
                                  r["set_cpu_us"], r["evicted"], r["rss"] / 2 ** 20),
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
