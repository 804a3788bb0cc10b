"""File-to-facts speed of ``litehit replay``: block accesses per second, and where time goes.

Two traces, both written to a temporary directory:

- ``mooncake``: the public Mooncake synthetic trace (data/traces/, 3,993 requests,
  117,888 accesses, about 30 blocks per request), converted with ``litehit convert``;
- ``prefix-tree``: a generated multi-turn trace (``--accesses`` block accesses, default
  3,000,000): sessions start from one of a few shared system prompts and each turn extends
  the previous turn's keys, so requests are long (hundreds to thousands of blocks) and hit
  a lot, as in real agent/chat traffic.

Each trace is replayed with ``pipeline_worker_count`` 1 and 2 (``--workers``); the output
is checked byte-identical across worker counts. Printed per run: requests, accesses,
seconds, accesses/s end to end, and the split prepare (read + parse + normalize, or waiting
for the workers) / replay (core + row formatting) / write.

    .venv/bin/python bench/litehit_replay_bench.py [--accesses N] [--workers 1 2] [--repeat 3]
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import random
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from litehit.config import parse_config  # noqa: E402
from litehit.convert import convert_mooncake  # noqa: E402
from litehit.factsfile import FACTS_FILE_NAME  # noqa: E402
from litehit.offline import run_replay  # noqa: E402

MOONCAKE_TRACE = os.path.join(ROOT, "data", "traces", "mooncake_synthetic_trace.jsonl")
MOONCAKE_BLOCK_TOKENS = 512
TREE_BLOCK_TOKENS = 256
TREE_SYSTEM_PROMPTS = 8
TREE_SYSTEM_BLOCKS = (20, 200)          # blocks in a shared system prompt
TREE_TURN_BLOCKS = (5, 120)             # new blocks per turn
TREE_TURNS = (2, 12)                    # turns per session
TREE_LIVE_SESSIONS = 64                 # sessions interleaved at any time
TREE_STEP_NS = 1_000_000
SEED = 20240601
BLOCK_BYTES = 1 << 20


def write_prefix_tree_trace(path: str, accesses: int, seed: int = SEED) -> int:
    """Write a multi-turn prefix-tree trace with about ``accesses`` keys; returns requests."""
    rng = random.Random(seed)
    next_id = 1

    def fresh(n: int) -> list[int]:
        nonlocal next_id
        ids = list(range(next_id, next_id + n))
        next_id += n
        return ids

    prompts = [fresh(rng.randint(*TREE_SYSTEM_BLOCKS)) for _ in range(TREE_SYSTEM_PROMPTS)]
    sessions: list[list] = []           # [keys so far, turns left]
    written = requests = 0
    ts = 0
    with open(path, "w") as f:
        while written < accesses:
            while len(sessions) < TREE_LIVE_SESSIONS:
                sessions.append([list(rng.choice(prompts)), rng.randint(*TREE_TURNS)])
            s = rng.randrange(len(sessions))
            keys, left = sessions[s]
            keys.extend(fresh(rng.randint(*TREE_TURN_BLOCKS)))
            ts += TREE_STEP_NS
            tail = rng.randrange(TREE_BLOCK_TOKENS)
            f.write('{"type":"request","instance_id":"tree","trace_id":"t%d","timestamp_ns":%d,'
                    '"keys":[%s],"input_len":%d}\n' % (requests, ts, ",".join(map(str, keys)),
                                                       len(keys) * TREE_BLOCK_TOKENS + tail))
            written += len(keys)
            requests += 1
            if left <= 1:
                sessions.pop(s)
            else:
                sessions[s][1] = left - 1
    return requests


def config_for(trace: str, out_dir: str, instance: str, block_tokens: int, workers: int):
    return parse_config({
        "trace_file_path": trace, "output_result_path": out_dir, "block_size": block_tokens,
        "pipeline_worker_count": workers,
        "instance_groups": [{"name": "g", "capacity_gb": [], "ttl_seconds": 0,
                             "enable_prefix_hash": True}],
        "instances": [{"instance_group_name": "g", "instance_id": instance,
                       "block_size": block_tokens, "linear_step": 0,
                       "location_spec_infos": [{"name": "kv", "size": BLOCK_BYTES}],
                       "location_spec_groups": [{"name": "full", "spec_names": ["kv"]}],
                       "optimizer_state_info": {"full_location_spec_group_name": "full"}}]})


def bench_trace(name: str, trace: str, instance: str, block_tokens: int, tmp: str,
                workers_list: list[int], repeat: int) -> None:
    outputs = []
    for workers in workers_list:
        out_dir = os.path.join(tmp, f"{name}-w{workers}")
        config = config_for(trace, out_dir, instance, block_tokens, workers)
        best = None
        for _ in range(repeat):
            stats = run_replay(config)
            if best is None or stats.seconds < best.seconds:
                best = stats
        outputs.append(os.path.join(out_dir, FACTS_FILE_NAME))
        print(f"{name:12s} workers={workers}  {best.requests:>7,} requests  "
              f"{best.block_accesses:>10,} accesses  {best.seconds:6.3f} s  "
              f"{best.accesses_per_second / 1e6:5.2f} M accesses/s  | prepare "
              f"{best.prepare_seconds:.3f}  replay {best.replay_seconds:.3f}  write "
              f"{best.write_seconds:.3f}")
    same = all(filecmp.cmp(outputs[0], o, shallow=False) for o in outputs[1:])
    print(f"{name:12s} facts byte-identical across workers {workers_list}: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accesses", type=int, default=3_000_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="litehit-bench-") as tmp:
        mooncake = os.path.join(tmp, "mooncake.jsonl")
        convert_mooncake(MOONCAKE_TRACE, mooncake, "mooncake", MOONCAKE_BLOCK_TOKENS)
        tree = os.path.join(tmp, "tree.jsonl")
        t0 = time.perf_counter()
        requests = write_prefix_tree_trace(tree, args.accesses)
        print(f"generated prefix-tree trace: {requests:,} requests, "
              f"{os.path.getsize(tree) / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s")
        run_replay(config_for(mooncake, os.path.join(tmp, "warm"), "mooncake",
                              MOONCAKE_BLOCK_TOKENS, 1))          # compile / load kernels
        bench_trace("mooncake", mooncake, "mooncake", MOONCAKE_BLOCK_TOKENS, tmp,
                    args.workers, args.repeat)
        bench_trace("prefix-tree", tree, "tree", TREE_BLOCK_TOKENS, tmp, args.workers,
                    args.repeat)
        print(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count()}))


if __name__ == "__main__":
    main()
