"""What eviction costs: SET and GET throughput under each maxmemory policy against noeviction.

All servers run side by side in one run (``python -m ferrumkv_py`` each, pinned to CPU 0
with ``taskset``); redis-benchmark, pinned to CPU 1, drives them one at a time::

    redis-benchmark -p P -t get|set -n N -r 1000000 -d 100 -P 16 -c 50 -q

Set-up: every server is loaded (``redis-cli --pipe``) with the same ``FILL * UNIVERSE`` keys
(default 900k of ``key:000000000000`` .. ``key:000000999999``, evenly spread, 100-byte
values; with ``EX 86400`` for the volatile policies so they have candidates).  A policy
server then gets ``maxmemory`` = its used_memory after loading: it sits at the limit with
about 1M keys' worth of data.  The noeviction server has no limit.

Measurement: ROUNDS rounds; each round runs a GET burst then a SET burst of N requests on
every server in turn, the noeviction baseline first.  The ratios use the median over the
rounds, which keeps them stable on a shared, noisy machine; besides ops/s the server's CPU
time per request (utime + stime from /proc) is reported, and its ratio is the steadier one.
During SET bursts about ``1 - FILL`` of the SETs create a key (10% at the default fill): a
policy server evicts for each of them, the baseline grows instead (it is reloaded before
each of its bursts, so every round starts it from the same data set).  Both insert the same
keys, so the difference is the eviction work (``make_room()`` on every SET,
sampling, scoring, pool, unlink, AHE feedback).  GET hits pay the Morris counter update
under the lfu and ahe policies.  The baseline also runs its GET burst on the data loaded
with TTLs, and a volatile-* server's GETs are set against that one (same data, same
expiry checks).  ``--fill 0.5`` is the harsh setting (half the SETs evict).
"evict us" is the extra server CPU per evicted key, from the SET CPU difference; "extra B/k"
the policy's own memory per cached key (the AHE controller's ghosts, INFO memory
``ahe_extra_memory``; counted against maxmemory).

Usage::

    .venv/bin/python bench/eviction_cost.py               # ~1M keys, all policies (~8 min)
    .venv/bin/python bench/eviction_cost.py --quick       # 200k-key universe (~2 min)
    .venv/bin/python bench/eviction_cost.py --policies allkeys-lru,allkeys-ahe --fill 0.5
    .venv/bin/python bench/eviction_cost.py --rss         # memory model vs RSS (~4 min)
    .venv/bin/python bench/eviction_cost.py --redis       # + redis-server's own ratios
    .venv/bin/python bench/eviction_cost.py --inproc      # eviction CPU in-process (~1 min)
    .venv/bin/python bench/eviction_cost.py --inproc --opcodes --python-sampler
                                                          # the Python sampler's bytecodes

``--inproc`` is the iteration tool for the eviction hot path: no sockets, one process, a
ManualClock.  Per policy it loads ``INPROC_KEYS`` keys (TTLs under volatile-*), reads a random
key per key loaded (LFU/LRU metadata spread), sets maxmemory to the usage, then times
``make_room()`` + SET of ``INPROC_WRITES`` new keys with ``time.process_time``; the
noeviction run does the same writes without a limit.  "evict us" = (policy - noeviction) CPU
per write / evictions per write (``allkeys-ahe:spec`` picks the AHE controller).  ``--profile`` prints cProfile's top functions instead;
``--opcodes`` counts interpreted bytecodes instead of time (deterministic, so it shows what a
hot-path change saves even when the machine is too busy for timings to agree).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _ports import free_port  # noqa: E402
from _ports import info_of, redis_cli  # noqa: E402
from workloads import stop_process  # noqa: E402
SERVER_CPU, CLIENT_CPU = "0", "1"
ALL_POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "allkeys-ahe",
                "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
                "volatile-ahe")
VALUE_BYTES = 100
TTL_S = 86400
GOAL_RATIO = 0.85
INPROC_KEYS = 200_000        # keys loaded for --inproc
INPROC_WRITES = 100_000      # timed writes (each evicts about one key) for --inproc
INPROC_TICK_WRITES = 16      # writes per 1 ms ManualClock step
OPCODE_KEYS = 20_000         # keys loaded for --opcodes (tracing is slow)
OPCODE_WRITES = 2_000        # traced writes for --opcodes
US_PER_S = 1e6


def taskset(cpu: str) -> list:
    return ["taskset", "-c", cpu] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 \
        else []


class Server:
    """A ferrumkv_py (or, with ``engine="redis"``, redis-server) subprocess on a free port,
    stopped by its PID."""

    def __init__(self, policy: str, engine: str = "ferrumkv"):
        self.policy = policy
        self.label = policy if engine == "ferrumkv" else "redis " + policy
        self.port = free_port()
        if engine == "redis":
            cmd = taskset(SERVER_CPU) + ["redis-server", "--port", str(self.port), "--bind",
                                         "127.0.0.1", "--save", "", "--appendonly", "no",
                                         "--maxmemory-policy", policy]
        else:
            cmd = taskset(SERVER_CPU) + [sys.executable, "-m", "ferrumkv_py", "--save", "", "--port",
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
        return redis_cli(self.port, *args, timeout_s=120)

    def info(self) -> dict:
        return info_of(self.port)

    def stop(self) -> None:
        stop_process(self.proc, 15)


def load_protocol(keys: int, universe: int, ttl: bool) -> bytes:
    """RESP for SET key:%012d <100 bytes> [EX ttl] for ``keys`` ids spread evenly over the
    universe (9 ids out of 10 at fill 0.9, every other id at 0.5)."""
    value = b"x" * VALUE_BYTES
    tail = b"$2\r\nEX\r\n$%d\r\n%d\r\n" % (len(str(TTL_S)), TTL_S) if ttl else b""
    head = b"*5\r\n$3\r\nSET\r\n" if ttl else b"*3\r\n$3\r\nSET\r\n"
    parts = []
    for i in range(keys):
        key = b"key:%012d" % (i * universe // keys)
        parts.append(b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n%s" % (head, len(key), key, VALUE_BYTES,
                                                         value, tail))
    return b"".join(parts)


def load(srv: Server, data: bytes) -> None:
    subprocess.run(["redis-cli", "-p", str(srv.port), "--pipe"], input=data, check=True,
                   stdout=subprocess.DEVNULL, timeout=900)


def bench(port: int, test: str, n: int, universe: int) -> float:
    """One redis-benchmark burst; ``setex`` is ``SET key:__rand_int__ <100 B> EX 86400``."""
    cmd = taskset(CLIENT_CPU) + ["redis-benchmark", "-p", str(port), "-n", str(n),
                                 "-r", str(universe), "-d", str(VALUE_BYTES), "-P", "16",
                                 "-c", "50", "-q"]
    if test == "setex":
        cmd += ["SET", "key:__rand_int__", "x" * VALUE_BYTES, "EX", str(TTL_S)]
    else:
        cmd += ["-t", test]
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


def prepare(policy: str, protos: dict, engine: str = "ferrumkv"):
    """Start and load one server (at its limit, unless noeviction)."""
    srv = Server(policy, engine)
    if not ttl_supported(srv):
        srv.stop()
        raise RuntimeError("this build does not support SET ... EX")
    load(srv, protos[policy.startswith("volatile-")])
    info = srv.info()
    if policy != "noeviction":
        srv.cli("config", "set", "maxmemory", info["used_memory"])
    vol = policy.startswith("volatile-")
    # The baseline runs both kinds of write burst; a volatile policy writes with TTLs (plain
    # SETs would strip them and leave nothing to evict).
    # ("get_ttl": a GET burst on the data loaded with TTLs, the volatile-* GET baseline)
    srv.tests = ("get", "set", "get_ttl", "setex") if policy == "noeviction" else \
        ("get", "setex" if vol else "set")
    srv.samples = {t + sfx: [] for t in srv.tests for sfx in ("", "_cpu_us")}
    srv.evicted = []
    print("  %-22s loaded %s" % (srv.label, info.get("db0", "")), flush=True)
    return srv


def measure(srv: Server, args, protos: dict) -> None:
    """One round on one server: a GET burst then its write burst(s).  The baseline is
    reloaded before each burst, so every burst starts from the loaded data set (it would
    otherwise keep the keys its writes added, and its later bursts would not be comparable)."""
    for test in srv.tests:
        if srv.policy == "noeviction":
            srv.cli("flushall")
            load(srv, protos[test in ("setex", "get_ttl")])
        cpu0 = srv.cpu_s()
        ev0 = int(srv.info()["evicted_keys"])
        srv.samples[test].append(bench(srv.port, "get" if test == "get_ttl" else test,
                                       args.requests, args.universe))
        srv.samples[test + "_cpu_us"].append((srv.cpu_s() - cpu0) / args.requests * US_PER_S)
        if test not in ("get", "get_ttl"):
            srv.evicted.append(int(srv.info()["evicted_keys"]) - ev0)


def rss_of(srv: Server) -> int:
    with open("/proc/%d/statm" % srv.proc.pid) as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def set_protocol(n: int, size: int, ttl: bool, prefix: bytes = b"key:") -> bytes:
    """SET <prefix>%012d <size bytes> [EX 86400] for ids 0..n-1."""
    value = b"x" * size
    tail = b"$2\r\nEX\r\n$%d\r\n%d\r\n" % (len(str(TTL_S)), TTL_S) if ttl else b""
    head = b"*5\r\n$3\r\nSET\r\n" if ttl else b"*3\r\n$3\r\nSET\r\n"
    return b"".join(b"%s$%d\r\n%s\r\n$%d\r\n%s\r\n%s" % (
        head, len(prefix) + 12, prefix + b"%012d" % i, size, value, tail) for i in range(n))


def rss_report(n: int) -> None:
    """The memory model against RSS (docs/memory.md): growth per key, then under churn."""
    print("RSS growth per key, %d keys 'key:%%012d' SET through redis-cli --pipe:" % n)
    print("%-12s %12s %12s %10s" % ("value", "RSS B/key", "model B/key", "model/RSS"))
    for size, ttl in ((10, False), (100, False), (1000, False), (10, True), (1000, True)):
        srv = Server("noeviction")
        try:
            load(srv, set_protocol(1, size, ttl, b"warm"))
            time.sleep(0.3)
            r0, u0 = rss_of(srv), int(srv.info()["used_memory"])
            load(srv, set_protocol(n, size, ttl))
            time.sleep(0.5)
            rss, used = (rss_of(srv) - r0) / n, (int(srv.info()["used_memory"]) - u0) / n
            print("%-12s %12.1f %12.1f %10.3f" % ("%d B%s" % (size, " + EX" if ttl else ""),
                                                  rss, used, used / rss), flush=True)
        finally:
            srv.stop()
    print("\nunder eviction churn: maxmemory 100mb allkeys-lru, passes of %d new 100-byte "
          "keys:" % n)
    srv = Server("allkeys-lru")
    try:
        srv.cli("config", "set", "maxmemory", "100mb")
        r0 = rss_of(srv)
        for rep in range(3):
            load(srv, set_protocol(n, VALUE_BYTES, False, b"p%d:" % rep))
            time.sleep(0.5)
            info = srv.info()
            grown = rss_of(srv) - r0
            print("  pass %d: used_memory %.1f MB, RSS growth %.1f MB (%.2fx), evicted %s"
                  % (rep + 1, int(info["used_memory"]) / 2 ** 20, grown / 2 ** 20,
                     grown / int(info["used_memory"]), info["evicted_keys"]), flush=True)
    finally:
        srv.stop()


def inproc_cost(policy: str, profile: bool = False, ttl: bool = None,
                opcodes: bool = False, kernel: bool = True) -> tuple:
    """CPU µs per ``make_room()`` + SET in-process, and the evictions it made.

    With ``opcodes`` the first number is instead the interpreted bytecodes per write
    (``sys.settrace`` opcode events, deterministic; OPCODE_KEYS keys, OPCODE_WRITES writes
    after as many warm-up writes): the steadier measure on a shared machine.  ``kernel``
    False keeps the Evictor on the Python sampler (its path for several databases).
    """
    keys, writes = (OPCODE_KEYS, OPCODE_WRITES) if opcodes else (INPROC_KEYS, INPROC_WRITES)
    import cProfile
    import pstats
    import random
    sys.path.insert(0, ROOT)
    from ferrumkv_py.clock import ManualClock
    from ferrumkv_py.config import Config
    from ferrumkv_py.server import Server as KvServer
    cfg = Config()
    policy, *settings = policy.split("+")             # e.g. allkeys-ahe+ahe-probation=no
    policy, _, controller = policy.partition(":")     # e.g. allkeys-ahe:spec
    cfg.set("maxmemory-policy", policy)
    if controller:
        cfg.set("ahe-controller", controller)
    for item in settings:
        name, _, value = item.partition("=")
        cfg.set(name, value)
    clock = ManualClock()
    srv = KvServer(cfg, clock=clock, rng=random.Random(1))
    srv.evictor.use_kernel = kernel
    ks, db = srv.ks, srv.ks.dbs[0]
    if ttl is None:
        ttl = policy.startswith("volatile-")
    ttl_ms = TTL_S * 1000 if ttl else 0
    value = b"x" * VALUE_BYTES
    rng = random.Random(2)

    def write(key: bytes) -> None:
        e = db.set(key, value)
        if ttl_ms:
            db.set_expire(e, ks.now_ms + ttl_ms)

    for i in range(keys):
        if i % INPROC_TICK_WRITES == 0:
            clock.advance(1)
            ks.refresh_time()
        write(b"key:%012d" % i)
    for i in range(keys):
        if i % INPROC_TICK_WRITES == 0:
            clock.advance(1)
            ks.refresh_time()
        db.lookup_read(b"key:%012d" % rng.randrange(keys))
    if policy != "noeviction":
        cfg.set("maxmemory", str(ks.used_memory))
        srv.maxmemory = ks.used_memory
    names = [b"new:%012d" % i for i in range(writes)]
    make_room = srv.evictor.make_room
    evicted0 = ks.evicted_keys

    def loop() -> None:
        for i, key in enumerate(names):
            if i % INPROC_TICK_WRITES == 0:
                clock.advance(1)
                ks.refresh_time()
            make_room()
            write(key)

    if opcodes:
        timed = names[writes // 2:]
        del names[writes // 2:]
        loop()                               # warm-up: the pool fills, lists get dead slots
        names[:] = timed
        count = [0]

        def tracer(frame, event, arg):
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            if event == "opcode":
                count[0] += 1
            return tracer

        evicted0 = ks.evicted_keys
        sys.settrace(tracer)
        loop()
        sys.settrace(None)
        return count[0] / len(timed), ks.evicted_keys - evicted0
    t0 = time.process_time()
    if profile:
        prof = cProfile.Profile()
        prof.runcall(loop)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    else:
        loop()
    us = (time.process_time() - t0) / writes * US_PER_S
    ks._check()
    assert not srv.maxmemory or ks.used_memory <= srv.maxmemory
    return us, ks.evicted_keys - evicted0


def inproc_report(policies: list, profile: bool, opcodes: bool, kernel: bool = True) -> None:
    """The --inproc table; volatile-* are set against a noeviction run that also writes TTLs."""
    base = {}
    unit = "ops" if opcodes else "us"
    n = OPCODE_WRITES // 2 if opcodes else INPROC_WRITES
    print("%-16s %10s %9s %9s" % ("policy", unit + "/write", "evict/op", "evict " + unit))
    for policy in policies:
        vol = policy.startswith("volatile-")
        if vol not in base:
            base[vol] = inproc_cost("noeviction", ttl=vol, opcodes=opcodes)[0]
            print("%-16s %10.2f" % ("noeviction" + (" +EX" if vol else ""), base[vol]),
                  flush=True)
        cost, evicted = inproc_cost(policy, profile, opcodes=opcodes, kernel=kernel)
        per_op = evicted / n
        extra = (cost - base[vol]) / per_op if per_op else 0.0
        print("%-16s %10.2f %9.3f %9.2f" % (policy, cost, per_op, extra), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="200k-key universe, 100k requests per burst, 3 rounds")
    ap.add_argument("--universe", type=int, default=1_000_000,
                    help="distinct keys the benchmark uses (redis-benchmark -r)")
    ap.add_argument("--fill", type=float, default=0.9,
                    help="share of the universe loaded and held under maxmemory")
    ap.add_argument("--requests", type=int, default=200_000, help="requests per burst")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--policies", default=",".join(ALL_POLICIES))
    ap.add_argument("--inproc", action="store_true",
                    help="instead: in-process eviction CPU per policy (no sockets)")
    ap.add_argument("--profile", action="store_true", help="with --inproc: cProfile tops")
    ap.add_argument("--python-sampler", action="store_true",
                    help="with --inproc: the Python sampler, not the compiled kernel")
    ap.add_argument("--opcodes", action="store_true",
                    help="with --inproc: interpreted bytecodes per write (deterministic)")
    ap.add_argument("--redis", action="store_true",
                    help="also redis-server under its own policies, same rounds (a reference)")
    ap.add_argument("--rss", action="store_true",
                    help="instead: the memory model against RSS (docs/memory.md)")
    args = ap.parse_args()
    if args.inproc:
        inproc_report([p for p in args.policies.split(",") if p], args.profile,
                      args.opcodes, kernel=not args.python_sampler)
        return 0
    if args.rss:
        rss_report(200_000 if args.quick else 1_000_000)
        return 0
    if args.quick:
        args.universe, args.requests, args.rounds = 200_000, 100_000, 3
    args.keys = int(args.universe * args.fill)
    for exe in ("redis-benchmark", "redis-cli"):
        if not shutil.which(exe):
            print("missing %s (apt-get install redis-tools)" % exe)
            return 2
    policies = [p for p in args.policies.split(",") if p]
    print("eviction cost: %d keys held of a %d-key universe; %d rounds of %d requests per "
          "burst; -P 16 -c 50 -d %d" % (args.keys, args.universe, args.rounds, args.requests,
                                        VALUE_BYTES), flush=True)
    t0 = time.time()
    protos = {False: load_protocol(args.keys, args.universe, False),
              True: load_protocol(args.keys, args.universe, True)}
    groups = [[]]                   # ours; then redis-server's with --redis
    servers = groups[0]
    try:
        for policy in ["noeviction"] + policies:
            servers.append(prepare(policy, protos))
        if args.redis:
            groups.append([prepare(policy, protos, "redis") for policy in
                           ["noeviction"] + [p for p in policies if "-ahe" not in p]])
        everyone = [srv for group in groups for srv in group]
        for r in range(args.rounds):
            for srv in everyone:
                measure(srv, args, protos)
            print("  round %d/%d done (%.0f s)" % (r + 1, args.rounds, time.time() - t0),
                  flush=True)
        for group in groups:
            report(group, args, t0)
        for srv in everyone:
            info = srv.info()
            if int(info["maxmemory"]) and int(info["used_memory"]) > int(info["maxmemory"]):
                print("  %s: used_memory over maxmemory!" % srv.label)
    finally:
        for group in groups:
            for srv in group:
                srv.stop()
    return 0


def extra_bytes_per_key(srv) -> float:
    """The policy's own memory per cached key (the AHE controller's ghosts: INFO memory
    ``ahe_extra_memory``, counted against maxmemory; 0 for the other policies)."""
    if "-ahe" not in srv.policy:
        return 0.0          # the controller exists (INFO shows it) but is not in use
    info = srv.info()
    keys = sum(int(v.split(",")[0].split("=")[1]) for k, v in info.items()
               if k.startswith("db") and v.startswith("keys="))
    return int(info.get("ahe_extra_memory", 0)) / keys if keys else 0.0


def report(servers: list, args, t0: float) -> None:
    med = {s.label: {k: statistics.median(v) for k, v in s.samples.items()} for s in servers}
    base = med[servers[0].label]
    print("\n%s: GET %.0f/s (%.2f us CPU), SET %.0f/s (%.2f us CPU); with TTL data: "
          "GET %.0f/s (%.2f us CPU), SET EX %.0f/s (%.2f us CPU); per-round SET ops/s %s"
          % (servers[0].label, base["get"], base["get_cpu_us"], base["set"], base["set_cpu_us"],
             base["get_ttl"], base["get_ttl_cpu_us"], base["setex"], base["setex_cpu_us"],
             " ".join("%.0f" % x for x in servers[0].samples["set"])))
    print("ratio = the policy's ops/s over noeviction's; cpu = noeviction's CPU per request "
          "over the policy's (medians).  Writes are SET, or SET EX for volatile-*, whose GETs "
          "are set against noeviction's GETs on the same data with TTLs")
    print("%-22s %9s %6s %6s %9s %6s %6s %9s %9s %9s" % (
        "policy", "write/s", "ratio", "cpu", "GET/s", "ratio", "cpu", "evict/op", "evict us",
        "extra B/k"))
    worst_tp = worst_cpu = 1.0
    for s in servers[1:]:
        m = med[s.label]
        w = s.tests[1]
        g = "get_ttl" if w == "setex" else "get"
        rs, rg = m[w] / base[w], m["get"] / base[g]
        cs, cg = base[w + "_cpu_us"] / m[w + "_cpu_us"], base[g + "_cpu_us"] / m["get_cpu_us"]
        worst_tp, worst_cpu = min(worst_tp, rs, rg), min(worst_cpu, cs, cg)
        per_op = statistics.median(s.evicted) / args.requests
        extra = (m[w + "_cpu_us"] - base[w + "_cpu_us"]) / per_op if per_op else 0.0
        print("%-22s %9.0f %6.2f %6.2f %9.0f %6.2f %6.2f %9.3f %9.1f %9.2f" % (
            s.label, m[w], rs, cs, m["get"], rg, cg, per_op, extra, extra_bytes_per_key(s)))
    print("\nworst ratio: throughput %.2f, CPU %.2f (goal >= %.2f); %.0f s"
          % (worst_tp, worst_cpu, GOAL_RATIO, time.time() - t0))


if __name__ == "__main__":
    sys.exit(main())
