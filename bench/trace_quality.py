"""Eviction quality on real traces: our live policies beside the published state of the art.

Each trace is replayed read-through (a GET per access, a SET on a miss) as an object-count
cache of C keys:
- through libCacheSim's reference implementations (the ``libcachesim`` package): LRU, LFU,
  ARC, S3-FIFO, SIEVE, W-TinyLFU, 2Q and Belady's OPT;
- through this repo's simulator (``research/evsim_ahe/sim.py``: exact LRU, OPT), as a
  cross-check of both (they must agree to the request);
- against the live server, one fresh server per policy, maxmemory set so that allkeys-lru
  holds C keys (every policy gets the same maxmemory; ``bench/eviction_quality.py``'s
  ``run_one``, which also reports the litehit shadow's exact LRU of that memory).

Traces (``data/traces/``): the CloudPhysics block I/O sample (113,872 requests, 48,974
blocks) and the Mooncake conversation trace as KV-cache blocks (each request's full
512-token blocks in order, 276,491 accesses).

    .venv/bin/python bench/trace_quality.py                       # ~5 minutes
    .venv/bin/python bench/trace_quality.py --traces cloudphysics --capacities 2000 \\
        --policies allkeys-lru,allkeys-ahe

Writes ``out/trace-quality.md`` (``--out``; ``--docs``: the committed
``docs/trace-quality.md``) and prints each row as it is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from bench.workloads import Stream  # noqa: E402

TRACES_DIR = os.path.join(ROOT, "data", "traces")
MOONCAKE_BLOCK_TOKENS = 512
DEFAULT_CAPACITIES = {"cloudphysics": (500, 2000, 8000), "mooncake": (500, 2000, 8000)}
DEFAULT_POLICIES = "allkeys-lru,allkeys-lfu,allkeys-ahe"
REFERENCE = ("LRU", "LFU", "ARC", "S3-FIFO", "SIEVE", "W-TinyLFU", "2Q", "OPT")


def load_cloudphysics() -> np.ndarray:
    """One block id per line."""
    return np.loadtxt(os.path.join(TRACES_DIR, "cloudphysics_io.txt"), dtype=np.int64)


def load_mooncake() -> np.ndarray:
    """Each request's full 512-token blocks, in order (the last partial block is not
    cached, as a KV cache keeps only full blocks)."""
    ids: list = []
    with open(os.path.join(TRACES_DIR, "mooncake_conversation_trace.jsonl")) as f:
        for line in f:
            req = json.loads(line)
            ids += req["hash_ids"][:req["input_length"] // MOONCAKE_BLOCK_TOKENS]
    return np.asarray(ids, dtype=np.int64)


TRACES = {"cloudphysics": load_cloudphysics, "mooncake": load_mooncake}


def dense(ids: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids renumbered 0..n-1 (first-seen order is irrelevant: only equality matters)."""
    _, inv = np.unique(ids, return_inverse=True)
    return inv.astype(np.int64), int(inv.max()) + 1


def next_access(keys: np.ndarray) -> np.ndarray:
    """For each request, the index of the next request of the same key (-1: none, the
    value libCacheSim's Belady reads as "never")."""
    n = len(keys)
    order = np.lexsort((np.arange(n), keys))        # by key, then time
    nxt = np.full(n, -1, dtype=np.int64)
    same = keys[order[1:]] == keys[order[:-1]]
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def reference_hits(name: str, keys: np.ndarray, nxt: np.ndarray, cap: int) -> int:
    """Hits of libCacheSim's ``name`` on the read-through stream.  Complexity: O(n) calls."""
    import libcachesim as lcs
    cls = {"LRU": lcs.LRU, "LFU": lcs.LFU, "ARC": lcs.ARC, "S3-FIFO": lcs.S3FIFO,
           "SIEVE": lcs.Sieve, "W-TinyLFU": lcs.WTinyLFU, "2Q": lcs.TwoQ,
           "OPT": lcs.Belady}[name]
    cache = cls(cache_size=cap)
    get = cache.get
    req = lcs.Request()
    req.obj_size = 1
    req.op = lcs.ReqOp.OP_GET
    hits = 0
    never = np.iinfo(np.int64).max
    for i, (k, nx) in enumerate(zip(keys.tolist(), nxt.tolist())):
        req.obj_id = k + 1                  # libCacheSim reserves id 0
        req.clock_time = i
        req.next_access_vtime = nx if nx >= 0 else never
        hits += get(req)
    return hits


def simulator_hits(keys: np.ndarray, nkeys: int, cap: int) -> tuple[int, int]:
    """(exact LRU hits, OPT hits) from research/evsim_ahe/sim.py (numba)."""
    sys.path.insert(0, os.path.join(ROOT, "research", "evsim_ahe"))
    import sim
    no_ttl = np.zeros(nkeys)
    k32 = keys.astype(np.int32)
    lru = sim.sim_lru_exact(k32, no_ttl, nkeys, cap, 1.0)[0]
    nx = sim.next_use(k32, nkeys)
    opt = sim.sim_opt(k32, nx, no_ttl, nkeys, cap, 1.0)[0]
    return int(lru), int(opt)


def live_hits(policy: str, keys: np.ndarray, cap: int, args) -> dict:
    """One fresh server under ``policy`` (eviction_quality.run_one)."""
    from bench.eviction_quality import run_one
    ns = argparse.Namespace(capacity=cap, port=None, host="127.0.0.1", password=None)
    return run_one("trace", policy, ns, Stream(keys=keys), args.rate)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--capacities", help="comma-separated keys (default: per trace)")
    ap.add_argument("--policies", default=DEFAULT_POLICIES, help="live server policies")
    ap.add_argument("--reference", default=",".join(REFERENCE), help="libCacheSim policies")
    ap.add_argument("--rate", type=float, default=0, help="requests/s (0 = unthrottled)")
    ap.add_argument("--no-live", action="store_true", help="simulators only")
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "trace-quality.md"))
    ap.add_argument("--docs", action="store_true", help="write the committed "
                    "docs/trace-quality.md instead")
    args = ap.parse_args()
    if args.docs:
        args.out = os.path.join(ROOT, "docs", "trace-quality.md")
    rows = []
    for tname in args.traces.split(","):
        keys, nkeys = dense(TRACES[tname]())
        nxt = next_access(keys)
        n = len(keys)
        caps = ([int(c) for c in args.capacities.split(",")] if args.capacities
                else DEFAULT_CAPACITIES[tname])
        print("== %s: %d requests, %d keys" % (tname, n, nkeys), flush=True)
        for cap in caps:
            row = {"trace": tname, "capacity": cap, "requests": n}
            t0 = time.time()
            for name in args.reference.split(","):
                row[name] = reference_hits(name, keys, nxt, cap) / n
            lru, opt = simulator_hits(keys, nkeys, cap)
            row["sim LRU"], row["sim OPT"] = lru / n, opt / n
            print("C=%-6d %s  (%.0f s)" % (cap, "  ".join(
                "%s %.2f" % (k, 100 * v) for k, v in row.items()
                if isinstance(v, float)), time.time() - t0), flush=True)
            if not args.no_live:
                for policy in args.policies.split(","):
                    r = live_hits(policy, keys, cap, args)
                    row["ours " + policy] = r["hit"]
                    row.setdefault("shadow exact LRU", r["exact"])
                    print("   ours %-24s %.2f  (keys held %d, shadow exact LRU %.2f)" % (
                        policy, 100 * r["hit"], r["keys"], 100 * r["exact"]), flush=True)
            rows.append(row)
    write_report(rows, args)
    return 0


def write_report(rows: list, args) -> None:
    cols = [k for k in rows[0] if k not in ("trace", "capacity", "requests")]
    for r in rows[1:]:
        cols += [k for k in r if k not in cols and k not in ("trace", "capacity", "requests")]
    lines = ["# Eviction quality on real traces", "",
             "Generated by `bench/trace_quality.py %s` on %s. Hit rate in %%, read-through, "
             "object-count caches of C keys; the live server's maxmemory holds C keys under "
             "allkeys-lru." % (" ".join(sys.argv[1:]), time.strftime("%Y-%m-%d")), "",
             "| trace | C | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| %s | %d | " % (r["trace"], r["capacity"]) + " | ".join(
            "%.2f" % (100 * r[c]) if c in r else "" for c in cols) + " |")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", args.out)


if __name__ == "__main__":
    sys.exit(main())
