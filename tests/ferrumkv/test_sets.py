"""Set commands: the SPOP / SRANDMEMBER index, redis-py RESP3 and RESP2, raw bytes, memory
accounting, and a differential replay against a real redis-server 7.0."""

from __future__ import annotations

import random
from collections import Counter

import pytest
import redis

from ferrumkv_py.commands.sets import INDEX_REBUILD_MIN_STALE, SetIndex, set_index
from ferrumkv_py.values import RSet
from tests.ferrumkv.container_diff import assert_same_as_redis


def check(server):
    server.call(server.server.ks._check)


# ---- the random-access index ----

def _index_ops(s: RSet, rng: random.Random, steps: int) -> None:
    """Random SADD / SREM / SPOP on ``s`` through the same helpers the commands use."""
    from ferrumkv_py.commands import sets as m
    for _ in range(steps):
        op = rng.randrange(3)
        x = b"%d" % rng.randrange(400)
        if op == 0 and x not in s:
            s.add(x)
            m._added(s, x)
        elif op == 1 and x in s:
            s.discard(x)
            m._removed(s, x)
        elif op == 2 and s:
            idx = set_index(s)
            s.discard(idx.take(idx.draw(rng.random)))
        if getattr(s, "index", None) is not None:
            s.index._check(s)


def test_index_invariants_under_random_changes():
    rng = random.Random(11)
    s = RSet(b"%d" % i for i in range(200))
    set_index(s)
    _index_ops(s, rng, 5000)
    idx = s.index
    idx._check(s)
    # stale slots never outnumber live members (beyond the rebuild threshold)
    assert len(idx.stale) <= max(len(s), INDEX_REBUILD_MIN_STALE)


def test_index_draws_are_uniform():
    """Seeded, so deterministic: every member of a set with many stale slots is drawn
    within 30% of the mean (the tolerance is wide; this catches a biased pick, e.g. one
    that favours members next to stale slots)."""
    rng = random.Random(2)
    s = RSet(b"%d" % i for i in range(100))
    idx = set_index(s)
    for i in range(0, 100, 2):                 # remove every other member: half the slots stale
        m = b"%d" % i
        s.discard(m)
        idx.stale.add(m)
    counts = Counter(idx.items[idx.draw(rng.random)] for _ in range(50000))
    assert set(counts) == s
    mean = 50000 / len(s)
    assert all(abs(n - mean) < 0.3 * mean for n in counts.values())


def test_index_is_built_lazily_and_survives_copies():
    s = RSet([b"a", b"b"])
    assert getattr(s, "index", None) is None
    idx = set_index(s)
    assert set(idx.items) == {b"a", b"b"} and set_index(s) is idx
    assert getattr(RSet(s), "index", None) is None      # a copy starts without an index


# ---- commands ----

def test_basic_resp3(server, r):
    assert r.sadd("s", "a", "b", "c", "a") == 3
    assert r.smembers("s") == {b"a", b"b", b"c"}       # a RESP3 set
    assert r.sismember("s", "a") == 1 and r.smismember("s", ["a", "z"]) == [1, 0]
    assert r.scard("s") == 3 and r.srem("s", "a", "z") == 1
    assert r.smembers("nokey") == set()
    popped = r.spop("s", 5)
    assert set(popped) == {b"b", b"c"} and r.exists("s") == 0
    assert r.spop("s") is None and r.spop("s", 2) == []
    check(server)


def test_set_reply_types_on_the_wire(raw):
    c = raw()
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"*3\r\n$4\r\nSADD\r\n$1\r\ns\r\n$1\r\na\r\n")
    assert c.read_reply() == b":1\r\n"
    c.send(b"*2\r\n$8\r\nSMEMBERS\r\n$1\r\ns\r\n")
    assert c.read_reply() == b"~1\r\n$1\r\na\r\n"
    c.send(b"*3\r\n$11\r\nSRANDMEMBER\r\n$1\r\ns\r\n$1\r\n5\r\n")
    assert c.read_reply() == b"*1\r\n$1\r\na\r\n"           # an array, not a set
    c.send(b"*3\r\n$4\r\nSPOP\r\n$1\r\nx\r\n$1\r\n3\r\n")
    assert c.read_reply() == b"~0\r\n"


def test_spop_and_srandmember_counts(server, r):
    server.call(lambda: server.server.ks.rng.seed(4))
    r.sadd("s", *range(100))
    got = r.srandmember("s", 10)
    assert len(got) == 10 and len(set(got)) == 10          # distinct
    assert len(r.srandmember("s", -300)) == 300             # repeats allowed
    assert len(r.srandmember("s", 70)) == 70                # the "copy and sample" path
    assert len(r.srandmember("s", 500)) == 100
    seen = set()
    for _ in range(40):
        seen.update(r.spop("s", 2))
    assert len(seen) == 80 and r.scard("s") == 20
    assert seen.isdisjoint(r.smembers("s"))
    assert r.srem("s", *list(r.smembers("s"))[:5]) == 5    # removals after the index exists
    while r.scard("s"):
        assert r.spop("s") is not None
    assert r.exists("s") == 0
    check(server)


def test_algebra_and_stores(server, r):
    r.sadd("a", 1, 2, 3, 4)
    r.sadd("b", 3, 4, 5)
    assert r.sinter("a", "b") == {b"3", b"4"} and r.sinter("a", "nokey") == set()
    assert r.sunion("a", "b", "nokey") == {b"1", b"2", b"3", b"4", b"5"}
    assert r.sdiff("a", "b") == {b"1", b"2"} and r.sdiff("nokey", "a") == set()
    assert r.sintercard(2, ["a", "b"]) == 2 and r.sintercard(2, ["a", "b"], limit=1) == 1
    r.set("d", "string", ex=100)
    assert r.sunionstore("d", ["a", "b"]) == 5 and r.ttl("d") == -1   # overwritten, no TTL
    assert r.sinterstore("d", ["a", "nokey"]) == 0 and r.exists("d") == 0
    assert r.sdiffstore("d", ["a", "b"]) == 2 and r.smembers("d") == {b"1", b"2"}
    assert r.smove("a", "b", 1) is True and r.smove("a", "b", 1) is False
    assert r.smove("d", "new", 1) and r.smove("d", "new", 2) and r.exists("d") == 0
    r.set("str", "x")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        r.sinter("nokey", "str")                            # every key is type-checked
    check(server)


def test_memory_accounting_and_stats(server, r):
    ks = server.server.ks
    base = server.call(lambda: ks.used_memory)
    rng = random.Random(9)
    for i in range(300):
        op = rng.randrange(5)
        if op == 0:
            r.sadd("s", *[b"m%d" % rng.randrange(60) for _ in range(rng.randrange(1, 4))])
        elif op == 1:
            r.srem("s", b"m%d" % rng.randrange(60))
        elif op == 2:
            r.spop("s", rng.randrange(3))
        elif op == 3:
            r.smove("s", "t", b"m%d" % rng.randrange(60))
        else:
            r.sunionstore("u", ["s", "t"])
        if i % 25 == 0:
            check(server)
    r.delete("s", "t", "u")
    check(server)
    assert server.call(lambda: ks.used_memory) == base

    r.sadd("k", "a")
    hits, misses = server.call(lambda: (ks.hits, ks.misses))
    r.smembers("k"), r.sinter("k", "nokey"), r.sadd("k", "b"), r.spop("k")
    assert server.call(lambda: (ks.hits, ks.misses)) == (hits + 2, misses + 1)


def test_benchmark_style_spop_drains_a_big_set(server, r):
    """redis-benchmark's SPOP test: one big set, popped many times (each pop is O(1))."""
    with r.pipeline(transaction=False) as p:
        for i in range(0, 20000, 1000):
            p.sadd("big", *[b"element:%012d" % j for j in range(i, i + 1000)])
        p.execute()
    with r.pipeline(transaction=False) as p:
        for _ in range(19990):
            p.spop("big")
        popped = p.execute()
    assert len(set(popped)) == 19990 and r.scard("big") == 10
    check(server)


SET_SCRIPT = r"""
set str x
sadd s a b c
sadd s a d
sadd str a
srem s a x
srem nos a
srem str a
scard s
scard str
sismember s b
sismember nos a
sismember str a
smismember s b z
smismember nos a b
smismember str a
sadd one x
smembers one
~ smembers s
smembers nos
smembers str
spop one
exists one
spop nos
spop nos 2
spop nos 0
spop str
spop str 0
spop str x
spop s -1
spop s x
spop s 1 2
sadd one x
spop one 0
spop one 5
sadd one x
srandmember one
srandmember one 2
srandmember one -2
srandmember one 0
~ srandmember s 10
srandmember nos
srandmember nos 2
srandmember str
srandmember str 2
srandmember one x
srandmember one 1 2
srandmember one -9223372036854775808
srandmember nos x
sadd a 1 2 3 x
sadd b 2 3 4
sadd c 3 4 5
~ sinter a b
sinter a b c
sinter a nos
sinter nos a
sinter a str
sinter nos str
sinterstore d a b
~ smembers d
sinterstore d a nos
exists d
sinterstore d a str
set dstr y
sinterstore dstr a b
type dstr
~ sunion a b nos
sunion one nos
sunionstore d one nos
sunion a str
~ sdiff a b c
sdiff nos a
sdiff one str
sdiffstore d one a
sdiffstore d one one
exists d
sintercard 2 a b
sintercard 3 a b c
sintercard 2 a b limit 1
sintercard 2 a b limit 0
sintercard 2 a nos
sintercard 1 a limit
sintercard 1 a limit x
sintercard 1 a limit -1
sintercard 1 a foo 1
sintercard 0 a
sintercard x a
sintercard 3 a b
sintercard 1 str
sintercard 2 nos str
sadd m1 x y
smove m1 m2 x
smove m1 m2 x
smove m1 m1 y
smove m1 m1 z
smove nos m2 a
smove m1 str y
smove str m1 y
smove nos str y
smove m1 m2 y
exists m1
~ smembers m2
sscan one 0
sscan one 0 match x
sscan one 0 match y
sscan one x
sscan one " 1"
sscan one 18446744073709551616
sscan one 0 count 0
sscan one 0 count x
sscan one 0 match
sscan one 0 type string
sscan nos x
sscan nos 0
sscan str 0
sscan str 0 count 0
sscan nos 0 count 0
sadd
spop
"""


@pytest.mark.needs_redis
def test_same_replies_as_redis(redis_server, server):
    assert assert_same_as_redis(redis_server, server.port, SET_SCRIPT) > 200
