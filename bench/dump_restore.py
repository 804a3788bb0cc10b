"""DUMP and RESTORE time of large values, ferrumkv beside redis-server in the same run.

Starts both servers on free ports (redis-server from PATH), fills one key of each type with
``--n`` elements through redis-py, then times one DUMP and one RESTORE of it on each server
(best of ``--rounds``) and prints the ratio.  The time includes the client's round trip, the
same for both.

    .venv/bin/python bench/dump_restore.py [--n 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time

import redis

from _ports import free_port, wait_port

START_TIMEOUT_S = 20
MS_PER_S = 1000


def fill(c, key: str, kind: str, n: int) -> None:
    c.delete(key)
    if kind == "string":
        c.set(key, b"abcdefgh" * (n * 10))
    elif kind == "list":
        c.rpush(key, *["item-%d" % i for i in range(n)])
    elif kind == "set":
        c.sadd(key, *["m-%d" % i for i in range(n)])
    elif kind == "hash":
        c.hset(key, mapping={"f%d" % i: "v%d" % i for i in range(n)})
    else:
        c.zadd(key, {"m%d" % i: i * 1.5 for i in range(n)})


def timed(c, kind: str, n: int, rounds: int) -> tuple:
    fill(c, "bench:dump", kind, n)
    best_dump = best_restore = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        payload = c.dump("bench:dump")
        best_dump = min(best_dump, time.perf_counter() - t)
        t = time.perf_counter()
        c.restore("bench:restored", 0, payload, replace=True)
        best_restore = min(best_restore, time.perf_counter() - t)
    c.delete("bench:dump", "bench:restored")
    return best_dump * MS_PER_S, best_restore * MS_PER_S, len(payload)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="elements per value")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server not found")
    rport, oport = free_port(), free_port()
    procs = [subprocess.Popen([exe, "--port", str(rport), "--save", "", "--appendonly", "no",
                               "--bind", "127.0.0.1"], stdout=subprocess.DEVNULL),
             subprocess.Popen([sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(oport)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        wait_port(rport, timeout_s=START_TIMEOUT_S)
        wait_port(oport, timeout_s=START_TIMEOUT_S)
        ours, red = redis.Redis(port=oport), redis.Redis(port=rport)
        for kind in ("string", "list", "set", "hash", "zset"):
            od, orr, ol = timed(ours, kind, args.n, args.rounds)
            rd, rr, rl = timed(red, kind, args.n, args.rounds)
            print("%-6s n=%d  DUMP %.1f / %.1f ms (x%.1f)  RESTORE %.1f / %.1f ms (x%.1f)  "
                  "payload %d / %d bytes   (ours / redis)"
                  % (kind, args.n, od, rd, od / rd, orr, rr, orr / rr, ol, rl))
    finally:
        for p in procs:
            p.terminate()
            p.wait(10)


if __name__ == "__main__":
    main()
