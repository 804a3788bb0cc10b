"""RDB persistence, side by side with redis-server in one run (docs/persistence.md).

For each data set (``--sets 3000000x100,200000x10240`` by default: keys x value bytes),
both servers are filled with DEBUG POPULATE, then measured:

* SAVE time (the client's round trip) and load time (DEBUG RELOAD NOSAVE: empty + load);
* BGSAVE: the worst PING round trip of another client while it runs, the SET throughput of
  a pipelining client during it against the same client without it, and what the save held
  extra (ours: ``rdb_last_cow_size``, the snapshot's early buffers and queued chunks;
  redis-server: its fork's ``rdb_last_cow_size``), also as a share of RSS.

Prints one table per data set with ours / redis-server ratios.  Keep runs short on a shared
machine: ``--sets 300000x100`` takes about a minute.

    python bench/persistence.py --sets 300000x100,20000x10240
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SET_PIPELINE = 100           # SETs per round trip of the throughput client
BASELINE_S = 3.0             # the throughput client's run without a BGSAVE
START_WAIT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(kind: str, d: str):
    port = free_port()
    common = ["--port", str(port), "--dir", d, "--save", "", "--enable-debug-command",
              "yes"]
    if kind == "ours":
        cmd = [sys.executable, "-m", "ferrumkv_py", *common]
    else:
        cmd = [shutil.which("redis-server"), *common, "--appendonly", "no"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = redis.Redis(port=port, socket_timeout=600)
    deadline = time.monotonic() + START_WAIT_S
    while True:
        try:
            r.ping()
            return p, r
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def set_rate(port: int, stop: threading.Event, out: list, limit_s: float) -> None:
    r = redis.Redis(port=port)
    n = 0
    t0 = time.perf_counter()
    p = r.pipeline(transaction=False)
    while not stop.is_set() and time.perf_counter() - t0 < limit_s:
        for i in range(SET_PIPELINE):
            p.set(b"bench:%d" % i, b"v" * 100)      # the same keys: the data set stays
        p.execute()
        n += SET_PIPELINE
    out.append(n / (time.perf_counter() - t0))


def ping_worst(port: int, stop: threading.Event, out: list) -> None:
    r = redis.Redis(port=port)
    worst = 0.0
    while not stop.is_set():
        t = time.perf_counter()
        r.ping()
        worst = max(worst, time.perf_counter() - t)
        time.sleep(0.001)
    out.append(worst)


def bgsave_run(r: redis.Redis, port: int) -> dict:
    stop = threading.Event()
    rates, worst = [], []
    threads = [threading.Thread(target=set_rate, args=(port, stop, rates, 1e9)),
               threading.Thread(target=ping_worst, args=(port, stop, worst))]
    t0 = time.perf_counter()
    r.bgsave()
    for t in threads:
        t.start()
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        time.sleep(0.01)
    took = time.perf_counter() - t0
    stop.set()
    for t in threads:
        t.join()
    info = r.info("persistence")
    rss = r.info("memory")["used_memory_rss"]
    return {"bgsave_s": took, "ping_worst_ms": worst[0] * 1000, "set_during": rates[0],
            "cow": info["rdb_last_cow_size"], "rss": rss}


def measure(kind: str, n: int, size: int) -> dict:
    d = tempfile.mkdtemp(prefix="bench-persist-")
    p, r = start(kind, d)
    try:
        r.execute_command("DEBUG", "POPULATE", n, "key", size)
        out = {"save_s": timed(r.save),
               "load_s": timed(lambda: r.execute_command("DEBUG", "RELOAD", "NOSAVE")),
               "file_mb": os.path.getsize(os.path.join(d, "dump.rdb")) / 1e6}
        port = r.connection_pool.connection_kwargs["port"]
        base = []
        set_rate(port, threading.Event(), base, BASELINE_S)
        out["set_without"] = base[0]
        out.update(bgsave_run(r, port))
        return out
    finally:
        p.terminate()
        p.wait(60)
        shutil.rmtree(d, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="3000000x100,200000x10240",
                    help="data sets as KEYSxBYTES, comma separated")
    args = ap.parse_args()
    for spec in args.sets.split(","):
        n, size = (int(x) for x in spec.split("x"))
        ours, theirs = measure("ours", n, size), measure("redis", n, size)
        print("\n%d keys x %d B" % (n, size))
        print("%-26s %12s %12s %8s" % ("", "ferrumkv", "redis-server", "ratio"))
        rows = [("SAVE s", "save_s"), ("load s (DEBUG RELOAD)", "load_s"),
                ("file MB", "file_mb"), ("BGSAVE s", "bgsave_s"),
                ("PING worst ms in BGSAVE", "ping_worst_ms"),
                ("SET/s without BGSAVE", "set_without"), ("SET/s during BGSAVE", "set_during")]
        for label, k in rows:
            print("%-26s %12.2f %12.2f %8.2f" % (label, ours[k], theirs[k],
                                                ours[k] / theirs[k] if theirs[k] else 0))
        for who, m in (("ferrumkv", ours), ("redis-server", theirs)):
            print("%-12s SET during/without %.2f; extra memory (rdb_last_cow_size) %.1f MB "
                  "= %.1f %% of RSS %.0f MB" % (who, m["set_during"] / m["set_without"],
                                                 m["cow"] / 1e6, 100 * m["cow"] / m["rss"],
                                                 m["rss"] / 1e6))


if __name__ == "__main__":
    main()
