"""KEYS over a large keyspace, ferrumkv_py against redis-server (and an older ferrumkv tree).

Loads ``--keys`` keys (``user:<n>:name`` and ``item:<n>``) into each server, then times KEYS
with common pattern shapes (exact, prefix*, *suffix, *infix*, ?, [class], escapes, many
stars) and prints the median wall time of ``--runs`` calls per server, side by side, with
our time over redis-server's.  ``--ref-root DIR`` adds a third column: a ferrumkv_py source
tree exported from an older commit (``git archive HEAD ferrumkv_py | tar -x -C DIR``), so
the before/after numbers come from the same machine minute.  Usage::

    .venv/bin/python bench/glob_keys.py --keys 1000000 --ref-root /tmp/old
    .venv/bin/python bench/glob_keys.py --in-process --ref-root /tmp/old   # ns per key

``--in-process`` times only the matcher (``glob_matcher(pattern)`` applied to 200K keys,
best of 7), this tree's against the ``--ref-root`` tree's: CPU per key, steadier than
the network numbers on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

import redis

from _ports import free_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOAD_BATCH_KEYS = 5000
IN_PROCESS_KEYS = 200_000
IN_PROCESS_RUNS = 7
PATTERNS = (b"user:123456:name", b"user:12345*", b"*:name", b"*9999*", b"user:?????7:name",
            b"item:[0-4]*[05]", b"user:\\1*", b"*1*2*3*4*5*", b"*")


def start(cmd: list, port: int, root=None) -> subprocess.Popen:
    """Start a server; ``root``: the ferrumkv_py source tree to run (cwd and PYTHONPATH)."""
    env = dict(os.environ, PYTHONPATH=root) if root else None
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=root)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start: %s" % cmd)


def load(port: int, n: int) -> None:
    c = redis.Redis(port=port)
    for lo in range(0, n, LOAD_BATCH_KEYS):
        hi = min(n, lo + LOAD_BATCH_KEYS)
        mapping = {}
        for i in range(lo, hi):
            mapping[b"user:%d:name" % i if i % 2 else b"item:%d" % i] = b"v"
        c.mset(mapping)
    c.close()


def time_keys(port: int, pattern: bytes, runs: int) -> tuple[float, int]:
    c = redis.Redis(port=port, socket_timeout=600)
    times, n = [], 0
    for _ in range(runs):
        t0 = time.perf_counter()
        n = len(c.keys(pattern))
        times.append(time.perf_counter() - t0)
    c.close()
    return statistics.median(times), n


def in_process(ref_root: str | None) -> None:
    import importlib
    sys.path.insert(0, ROOT)
    new = importlib.import_module("ferrumkv_py.commands._util").glob_matcher
    old = None
    if ref_root:   # the old tree's matcher, imported under its own package name
        for name in [m for m in sys.modules if m.startswith("ferrumkv_py")]:
            sys.modules[name + "__new"] = sys.modules.pop(name)
        sys.path.insert(0, os.path.abspath(ref_root))
        old = importlib.import_module("ferrumkv_py.commands._util").glob_matcher
    keys = [b"user:%d:name" % i if i % 2 else b"item:%d" % i for i in range(IN_PROCESS_KEYS)]

    def per_key_ns(match) -> float:
        best = float("inf")
        for _ in range(IN_PROCESS_RUNS):
            t0 = time.perf_counter()
            [k for k in keys if match(k)]
            best = min(best, time.perf_counter() - t0)
        return best / len(keys) * 1e9
    print("%-22s %12s %12s %8s" % ("pattern", "ours ns/key", "before", "ratio"))
    for pattern in PATTERNS[:-1]:
        ours = per_key_ns(new(pattern))
        line = "%-22s %12.0f" % (pattern.decode(), ours)
        if old is not None:
            before = per_key_ns(old(pattern))
            line += " %12.0f %8.2f" % (before, ours / before)
        print(line, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ref-root", help="an older ferrumkv_py source tree to compare")
    ap.add_argument("--in-process", action="store_true", help="time the matchers only")
    args = ap.parse_args()
    if args.in_process:
        in_process(args.ref_root)
        return 0
    servers = []   # (label, port, proc)
    try:
        port = free_port()
        servers.append(("ferrumkv", port, start(
            [sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(port)], port, ROOT)))
        if args.ref_root:
            port = free_port()
            servers.append(("before", port, start(
                [sys.executable, "-m", "ferrumkv_py", "--save", "", "--port", str(port)], port,
                os.path.abspath(args.ref_root))))
        exe = shutil.which("redis-server")
        if exe:
            port = free_port()
            servers.append(("redis", port, start(
                [exe, "--port", str(port), "--save", "", "--appendonly", "no"], port)))
        for _, port, _ in servers:
            load(port, args.keys)
        labels = [s[0] for s in servers]
        print("%-22s %8s " % ("pattern", "matches") + " ".join("%10s" % x for x in labels)
              + "   ours/redis" + ("  ours/before" if args.ref_root else ""))
        for pattern in PATTERNS:
            row, counts = {}, set()
            for label, port, _ in servers:   # interleaved per pattern
                row[label], n = time_keys(port, pattern, args.runs)
                counts.add(n)
            line = "%-22s %8s " % (pattern.decode(), "/".join(map(str, sorted(counts))))
            line += " ".join("%9.3fs" % row[x] for x in labels)
            if "redis" in row:
                line += "   %9.1fx" % (row["ferrumkv"] / row["redis"])
            if "before" in row:
                line += "   %9.2fx" % (row["ferrumkv"] / row["before"])
            print(line, flush=True)
    finally:
        for _, _, proc in servers:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
