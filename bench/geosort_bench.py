"""Geo, SORT, sorted-set algebra and LCS: ferrumkv_py against redis-server, side by side.

Both servers start on free loopback ports (no persistence) and get the same data; each
command runs ``--reps`` times over one connection, the servers interleaved (ferrumkv,
redis, ferrumkv, ...) so machine noise hits both alike.  Printed: median microseconds per
command on each server and their ratio (ours / redis).  Usage::

    .venv/bin/python bench/geosort_bench.py [--reps 200]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

import redis

from _ports import free_port, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POINTS = 5000          # geo set members
ZSET_SIZE = 2000       # members of each sorted set in the algebra
LIST_SIZE = 2000       # elements sorted by SORT
LCS_BYTES = 2000       # length of each LCS operand

CASES = [
    ("GEOSEARCH r=50km WITHDIST ASC",
     ["GEOSEARCH", "geo", "FROMLONLAT", "13.4", "38.1", "BYRADIUS", "50", "km",
      "WITHDIST", "ASC"]),
    ("GEOSEARCH box 100km COUNT 10",
     ["GEOSEARCH", "geo", "FROMMEMBER", "p17", "BYBOX", "100", "100", "km", "COUNT", "10"]),
    ("GEODIST", ["GEODIST", "geo", "p1", "p2", "km"]),
    ("GEOPOS 3", ["GEOPOS", "geo", "p1", "p2", "p3"]),
    ("ZUNIONSTORE 2x2000", ["ZUNIONSTORE", "dst", "2", "za", "zb"]),
    ("ZINTER 2x2000 WITHSCORES", ["ZINTER", "2", "za", "zb", "WITHSCORES"]),
    ("ZINTERCARD", ["ZINTERCARD", "2", "za", "zb"]),
    ("SORT 2000 LIMIT 0 10", ["SORT", "lst", "LIMIT", "0", "10"]),
    ("SORT 2000 BY w_* GET #", ["SORT", "lst", "BY", "w_*", "GET", "#", "LIMIT", "0", "10"]),
    ("LCS 2000x2000 IDX", ["LCS", "la", "lb", "IDX"]),
]


def _load(r: redis.Redis, seed: int = 1) -> None:
    rng = random.Random(seed)
    pipe = r.pipeline(transaction=False)
    for i in range(POINTS):
        pipe.geoadd("geo", [13 + rng.uniform(-2, 2), 38 + rng.uniform(-2, 2), "p%d" % i])
    pipe.zadd("za", {"m%d" % i: rng.uniform(0, 100) for i in range(ZSET_SIZE)})
    pipe.zadd("zb", {"m%d" % (i * 2): rng.uniform(0, 100) for i in range(ZSET_SIZE)})
    vals = [str(rng.randint(0, 10 ** 6)) for _ in range(LIST_SIZE)]
    pipe.rpush("lst", *vals)
    for v in vals:
        pipe.set("w_" + v, rng.randint(0, 1000))
    pipe.set("la", "".join(rng.choice("acgt") for _ in range(LCS_BYTES)))
    pipe.set("lb", "".join(rng.choice("acgt") for _ in range(LCS_BYTES)))
    pipe.execute()


def _time(r: redis.Redis, args: list, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t = time.perf_counter()
        r.execute_command(*args)
        samples.append(time.perf_counter() - t)
    return statistics.median(samples) * 1e6


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    args = ap.parse_args(argv)
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server not found")
    pr, pf = free_port(), free_port()
    procs = [
        subprocess.Popen([exe, "--port", str(pr), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no"], stdout=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(pf)],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    try:
        wait_port(pr)
        wait_port(pf)
        rr, rf = redis.Redis(port=pr), redis.Redis(port=pf)
        _load(rr)
        _load(rf)
        print("%-30s %12s %12s %8s" % ("command", "ferrumkv us", "redis us", "ratio"))
        for name, cmd in CASES:
            ours, theirs = [], []
            for _ in range(3):
                ours.append(_time(rf, cmd, args.reps // 3 or 1))
                theirs.append(_time(rr, cmd, args.reps // 3 or 1))
            a, b = statistics.median(ours), statistics.median(theirs)
            print("%-30s %12.1f %12.1f %8.2f" % (name, a, b, a / b))
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
