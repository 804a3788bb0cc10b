"""List commands: redis-py RESP3 and RESP2, raw bytes, memory accounting, and a
differential replay against a real redis-server 7.0."""

from __future__ import annotations

import random

import pytest
import redis

from tests.ferrumkv.container_diff import assert_same_as_redis


def check(server):
    """Keyspace invariants, including used_memory == the sum of every entry's cost."""
    server.call(server.server.ks._check)


def test_push_pop_range_resp3(server, r):
    assert r.rpush("l", "a", "b", "c") == 3
    assert r.lpush("l", "x", "y") == 5          # y x a b c
    assert r.lrange("l", 0, -1) == [b"y", b"x", b"a", b"b", b"c"]
    assert r.lrange("l", -2, 100) == [b"b", b"c"]
    assert r.lrange("l", 3, 1) == []
    assert r.llen("l") == 5
    assert r.lindex("l", -1) == b"c" and r.lindex("l", 9) is None
    assert r.lpop("l") == b"y" and r.rpop("l") == b"c"
    assert r.lpop("l", 2) == [b"x", b"a"]
    assert r.rpop("l", 5) == [b"b"]
    assert r.exists("l") == 0                   # an emptied list is deleted
    assert r.lpop("l") is None and r.lpop("l", 2) is None
    check(server)


def test_pushx_set_insert_rem_trim(server, r2):
    assert r2.lpushx("l", "a") == 0 and r2.exists("l") == 0
    r2.rpush("l", "a", "b", "a", "c", "a")
    assert r2.rpushx("l", "z") == 6
    assert r2.lset("l", 1, "B") is True
    with pytest.raises(redis.ResponseError, match="^index out of range$"):
        r2.lset("l", 10, "x")
    with pytest.raises(redis.ResponseError, match="^no such key$"):
        r2.lset("nol", 0, "x")
    assert r2.linsert("l", "BEFORE", "c", "C0") == 7
    assert r2.linsert("l", "AFTER", "nope", "x") == -1
    assert r2.linsert("nol", "AFTER", "a", "x") == 0
    assert r2.lrem("l", -1, "a") == 1           # the last "a"
    assert r2.lrange("l", 0, -1) == [b"a", b"B", b"a", b"C0", b"c", b"z"]
    assert r2.lrem("l", 0, "a") == 2
    assert r2.ltrim("l", 1, -2) is True
    assert r2.lrange("l", 0, -1) == [b"C0", b"c"]
    assert r2.ltrim("l", 5, 1) is True and r2.exists("l") == 0
    check(server)


def test_lpos(r):
    r.rpush("p", "a", "b", "a", "c", "a")
    assert r.lpos("p", "a") == 0
    assert r.lpos("p", "a", rank=-1) == 4
    assert r.lpos("p", "a", rank=2, count=0) == [2, 4]
    assert r.lpos("p", "a", maxlen=2, count=0) == [0]
    assert r.lpos("p", "z") is None and r.lpos("p", "z", count=1) == []
    with pytest.raises(redis.ResponseError, match="RANK can't be zero"):
        r.lpos("p", "a", rank=0)


def test_lmove_and_rpoplpush(server, r):
    r.rpush("a", "1", "2", "3")
    assert r.lmove("a", "b", "LEFT", "RIGHT") == b"1"
    assert r.rpoplpush("a", "b") == b"3"
    assert r.lmove("a", "a", "LEFT", "RIGHT") == b"2"     # rotation of a 1-element list
    assert r.lrange("b", 0, -1) == [b"3", b"1"]
    assert r.rpoplpush("a", "b") == b"2" and r.exists("a") == 0
    assert r.rpoplpush("nol", "b") is None
    check(server)


def test_null_replies_for_count_are_arrays(raw):
    c = raw()
    c.send(b"*3\r\n$4\r\nLPOP\r\n$3\r\nnol\r\n$1\r\n2\r\n")
    assert c.read_reply() == b"*-1\r\n"                  # RESP2 null array, not $-1
    c.send(b"*2\r\n$4\r\nLPOP\r\n$3\r\nnol\r\n")
    assert c.read_reply() == b"$-1\r\n"
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"*3\r\n$4\r\nRPOP\r\n$3\r\nnol\r\n$1\r\n2\r\n")
    assert c.read_reply() == b"_\r\n"
    c.send(b"*4\r\n$5\r\nRPUSH\r\n$1\r\nk\r\n$1\r\na\r\n$1\r\nb\r\n*3\r\n$4\r\nLPOP\r\n$1\r\nk\r\n$1\r\n0\r\n")
    assert c.read_reply() == b":2\r\n"
    assert c.read_reply() == b"*0\r\n"


def test_wrongtype_and_errors(r):
    r.set("s", "x")
    for call in (lambda: r.lpush("s", "a"), lambda: r.lrange("s", 0, 1),
                 lambda: r.llen("s"), lambda: r.lpop("s")):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE Operation against a key"):
            call()
    with pytest.raises(redis.ResponseError, match="must be positive"):
        r.execute_command("LPOP", "s", "-1")           # count is parsed before the lookup
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'lpop'"):
        r.execute_command("LPOP", "a", "1", "2")


def test_lrange_matches_python_slices(server, r):
    """LRANGE walks from the nearer end; check every kind of window on a 300-element list."""
    items = [b"%d" % i for i in range(300)]
    r.rpush("l", *items)
    rng = random.Random(7)
    for _ in range(200):
        start, stop = rng.randint(-350, 350), rng.randint(-350, 350)
        lo = max(start + 300 if start < 0 else start, 0)
        hi = min(stop + 300 if stop < 0 else stop, 299)
        want = items[lo:hi + 1] if lo <= hi else []
        assert r.lrange("l", start, stop) == want, (start, stop)


def test_memory_accounting_and_stats(server, r):
    ks = server.server.ks
    base = server.call(lambda: ks.used_memory)
    rng = random.Random(3)
    for i in range(300):
        op = rng.randrange(6)
        if op == 0:
            r.lpush("m", *[b"v" * rng.randrange(40) for _ in range(rng.randrange(1, 4))])
        elif op == 1:
            r.rpop("m", rng.randrange(3))
        elif op == 2:
            r.lset("m", 0, b"w" * rng.randrange(60)) if r.exists("m") else None
        elif op == 3:
            r.lrem("m", rng.randrange(-2, 3), b"v" * rng.randrange(3))
        elif op == 4:
            r.ltrim("m", rng.randrange(-5, 5), rng.randrange(-5, 20))
        else:
            r.linsert("m", "AFTER", b"", b"x" * rng.randrange(9))
        if i % 25 == 0:
            check(server)
    r.delete("m")
    check(server)
    assert server.call(lambda: ks.used_memory) == base

    r.rpush("k", "a")
    hits, misses = server.call(lambda: (ks.hits, ks.misses))
    r.lrange("k", 0, -1), r.lrange("nokey", 0, -1), r.rpush("k", "b"), r.lpop("k")
    assert server.call(lambda: (ks.hits, ks.misses)) == (hits + 1, misses + 1)


def test_watch_sees_list_writes(r):
    r.rpush("w", "a")
    with r.pipeline() as p:
        p.watch("w")
        r.rpush("w", "b")                                   # another client's write
        p.multi()
        p.lpop("w")
        with pytest.raises(redis.WatchError):
            p.execute()


def test_denyoom(make_server):
    s = make_server(maxmemory="1", maxmemory_policy="noeviction")
    c = redis.Redis(port=s.port, protocol=3)
    c.set("x", "y")                                         # now used_memory > maxmemory
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.rpush("l", "a")
    assert c.lpop("l") is None                              # not denyoom: still served


LIST_SCRIPT = r"""
set str x
rpush l a b c a b c
lpush l z y
lrange l 0 -1
lrange l -100 100
lrange l 2 1
lrange l x 1
lrange str x 1
lrange str 0 1
lrange nol x 1
llen l
llen str
lindex l -1
lindex l 100
lindex l x
lindex nol x
lindex str x
lset l -1 C
lset l 100 q
lset l x q
lset nol x q
lset str x q
lrem l 0 a
lrem l -1 c
lrem l x a
lrem nol x a
lrem str 1 a
rpush l2 1 2 3 4 5 6 7
ltrim l2 1 -2
lrange l2 0 -1
ltrim l2 5 1
exists l2
ltrim str 0 1
ltrim str x 1
rpush l3 a b c
linsert l3 before b X
linsert l3 after nope Y
linsert l3 middle b X
linsert nol before a b
linsert str middle a b
linsert str before a b
lpushx nol a
rpushx l3 r s
lpushx str a
lpop l3
lpop l3 2
lpop l3 0
lpop l3 -1
lpop l3 x
lpop l3 1 2
lpop nol 2
lpop nol 0
lpop str 0
rpop l3 100
exists l3
rpush p a b a c a
lpos p a rank -3
lpos p a rank 4
lpos p a rank -9223372036854775808
lpos p a rank -1 count 0
lpos p a rank 2 maxlen 3 count 0
lpos p z count 0
lpos p a rank 0
lpos p a rank x
lpos p a count x
lpos p a maxlen -1
lpos p a foo 1
lpos p a rank
lpos nol a
lpos nol a count 1
lpos str a rank 0
lpos str a
rpush m1 a b c
lmove m1 m2 left right
lmove m1 m1 left right
lmove m1 m2 up down
lmove nol m2 left left
lmove m1 str left left
lmove str m1 left left
rpoplpush m1 m3
rpoplpush m1 m3
exists m1
lrange m3 0 -1
lpush
lrange l 0
"""


@pytest.mark.needs_redis
def test_same_replies_as_redis(redis_server, server):
    assert assert_same_as_redis(redis_server, server.port, LIST_SCRIPT) > 150
