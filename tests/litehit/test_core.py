"""LiteHit core against the five-request worked example and the naive LRU oracle."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litehit import HitCurveProjector, LiteHit, RequestFact
from litehit.kernel import EMPTY_KEY

try:  # package layout (tests/__init__.py present) or rootdir layout
    from .oracle import (CAPACITIES, INF, NaiveLRUOracle, prefix_tree_trace,
                         random_key_trace, timestamps)
except ImportError:
    from oracle import (CAPACITIES, INF, NaiveLRUOracle, prefix_tree_trace,
                        random_key_trace, timestamps)

A, B, C, D, E = 101, 102, 103, 104, 105
project = HitCurveProjector.project_blocks


def hits_at(fact, capacities=CAPACITIES):
    return [HitCurveProjector.project_infinite(fact) if c == INF else project(fact, c)
            for c in capacities]


def replay_against_oracle(trace, times=None, ttl_ns=0, slack=4, compare=None):
    """Replay with both; return list of (litehit hits, oracle hits) per request."""
    lh = LiteHit(ttl_ns, slack_positions=slack)
    oracle = NaiveLRUOracle(ttl_ns=ttl_ns)
    rows = []
    for r, keys in enumerate(trace):
        now = times[r] if times else 0
        fact = lh.process_request(keys, now)
        fact._check()
        rows.append((hits_at(fact), oracle.process(keys, now)))
    lh._check()
    return rows


# ---- the five-request worked example ----
EXAMPLE = [([A, B, C], 13), ([A, B, D], 12), ([A, B, C], 13), ([A, E], 8), ([A, E], 8)]
EXAMPLE_CURVES = [(), ((1, 2),), ((1, 2), (4, 1)), ((1, 1),), ((1, 2),)]


def test_worked_example_curves_and_rates():
    lh = LiteHit()
    facts = []
    for keys, _length in EXAMPLE:
        facts.append(lh.process_request(keys))
        lh._check()
    assert [f.hit_curve for f in facts] == EXAMPLE_CURVES
    total_tokens = sum(length for _, length in EXAMPLE)
    assert total_tokens == 54
    for capacity_bytes in (2048, 3072):
        hits = [HitCurveProjector.project_bytes(f, capacity_bytes, 1024) for f in facts]
        assert hits == [0, 2, 2, 1, 2]
        assert sum(hits) * 4 == 28
    assert [HitCurveProjector.project_infinite(f) for f in facts] == [0, 2, 3, 1, 2]
    # Final LRU order, most recent first: A E B C D.
    assert [lh.depth(k) for k in (A, E, B, C, D)] == [1, 2, 3, 4, 5]


def test_forward_commit_would_lose_hits():
    """The oracle with head-first commit gets only 2 blocks at capacity 2 (vs 7)."""
    forward = NaiveLRUOracle(capacities=[2], forward_commit=True)
    reverse = NaiveLRUOracle(capacities=[2])
    assert sum(forward.process(k)[0] for k, _ in EXAMPLE) == 2
    assert sum(reverse.process(k)[0] for k, _ in EXAMPLE) == 7


# ---- oracle equality ----
@pytest.mark.parametrize("seed", range(6))
def test_oracle_equality_prefix_tree(seed):
    rng = random.Random(seed)
    trace = prefix_tree_trace(rng, 300, alphabet=2 + seed % 3, max_len=4 + seed)
    for got, want in replay_against_oracle(trace):
        assert got == want


@pytest.mark.parametrize("seed", range(6))
def test_non_contract_never_above_oracle(seed):
    rng = random.Random(1000 + seed)
    trace = random_key_trace(rng, 300)
    for got, want in replay_against_oracle(trace):
        assert all(g <= w for g, w in zip(got, want)), (got, want)
        assert got[-1] == want[-1], "infinite capacity must be exact"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2), min_size=0, max_size=6), max_size=40),
       st.integers(1, 16))
def test_property_oracle_equality(raw_requests, slack):
    from litehit import apply_prefix_hash

    trace = [apply_prefix_hash(raws) for raws in raw_requests]
    for got, want in replay_against_oracle(trace, slack=slack):
        assert got == want


# ---- curve shape ----
def test_whole_chain_replay_is_one_segment():
    lh = LiteHit()
    chain = list(range(1, 51))
    assert lh.process_request(chain).hit_curve == ()
    assert lh.process_request(chain).hit_curve == ((1, 50),)


def test_interleaving_breaks_segments():
    lh = LiteHit()
    lh.process_request([A, B, C])
    lh.process_request([A, B, D])          # D slips in between B and C
    curve = lh.process_request([A, B, C]).hit_curve
    assert curve == ((1, 2), (4, 1))
    start, run = curve[0]
    assert curve[1][0] > start + run       # never mergeable


def test_curve_stops_at_first_cold_key():
    lh = LiteHit()
    lh.process_request([A, B, C])
    # X is cold; C after it is resident but must not count (non-contract order).
    fact = lh.process_request([A, 999, C])
    assert fact.hit_curve == ((1, 1),)
    assert HitCurveProjector.project_infinite(fact) == 1


def test_blocks_after_a_miss_still_update_the_lru():
    lh = LiteHit()
    lh.process_request([A, B])
    lh.process_request([A, 7, 8, 9])        # 7 cold, yet 7, 8, 9 are committed
    assert lh.process_request([A, 7, 8, 9]).hit_curve == ((1, 4),)
    assert lh.depth(9) == 4 and lh.depth(B) == 5


def test_duplicate_keys_committed_at_first_occurrence():
    lh = LiteHit()
    lh.process_request([A, B, A, C])
    # Final order: A, B, C (A's first occurrence wins).
    assert [lh.depth(k) for k in (A, B, C)] == [1, 2, 3]
    lh._check()


def test_empty_request_and_empty_batch():
    lh = LiteHit()
    assert lh.process_request([]).hit_curve == ()
    facts = lh.process_batch(np.array([], dtype=np.int64), np.array([0]))
    assert len(facts) == 0
    lh._check()


def test_sentinel_valued_key_behaves_like_any_key():
    lh = LiteHit(slack_positions=2)
    keys = [EMPTY_KEY, 5, 6]
    assert lh.process_request(keys).hit_curve == ()
    lh._check()
    for _ in range(20):                      # several compactions with the key aside
        assert lh.process_request(keys).hit_curve == ((1, 3),)
        lh._check()
    assert lh.depth(EMPTY_KEY) == 1
    assert lh.compactions >= 2


# ---- compaction ----
def test_compaction_keeps_every_key():
    rng = random.Random(7)
    lh = LiteHit(slack_positions=3)
    universe = list(range(40))
    for k in universe:
        lh.process_request([k])
    for _ in range(400):                      # re-touch a few keys: many stale positions
        lh.process_request(rng.sample(universe[:5], 3))
        lh._check()
    assert lh.compactions >= 10
    assert lh.current_unique_blocks() == len(universe)
    for k in universe:
        assert lh.depth(k) is not None
    # Every key still hits at infinite capacity.
    fact = lh.process_request(universe[5:])
    assert HitCurveProjector.project_infinite(fact) == len(universe) - 5


def test_compaction_does_not_change_results():
    rng = random.Random(11)
    trace = prefix_tree_trace(rng, 400)
    big = LiteHit()
    small = LiteHit(slack_positions=1)
    for keys in trace:
        assert big.process_request(keys) == small.process_request(keys)
    small._check()
    assert small.compactions > big.compactions


def test_table_growth_keeps_every_key():
    lh = LiteHit()
    n = 5000                                   # several doublings from 1024 slots
    lh.process_batch(np.arange(n, dtype=np.int64), np.arange(n + 1, dtype=np.int64))
    lh._check()
    assert lh.current_unique_blocks() == n
    assert lh.depth(0) == n and lh.depth(n - 1) == 1


# ---- TTL ----
def test_ttl_strict_boundary():
    lh = LiteHit(ttl_ns=10)
    lh.process_request([A, B], now_ns=100)
    assert lh.process_request([A, B], now_ns=109).hit_curve == ((1, 2),)   # age 9: alive
    assert lh.process_request([A, B], now_ns=119).hit_curve == ()          # age 10: dead
    assert lh.process_request([A, B], now_ns=128).hit_curve == ((1, 2),)   # refreshed at 119
    lh._check()


def test_ttl_expired_block_stops_the_prefix():
    lh = LiteHit(ttl_ns=10)
    lh.process_request([A, B, C], now_ns=0)
    lh.process_request([A], now_ns=5)         # refreshes A only
    fact = lh.process_request([A, B, C], now_ns=12)
    assert fact.hit_curve == ((1, 1),)


def test_ttl_unique_blocks_and_purge():
    lh = LiteHit(ttl_ns=10, slack_positions=2)
    lh.process_batch(np.arange(20), np.arange(21), now_ns=0)
    assert lh.current_unique_blocks() == 20
    lh.process_request([100, 101], now_ns=5)
    lh.advance_time(9)
    assert lh.current_unique_blocks() == 22
    lh.advance_time(10)                       # the first 20 expire; purge releases them
    assert lh.current_unique_blocks() == 2
    lh._check()
    assert lh.stats()["live_keys"] == 2
    assert lh.process_request([100, 101], now_ns=0).hit_curve == ((1, 2),)  # clock clamped


@pytest.mark.parametrize("seed", range(4))
def test_ttl_times_capacity_oracle(seed):
    rng = random.Random(500 + seed)
    trace = prefix_tree_trace(rng, 300)
    times = timestamps(rng, len(trace), max_step_ns=3)
    for got, want in replay_against_oracle(trace, times, ttl_ns=7 + seed):
        assert got == want


def test_clock_never_goes_backwards():
    lh = LiteHit(ttl_ns=10)
    lh.process_request([A], now_ns=100)
    lh.process_request([B], now_ns=50)        # treated as t=100
    assert lh.now_ns == 100
    # B was stamped at 100, not 50, so both are alive at 109.
    assert HitCurveProjector.project_infinite(lh.process_request([A, B], now_ns=109)) == 2
    lh._check()


# ---- batch API ----
def _flatten(trace):
    keys = np.array([k for req in trace for k in req], dtype=np.int64)
    offsets = np.cumsum([0] + [len(req) for req in trace]).astype(np.int64)
    return keys, offsets


@pytest.mark.parametrize("ttl_ns", [0, 6])
def test_batch_equals_sequential(ttl_ns):
    rng = random.Random(3)
    trace = prefix_tree_trace(rng, 500) + random_key_trace(rng, 100)
    times = timestamps(rng, len(trace))
    seq = LiteHit(ttl_ns, slack_positions=8)
    expected = [seq.process_request(keys, t) for keys, t in zip(trace, times)]
    keys, offsets = _flatten(trace)
    batched = LiteHit(ttl_ns, slack_positions=8)
    facts = []
    # Split into a few batches to exercise state carried across kernel calls.
    cuts = [0, 1, 2, 250, 600]
    for a, b in zip(cuts, cuts[1:] + [len(trace)]):
        sub = batched.process_batch(keys[offsets[a]:offsets[b]], offsets[a:b + 1] - offsets[a],
                                    np.array(times[a:b]))
        sub._check()
        facts.extend(sub)
    assert facts == expected
    batched._check()
    assert batched.stats() == seq.stats()


def test_batch_time_arguments():
    keys, offsets = _flatten([[A], [A], [A]])
    lh = LiteHit(ttl_ns=5)
    lh.advance_time(100)
    res = lh.process_batch(keys, offsets)                 # None: current clock
    assert [f.hit_curve for f in res] == [(), ((1, 1),), ((1, 1),)]
    res = lh.process_batch(keys, offsets, now_ns=200)     # scalar
    assert [f.hit_curve for f in res] == [(), ((1, 1),), ((1, 1),)]
    res = lh.process_batch(keys, offsets, now_ns=[200, 204, 209])
    assert res.seg_offsets.tolist() == [0, 1, 2, 2]
    assert res.seg_start.tolist() == [1, 1] and res.seg_run.tolist() == [1, 1]


def test_batch_rejects_bad_offsets():
    lh = LiteHit()
    keys = np.arange(4)
    with pytest.raises(ValueError, match="non-decreasing"):
        lh.process_batch(keys, [0, 3, 2, 4])
    with pytest.raises(ValueError, match="within"):
        lh.process_batch(keys, [0, 5])
    with pytest.raises(ValueError, match="timestamps"):
        lh.process_batch(keys, [0, 2, 4], now_ns=[1, 2, 3])
    with pytest.raises(ValueError):
        LiteHit(ttl_ns=-1)


def test_uint64_keys_wrap_to_int64():
    lh = LiteHit()
    big = np.array([2**64 - 1, 2**63], dtype=np.uint64)
    lh.process_batch(big, [0, 2])
    assert lh.process_request([-1, -(2**63)]).hit_curve == ((1, 2),)


def test_reset_and_memory():
    lh = LiteHit()
    base = lh.memory_usage_bytes()
    lh.process_batch(np.arange(10_000), [0, 10_000])
    assert lh.memory_usage_bytes() > base
    assert lh.total_accesses == 10_000
    lh.reset()
    assert lh.memory_usage_bytes() == base
    assert lh.current_unique_blocks() == 0 and lh.total_accesses == 0
    lh._check()


def test_facts_are_request_facts():
    lh = LiteHit()
    fact = lh.process_request([1, 2])
    assert isinstance(fact, RequestFact)
    with pytest.raises(AttributeError):
        fact.hit_curve = ()  # frozen


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 6), max_size=5), st.integers(0, 4)),
                max_size=40),
       st.integers(1, 8))
def test_property_ttl_non_contract_bounded_by_oracle(steps, ttl_ns):
    trace = [keys for keys, _ in steps]
    times, now = [], 0
    for _, dt in steps:
        now += dt
        times.append(now)
    for got, want in replay_against_oracle(trace, times, ttl_ns=ttl_ns, slack=2):
        assert all(g <= w for g, w in zip(got, want))
        assert got[-1] == want[-1]


def test_kernel_encoding_matches_reference_encoder():
    """Snapshot depths (read before the request) fed to encode_hit_curve give the curve."""
    from litehit import encode_hit_curve

    rng = random.Random(21)
    lh = LiteHit(ttl_ns=9, slack_positions=4)
    now = 0
    for keys in prefix_tree_trace(rng, 150) + random_key_trace(rng, 150):
        now += rng.randrange(3)
        lh.advance_time(now)
        depths = [lh.depth(k) for k in keys]
        assert lh.process_request(keys, now).hit_curve == encode_hit_curve(depths)
    lh._check()


def test_memory_per_distinct_block_stays_small():
    rng = np.random.default_rng(4)
    n = 300_000
    keys = rng.integers(0, n // 2, size=n) * 1_000_003
    lh = LiteHit()
    lh.process_batch(keys, np.arange(n + 1))
    assert lh.memory_usage_bytes() / lh.current_unique_blocks() <= 64
    lh._check()


def test_decreasing_batch_timestamps_are_clamped():
    lh = LiteHit(ttl_ns=10)
    res = lh.process_batch([A, A, A], [0, 1, 2, 3], now_ns=[100, 50, 109])
    assert [f.hit_curve for f in res] == [(), ((1, 1),), ((1, 1),)]
    assert lh.now_ns == 109
