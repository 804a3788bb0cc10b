"""Bitmap and HyperLogLog command latency, ferrumkv beside redis-server in the same run.

Starts a ferrumkv server and a redis-server (both on free 127.0.0.1 ports, stopped by PID at
the end), then times each command with one redis-py client per server, interleaved, and
prints the median round trip of each side and their ratio.  String sizes are in bytes; the
big-string rows show what each command costs per byte (SETBIT and BITFIELD edit an unshared
value in place, ``inplace.py``; BITCOUNT / BITOP / BITPOS run in numpy).

Seen here (2 shared cores, medians of 30, redis vs ours): SETBIT 16 MiB 82 vs 41 us (1.5 ms
while it copied the value), BITFIELD INCRBY 16 MiB 74 vs 60 us, BITCOUNT 16 MiB 43 ms vs
1.8 ms, PFADD of 100 new elements 48 vs 79 us, PFCOUNT of 3 keys 141 vs 115 us.

Usage::

    .venv/bin/python bench/bits_bench.py                 # sizes 1 KiB, 1 MiB, 16 MiB (~1 min)
    .venv/bin/python bench/bits_bench.py --sizes 1024 67108864 --reps 20
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT_S = 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        try:
            redis.Redis(port=port).ping()
            return proc
        except redis.ConnectionError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server on port %d did not start" % port)


def _median_us(client, make_args, reps: int, before=None) -> float:
    """Median round trip of ``make_args()`` calls; ``before(client)`` runs untimed first."""
    times = []
    for _ in range(reps):
        if before is not None:
            before(client)
        args = make_args()
        t0 = time.perf_counter()
        client.execute_command(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


def _cases(size: int, rng: random.Random) -> list:
    bits = size * 8
    elements = [b"e%d" % i for i in range(100)]
    return [
        # a 1 at a random offset of an all-zero string: (almost) always a real write
        ("SETBIT", lambda: ("SETBIT", "w", rng.randrange(bits), 1)),
        ("GETBIT", lambda: ("GETBIT", "s", rng.randrange(bits))),
        ("BITCOUNT", lambda: ("BITCOUNT", "s")),
        ("BITCOUNT bit range", lambda: ("BITCOUNT", "s", 3, bits - 5, "BIT")),
        ("BITPOS 1 (zeros)", lambda: ("BITPOS", "z", 1)),
        ("BITOP AND", lambda: ("BITOP", "AND", "d", "s", "z")),
        ("BITFIELD INCRBY", lambda: ("BITFIELD", "s", "INCRBY", "i32",
                                     rng.randrange(bits - 32), 1)),
        ("PFADD 100 new", lambda: ("PFADD", "h", *[b"%d" % rng.randrange(1 << 40)
                                                   for _ in range(100)])),
        ("PFADD 100 seen", lambda: ("PFADD", "h", *elements)),
        ("PFCOUNT (stale)", lambda: ("PFCOUNT", "h")),
        ("PFCOUNT 3 keys", lambda: ("PFCOUNT", "h", "h2", "h3")),
        ("PFMERGE 3 keys", lambda: ("PFMERGE", "m", "h", "h2", "h3")),
    ]


def _stale(client) -> None:
    """Before each timed PFCOUNT (stale): a PFADD of a new element invalidates the cache."""
    client.pfadd("h", random.getrandbits(40))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 1 << 20, 16 << 20])
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args()
    exe = shutil.which("redis-server")
    if exe is None:
        print("redis-server not found", file=sys.stderr)
        return 1
    rport, oport = _free_port(), _free_port()
    procs = [_start([exe, "--port", str(rport), "--save", "", "--appendonly", "no",
                     "--bind", "127.0.0.1"], rport),
             _start([sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(oport)], oport)]
    try:
        real = redis.Redis(port=rport, socket_timeout=60)
        ours = redis.Redis(port=oport, socket_timeout=60)
        print("%-20s %10s %12s %12s %8s" % ("command", "size", "redis us", "ours us", "ratio"))
        for size in args.sizes:
            rng = random.Random(size)
            value = os.urandom(size)
            for c in (real, ours):
                c.flushall()
                c.set("s", value)
                c.set("z", bytes(size))
                c.set("w", bytes(size))
                c.pfadd("h", *range(5000))
                c.pfadd("h2", *range(100))
                c.pfadd("h3", *range(3000, 9000))
            for name, make in _cases(size, rng):
                before = _stale if name == "PFCOUNT (stale)" else None
                r_us = _median_us(real, make, args.reps, before)
                o_us = _median_us(ours, make, args.reps, before)
                print("%-20s %10d %12.1f %12.1f %8.1f" % (name, size, r_us, o_us, o_us / r_us))
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
