"""Benchmark: why litehit keeps two projections (docs/litehit.md, "Two projections").

A server's shadow replays a live stream in slices of 4096 keys and must answer INFO and
LITEHIT CURVE at capacities it only learns later (maxmemory, the curve's points). Two ways:

  aggregate   add each slice's read segments to an AggregateCurve; answer a capacity from
              its prefix sums (what the shadow does)
  per-request keep every slice's facts (CSR arrays) and project them all with
              HitCurveProjector.project_blocks_flat when asked (what the query does)

The stream: one-key reads, key popularity Zipf(0.99) over accesses/2 keys (seeded). Printed:
time to take in all slices, time per question (one capacity, after new facts arrived), and
the memory each keeps. Best of ``--repeat`` runs (the machine is shared and noisy).

Usage: python bench/litehit_projection_bench.py [--accesses N] [--repeat R] [--seed S]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from litehit.core import LiteHit  # noqa: E402
from litehit.projector import AggregateCurve, HitCurveProjector  # noqa: E402

ZIPF_EXPONENT = 0.99
SLICE_KEYS = 4096                   # the shadow's CONSUME_SLICE_KEYS
QUESTIONS = 20                      # INFO calls timed (one capacity each)


def slices(accesses: int, seed: int) -> list:
    """The replayed stream as facts, one BatchFacts per slice of one-key reads."""
    rng = np.random.default_rng(seed)
    universe = max(accesses // 2, 1)
    weights = 1.0 / np.arange(1, universe + 1, dtype=np.float64) ** ZIPF_EXPONENT
    cdf = np.cumsum(weights)
    keys = np.searchsorted(cdf / cdf[-1], rng.random(accesses)).astype(np.int64)
    core = LiteHit()
    out = []
    for lo in range(0, accesses, SLICE_KEYS):
        chunk = keys[lo:lo + SLICE_KEYS]
        out.append(core.process_batch(chunk, np.arange(len(chunk) + 1, dtype=np.int64)))
    return out


def run_aggregate(facts: list, capacity: int) -> tuple:
    agg = AggregateCurve()
    t0 = time.perf_counter()
    for batch in facts:
        n = int(batch.seg_offsets[-1])
        agg.add(batch.seg_start[:n], batch.seg_run[:n])
    t_add = time.perf_counter() - t0
    hits = agg.hits(capacity)
    deep = np.array([max(agg.max_depth, capacity + 1)], dtype=np.int64)
    one = np.ones(1, dtype=np.int64)
    t_ask = 0.0
    for _ in range(QUESTIONS):      # a new fact arrived since the last question (beyond the
        agg.add(deep, one)          # capacity: the answer stays the same)
        t1 = time.perf_counter()
        assert agg.hits(capacity) == hits
        t_ask += time.perf_counter() - t1
    return t_add, t_ask / QUESTIONS, agg.nbytes, hits


def run_per_request(facts: list, capacity: int) -> tuple:
    t0 = time.perf_counter()
    kept = [(b.seg_offsets, b.seg_start[:int(b.seg_offsets[-1])],
             b.seg_run[:int(b.seg_offsets[-1])]) for b in facts]
    t_add = time.perf_counter() - t0
    t1 = time.perf_counter()
    for _ in range(QUESTIONS):
        hits = sum(int(HitCurveProjector.project_blocks_flat(o, s, r, [capacity]).sum())
                   for o, s, r in kept)
    t_ask = (time.perf_counter() - t1) / QUESTIONS
    return t_add, t_ask, sum(o.nbytes + s.nbytes + r.nbytes for o, s, r in kept), hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accesses", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    facts = slices(args.accesses, args.seed)
    capacity = args.accesses // 20
    results = {}
    for name, fn in (("aggregate", run_aggregate), ("per-request", run_per_request)):
        runs = [fn(facts, capacity) for _ in range(args.repeat)]
        results[name] = (min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2],
                         runs[0][3])
    assert results["aggregate"][3] == results["per-request"][3], results
    print(f"{args.accesses:,} one-key reads in {len(facts)} slices, capacity {capacity:,} "
          f"keys, hits {results['aggregate'][3]:,}")
    for name, (t_add, t_ask, nbytes, _) in results.items():
        print(f"{name:12} take in {t_add * 1e3:8.1f} ms   per question {t_ask * 1e3:8.3f} ms"
              f"   memory {nbytes / 2 ** 20:8.1f} MiB")


if __name__ == "__main__":
    main()
