"""normalize_request rules (in order), prefix hash golden vectors, re-blocking."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from litehit import (
    NormalizedRequest,
    apply_prefix_hash,
    normalize_request,
    prefix_hash_next,
    to_int64,
)

# ---- prefix hash ----
GOLDEN = [
    ([1, 2, 3], [-7046029254386353130, -8366447756632839738, 8024461590772477417]),
    ([-5, 7], [-7046029254386353136, -8366447756632880699]),
    ([42], [-7046029254386353089]),
    ([], []),
]


@pytest.mark.parametrize("raws,expected", GOLDEN)
def test_prefix_hash_golden_vectors(raws, expected):
    assert apply_prefix_hash(raws) == expected


def test_prefix_hash_next_golden():
    assert prefix_hash_next(0, 0) == -7046029254386353131


@settings(deadline=None)
@given(st.lists(st.integers(-(2**70), 2**70), max_size=8))
def test_apply_is_folded_next(raws):
    h = 0
    chained = []
    for raw in raws:
        h = prefix_hash_next(h, raw)
        chained.append(h)
    assert apply_prefix_hash(raws) == chained
    assert all(-(2**63) <= k < 2**63 for k in chained)


def test_prefix_hash_uses_logical_shift():
    # A negative previous value must be treated as unsigned (logical >> 32).
    prev = -1
    h = (1 << 64) - 1
    rhs = (5 + 0x9E3779B97F4A7C15 + ((h << 12) % 2**64) + (h >> 32)) % 2**64
    assert prefix_hash_next(prev, 5) == to_int64(h ^ rhs)


def test_to_int64_wraps():
    assert to_int64(2**64 - 1) == -1
    assert to_int64(2**63) == -(2**63)
    assert to_int64(-1) == -1
    assert to_int64(5) == 5


# ---- rules, each failure naming its rule ----
def test_rule1_block_size_positive():
    for bad in (0, -4):
        with pytest.raises(ValueError, match="rule 1"):
            normalize_request([1], 4, bad, False)


def test_rule2_input_len_not_negative():
    with pytest.raises(ValueError, match="rule 2"):
        normalize_request([1], -1, 4, False)


def test_rule_order_1_before_2():
    with pytest.raises(ValueError, match="rule 1"):
        normalize_request([1], -1, 0, False)


def test_rule3_trace_block_size_zero_means_same():
    req = normalize_request([1, 2], 9, 4, False, 0)
    assert req.block_keys == (1, 2) and req.input_token_len == 9
    with pytest.raises(ValueError, match="rule 3"):
        normalize_request([1], 4, 4, False, -2)


def test_rule4_only_coarsening():
    with pytest.raises(ValueError, match="rule 4"):
        normalize_request([1, 2], 8, 4, False, 8)      # finer: 4 is not a multiple of 8
    with pytest.raises(ValueError, match="rule 4"):
        normalize_request([1, 2], 8, 6, False, 4)


def test_rule4_before_rule6():
    with pytest.raises(ValueError, match="rule 4"):
        normalize_request([1, 2, 3], 4, 6, False, 4)   # also violates the length rule


def test_rule5_missing_length_is_derived():
    req = normalize_request([1, 2, 3], 0, 4, False)
    assert req.input_token_len == 12
    req = normalize_request([1, 2, 3], 0, 8, False, 4)   # derived at trace granularity
    assert req.input_token_len == 12 and req.block_keys == (2,)
    req._check()


def test_rule6_length_contract():
    assert normalize_request([1, 2, 3], 15, 4, False).block_keys == (1, 2, 3)  # tail of 3 tokens
    with pytest.raises(ValueError, match="rule 6"):
        normalize_request([1, 2, 3], 16, 4, False)
    with pytest.raises(ValueError, match="rule 6"):
        normalize_request([1, 2, 3], 11, 4, False)


def test_rule7_prefix_hash_applied():
    req = normalize_request([1, 2, 3], 12, 4, True)
    assert list(req.block_keys) == GOLDEN[0][1]


def test_rule8_reblock_keeps_every_kth_chained_key():
    raws = [1, 2, 3, 4, 5]
    chained = apply_prefix_hash(raws)
    req = normalize_request(raws, 20, 8, True, 4)          # k = 2
    assert list(req.block_keys) == [chained[1], chained[3]]  # 5th fine block dropped
    assert req.input_token_len == 20 and req.block_size_tokens == 8
    req._check()


def test_rule8_reblock_without_prefix_hash_and_short_request():
    req = normalize_request([10, 11, 12, 13, 14, 15, 16], 30, 12, False, 4)  # k = 3
    assert req.block_keys == (12, 15)
    req = normalize_request([10, 11], 9, 12, False, 4)       # fewer than k fine blocks
    assert req.block_keys == () and req.input_token_len == 9


def test_reblock_then_prefix_equals_coarse_chain_contract():
    """Coarse keys of two requests sharing a fine prefix are shared exactly as far."""
    a = normalize_request([1, 2, 3, 4, 5, 6], 24, 8, True, 4).block_keys
    b = normalize_request([1, 2, 3, 4, 9, 9], 24, 8, True, 4).block_keys
    assert a[:2] == b[:2] and a[2] != b[2]


def test_keys_wrap_to_int64():
    req = normalize_request([2**64 - 1, 2**63], 8, 4, False)
    assert req.block_keys == (-1, -(2**63))
    assert isinstance(req, NormalizedRequest)
    req._check()


def test_empty_request():
    req = normalize_request([], 0, 4, True)
    assert req.block_keys == () and req.input_token_len == 0
    req = normalize_request([], 3, 4, False)                 # 3 tokens, no full block
    assert req.block_keys == () and req.input_token_len == 3
