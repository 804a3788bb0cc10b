"""HitAccumulator: integer totals per slot, rates from integers, batch == one by one."""
from __future__ import annotations

import random

import numpy as np
import pytest

from litehit import HitAccumulator, LiteHit, RequestFact

try:
    from .oracle import prefix_tree_trace
except ImportError:
    from oracle import prefix_tree_trace

A, B, C, D, E = 1, 2, 3, 4, 5
EXAMPLE = [([A, B, C], 13), ([A, B, D], 12), ([A, B, C], 13), ([A, E], 8), ([A, E], 8)]


def test_worked_example_rates():
    lh = LiteHit()
    acc = HitAccumulator(capacity_bytes=[2048, 3072, -1], block_bytes=1024)
    per_request = [acc.add(lh.process_request(keys), length, 4) for keys, length in EXAMPLE]
    acc._check()
    assert [h[0] for h in per_request] == [0, 2, 2, 1, 2]
    assert acc.requests == 5 and acc.input_tokens == 54
    assert acc.hit_blocks == [7, 7, 8] and acc.hit_tokens == [28, 28, 32]
    assert acc.hit_rate(0) == 28 / 54 and acc.hit_rate(2) == 32 / 54
    assert acc.hit_rate_inf() == 32 / 54
    snap = acc.snapshot()
    assert snap["capacity_blocks"] == [2, 3, -1] and snap["capacity_bytes"] == [2048, 3072, -1]
    assert snap["hit_rates"][1] == pytest.approx(0.5185185)


def test_batch_add_equals_one_by_one():
    rng = random.Random(9)
    trace = prefix_tree_trace(rng, 400)
    lengths = [len(k) * 16 + rng.randrange(16) for k in trace]
    caps = [0, 1, 3, 10, 50, -1]
    one = HitAccumulator(caps)
    facts = []
    lh = LiteHit()
    for keys, length in zip(trace, lengths):
        fact = lh.process_request(keys)
        facts.append(fact)
        one.add(fact, length, 16)
    one._check()
    keys = np.array([k for req in trace for k in req], dtype=np.int64)
    offsets = np.cumsum([0] + [len(k) for k in trace]).astype(np.int64)
    batch = LiteHit().process_batch(keys, offsets)
    assert list(batch) == facts
    many = HitAccumulator(caps)
    many.add_batch(batch, np.array(lengths), 16)
    many._check()
    assert many.snapshot() == one.snapshot()
    per_req_bs = HitAccumulator(caps)
    per_req_bs.add_batch(batch, sum(lengths), np.full(len(trace), 16))
    assert per_req_bs.snapshot() == one.snapshot()


def test_mixed_block_sizes_weight_tokens():
    acc = HitAccumulator([2])
    acc.add(RequestFact(((1, 3),)), 100, 10)   # 2 blocks x 10 tokens
    acc.add(RequestFact(((1, 1),)), 100, 30)   # 1 block x 30 tokens
    assert acc.hit_blocks == [3] and acc.hit_tokens == [50]
    assert acc.hit_rate(0) == 50 / 200          # ratio of sums, not mean of ratios
    acc._check()


def test_empty_and_reset():
    acc = HitAccumulator([4])
    assert acc.hit_rate(0) == 0.0 and acc.hit_rate_inf() == 0.0
    acc.add([(1, 1)], 8, 4)
    acc.reset()
    assert acc.snapshot()["requests"] == 0 and acc.hit_blocks == [0]
    acc._check()


def test_constructor_errors():
    with pytest.raises(ValueError):
        HitAccumulator()
    with pytest.raises(ValueError):
        HitAccumulator([1], capacity_bytes=[1024], block_bytes=1024)
    with pytest.raises(ValueError):
        HitAccumulator(capacity_bytes=[1024])
    with pytest.raises(ValueError):
        HitAccumulator([1], block_bytes=1024)
    acc = HitAccumulator([1])
    with pytest.raises(ValueError):
        acc.add(RequestFact(), 4, 0)
    with pytest.raises(ValueError):
        acc.add_arrays(np.array([0, 0]), np.zeros(0, np.int64), np.zeros(0, np.int64), [1, 2], 4)
