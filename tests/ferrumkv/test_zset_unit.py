"""ZSet, the sorted set structure: invariants after every change, ranges against a naive
model, and the Redis 7.0 listpack / skiplist details clients can see."""

from __future__ import annotations

import math
import random

import pytest

from ferrumkv_py import memory
from ferrumkv_py.zset import (LEX_MAX, LEX_MIN, ZSET_MAX_LISTPACK_ENTRIES,
                              ZSET_MAX_LISTPACK_VALUE, LexRange, ScoreRange, ZSet, parse_lex_item,
                              score_text)

from tests.ferrumkv.test_score_order import tiny_sublists

SCORES = [-math.inf, -2.5, -1.0, 0.0, 0.5, 1.0, 1.0, 3.0, 7.25, math.inf]


@pytest.fixture(autouse=True, params=["shipped sublists", "sublists of 8"])
def sublists(request):
    """Every test twice: with score_order's real LOAD (these sets fit one sublist) and with
    sublists of 8, so the ranges, ranks and deletes cross sublists, splits and merges."""
    if request.param == "sublists of 8":
        with tiny_sublists(8):
            yield
    else:
        yield


def naive(model: dict) -> list:
    return sorted((s, m) for m, s in model.items())


def test_random_changes_keep_both_indexes_in_step():
    rng = random.Random(1)
    z, model = ZSet(), {}
    for step in range(3000):
        op = rng.choices(range(6), weights=(30, 20, 20, 10, 3, 17))[0]
        m = b"m%d" % rng.randrange(300)
        s = rng.choice(SCORES) if rng.random() < 0.3 else rng.uniform(-100, 100)
        if op <= 1:
            if m in model:
                z.update(m, s)
            else:
                z.insert(m, s)
            model[m] = s if not (z.listpack and s == 0) else 0.0
        elif op == 2:
            assert z.remove(m) == (m in model)
            model.pop(m, None)
        elif op == 3:
            got = z.pop(rng.randrange(3), highest=rng.random() < 0.5)
            for member, score in got:
                assert model.pop(member) == score
        elif op == 4 and len(z):
            lo = rng.randrange(len(z))
            hi = min(len(z), lo + rng.randrange(5))
            want = [mm for _, mm in naive(model)[lo:hi]]
            assert z.delete_span(lo, hi) == want
            for mm in want:
                del model[mm]
        elif op == 5 and m in model:
            assert z.rank(m) == naive(model).index((model[m], m))
        z._check()
        assert list(z.order) == naive(model), step
        assert z.scores == model
    assert len(z) > ZSET_MAX_LISTPACK_ENTRIES and z.encoding == "skiplist"   # grew past it


def _in_score(r: ScoreRange, s: float) -> bool:
    return r.gte_min(s) and r.lte_max(s)


def test_score_span_matches_a_linear_scan():
    rng = random.Random(2)
    z = ZSet()
    for i in range(200):
        z.insert(b"m%03d" % i, rng.choice(SCORES + [rng.uniform(-3, 8) for _ in range(5)]))
    bounds = SCORES + [-0.0, 2.0, 100.0]
    for _ in range(2000):
        r = ScoreRange(rng.choice(bounds), rng.choice(bounds),
                       rng.random() < 0.5, rng.random() < 0.5)
        lo, hi = z.score_span(r)
        assert [m for _, m in z.order][lo:hi] == [m for s, m in z.order if _in_score(r, s)]


def test_lex_span_with_one_shared_score():
    rng = random.Random(3)
    z = ZSet()
    words = sorted({bytes(rng.choice(b"abcde") for _ in range(rng.randrange(1, 4)))
                    for _ in range(80)})
    for w in words:
        z.insert(w, 0.0)
    ends = [LEX_MIN, LEX_MAX, b"", b"a", b"b", b"bz", b"c", b"cc", b"e", b"ee", b"z"]
    for _ in range(2000):
        r = LexRange(rng.choice(ends), rng.choice(ends), rng.random() < 0.5, rng.random() < 0.5)
        want = [w for w in words if r.gte_min(w) and r.lte_max(w)]
        for rev in (False, True):
            lo, hi = z.lex_span(r, rev)
            assert words[lo:hi] == want


def test_lex_walk_on_mixed_scores_follows_a_listpack():
    """Mixed scores are unspecified for lex ranges; a small set walks as Redis's listpack does:
    start at the first member >= min, stop at the first one past max."""
    z = ZSet()
    for s, m in ((1, b"b"), (2, b"a"), (3, b"d"), (0, b"c")):
        z.insert(m, s)                               # order: c b a d
    r = LexRange(b"a", b"c")
    assert [m for _, m in z.span(*z.lex_span(r))] == [b"c", b"b", b"a"]
    # (checked on redis-server 7.0.15 with ZADD mx 1 b 2 a 3 d 0 c)
    assert [m for _, m in z.span(*z.lex_span(LexRange(b"b", LEX_MAX, True)))] == [b"c", b"b", b"a", b"d"]
    assert z.lex_span(LexRange(b"a", b"b")) == (0, 0)      # c >= a, but c > b: stop
    lo, hi = z.lex_span(LexRange(b"a", b"c"), rev=True)
    assert [m for _, m in z.span(lo, hi, True)] == [b"a", b"b", b"c"]


def test_select_with_rev_offset_and_limit():
    z = ZSet()
    for i, m in enumerate(b"abcdefgh"):
        z.insert(bytes([m]), float(i))
    members = [m for _, m in z.order]

    def names(pairs):
        return b"".join(m for _, m in pairs)
    assert names(z.select("rank", (0, -1))) == b"abcdefgh"
    assert names(z.select("rank", (0, 2), rev=True)) == b"hgf"
    assert names(z.select("rank", (-3, 100))) == b"fgh"
    assert names(z.select("rank", (5, 2))) == b""
    every = ScoreRange(-math.inf, math.inf)
    assert names(z.select("score", every, offset=2, limit=3)) == b"cde"
    assert names(z.select("score", every, rev=True, offset=1, limit=2)) == b"gf"
    assert names(z.select("score", every, offset=6, limit=-1)) == b"gh"
    assert names(z.select("score", every, offset=-1, limit=3)) == b""
    assert names(z.select("score", every, limit=0)) == b""
    assert names(z.select("score", ScoreRange(2, 5, True, False), rev=True)) == b"fed"
    assert len(members) == 8


def test_listpack_to_skiplist_and_negative_zero():
    z = ZSet()
    z.insert(b"a", -0.0)
    assert z.encoding == "listpack" and math.copysign(1, z.score(b"a")) == 1   # stored as 0
    for i in range(ZSET_MAX_LISTPACK_ENTRIES - 1):
        z.insert(b"m%d" % i, float(i))
    assert z.encoding == "listpack" and len(z) == ZSET_MAX_LISTPACK_ENTRIES
    z.insert(b"one-more", -0.0)
    assert z.encoding == "skiplist" and math.copysign(1, z.score(b"one-more")) == -1
    z.delete_span(0, len(z) - 1)
    assert z.encoding == "skiplist"                   # never converts back
    z._check()

    long_first = ZSet(first_member_len=ZSET_MAX_LISTPACK_VALUE + 1)
    assert long_first.encoding == "skiplist"
    short = ZSet()
    short.insert(b"x" * (ZSET_MAX_LISTPACK_VALUE + 1), 1.0)
    assert short.encoding == "skiplist"


@pytest.mark.parametrize("listpack,score,text", [
    (True, 3.0, b"3"), (False, 3.0, b"3"), (True, 0.1, b"0.10000000000000001"),
    (True, 123456789012345678.0, b"123456789012345680"),       # a listpack keeps integers
    (False, 123456789012345678.0, b"1.2345678901234568e+17"),  # d2string: %.17g past 2**52
    (False, 4503599627370496.0, b"4503599627370496"), (False, -0.0, b"-0"),
    (True, math.inf, b"inf"), (False, -math.inf, b"-inf"), (True, 1e20, b"1e+20"),
])
def test_score_text(listpack, score, text):
    z = ZSet()
    z.listpack = listpack
    assert score_text(z, score) == text


def test_parse_lex_item_and_range_emptiness():
    assert parse_lex_item(b"-") == (LEX_MIN, False) and parse_lex_item(b"+") == (LEX_MAX, False)
    assert parse_lex_item(b"(a") == (b"a", True) and parse_lex_item(b"[") == (b"", False)
    assert parse_lex_item(b"a") is None and parse_lex_item(b"") is None
    assert parse_lex_item(b"++") is None
    assert LexRange(LEX_MAX, LEX_MIN).empty() and LexRange(b"a", b"a", True).empty()
    assert not LexRange(b"a", b"a").empty()
    assert ScoreRange(2, 1).empty() and ScoreRange(1, 1, maxex=True).empty()


def test_copy_is_independent_and_recount_matches():
    z = ZSet()
    for i in range(10):
        z.insert(b"m%d" % i, float(i))
    z.mem = memory.recount(z)
    assert z.mem == memory.CONTAINER_BASE["zset"] + sum(
        memory.zset_member_cost(b"m%d" % i) for i in range(10))
    c = z.copy()
    c.insert(b"new", 1.5)
    c.remove(b"m0")
    assert b"new" not in z and b"m0" in z and z.mem == c.mem
    z._check()
    c._check()
