"""The dispatcher's hot-path contracts, measured: inline reads against named calls.

client.py's inline path reads the litehit shadow's buffer (``shadow.HOT_PATH_ATTRS``) and
the memory state (``server.ROOM_CHECK_ATTRS``) as attributes instead of calling a method of
each object.  This bench shows what those reads cost and what a call would:

* in-process CPU per command (``server_bench.dispatch_cost_us``: redis-benchmark's frames fed
  to one Client over a null transport) and bytecodes per command inside
  ``Client.data_received`` (``command_cost.opcodes``: deterministic), for SET/GET -P 16 with
  the shadow on, SET -P 16 and -P 1 under a maxmemory with no eviction due, and the plain
  cases; with ``--ref-root DIR`` the same for another ferrumkv_py tree (say, the commit
  before a dispatcher change), each tree in fresh processes, interleaved, best of ``--reps``;
* ``--timeit``: the room check alone, spelt out inline against ``Evictor.room_for_write()``.

Usage::

    .venv/bin/python bench/dispatch_contracts.py                       # this tree (~1 min)
    .venv/bin/python bench/dispatch_contracts.py --ref-root /tmp/old   # before/after
    .venv/bin/python bench/dispatch_contracts.py --timeit

Seen here (2 cores shared with other jobs, load ~2.5, 2026-12-01; ref = the tree before the
contracts, with the literal 4 and the unnamed inline check): bytecodes per command equal in
every case (SET -P 16 253.0, GET -P 16 204.1, SET -P 16 maxmemory 260.0, SET -P 1 maxmemory
734.6, SET/GET -P 16 shadow on 285.0 / 237.1); us per command within the run's noise
(ours/ref 0.98-1.13 at load ~2.5, the unchanged plain cases included; 0.99-1.02 best of 5 at
load ~1.5-2.4).  The room check as a bound
``room_for_write()`` call instead: SET -P 16 maxmemory 260.0 -> 268.2 bytecodes, -P 1
734.4 -> 746.4; ``--timeit``: inline 29-42 ns, a call 49-81 ns per check.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import command_cost  # noqa: E402
import server_bench  # noqa: E402

UNDER_LIMIT = {"maxmemory": "1gb", "maxmemory-policy": "allkeys-lru"}  # no eviction due
SHADOW_ON = {"litehit-shadow": "yes"}
CASES = [   # (name, redis-benchmark test, pipeline, config)
    ("SET -P 16", "set", 16, {}),
    ("GET -P 16", "get", 16, {}),
    ("SET -P 16 maxmemory", "set", 16, UNDER_LIMIT),
    ("SET -P 1 maxmemory", "set", 1, UNDER_LIMIT),
    ("SET -P 16 shadow on", "set", 16, SHADOW_ON),
    ("GET -P 16 shadow on", "get", 16, SHADOW_ON),
]
REQUESTS = 64_000
RUN_TIMEOUT_S = 600
TIMEIT_NUMBER = 1_000_000
TIMEIT_REPEAT = 7


def worker(mode: str) -> None:
    """``--worker time|ops``: every case in this process, ferrumkv_py from PYTHONPATH."""
    out = {}
    for name, test, pipeline, config in CASES:
        if mode == "time":
            out[name] = server_bench.dispatch_cost_us(test, pipeline, REQUESTS, config)
        else:
            out[name] = command_cost.opcodes(test, REQUESTS, pipeline=pipeline,
                                             config=config)[0]
    print(json.dumps(out))


def run_worker(root: str, mode: str) -> dict:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", mode],
                         cwd=root, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                         env=dict(os.environ, PYTHONPATH=root))
    if out.returncode != 0:
        raise RuntimeError("worker failed: %s" % out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(roots: list, reps: int) -> None:
    ops = {kind: run_worker(root, "ops") for kind, root in roots}
    best: dict = {kind: {} for kind, _ in roots}
    for _ in range(reps):
        for kind, root in roots:
            for name, us in run_worker(root, "time").items():
                best[kind][name] = min(us, best[kind].get(name, us))
    head = "%-22s" % "case" + "".join("%12s %9s" % (kind + " us", "opcodes") for kind, _ in roots)
    print(head + ("   ours/ref" if len(roots) > 1 else ""))
    for name, *_ in CASES:
        line = "%-22s" % name + "".join("%12.3f %9.1f" % (best[kind][name], ops[kind][name])
                                        for kind, _ in roots)
        if len(roots) > 1:
            line += "   %9.3f" % (best["ours"][name] / best["ref"][name])
        print(line, flush=True)


def room_check_timeit() -> None:
    """ns per denyoom check under the limit: the inline test against the method."""
    from ferrumkv_py.config import Config
    from ferrumkv_py.registry import lookup
    from ferrumkv_py.server import Server
    cfg = Config()
    for name, value in UNDER_LIMIT.items():
        cfg.set(name, value)
    server = Server(cfg)
    env = {"server": server, "spec": lookup(b"set"), "room": server.evictor.room_for_write}
    variants = [
        ("inline", "spec.denyoom and server.maxmemory and server.ks.used_memory > "
                   "server.room_limit and not server.evictor.make_room()"),
        ("bound method", "spec.denyoom and server.maxmemory and not room()"),
        ("method", "spec.denyoom and server.maxmemory and not server.evictor.room_for_write()"),
    ]
    for name, stmt in variants:
        secs = min(timeit.repeat(stmt, globals=env, number=TIMEIT_NUMBER, repeat=TIMEIT_REPEAT))
        print("%-14s %6.1f ns per check" % (name, secs * 1e9 / TIMEIT_NUMBER))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ref-root", help="also measure this ferrumkv_py tree (before/after)")
    ap.add_argument("--reps", type=int, default=3, help="timed repetitions (best counts)")
    ap.add_argument("--timeit", action="store_true", help="time the room check alone")
    args = ap.parse_args()
    if args.timeit:
        sys.path.insert(0, ROOT)
        room_check_timeit()
        return
    roots = [("ours", ROOT)]
    if args.ref_root:
        roots.append(("ref", os.path.abspath(args.ref_root)))
    compare(roots, args.reps)


if __name__ == "__main__":
    main()
