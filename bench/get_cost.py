"""In-process cost of a GET on a hit: this tree against another (``--ref-root``), per policy.

Issue 15 asks that GET on a hit be no slower than before the slot layout.  Two measures,
each in a fresh process per tree (``PYTHONPATH`` = that tree, so each imports its own
code), interleaved (ours, ref, ours, ref ...), the best repetition of each kept:

  lookup_read   ns per ``Database.lookup_read(key)`` on a present key (a plain Python loop
                over KEYS shuffled keys, the loop's own cost included: the same in both);
  GET -P 16     CPU us per command of GET frames (redis-benchmark's, 100-byte values) fed
                to one ``Client`` in reads of 16 over a null transport: reader, dispatcher,
                handler, reply (``server_bench.dispatch_cost_us``'s set-up, but every key
                present, so every GET is a hit).

Each under ``maxmemory-policy`` allkeys-lru, allkeys-lfu and allkeys-ahe (no maxmemory:
nothing is evicted, the policy only decides the touch).  Prints each tree and the ratio
ref/ours for each ``--ref-root`` (above 1: this tree is faster; with ``--opcodes``,
bytecodes per GET by function instead of time).

What it showed (issue 15, 2026-12-01, 2 cores shared with other jobs, best of 3 interleaved
workers each; "head" is the tree before GET's read path: Database.lookup_value, GET inline in
the dispatcher, the LFU store skipped when unchanged, exp[] unread without TTLs)::

    GET -P 16 us     ref-old (Entry objects)   head    this    ref-old / this
    allkeys-lru      1.49                      2.11    1.96    0.76
    allkeys-lfu      1.69                      2.44    2.29    0.74
    allkeys-ahe      1.73                      2.39    2.27    0.76

Bytecodes per GET (``--opcodes``): allkeys-lru 178 ref-old, 216 head, 208 this; the
dispatcher alone runs 18 more per command than ref-old (the slowlog clock per command,
blocking_due, latency histograms per read), the keyspace ~10 more (the shard choice).

Usage::

    .venv/bin/python bench/get_cost.py --ref-root /work/wt/ref-old        # ~1-2 min
    .venv/bin/python bench/get_cost.py --ref-root DIR --reps 5 --policies allkeys-lfu
    .venv/bin/python bench/get_cost.py --ref-root DIR --opcodes   # bytecodes per GET
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _opcodes import opcodes_by_line  # noqa: E402

KEYS = 100_000               # keys present (redis-benchmark -r 100000's universe)
VALUE_BYTES = 100
LOOKUPS = 1_000_000          # lookup_read calls per timed repetition
INNER_REPS = 3               # timed repetitions inside one worker (best kept)
PIPELINE = 16
GET_REQUESTS = 160_000       # GETs per timed repetition of the dispatcher path
CRON_EVERY = 10_000          # commands between cron ticks (hz 10 at ~100k commands/s)
POLICIES = ("allkeys-lru", "allkeys-lfu", "allkeys-ahe")
RUN_TIMEOUT_S = 600


def _key(i: int) -> bytes:
    return b"key:%012d" % i


def _server(policy: str):
    from ferrumkv_py.config import Config
    from ferrumkv_py.server import Server
    cfg = Config()
    cfg.set("maxmemory-policy", policy)
    return Server(cfg)


def lookup_ns(policy: str) -> float:
    """ns per lookup_read of a present key, best of INNER_REPS."""
    server = _server(policy)
    db = server.ks.dbs[0]
    value = b"x" * VALUE_BYTES
    for i in range(KEYS):
        db.set(_key(i), value)
    rng = random.Random(1)
    keys = [_key(rng.randrange(KEYS)) for _ in range(LOOKUPS)]
    f = db.lookup_read
    best = float("inf")
    for _ in range(INNER_REPS):
        t0 = time.process_time()
        for k in keys:
            f(k)
        best = min(best, time.process_time() - t0)
        server.cron()
    return best * 1e9 / LOOKUPS


def get_us(policy: str) -> float:
    """CPU us per GET (all hits) through the whole command path at -P 16."""
    from ferrumkv_py import resp_scan
    from ferrumkv_py.client import Client
    from server_bench import _NullTransport, _frame
    resp_scan.load_now()
    server = _server(policy)
    c = Client(server)
    c.connection_made(_NullTransport())
    value = b"x" * VALUE_BYTES
    for base in range(0, KEYS, 100):
        c.data_received(b"".join(_frame(b"SET", _key(i), value)
                                 for i in range(base, min(base + 100, KEYS))))
    rng = random.Random(2)
    reads = [b"".join(_frame(b"GET", _key(rng.randrange(KEYS))) for _ in range(PIPELINE))
             for _ in range(GET_REQUESTS // PIPELINE)]
    hits0 = server.ks.hits
    feed = c.data_received
    every = max(1, CRON_EVERY // PIPELINE)
    best = float("inf")
    for _ in range(INNER_REPS):
        server.cron()
        t0 = time.process_time()
        for i, data in enumerate(reads, 1):
            feed(data)
            if i % every == 0:
                server.cron()
        best = min(best, time.process_time() - t0)
    assert server.ks.hits - hits0 == INNER_REPS * len(reads) * PIPELINE, "not all hits"
    return best * 1e6 / (len(reads) * PIPELINE)


OPCODE_READS = 50           # traced reads (x PIPELINE GETs) of --opcodes


def get_opcodes(policy: str) -> dict:
    """Bytecodes per GET (all hits) at -P 16, by function (``sys.settrace`` opcode
    events: deterministic, unlike the timings on a shared machine)."""
    import collections
    from ferrumkv_py import resp_scan
    from ferrumkv_py.client import Client
    from server_bench import _NullTransport, _frame
    resp_scan.load_now()
    server = _server(policy)
    c = Client(server)
    c.connection_made(_NullTransport())
    value = b"x" * VALUE_BYTES
    n_keys = 1000
    c.data_received(b"".join(_frame(b"SET", _key(i), value) for i in range(n_keys)))
    rng = random.Random(3)
    reads = [b"".join(_frame(b"GET", _key(rng.randrange(n_keys))) for _ in range(PIPELINE))
             for _ in range(OPCODE_READS)]
    by_func: collections.Counter = collections.Counter()
    for (path, func, _), k in opcodes_by_line(c.data_received, reads).items():
        by_func["%s:%s" % (path, func)] += k
    n = OPCODE_READS * PIPELINE
    out = {"total": sum(by_func.values()) / n}
    out.update((k, v / n) for k, v in by_func.most_common())
    return out


def worker(spec: str) -> None:
    job = json.loads(spec)
    import ferrumkv_py
    out = {"tree": os.path.dirname(os.path.dirname(os.path.abspath(ferrumkv_py.__file__)))}
    for policy in job["policies"]:
        if job.get("opcodes"):
            out.update(("%s %s" % (policy, k), v) for k, v in get_opcodes(policy).items())
            continue
        out["lookup_read ns " + policy] = lookup_ns(policy)
        out["GET -P 16 us " + policy] = get_us(policy)
    print(json.dumps(out))


def run_tree(root: str, policies: list, opcodes: bool = False) -> dict:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                          json.dumps({"policies": policies, "opcodes": opcodes})], cwd=root, env=env,
                         capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if out.returncode != 0:
        raise RuntimeError("worker failed in %s: %s" % (root, out.stderr[-2000:]))
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if os.path.realpath(res.pop("tree")) != os.path.realpath(root):
        raise RuntimeError("worker in %s imported another tree" % root)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref-root", action="append",
                    help="another checkout (e.g. /work/wt/ref-old); may be repeated")
    ap.add_argument("--reps", type=int, default=3, help="worker processes per tree")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--opcodes", action="store_true",
                    help="bytecodes per GET by function, not time (deterministic)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0
    policies = args.policies.split(",")
    roots = [("ours", ROOT)] + [(r, r) for r in args.ref_root or ()]
    best: dict = {kind: {} for kind, _ in roots}
    for _ in range(1 if args.opcodes else args.reps):
        for kind, root in roots:
            for name, v in run_tree(root, policies, args.opcodes).items():
                best[kind][name] = min(v, best[kind].get(name, v))
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    names = list(best["ours"])
    for kind, _ in roots[1:]:
        names += [n for n in best[kind] if n not in names]
    for name in names:
        ours = best["ours"].get(name, 0.0)
        cols = "".join("   %s %8.3f  ratio %.2f" % (kind, best[kind].get(name, 0.0),
                                                   best[kind].get(name, 0.0) / ours
                                                   if ours else 0.0)
                       for kind, _ in roots[1:])
        print("  %-36s ours %8.3f%s" % (name, ours, cols))
    return 0


if __name__ == "__main__":
    sys.exit(main())
