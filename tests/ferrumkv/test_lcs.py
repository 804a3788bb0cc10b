"""LCS: the bit-vector table and walk against a literal port of Redis's O(n*m) algorithm,
replies through redis-py and raw RESP3, the memory guard, and differential replays against
a real redis-server 7.0."""

from __future__ import annotations

import random

import pytest
import redis

from ferrumkv_py.commands.lcs import lcs_rows, lcs_walk
from tests.ferrumkv.container_diff import assert_same_as_redis


def redis_lcs(a: bytes, b: bytes, minlen: int = 0, withlen: bool = False):
    """Redis 7.0 lcsCommand's table and walk, cell by cell (the test oracle)."""
    alen, blen = len(a), len(b)
    dp = [[0] * (blen + 1) for _ in range(alen + 1)]
    for i in range(1, alen + 1):
        for j in range(1, blen + 1):
            if a[i - 1] == b[j - 1]:
                dp[i][j] = dp[i - 1][j - 1] + 1
            else:
                dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
    idx = dp[alen][blen]
    result = bytearray(idx)
    a_s, a_e, b_s, b_e = alen, 0, 0, 0
    out = []
    i, j = alen, blen
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            result[idx - 1] = a[i - 1]
            if a_s == alen:
                a_s = a_e = i - 1
                b_s = b_e = j - 1
            elif a_s == i and b_s == j:
                a_s -= 1
                b_s -= 1
            else:
                emit = True
            if a_s == 0 or b_s == 0:
                emit = True
            idx -= 1
            i -= 1
            j -= 1
        else:
            if dp[i - 1][j] > dp[i][j - 1]:
                i -= 1
            else:
                j -= 1
            if a_s != alen:
                emit = True
        n = a_e - a_s + 1
        if emit:
            if minlen == 0 or n >= minlen:
                item = [[a_s, a_e], [b_s, b_e]]
                if withlen:
                    item.append(n)
                out.append(item)
            a_s = alen
    return bytes(result), out


def test_rows_give_the_lcs_table():
    rng = random.Random(3)
    for _ in range(200):
        x = bytes(rng.choice(b"abc") for _ in range(rng.randint(1, 12)))
        y = bytes(rng.choice(b"abcd") for _ in range(rng.randint(1, 12)))
        rows = lcs_rows(x, y)
        for i in range(len(x) + 1):
            for j in range(len(y) + 1):
                want = 0 if not i or not j else None
                if want is None:
                    dp = [[0] * (j + 1) for _ in range(i + 1)]
                    for p in range(1, i + 1):
                        for q in range(1, j + 1):
                            dp[p][q] = (dp[p - 1][q - 1] + 1 if x[p - 1] == y[q - 1]
                                        else max(dp[p - 1][q], dp[p][q - 1]))
                    want = dp[i][j]
                assert j - (rows[i] & ((1 << j) - 1)).bit_count() == want


@pytest.mark.parametrize("alphabet", [b"ab", b"abcd", b"abcdefghij"])
def test_walk_matches_redis_algorithm(alphabet):
    rng = random.Random(len(alphabet))
    for _ in range(400):
        a = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 40)))
        b = bytes(rng.choice(alphabet) for _ in range(rng.choice([1, 5, 40, 90])))
        if rng.random() < 0.5:
            a, b = b, a
        minlen = rng.choice([0, 0, 2, 3])
        withlen = rng.random() < 0.5
        assert lcs_walk(a, b, minlen, withlen) == redis_lcs(a, b, minlen, withlen), (a, b)


def test_long_runs_are_jumped():
    # one short string against a long one: the walk must not step through every byte
    a = b"xyz"
    b = b"q" * 20_000 + b"x" + b"q" * 1000 + b"yz" + b"q" * 500
    assert lcs_walk(a, b, 0, True) == redis_lcs(a, b, 0, True)
    assert lcs_walk(b, a, 0, True) == redis_lcs(b, a, 0, True)
    # 2M steps for Redis's walk; here a handful of jumps (a loop would take seconds)
    big = b"q" * 2_000_000 + b"x" + b"q" * 1000 + b"yz"
    assert lcs_walk(a, big) == (b"xyz", [[[1, 2], [2001001, 2001002]],
                                         [[0, 0], [2000000, 2000000]]])
    assert lcs_walk(big, a)[0] == b"xyz"


def test_lcs_redis_py_and_errors(r):
    r.mset({"k1": "ohmytext", "k2": "mynewtext"})
    assert r.lcs("k1", "k2") == b"mytext"
    assert r.lcs("k1", "k2", len=True) == 6
    assert r.lcs("k1", "k2", idx=True, minmatchlen=4, withmatchlen=True) == {
        b"matches": [[[4, 7], [5, 8], 4]], b"len": 6}
    r.rpush("l", "a")
    with pytest.raises(redis.ResponseError, match="must contain string values"):
        r.lcs("k1", "l")
    with pytest.raises(redis.ResponseError, match="just use IDX"):
        r.lcs("k1", "k2", len=True, idx=True)


def test_memory_guard(r):
    r.config_set("proto-max-bulk-len", 1024 * 1024)
    r.set("big", b"a" * 600)
    with pytest.raises(redis.ResponseError, match="exceeds proto-max-bulk-len"):
        r.lcs("big", "big")
    r.set("big", b"a" * 510)        # 511 * 511 * 4 < 1 MiB
    assert r.lcs("big", "big", len=True) == 510


EDGES = """
mset k1 ohmytext k2 mynewtext e ""
lcs k1 k2
lcs k1 k2 len
lcs k1 k2 idx
lcs k1 k2 idx withmatchlen
lcs k1 k2 idx minmatchlen 4 withmatchlen
lcs k1 k2 idx minmatchlen -3
lcs k1 k2 len idx
lcs k1 k2 minmatchlen
lcs k1 k2 minmatchlen x
lcs k1 k2 foo
lcs k1 nokey
lcs k1 nokey idx
lcs nokey nokey len
lcs k1 e idx
lpush lst a
lcs k1 lst
lcs lst k1 len
lcs k1 k1 idx withmatchlen
set a1 "abcabcabcxyzabc"
set a2 "xabcyabcxyzzzzabcab"
lcs a1 a2 idx withmatchlen
lcs a2 a1 idx withmatchlen
lcs a2 a1 idx minmatchlen 3
"""


def test_edges_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, EDGES)


def _script(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(30):
        alphabet = rng.choice(["ab", "abcd", "acgt", "abcdefghijklmnop"])
        la, lb = rng.choice([1, 10, 100, 400]), rng.choice([1, 10, 100, 400])
        lines.append("set a %s" % "".join(rng.choice(alphabet) for _ in range(la)))
        lines.append("set b %s" % "".join(rng.choice(alphabet) for _ in range(lb)))
        opts = ["", "len", "idx", "idx withmatchlen", "idx minmatchlen 2",
                "idx minmatchlen 5 withmatchlen"]
        lines.append("lcs a b " + rng.choice(opts))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_random_same_as_redis(redis_server, server, seed):
    assert_same_as_redis(redis_server, server.port, _script(seed))
