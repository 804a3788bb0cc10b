"""EVALSHA of a 1-call script at -P 16, ferrumkv beside redis-server, measured in one run.

The script is ``return redis.call('GET', KEYS[1])`` on a key holding a 3-byte value; both
servers get it with SCRIPT LOAD, then redis-benchmark sends ``EVALSHA <sha> 1 k`` with 50
clients at -P 16.  Printed per repetition and as the median: ops/s of each server, the ratio
(target >= 0.3) and each server's CPU microseconds per request.  The servers are the ones
``bench/server_bench.py`` starts (``Proc``: pinned to a CPU when taskset exists).

Usage::

    .venv/bin/python bench/script_cost.py                 # 3 repetitions of 200k requests
    .venv/bin/python bench/script_cost.py --requests 50000 --reps 1
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_bench import CLIENT_CPU, CLIENTS, Proc, taskset  # noqa: E402

SCRIPT = "return redis.call('GET', KEYS[1])"
PIPELINE = 16
RUN_TIMEOUT_S = 600


def evalsha_rps(proc: Proc, sha: str, n: int) -> tuple[float, float]:
    """(ops/s, server CPU us per request) of one redis-benchmark run."""
    cpu0 = proc.cpu_s()
    cmd = taskset(CLIENT_CPU) + ["redis-benchmark", "-p", str(proc.port), "-c", str(CLIENTS),
                                 "-n", str(n), "-P", str(PIPELINE), "--csv",
                                 "EVALSHA", sha, "1", "k"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if out.returncode != 0:
        raise RuntimeError("redis-benchmark failed: %s" % (out.stderr or out.stdout)[-500:])
    row = list(csv.DictReader(io.StringIO(out.stdout)))[-1]
    return float(row["rps"]), (proc.cpu_s() - cpu0) * 1e6 / n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    ours, ref = Proc("ferrumkv", []), Proc("redis", [])
    try:
        shas = []
        for p in (ours, ref):
            p.cli("SET", "k", "abc")
            shas.append(p.cli("SCRIPT", "LOAD", SCRIPT).strip())
        assert shas[0] == shas[1], shas
        for p in (ours, ref):
            assert p.cli("EVALSHA", shas[0], "1", "k").strip() == "abc"
        ratios, rows = [], []
        for rep in range(args.reps):
            o_rps, o_cpu = evalsha_rps(ours, shas[0], args.requests)
            r_rps, r_cpu = evalsha_rps(ref, shas[0], args.requests)
            ratios.append(o_rps / r_rps)
            rows.append((o_rps, r_rps, o_cpu, r_cpu))
            print("rep %d: ferrumkv %9.0f ops/s (%.2f us CPU/req)   redis-server %9.0f ops/s "
                  "(%.2f us CPU/req)   ratio %.2f" % (rep + 1, o_rps, o_cpu, r_rps, r_cpu,
                                                    o_rps / r_rps))
        med = statistics.median(ratios)
        print("EVALSHA 1-call script -P %d: median ratio ferrumkv / redis-server = %.2f "
              "(target >= 0.3)" % (PIPELINE, med))
    finally:
        ours.stop()
        ref.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
