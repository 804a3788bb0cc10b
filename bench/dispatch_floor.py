"""The floor under the dispatcher: a bare hiredis + dict loop on the same frames.

``bench/server_bench.py --parts dispatch`` times ferrumkv_py's whole command path in-process
(frames fed to ``Client.data_received``).  This script times, on the same redis-benchmark
frames, the least a Python server can do per command: ``hiredis.Reader`` feed/gets, a dict
set or get, a reply appended, one join per read -- no command table, no RESP exactness
checks, no stats, no memory accounting.  The difference is what our features cost in CPU;
the floor itself is what no Python design can go under.  Measured alongside (same process,
best of 5)::

    .venv/bin/python bench/dispatch_floor.py             # SET/GET at -P 1 and -P 16 (~1 min)
    .venv/bin/python bench/dispatch_floor.py --opcodes   # bytecodes per command, by function

``--opcodes`` counts the interpreted bytecodes of our path per command (``sys.settrace``
opcode events: deterministic, so it shows what a hot-path change saves when the machine is
too busy for timings to agree), split by function; ``--lines N`` adds the N busiest lines.

Seen here (2 vCPU VM, 2026-11-30, session 2, two runs): SET -P 1 5.8-6.3 us against a
floor of 1.1, GET -P 1 4.8-5.0 against 0.9-1.0, SET -P 16 2.6-2.7 against 0.8-0.85, GET -P 16
2.4-3.3 against 0.8-1.2 (GETs of 100-byte values over a 100k-key dict, as redis-benchmark's).
Session 3, after the fused read and the reply-header table (quieter machine): SET -P 1 3.99
against 0.84, GET -P 1 3.50 against 0.76, SET -P 16 2.04 against 0.74, GET -P 16 1.44
against 0.59; bytecodes per command SET -P 1 704 -> 590, GET -P 1 615 -> 507.
Session 4, after the compiled frame scanner (resp_scan.py): SET -P 1 4.11 against 1.02,
GET -P 1 3.55 against 0.85, SET -P 16 1.62 against 0.61, GET -P 16 1.22 against 0.61;
bytecodes per command SET -P 16 320 -> 219, GET -P 16 235 -> 151 (-P 1: 598 / 515).
"""

from __future__ import annotations

import argparse
import collections
import gc
import os
import random
import sys
import time

import hiredis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import server_bench as sb  # noqa: E402
from _opcodes import opcodes_by_line  # noqa: E402

REQUESTS = 100_000
REPEATS = 5


def _loop(r, d: dict, reads: list) -> None:
    for data in reads:
        r.feed(data)
        out = []
        while True:
            cmd = r.gets()
            if cmd is False:
                break
            if cmd[0] == b"SET":
                d[cmd[1]] = cmd[2]
                out.append(b"+OK\r\n")
            else:
                v = d.get(cmd[1])
                out.append(b"$-1\r\n" if v is None else b"$%d\r\n%b\r\n" % (len(v), v))
        b"".join(out)


def floor_us(fill: list, reads: list, pipeline: int) -> float:
    """CPU us per command of the bare loop over ``reads`` after ``fill`` (best of REPEATS)."""
    best = float("inf")
    n = len(reads) * pipeline
    for _ in range(REPEATS):
        d: dict = {}
        r = hiredis.Reader()
        _loop(r, d, fill)
        gc.collect()
        t0 = time.process_time()
        _loop(r, d, reads)
        best = min(best, (time.process_time() - t0) * 1e6 / n)
    return best


OPCODE_FILL = 10_000    # keys loaded before counting (tracing is slow)
OPCODE_READS = 50       # traced reads per test


def opcodes_per_command(test: str, pipeline: int, lines: int = 0) -> tuple:
    """Bytecodes our path runs per command: (total, Counter by function, Counter by line)."""
    from ferrumkv_py.config import Config
    from ferrumkv_py.client import Client
    from ferrumkv_py.server import Server
    from ferrumkv_py import resp_scan
    resp_scan.load_now()    # a server loads it at its first pipeline; measured loaded here
    server = Server(Config())
    c = Client(server)
    c.connection_made(sb._NullTransport())
    rng = random.Random(1)
    for _ in range(OPCODE_FILL // 100):
        c.data_received(b"".join(sb._request("set", rng) for _ in range(100)))
    reads = [b"".join(sb._request(test, rng) for _ in range(pipeline))
             for _ in range(OPCODE_READS)]
    by_line = opcodes_by_line(c.data_received, reads)
    n = OPCODE_READS * pipeline
    by_func: collections.Counter = collections.Counter()
    for (path, func, _), k in by_line.items():
        by_func[(path, func)] += k
    return sum(by_line.values()) / n, by_func, by_line


def opcodes_report(lines: int) -> None:
    for test in ("set", "get"):
        for pipeline in (1, 16):
            total, by_func, by_line = opcodes_per_command(test, pipeline)
            n = OPCODE_READS * pipeline
            print("%s -P %d: %.1f bytecodes per command" % (test.upper(), pipeline, total))
            for (path, func), k in by_func.most_common(8):
                print("    %7.1f  %s %s" % (k / n, path, func))
            for (path, func, line), k in by_line.most_common(lines):
                print("    %7.2f  %s:%s %s" % (k / n, path, line, func))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--opcodes", action="store_true", help="count bytecodes, not time")
    ap.add_argument("--lines", type=int, default=0, help="with --opcodes: busiest lines")
    args = ap.parse_args()
    if args.opcodes:
        opcodes_report(args.lines)
        return 0
    print("%-12s %12s %12s %8s" % ("test", "ours us", "floor us", "ratio"))
    for test in ("set", "get"):
        for pipeline in (1, 16):
            # the same frames dispatch_cost_us feeds: a fill of SETs, then the test's reads
            rng = random.Random(1)
            fill = [b"".join(sb._request("set", rng) for _ in range(100))
                    for _ in range(sb.KEYSPACE // 100)]
            reads = [b"".join(sb._request(test, rng) for _ in range(pipeline))
                     for _ in range(REQUESTS // pipeline)]
            ours = []
            for _ in range(3):
                gc.collect()
                ours.append(sb.dispatch_cost_us(test, pipeline, REQUESTS, {}))
            bare = floor_us(fill, reads, pipeline)
            ours = min(ours)
            print("%-12s %12.2f %12.2f %8.1f" % ("%s -P %d" % (test.upper(), pipeline), ours,
                                                  bare, ours / bare), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
