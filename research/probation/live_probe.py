"""One live read-through run of a synthetic workload against allkeys-ahe, printing the
hit rate and the controller's INFO memory fields (probation's switch among them).

    .venv/bin/python research/probation/live_probe.py shift40 [--rate 50000] [-- --cfg val]
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
from bench.workloads import WORKLOADS, Server, key_cost, replay  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--rate", type=float, default=50000)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--capacity", type=int, default=1000)
    ap.add_argument("extra", nargs="*", help="server settings, e.g. --ahe-probation no")
    args = ap.parse_args()
    stream = WORKLOADS[args.workload](args.requests, args.capacity, 1)
    srv = Server(["--maxmemory", str(args.capacity * key_cost()), "--maxmemory-policy",
                  "allkeys-ahe", "--hz", "10"] + args.extra)
    try:
        hit, elapsed = replay(srv.conn, stream, args.rate)
        mem = srv.conn.info("memory")
    finally:
        srv.stop()
    print("%s hit %.2f %% in %.1f s" % (args.workload, 100 * sum(hit) / len(hit), elapsed))
    for k, v in mem.items():
        if k.startswith("ahe_"):
            print("  %s %s" % (k, v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
