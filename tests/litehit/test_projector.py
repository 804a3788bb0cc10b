"""HitCurveProjector boundaries and the flat (vectorised) projector."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litehit import BYTES_PER_GB, INFINITE_CAPACITY, HitCurveProjector, RequestFact

P = HitCurveProjector
CURVE = RequestFact(((1, 2), (4, 1)))


def test_capacity_zero_hits_nothing():
    assert P.project_blocks(CURVE, 0) == 0
    assert P.project_blocks(RequestFact(((1, 5),)), 0) == 0


@pytest.mark.parametrize("capacity,hits", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (100, 3)])
def test_segment_edges(capacity, hits):
    assert P.project_blocks(CURVE, capacity) == hits


def test_empty_curve_and_infinite():
    empty = RequestFact()
    assert P.project_blocks(empty, 10) == 0 and P.project_infinite(empty) == 0
    assert P.project_infinite(CURVE) == 3
    assert P.project_blocks(CURVE, INFINITE_CAPACITY) == 3
    assert P.project_blocks([(2, 3)], 3) == 2          # plain pairs work too


def test_byte_floor():
    assert P.project_bytes(CURVE, 2048, 1024) == 2
    assert P.project_bytes(CURVE, 4095, 1024) == 2     # floor(4095 / 1024) = 3 blocks
    assert P.project_bytes(CURVE, 4096, 1024) == 3
    assert P.project_bytes(CURVE, 1023, 1024) == 0
    assert P.project_bytes(CURVE, -1, 1024) == 3       # negative = infinite
    with pytest.raises(ValueError):
        P.project_bytes(CURVE, 4096, 0)


def test_gb_conversion_is_binary_and_floored():
    assert P.capacity_bytes_from_gb(1) == BYTES_PER_GB == 1024 ** 3
    assert P.capacity_bytes_from_gb(0.5) == 512 * 1024 ** 2
    assert P.capacity_bytes_from_gb(1e-9) == 1               # floor(1.07...)
    assert P.capacity_bytes_from_gb(0) == 0
    assert P.capacity_bytes_from_gb(-3) == INFINITE_CAPACITY
    assert P.capacity_blocks_from_bytes(-1, 7) == INFINITE_CAPACITY
    assert P.capacity_blocks_from_bytes(20, 7) == 2


def random_curve(rng):
    segments, start = [], 0
    for _ in range(rng.randint(0, 4)):
        start += rng.randint(1, 5)
        run = rng.randint(1, 4)
        segments.append((start, run))
        start += run
    return segments


def test_flat_matches_scalar():
    rng = random.Random(5)
    curves = [random_curve(rng) for _ in range(200)]
    offsets = np.cumsum([0] + [len(c) for c in curves]).astype(np.int64)
    starts = np.array([s for c in curves for s, _ in c], dtype=np.int64)
    runs = np.array([r for c in curves for _, r in c], dtype=np.int64)
    caps = [0, 1, 2, 3, 5, 8, 13, 40, INFINITE_CAPACITY]
    got = P.project_blocks_flat(offsets, starts, runs, caps)
    assert got.shape == (200, len(caps))
    for r, curve in enumerate(curves):
        assert got[r].tolist() == [P.project_blocks(curve, c) for c in caps]
    assert P.project_infinite_flat(offsets, runs).tolist() == [P.project_infinite(c) for c in curves]
    assert P.total_hit_blocks_flat(starts, runs, caps).tolist() == got.sum(axis=0).tolist()


def test_flat_with_no_segments():
    offsets = np.zeros(4, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    assert P.project_blocks_flat(offsets, empty, empty, [3]).tolist() == [[0], [0], [0]]
    assert P.total_hit_blocks_flat(empty, empty, [1, -1]).tolist() == [0, 0]


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), max_size=6),
       st.integers(0, 60))
def test_monotone_in_capacity(gaps_runs, capacity):
    curve, start = [], 0
    for gap, run in gaps_runs:
        start += gap
        curve.append((start, run))
        start += run
    assert P.project_blocks(curve, capacity) <= P.project_blocks(curve, capacity + 1)
    assert P.project_blocks(curve, capacity) <= P.project_infinite(curve)


# ---- AggregateCurve: the sum of all curves, at any capacity ----

def test_aggregate_curve_docstring_example():
    from litehit.projector import AggregateCurve

    agg = AggregateCurve()
    agg.add(np.array([1, 1, 4], dtype=np.int64), np.array([2, 2, 1], dtype=np.int64))
    assert [agg.hits(c) for c in range(6)] == [0, 2, 4, 4, 5, 5]
    assert agg.hits(-1) == agg.infinite_hits == 5 and agg.max_depth == 4
    assert agg.hits(10 ** 9) == 5
    agg.reset()
    assert agg.hits(3) == 0 and agg.max_depth == 0


def test_aggregate_curve_equals_the_per_request_projection():
    """Added in random batches (growing past its first size), the aggregate answers every
    capacity exactly as the sum of HitCurveProjector over the same requests."""
    from litehit.projector import AggregateCurve

    rng = np.random.default_rng(5)
    agg = AggregateCurve()
    curves = []
    for _batch in range(6):
        starts, runs = [], []
        for _ in range(rng.integers(1, 40)):
            curve, start = [], 0
            for _seg in range(rng.integers(0, 4)):
                start += int(rng.integers(1, 900))
                run = int(rng.integers(1, 50))
                curve.append((start, run))
                start += run
            curves.append(curve)
            starts += [s for s, _ in curve]
            runs += [r for _, r in curve]
        agg.add(np.array(starts, dtype=np.int64), np.array(runs, dtype=np.int64))
        for cap in list(range(0, 60)) + [500, 1023, 1024, 3000, 10 ** 6, -1]:
            assert agg.hits(cap) == sum(HitCurveProjector.project_blocks(c, cap)
                                        for c in curves)
    assert agg.nbytes > 1024 * 8                   # it grew past its first 1024 thresholds
