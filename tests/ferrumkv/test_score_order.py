"""ScoreOrder against a plain sorted list of (score, member) tuples: every operation the
sorted-set code uses, on random workloads with tied scores, -0.0 / 0.0 and infinities, with
sublists made tiny so that splits, merges and the Fenwick index all happen."""

from __future__ import annotations

import bisect
import contextlib
import math
import random

import pytest

from ferrumkv_py import score_order
from ferrumkv_py.score_order import ScoreOrder

SCORES = (-math.inf, -2.5, -0.0, 0.0, 1.0, 1.0, 3.0, 7.25, 1e300, math.inf)


@contextlib.contextmanager
def tiny_sublists(load: int):
    """score_order's sublists of ``load`` pairs (split above 2 * load, merge below load / 4)."""
    saved = score_order.LOAD, score_order._SPLIT, score_order._MERGE
    score_order.LOAD, score_order._SPLIT, score_order._MERGE = load, 2 * load, load // 4
    try:
        yield
    finally:
        score_order.LOAD, score_order._SPLIT, score_order._MERGE = saved


def signed(pairs) -> list:
    """Pairs with the sign of zero made visible (-0.0 == 0.0 otherwise)."""
    return [(math.copysign(1.0, s), s, m) for s, m in pairs]


def check(order: ScoreOrder, ref: list) -> None:
    order._check()
    assert len(order) == len(ref)
    assert signed(order) == signed(ref)


def random_pair(rng, present: dict):
    while True:
        m = b"m%d" % rng.randrange(400)
        if m not in present:
            return rng.choice(SCORES) if rng.random() < 0.5 else rng.uniform(-5, 5), m


@pytest.mark.parametrize("load,seed", [(8, 1), (8, 2), (4, 3), (512, 4)])
def test_random_workload_matches_a_sorted_list(load, seed):
    rng = random.Random(seed)
    with tiny_sublists(load):
        order, ref, present = ScoreOrder(), [], {}
        for step in range(3000):
            op = rng.random()
            if op < 0.45 or not ref:
                pair = random_pair(rng, present)
                order.add(pair)
                bisect.insort(ref, pair)
                present[pair[1]] = pair[0]
            elif op < 0.65:
                m = rng.choice(list(present))
                pair = (present.pop(m), m)
                assert order.index(pair) == ref.index(pair)
                order.remove(pair)
                ref.remove(pair)
            elif op < 0.72:
                i = rng.randrange(-len(ref), len(ref))
                got = order.pop(i)
                want = ref.pop(i)
                assert signed([got]) == signed([want])
                del present[got[1]]
            elif op < 0.76:
                lo, hi = sorted(rng.randrange(-3, len(ref) + 3) for _ in range(2))
                for s, m in ref[lo:hi]:
                    del present[m]
                del order[lo:hi]
                del ref[lo:hi]
            elif op < 0.78:
                i = rng.randrange(len(ref))
                del present[ref[i][1]]
                del order[i]
                del ref[i]
            elif op < 0.86:
                key = (rng.choice(SCORES),) if rng.random() < 0.5 else (
                    rng.choice(SCORES), b"m%d" % rng.randrange(400))
                assert order.bisect_left(key) == bisect.bisect_left(ref, key), key
                assert order.bisect_right(key) == bisect.bisect_right(ref, key), key
            elif op < 0.94:
                lo, hi = (rng.randrange(-5, len(ref) + 5) for _ in range(2))
                rev = rng.random() < 0.5
                want = ref[slice(lo, hi)][::-1] if rev else ref[slice(lo, hi)]
                assert signed(order.islice(lo, hi, reverse=rev)) == signed(want)
            else:
                i = rng.randrange(-len(ref), len(ref))
                assert signed([order[i]]) == signed([ref[i]])
            check(order, ref)
        with pytest.raises(IndexError):
            order[len(ref)]
        with pytest.raises(ValueError):
            order.remove((0.5, b"absent"))
        with pytest.raises(ValueError):
            order.index((0.5, b"absent"))


def test_build_copy_and_clear():
    rng = random.Random(5)
    with tiny_sublists(4):
        pairs = {}
        for _ in range(200):
            s, m = random_pair(rng, pairs)
            pairs[m] = s
        ref = sorted((s, m) for m, s in pairs.items())
        order = ScoreOrder((s, m) for m, s in pairs.items())
        check(order, ref)
        twin = order.copy()
        twin.remove(ref[0])
        twin.add((100.0, b"new"))
        check(order, ref)                       # the copy shares nothing
        check(twin, sorted(ref[1:] + [(100.0, b"new")]))
        del order[:]
        check(order, [])
        order.add((1.0, b"a"))
        check(order, [(1.0, b"a")])


def test_a_member_keeps_its_zero_sign():
    order = ScoreOrder()
    order.add((-0.0, b"b"))
    order.add((0.0, b"a"))
    assert signed(order) == [(1.0, 0.0, b"a"), (-1.0, -0.0, b"b")]
    order.remove((-0.0, b"b"))
    assert signed(order) == [(1.0, 0.0, b"a")]
