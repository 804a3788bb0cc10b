"""RequestFact, the reference RLE encoder, JSON form and BatchFacts."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litehit import (
    BatchFacts,
    HitCurveSegment,
    RequestFact,
    encode_hit_curve,
    hit_curve_from_json,
    hit_curve_to_json,
)


def test_encode_examples():
    assert encode_hit_curve([]) == ()
    assert encode_hit_curve([None, 1]) == ()
    assert encode_hit_curve([1, 2, 3]) == ((1, 3),)
    assert encode_hit_curve([1, 2, 4]) == ((1, 2), (4, 1))
    assert encode_hit_curve([1, 2, None, 3]) == ((1, 2),)


def test_encode_monotone_guard_only_raises():
    # Non-contract: depths fall or repeat; thresholds still rise by at least one.
    assert encode_hit_curve([3, 1, 1]) == ((3, 3),)        # thresholds 3, 4, 5
    assert encode_hit_curve([2, 2, 7, 1]) == ((2, 2), (7, 2))


@settings(deadline=None)
@given(st.lists(st.integers(1, 30), max_size=20))
def test_encode_invariants_and_lower_bound(depths):
    curve = encode_hit_curve(depths)
    RequestFact(curve)._check()
    assert sum(run for _, run in curve) == len(depths)
    # Decoded thresholds never lie below prefix_required (pessimistic, never optimistic).
    thresholds = [s + i for s, run in curve for i in range(run)]
    prefix = 0
    for t, d in zip(thresholds, depths):
        prefix = max(prefix, d)
        assert t >= prefix


def test_request_fact_frozen_and_equal_to_tuples():
    fact = RequestFact.from_pairs([[1, 2], [4, 1]])
    assert fact.hit_curve == ((1, 2), (4, 1))
    assert fact.hit_curve[0] == HitCurveSegment(1, 2)
    assert fact.hit_curve[0].start_required_blocks == 1
    assert fact.segment_count == 2
    assert fact == RequestFact(((1, 2), (4, 1)))
    with pytest.raises(Exception):
        fact.hit_curve = ()  # type: ignore[misc]


@pytest.mark.parametrize("bad", [[[0, 1]], [[1, 0]], [[1, 2], [3, 1]], [[4, 1], [1, 1]]])
def test_request_fact_check_rejects_bad_curves(bad):
    with pytest.raises(AssertionError):
        RequestFact.from_pairs(bad)


def test_json_round_trip():
    assert hit_curve_to_json([]) == "[]"
    assert hit_curve_to_json(((1, 2), (4, 1))) == "[[1,2],[4,1]]"
    assert RequestFact.from_json("[[1,2],[4,1]]").to_json() == "[[1,2],[4,1]]"
    assert hit_curve_from_json(" [ [1, 2] ] ") == ((1, 2),)


@pytest.mark.parametrize("text", ["", "{}", "[1]", "[[1]]", "[[1,2,3]]", '[["1",2]]',
                                  "[[1.5,2]]", "[[true,1]]", "[[1,2],[2,1]]", "[[0,1]]"])
def test_json_rejects_malformed(text):
    with pytest.raises(ValueError):
        hit_curve_from_json(text)


def test_batch_facts_sequence():
    batch = BatchFacts(np.array([0, 0, 1, 3], dtype=np.int64),
                       np.array([1, 1, 4], dtype=np.int64),
                       np.array([2, 2, 1], dtype=np.int64))
    batch._check()
    assert len(batch) == 3 and batch.segment_count == 3
    assert [f.hit_curve for f in batch] == [(), ((1, 2),), ((1, 2), (4, 1))]
    assert batch[-1] == RequestFact(((1, 2), (4, 1)))
    assert batch[1:] == [batch[1], batch[2]]
    assert hit_curve_to_json(batch[0].hit_curve) == "[]"
    assert hit_curve_to_json(batch[2].hit_curve) == "[[1,2],[4,1]]"
    with pytest.raises(IndexError):
        batch[3]


def test_batch_facts_check_catches_mergeable_segments():
    batch = BatchFacts(np.array([0, 2], dtype=np.int64), np.array([1, 3], dtype=np.int64),
                       np.array([2, 1], dtype=np.int64))
    with pytest.raises(AssertionError):
        batch._check()
    # The same segments split across two requests are fine.
    ok = BatchFacts(np.array([0, 1, 2], dtype=np.int64), np.array([1, 3], dtype=np.int64),
                    np.array([2, 1], dtype=np.int64))
    ok._check()
