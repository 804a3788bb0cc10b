"""The compiled kernels and the same source run as plain Python give identical results.

``parity_report()`` replays a seeded scenario that reaches every kernel path (table
growth, compaction with remap and with rebuild, TTL expiry and purge, the sentinel-valued
key, duplicates, batch and single calls).  The test runs it here (compiled) and in a
subprocess with ``NUMBA_DISABLE_JIT=1`` and compares the JSON output byte for byte.
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[2]
INT64_MIN = -(2**63)


def _scenario(ttl_ns: int, seed: int):
    from litehit import LiteHit, apply_prefix_hash

    rng = random.Random(seed)
    lh = LiteHit(ttl_ns, slack_positions=16)
    curves, now = [], 0
    # Enough distinct keys to grow the table past its first 1024 slots.
    keys = np.arange(1200, dtype=np.int64) * 7919
    facts = lh.process_batch(keys, np.arange(0, 1201, 3), now_ns=now)
    curves += [f.to_json() for f in facts]
    for step in range(300):
        now += rng.randrange(4)
        kind = step % 3
        if kind == 0:
            req = apply_prefix_hash([rng.randrange(3) for _ in range(rng.randint(1, 6))])
        elif kind == 1:
            req = [rng.randrange(10) for _ in range(rng.randint(0, 5))]      # duplicates
        else:
            req = [INT64_MIN, rng.randrange(3), int(keys[rng.randrange(1200)])]
        curves.append(lh.process_request(req, now).to_json())
    hot = apply_prefix_hash([7, 7, 7, 7, 7, 7])
    for _ in range(500):                  # stale positions come to dominate: compactions
        now += rng.randrange(2)
        curves.append(lh.process_request(hot, now).to_json())
    flat = [rng.randrange(30) for _ in range(200)]
    offsets = np.array([0, 10, 10, 50, 120, 200], dtype=np.int64)
    batch = lh.process_batch(np.array(flat), offsets,
                                    now_ns=np.array([now, now + 1, now + 1, now + 3, now + 9]))
    curves.append([batch.seg_offsets.tolist(), batch.seg_start.tolist(), batch.seg_run.tolist()])
    # A small instance re-touching few keys compacts every few requests.
    small = LiteHit(ttl_ns, slack_positions=2)
    for step in range(400):
        now += rng.randrange(2)
        if step % 2:
            req = apply_prefix_hash([rng.randrange(2) for _ in range(rng.randint(1, 4))])
        else:
            req = [rng.randrange(12) for _ in range(rng.randint(0, 4))]
        curves.append(small.process_request(req, now).to_json())
    small._check()
    lh.advance_time(now + 100)
    lh._check()
    return {"curves": curves, "stats": lh.stats(), "small_stats": small.stats()}


def parity_report() -> str:
    from litehit import kernel

    report = {
        "jit": hasattr(kernel.process_batch, "py_func"),
        "no_ttl": _scenario(0, 1),
        "ttl": _scenario(5, 2),
    }
    return json.dumps(report, sort_keys=True)


def test_jit_and_plain_python_agree():
    compiled = json.loads(parity_report())
    assert compiled["jit"] is True
    assert compiled["no_ttl"]["small_stats"]["compactions"] > 3
    assert compiled["ttl"]["small_stats"]["compactions"] > 3
    assert compiled["no_ttl"]["stats"]["table_slots"] > 1024
    env = dict(os.environ, NUMBA_DISABLE_JIT="1",
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, __file__], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    plain = json.loads(proc.stdout)
    assert plain["jit"] is False
    compiled.pop("jit")
    plain.pop("jit")
    assert plain == compiled


if __name__ == "__main__":
    sys.stdout.write(parity_report())
