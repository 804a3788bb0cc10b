"""The litehit shadow's CPU cost per command, in-process: off, exact, sampled.

redis-benchmark's frames (``server_bench._request``: 12-digit keys over a 100,000-key space)
are fed straight into ``Client.data_received`` in reads of ``-P`` commands, as
``server_bench.py --parts dispatch`` does, and the shadow's buffer is consumed every 625
reads (10,000 commands, what the cron sees at hz 10 and ~100k commands/s).  The two costs
are timed apart: *dispatch* (parse, execute, encode, and the shadow's bookkeeping) and
*consume* (the cron's replay: key hashing, the litehit kernel, the curve accumulators).
CPU time (``time.process_time``).  The machine is noisy: the three servers (off, exact,
sampled) live side by side and take turns every 10,000 commands, and the numbers are the
medians over those chunks (of ``--reps`` runs); a ``gc.collect()`` after the fill keeps a full
collection of the fill's garbage out of the timed part (with 100k keys one full pass is
~75 ms, +0.4 us per command of a 200k run, landing in whichever run it likes).
``ratio`` is off / on: the issue's goal is >= 0.9.

    .venv/bin/python bench/shadow_cost.py                 # SET and GET -P 16, rate 1/8
    .venv/bin/python bench/shadow_cost.py --tests get --rate 0.05 --reps 5

``--accuracy SEED,N,UNIVERSE,ALPHA,CAPS`` instead prints (JSON) the exact and the sampled
hit rates at the capacities CAPS (``:``-separated, blocks of the full stream) on a seeded
Zipf stream (GET, 10% SET); the sample follows Python's hash salt, so loop over
PYTHONHASHSEED to see the spread (tests/ferrumkv/test_shadow.py runs it with fixed ones).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, ROOT)

import server_bench as sb  # noqa: E402
from ferrumkv_py.config import Config  # noqa: E402
from ferrumkv_py.client import Client  # noqa: E402
from ferrumkv_py.server import Server  # noqa: E402

CONSUME_EVERY = 625      # reads of -P 16 between two consumes (10,000 commands)


def make(shadow: str, rate: float, fill: list):
    cfg = Config()
    cfg.set("litehit-shadow", shadow)
    if rate < 1:
        cfg.set("litehit-shadow-sample", repr(rate))
    server = Server(cfg)
    c = Client(server)
    c.connection_made(sb._NullTransport())
    for data in fill:
        c.data_received(data)
    server.cron()
    return server, c


def run(test: str, pipeline: int, n: int, configs: list) -> list:
    """Per configuration, the (dispatch us, consume us) per command of every chunk.

    The configurations' servers live side by side and take turns chunk by chunk (10,000
    commands, ~25 ms each), so a burst of load from elsewhere hits them alike."""
    rng = random.Random(1)
    fill = [b"".join(sb._request("set", rng) for _ in range(100)) for _ in range(1000)]
    pairs = [make(shadow, rate, fill) for _, shadow, rate in configs]
    reads = [b"".join(sb._request(test, rng) for _ in range(pipeline))
             for _ in range(n // pipeline)]
    gc.collect()     # the fill must not leave a full collection due in the timed part
    step = max(1, CONSUME_EVERY * 16 // pipeline)
    out: list = [[] for _ in configs]
    for i in range(0, len(reads), step):
        chunk = reads[i:i + step]
        count = len(chunk) * pipeline
        for j, (server, c) in enumerate(pairs):
            feed = c.data_received
            t0 = time.process_time()
            for x in chunk:
                feed(x)
            t1 = time.process_time()
            if server.shadow is not None:
                server.shadow.consume()
            t2 = time.process_time()
            out[j].append(((t1 - t0) * 1e6 / count, (t2 - t1) * 1e6 / count))
    return out


def zipf_frames(seed: int, n: int, universe: int, alpha: float, set_share: float) -> list:
    """A seeded Zipf(alpha) stream over ``universe`` keys, GET with ``set_share`` SETs,
    as reads of 100 frames."""
    import numpy as np
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, universe + 1) ** alpha
    p /= p.sum()
    names = rng.permutation(universe)[rng.choice(universe, size=n, p=p)]  # rank -> any name
    is_set = rng.random(n) < set_share
    out = []
    for r, w in zip(names.tolist(), is_set.tolist()):
        k = b"k%d" % r
        out.append(sb._frame(b"SET", k, b"v") if w else sb._frame(b"GET", k))
    return [b"".join(out[i:i + 100]) for i in range(0, n, 100)]


def accuracy(seed: int, n: int, universe: int, alpha: float, rate: float,
             capacities: list) -> dict:
    """Hit rates of the exact shadow and of a sampled one at the same capacities (blocks
    of the full stream), on one Zipf stream.  The sample depends on Python's hash salt:
    run under different PYTHONHASHSEED values to see the spread."""
    reads = zipf_frames(seed, n, universe, alpha, 0.1)
    out = {"capacities": capacities, "sample_rate": rate}
    for name, r in (("exact", 1.0), ("sampled", rate)):
        server, c = make("yes", r, [])
        for i, data in enumerate(reads, 1):
            c.data_received(data)
            if i % 100 == 0:
                server.shadow.consume()
        sh = server.shadow
        sh.consume()
        out[name] = [sh.rate(sh.hits_at(cap)) for cap in capacities]
        out[name + "_requests"] = sh.requests
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default="set,get")
    ap.add_argument("-P", "--pipeline", type=int, default=16)
    ap.add_argument("-n", type=int, default=400_000, help="commands per run")
    ap.add_argument("--rate", type=float, default=0.125, help="litehit-shadow-sample")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--accuracy", metavar="SEED,N,UNIVERSE,ALPHA,CAP:CAP:...",
                    help="print (JSON) exact and sampled hit rates on a Zipf stream instead")
    args = ap.parse_args()
    if args.accuracy:
        seed, n, universe, alpha, caps = args.accuracy.split(",")
        print(json.dumps(accuracy(int(seed), int(n), int(universe), float(alpha), args.rate,
                                  [int(c) for c in caps.split(":")])))
        return
    configs = [("off", "no", 1.0), ("exact", "yes", 1.0)]
    if args.rate < 1:                  # --rate 1: off and exact only (also older trees)
        configs.append(("sampled %g" % args.rate, "yes", args.rate))
    print("us/command (CPU), -P %d, %d commands x %d runs, median of 10k-command chunks"
          % (args.pipeline, args.n, args.reps))
    for test in args.tests.split(","):
        chunks: list = [[] for _ in configs]
        for _ in range(args.reps):
            for j, got in enumerate(run(test, args.pipeline, args.n, configs)):
                chunks[j] += got
        med = [(statistics.median(d for d, _ in ch), statistics.median(k for _, k in ch))
               for ch in chunks]
        off = sum(med[0])
        for (name, _, _), (d, k) in zip(configs, med):
            print("%-4s %-13s dispatch %.2f + consume %.2f = %.2f  ratio %.2f"
                  % (test.upper(), name, d, k, d + k, off / (d + k)))


if __name__ == "__main__":
    main()
