"""ferrumkv_py against redis-server, side by side, in one run.

Both servers start with matching settings (no persistence, loopback); each server is pinned
to CPU 0 and redis-benchmark to CPU 1 (``taskset``), and the runs are interleaved
(ferrumkv, redis, ferrumkv, redis ...) so drift on a noisy machine hits both alike.

Parts (``--parts``, all by default):
  throughput  SET GET INCR LPUSH LPOP SADD HSET ZADD MSET LRANGE_100 at
              ``-c 50 -r 100000 -d 100`` with ``-P 1`` and ``-P 16``;
  eviction    SET/GET -P 16 with maxmemory 64mb over a 2M-key space (several times what
              fits), allkeys-lru and allkeys-ahe against the same server's noeviction;
              redis-server's own allkeys-lru against its noeviction, as the yardstick;
  shadow      the litehit shadow's cost: SET/GET -P 16 with the shadow exact and sampled
              (1/8) against off;
  memory      RSS growth per key after loading 1M 100-byte string values;
  dispatch    in-process CPU per command: redis-benchmark's frames fed straight into
              ``Client.data_received`` (no sockets, no event loop), so it measures only
              parsing, dispatch, execution and encoding, and it is the steady number on a
              shared machine.  The hot-path comments in the server cite this part.

Every network run reports ops/s, p50/p99 latency (ms) and the server's CPU time per request
(``/proc/PID/stat``; while other jobs share the machine, ops/s moves a lot from run to run,
CPU per request much less).  ``ratio`` is ops/s against the reference, ``cpu ratio`` is the
reference's CPU per request over ours.  The Markdown table (``--out``, default
``out/benchmarks.md``; ``--docs`` rewrites the committed ``docs/benchmarks.md``) states each
goal of issue 7 and whether this run met it.

``--ref-root DIR`` makes the reference a ferrumkv_py source tree instead of redis-server
(e.g. an ``git archive`` export of an older commit): a before/after run of the same machine
minute.  Usage::

    .venv/bin/python bench/server_bench.py                      # full run (~10 minutes)
    .venv/bin/python bench/server_bench.py --quick              # a smoke run (~3 minutes)
    .venv/bin/python bench/server_bench.py --parts dispatch     # CPU per command, ~1 minute
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _ports import free_port, wait_port  # noqa: E402  (console_cost imports free_port here)
from workloads import stop_process  # noqa: E402

TESTS = ["set", "get", "incr", "lpush", "lpop", "sadd", "hset", "zadd", "mset", "lrange_100"]
SERVER_CPU, CLIENT_CPU = "0", "1"
CLIENTS = 50                       # redis-benchmark -c
KEYSPACE = 100_000                 # redis-benchmark -r
VALUE_BYTES = 100                  # redis-benchmark -d
EVICTION_KEYSPACE = 2_000_000      # keys drawn from under eviction (~10x what 64mb holds)
EVICTION_MAXMEMORY = "64mb"
P16_REQUEST_FACTOR = 4             # -P 16 runs send this many times --requests
PORT_WAIT_S = 60.0                 # a loaded machine can take long to import numpy/numba
RUN_TIMEOUT_S = 600
DISPATCH_CRON_EVERY = 10_000       # in-process: one cron tick per this many commands (hz 10
                                   # at ~100k commands/s), so the shadow's batch replay counts

# Goals of issue 7 (minimum ops/s ratios), see goal_of()
GOAL_P1_GET_SET = 0.9              # GET and SET at -P 1
GOAL_P16 = {"SET": 0.6, "GET": 0.5}
GOAL_P16_OTHERS = 0.4
GOAL_EVICTION = 0.85               # of the same server's noeviction throughput
GOAL_SHADOW = 0.9                  # shadow on against off
SHADOW_SAMPLE_RATE = 0.125         # the sampled shadow row (litehit-shadow-sample)
P99_MAX_RATIO = 2.0                # p99 at -P 1 within 2x redis-server's
RSS_MAX_RATIO = 2.5                # RSS per key at most 2.5x redis-server's
NOTES_HEADING = "\n## Findings"    # from this heading on, --out is kept when rewritten


def taskset(cpu: str) -> list[str]:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and os.cpu_count() > 1 else []


class Proc:
    """A server subprocess on a free port, stopped by PID.  ``root``: a ferrumkv_py tree."""

    def __init__(self, kind: str, extra: list[str], root: str = ROOT):
        self.kind = kind
        self.port = free_port()
        if kind == "redis":
            cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no"] + extra
        else:
            cmd = [sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(self.port)] + extra
        self.p = subprocess.Popen(taskset(SERVER_CPU) + cmd, cwd=root,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(self.port, self.p, PORT_WAIT_S)
        except RuntimeError:
            self.stop()
            raise

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
        stop_process(self.p)


def start_pair(args, extra: list[str]) -> tuple:
    """(ours, reference): redis-server, or ferrumkv from ``--ref-root``."""
    ours = Proc("ferrumkv", extra)
    try:
        ref = (Proc("ferrumkv", extra, args.ref_root) if args.ref_root
               else Proc("redis", []))
    except Exception:
        ours.stop()
        raise
    return ours, ref


def bench(proc: Proc, test: str, n: int, pipeline: int, keyspace: int = KEYSPACE) -> dict:
    """One redis-benchmark run: ops/s, p50, p99 (ms) and the server's CPU us per request."""
    cpu0 = proc.cpu_s()
    cmd = taskset(CLIENT_CPU) + ["redis-benchmark", "-p", str(proc.port), "-c", str(CLIENTS),
                                 "-n", str(n), "-r", str(keyspace), "-d", str(VALUE_BYTES),
                                 "-P", str(pipeline), "-t", test, "--csv"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if out.returncode != 0:
        raise RuntimeError("redis-benchmark failed: %s" % (out.stderr or out.stdout)[-500:])
    cpu_us = (proc.cpu_s() - cpu0) * 1e6
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    row = rows[-1]
    # LRANGE_100 runs an LPUSH fill first: the CPU is charged to every request sent
    return {"rps": float(row["rps"]), "p50": float(row["p50_latency_ms"]),
            "p99": float(row["p99_latency_ms"]), "cpu": cpu_us / (n * len(rows))}


def median_result(results: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def part_throughput(args, table: list) -> None:
    ours, ref = start_pair(args, [])
    try:
        for pipeline in (1, 16):
            n = args.requests * (P16_REQUEST_FACTOR if pipeline == 16 else 1)
            for test in args.tests.split(","):
                got: dict = {"ours": [], "ref": []}
                for _ in range(args.reps):
                    got["ours"].append(bench(ours, test, n, pipeline))
                    got["ref"].append(bench(ref, test, n, pipeline))
                add_row(table, "%s -P %d" % (test.upper(), pipeline), median_result(got["ours"]),
                        median_result(got["ref"]), "ferrumkv@ref" if args.ref_root else "redis")
    finally:
        ours.stop()
        ref.stop()


def part_eviction(args, table: list) -> None:
    """Our three servers (noeviction, allkeys-lru, allkeys-ahe) and, as the yardstick,
    redis-server under noeviction and allkeys-lru with the same limit: runs interleaved."""
    n = args.requests * P16_REQUEST_FACTOR
    limit = ["--maxmemory", EVICTION_MAXMEMORY, "--maxmemory-policy"]
    servers = (("noeviction", "ferrumkv", []),
               ("allkeys-lru", "ferrumkv", limit + ["allkeys-lru"]),
               ("allkeys-ahe", "ferrumkv", limit + ["allkeys-ahe"]),
               ("redis noeviction", "redis", []),
               ("redis allkeys-lru", "redis", limit + ["allkeys-lru"]))
    procs = {}
    try:
        for name, kind, extra in servers:
            procs[name] = Proc(kind, extra)
        got: dict = {(name, t): [] for name in procs for t in ("set", "get")}
        for _ in range(args.reps):
            for test in ("set", "get"):
                for name, proc in procs.items():
                    got[(name, test)].append(bench(proc, test, n, 16,
                                                   keyspace=EVICTION_KEYSPACE))
        for name, proc in procs.items():
            info = proc.cli("info", "stats")
            evicted = [line for line in info.splitlines() if line.startswith("evicted_keys")]
            print("  %-18s %s" % (name, evicted[0].strip() if evicted else ""))
    finally:
        for proc in procs.values():
            proc.stop()
    for name, base, label in (("allkeys-lru", "noeviction", "%s -P 16 allkeys-lru"),
                              ("allkeys-ahe", "noeviction", "%s -P 16 allkeys-ahe"),
                              ("redis allkeys-lru", "redis noeviction",
                               "%s -P 16 allkeys-lru, redis-server itself")):
        for test in ("set", "get"):
            add_row(table, label % test.upper(), median_result(got[(name, test)]),
                    median_result(got[(base, test)]), base)


def part_shadow(args, table: list) -> None:
    """The litehit shadow's cost: SET/GET -P 16 with the shadow exact (every key) and sampled
    (``litehit-shadow-sample`` SHADOW_SAMPLE_RATE) against off; three servers, interleaved."""
    n = args.requests * P16_REQUEST_FACTOR
    modes = {"off": ["--litehit-shadow", "no"], "on": ["--litehit-shadow", "yes"],
             "sampled": ["--litehit-shadow", "yes",
                         "--litehit-shadow-sample", str(SHADOW_SAMPLE_RATE)]}
    procs = {}
    try:
        for mode, extra in modes.items():
            procs[mode] = Proc("ferrumkv", extra)
        got: dict = {(m, t): [] for m in procs for t in ("set", "get")}
        for _ in range(args.reps):
            for test in ("set", "get"):
                for mode in procs:
                    got[(mode, test)].append(bench(procs[mode], test, n, 16))
    finally:
        for proc in procs.values():
            proc.stop()
    for test in ("set", "get"):
        add_row(table, "%s -P 16 shadow on" % test.upper(), median_result(got[("on", test)]),
                median_result(got[("off", test)]), "shadow off")
        add_row(table, "%s -P 16 shadow sampled 1/%d" % (test.upper(),
                                                          round(1 / SHADOW_SAMPLE_RATE)),
                median_result(got[("sampled", test)]), median_result(got[("off", test)]),
                "shadow off")


def load_keys(port: int, count: int) -> None:
    """SET key:<i> <100 bytes> for i < count through redis-cli --pipe."""
    value = b"x" * VALUE_BYTES
    chunks = []
    for i in range(count):
        key = b"key:%d" % i
        chunks.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"
                      % (len(key), key, len(value), value))
    subprocess.run(["redis-cli", "-p", str(port), "--pipe"], input=b"".join(chunks),
                   check=True, stdout=subprocess.DEVNULL, timeout=RUN_TIMEOUT_S)


def part_memory(args, table: list) -> None:
    per_key = {}
    for kind in ("ours", "ref"):
        proc = (Proc("ferrumkv", []) if kind == "ours" else
                Proc("ferrumkv", [], args.ref_root) if args.ref_root else Proc("redis", []))
        try:
            before = proc.rss()
            load_keys(proc.port, args.keys)
            time.sleep(0.5)  # let the last replies go out before reading RSS
            after = proc.rss()
            per_key[kind] = (after - before) / args.keys
            print("  %-5s RSS %7.1f MB -> %7.1f MB: %.1f bytes/key" % (
                kind, before / 2**20, after / 2**20, per_key[kind]))
        finally:
            proc.stop()
    table.append({"name": "RSS per key, %d x 100-byte values" % args.keys, "ours":
                  {"bytes": per_key["ours"]}, "ref": {"bytes": per_key["ref"]},
                  "ref_name": "ferrumkv@ref" if args.ref_root else "redis"})
    print("  RSS per key ours/ref: %.2f (goal <= %.1f)" % (per_key["ours"] / per_key["ref"],
                                                           RSS_MAX_RATIO))


# ---- in-process CPU per command ----

def _frame(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


def _request(test: str, rng) -> bytes:
    """One request as redis-benchmark sends it (``__rand_int__`` = 12 digits)."""
    def rand() -> bytes:
        return b"%012d" % rng.randrange(KEYSPACE)
    value = b"x" * VALUE_BYTES
    return {
        "set": lambda: _frame(b"SET", b"key:" + rand(), value),
        "get": lambda: _frame(b"GET", b"key:" + rand()),
        "incr": lambda: _frame(b"INCR", b"counter:" + rand()),
        "lpush": lambda: _frame(b"LPUSH", b"mylist", value),
        "lpop": lambda: _frame(b"LPOP", b"mylist"),
        "sadd": lambda: _frame(b"SADD", b"myset", b"element:" + rand()),
        "hset": lambda: _frame(b"HSET", b"myhash", b"element:" + rand(), value),
        "zadd": lambda: _frame(b"ZADD", b"myzset", b"%d" % rng.randrange(KEYSPACE),
                               b"element:" + rand()),
        "mset": lambda: _frame(b"MSET", *[x for _ in range(10) for x in (b"key:" + rand(),
                                                                          value)]),
        "lrange_100": lambda: _frame(b"LRANGE", b"mylist", b"0", b"99"),
    }[test]()


class _NullTransport:
    def write(self, data: bytes) -> None:
        pass

    def get_extra_info(self, name: str):
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass


def dispatch_cost_us(test: str, pipeline: int, n: int, config: dict) -> float:
    """CPU us per command of ``n`` requests fed to one Client in reads of ``pipeline``."""
    import random
    from ferrumkv_py.config import Config
    from ferrumkv_py.client import Client
    from ferrumkv_py import resp_scan
    resp_scan.load_now()    # a server loads it at its first pipeline; measured loaded here
    from ferrumkv_py.server import Server
    cfg = Config()
    for name, value in config.items():
        cfg.set(name, value)
    server = Server(cfg)
    c = Client(server)
    c.connection_made(_NullTransport())
    rng = random.Random(1)
    if test in ("set", "get", "lpop", "lrange_100"):  # what the earlier tests leave
        fill = "set" if test in ("set", "get") else "lpush"
        for _ in range(KEYSPACE // 100):
            c.data_received(b"".join(_request(fill, rng) for _ in range(100)))
    reads = [b"".join(_request(test, rng) for _ in range(pipeline))
             for _ in range(n // pipeline)]
    server.cron()
    feed = c.data_received
    cron_every = max(1, DISPATCH_CRON_EVERY // pipeline)
    t0 = time.process_time()
    for i, data in enumerate(reads, 1):
        feed(data)
        if i % cron_every == 0:
            server.cron()
    server.cron()
    return (time.process_time() - t0) * 1e6 / (len(reads) * pipeline)


def dispatch_worker(spec: str) -> None:
    """``--dispatch-worker JSON``: run in a subprocess so each tree imports its own code."""
    job = json.loads(spec)
    out = {}
    for name, test, pipeline, config in job["cases"]:
        n = job["n"] // (5 if test in ("mset", "lrange_100") else 1)
        out[name] = dispatch_cost_us(test, pipeline, n, config)
    print(json.dumps(out))


def dispatch_cases(tests: list) -> list:
    """Groups of (name, test, pipeline, config); one worker process runs one group."""
    groups = []
    for test in tests:
        group = [("%s -P %d" % (test, p), test, p, {}) for p in (1, 16)]
        if test in ("set", "get"):  # the litehit shadow's cost (goal: on >= 0.9 of off)
            group.append(("%s -P 16 shadow on" % test, test, 16, {"litehit-shadow": "yes"}))
        groups.append(group)
    return groups


def part_dispatch(args, table: list) -> None:
    """Each group runs in a fresh process per tree and repetition, interleaved (ours, ref,
    ours, ref ...), and the best repetition counts: the least disturbed by other jobs."""
    roots = [("ours", ROOT)] + ([("ref", args.ref_root)] if args.ref_root else [])
    results: dict = {kind: {} for kind, _ in roots}
    for group in dispatch_cases(args.tests.split(",")):
        job = json.dumps({"cases": group, "n": args.requests * 2})
        for _ in range(max(args.reps, 2)):
            for kind, root in roots:
                out = subprocess.run([sys.executable, os.path.abspath(__file__),
                                      "--dispatch-worker", job], cwd=root, capture_output=True,
                                     text=True, timeout=RUN_TIMEOUT_S,
                                     env=dict(os.environ, PYTHONPATH=root))
                if out.returncode != 0:
                    raise RuntimeError("dispatch worker failed: %s" % out.stderr[-2000:])
                for name, us in json.loads(out.stdout.strip().splitlines()[-1]).items():
                    results[kind][name] = min(us, results[kind].get(name, us))
        for name, *_ in group:
            us, ref = results["ours"][name], results.get("ref", {}).get(name)
            print("  %-20s %7.2f us/command%s" % (name, us, "" if ref is None else
                                                  "   ref %7.2f   ours/ref %.2f"
                                                  % (ref, us / ref)), flush=True)
            table.append({"name": name.upper() + " in-process", "dispatch": us,
                          "ref_us": ref})


# ---- report ----

def add_row(table: list, name: str, ours: dict, ref: dict, ref_name: str) -> None:
    row = {"name": name, "ours": ours, "ref": ref, "ref_name": ref_name}
    table.append(row)
    print("%-28s ours %8.0f/s p50 %5.2f p99 %6.2f %5.2fus | %s %8.0f/s p50 %5.2f p99 %6.2f "
          "%5.2fus | ratio %.2f cpu ratio %.2f"
          % (name, ours["rps"], ours["p50"], ours["p99"], ours["cpu"], ref_name, ref["rps"],
             ref["p50"], ref["p99"], ref["cpu"], ours["rps"] / ref["rps"],
             ref["cpu"] / ours["cpu"] if ours["cpu"] else 0), flush=True)


def goal_of(name: str):
    """The minimum ops/s ratio issue 7 sets for a row ("SET -P 16 allkeys-lru"), or None."""
    words = name.split()
    test, pipeline, rest = words[0], int(words[2]), words[3:]
    if rest:
        return GOAL_SHADOW if rest[0] == "shadow" else GOAL_EVICTION
    if pipeline == 1:
        return GOAL_P1_GET_SET if test in ("SET", "GET") else None
    return GOAL_P16.get(test, GOAL_P16_OTHERS)


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def write_markdown(path: str, table: list, args) -> None:
    ref = "a ferrumkv_py tree (`--ref-root`)" if args.ref_root else "redis-server 7.0"
    lines = ["# Benchmarks: ferrumkv_py against %s" % ref, "",
             "Generated by `%s` on %s (%d CPUs, shared with other jobs). Servers pinned to "
             "CPU %s, redis-benchmark to CPU %s; `-c %d -r %d -d %d`; median of %d interleaved "
             "runs. `cpu` is the server's CPU time per request (us); `cpu ratio` = the "
             "reference's CPU per request / ours, the steadier number when the machine is "
             "busy.  Goals (issue 7) are judged on the ops/s ratio."
             % (" ".join(["bench/server_bench.py"] + sys.argv[1:]), time.strftime("%Y-%m-%d"),
                os.cpu_count(), SERVER_CPU, CLIENT_CPU, CLIENTS, KEYSPACE, VALUE_BYTES,
                args.reps), "",
             "| test | ours ops/s | p50 ms | p99 ms | cpu us | reference ops/s | p50 ms "
             "| p99 ms | cpu us | ratio | cpu ratio | goal |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    dispatch = []
    for row in table:
        a, b = row.get("ours"), row.get("ref")
        if "dispatch" in row:
            dispatch.append(row)
        elif "bytes" in a:
            ratio = a["bytes"] / b["bytes"]
            lines.append("| %s | %.0f B/key | | | | %.0f B/key (%s) | | | | %.2f | | <= %.1f: %s |"
                         % (row["name"], a["bytes"], b["bytes"], row["ref_name"], ratio,
                            RSS_MAX_RATIO, verdict(ratio <= RSS_MAX_RATIO)))
        else:
            ratio = a["rps"] / b["rps"]
            minimum = goal_of(row["name"])
            goal = "" if minimum is None else ">= %.2f: %s" % (minimum, verdict(ratio >= minimum))
            if row["name"].endswith("-P 1") and not args.ref_root:
                goal += ("; " if goal else "") + "p99 <= %gx: %s" % (
                    P99_MAX_RATIO, verdict(a["p99"] <= P99_MAX_RATIO * b["p99"]))
            lines.append("| %s | %.0f | %.2f | %.2f | %.2f | %.0f (%s) | %.2f | %.2f | %.2f "
                         "| %.2f | %.2f | %s |"
                         % (row["name"], a["rps"], a["p50"], a["p99"], a["cpu"], b["rps"],
                            row["ref_name"], b["p50"], b["p99"], b["cpu"], ratio,
                            b["cpu"] / a["cpu"] if a["cpu"] else 0, goal))
    if dispatch:
        lines += ["", "In-process CPU per command (`--parts dispatch`: frames fed straight "
                  "into `Client.data_received`, best of %d):" % max(args.reps, 2), "",
                  "| test | us / command | reference us |", "|---|---|---|"]
        lines += ["| %s | %.2f | %s |" % (r["name"], r["dispatch"], "" if r["ref_us"] is None
                                          else "%.2f" % r["ref_us"]) for r in dispatch]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    notes = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if NOTES_HEADING in old:
            notes = old[old.index(NOTES_HEADING):]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n" + notes)
    print("wrote", path)


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--dispatch-worker":
        dispatch_worker(sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small counts, one repetition")
    ap.add_argument("--requests", type=int, default=100000, help="requests per -P 1 run")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--keys", type=int, default=1_000_000, help="keys for the RSS test")
    ap.add_argument("--tests", default=",".join(TESTS), help="throughput / dispatch tests")
    ap.add_argument("--parts", default="throughput,eviction,shadow,memory,dispatch")
    ap.add_argument("--ref-root", help="compare with this ferrumkv_py tree, not redis-server")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "benchmarks.md"))
    ap.add_argument("--docs", action="store_true",
                    help="write the committed docs/benchmarks.md (its Findings are kept)")
    args = ap.parse_args()
    if args.docs:
        args.out = os.path.join(ROOT, "docs", "benchmarks.md")
    if args.ref_root:
        args.ref_root = os.path.abspath(args.ref_root)
    if args.quick:
        args.requests, args.reps, args.keys = 20000, 1, 100000
    for exe in ("redis-server", "redis-benchmark", "redis-cli"):
        if not shutil.which(exe):
            print("missing %s (apt-get install redis-server redis-tools)" % exe)
            return 2
    table: list = []
    parts = args.parts.split(",")
    steps = [("throughput", "throughput (-c 50 -r 100000 -d 100)", part_throughput),
             ("eviction", "eviction: maxmemory 64mb, 2M-key space, -P 16", part_eviction),
             ("shadow", "litehit shadow on vs off, -P 16", part_shadow),
             ("memory", "memory: RSS per key", part_memory),
             ("dispatch", "in-process CPU per command", part_dispatch)]
    for name, title, fn in steps:
        if name in parts:
            print("==", title, flush=True)
            fn(args, table)
    write_markdown(args.out, table, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
