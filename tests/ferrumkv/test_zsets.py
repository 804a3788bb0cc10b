"""Sorted set commands: redis-py RESP3 and RESP2, raw bytes (doubles, pairs), memory
accounting, and a differential replay against a real redis-server 7.0."""

from __future__ import annotations

import random

import pytest
import redis

from tests.ferrumkv.container_diff import assert_same_as_redis


def check(server):
    server.call(server.server.ks._check)


def test_zadd_options_resp3(server, r):
    assert r.zadd("z", {"a": 1, "b": 2, "c": 3}) == 3
    assert r.zadd("z", {"a": 5, "d": 4}, nx=True) == 1
    assert r.zadd("z", {"a": 0, "e": 9}, xx=True, ch=True) == 1
    assert r.zadd("z", {"a": -1, "b": 10}, gt=True, ch=True) == 1
    assert r.zadd("z", {"c": 1}, lt=True) == 0 and r.zscore("z", "c") == 1.0
    assert r.zadd("z", {"a": 2.5}, incr=True) == 2.5
    assert r.zadd("z", {"a": 1}, incr=True, nx=True) is None
    assert r.zincrby("z", 1.5, "new") == 1.5
    assert r.zadd("nokey", {"a": 1}, xx=True) == 0 and r.exists("nokey") == 0
    with pytest.raises(redis.ResponseError, match="^XX and NX options at the same time"):
        r.execute_command("ZADD", "z", "NX", "XX", "1", "a")
    with pytest.raises(redis.ResponseError, match="^GT, LT, and/or NX options"):
        r.execute_command("ZADD", "z", "GT", "LT", "1", "a")
    with pytest.raises(redis.ResponseError, match="^INCR option supports a single"):
        r.execute_command("ZADD", "z", "INCR", "1", "a", "2", "b")
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.execute_command("ZADD", "z", "1e400", "a")
    r.zadd("inf", {"x": "inf"})
    with pytest.raises(redis.ResponseError, match=r"^resulting score is not a number \(NaN\)$"):
        r.zincrby("inf", "-inf", "x")
    check(server)


def test_reads_and_ranges(r, r2):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert r.zscore("z", "b") == 2.0 and r.zscore("z", "zz") is None
    assert r.zmscore("z", ["a", "zz"]) == [1.0, None]
    assert r.zcard("z") == 4 and r.zrank("z", "c") == 2 and r.zrevrank("z", "c") == 1
    assert r.zrange("z", 0, -1) == [b"a", b"b", b"c", b"d"]
    assert r.zrange("z", 0, 1, withscores=True) == [[b"a", 1.0], [b"b", 2.0]]
    assert r2.zrange("z", 0, 1, withscores=True) == [(b"a", 1.0), (b"b", 2.0)]
    assert r.zrange("z", "(1", 3, byscore=True) == [b"b", b"c"]
    assert r.zrange("z", "+inf", "-inf", byscore=True, desc=True, offset=1, num=2) == [b"c", b"b"]
    assert r.zrangebyscore("z", "-inf", "(3") == [b"a", b"b"]
    assert r.zrevrangebyscore("z", 4, 2, withscores=True) == [[b"d", 4.0], [b"c", 3.0], [b"b", 2.0]]
    assert r.zrevrange("z", 0, 0) == [b"d"]
    assert r.zcount("z", "(1", "+inf") == 3
    r.zadd("lex", {"a": 0, "b": 0, "c": 0, "d": 0})
    assert r.zrangebylex("lex", "[b", "(d") == [b"b", b"c"]
    assert r.zrevrangebylex("lex", "+", "(b") == [b"d", b"c"]
    assert r.zlexcount("lex", "-", "+") == 4
    assert r.zrangestore("dst", "z", 1, 2) == 2 and r.zrange("dst", 0, -1) == [b"b", b"c"]


def test_score_text_on_the_wire(raw):
    c = raw()
    c.send(b"*4\r\n$4\r\nZADD\r\n$1\r\nz\r\n$3\r\n1.1\r\n$1\r\na\r\n")
    assert c.read_reply() == b":1\r\n"
    c.send(b"*3\r\n$6\r\nZSCORE\r\n$1\r\nz\r\n$1\r\na\r\n")
    assert c.read_reply() == b"$18\r\n1.1000000000000001\r\n"        # Redis 7.0: %.17g
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"*3\r\n$6\r\nZSCORE\r\n$1\r\nz\r\n$1\r\na\r\n")
    assert c.read_reply() == b",1.1000000000000001\r\n"              # a RESP3 double
    c.send(b"*5\r\n$6\r\nZRANGE\r\n$1\r\nz\r\n$1\r\n0\r\n$2\r\n-1\r\n$10\r\nWITHSCORES\r\n")
    assert c.read_reply() == b"*1\r\n*2\r\n$1\r\na\r\n,1.1000000000000001\r\n"
    c.send(b"*2\r\n$7\r\nZPOPMIN\r\n$1\r\nz\r\n")                   # no count: flat pair
    assert c.read_reply() == b"*2\r\n$1\r\na\r\n,1.1000000000000001\r\n"


def test_pops_and_removals(server, r):
    r.zadd("z", {m: i for i, m in enumerate("abcdefgh")})
    assert r.zpopmin("z") == [b"a", 0.0]                     # RESP3, no count: one flat pair
    assert r.zpopmax("z", 2) == [[b"h", 7.0], [b"g", 6.0]]
    assert r.zremrangebyrank("z", 0, 0) == 1                  # b
    assert r.zremrangebyscore("z", "(2", 4) == 2              # d e
    r.zadd("lex", {"a": 0, "b": 0, "c": 0})
    assert r.zremrangebylex("lex", "-", "[b") == 2
    assert r.zrem("z", "c", "f", "nope") == 2 and r.exists("z") == 0
    assert r.zpopmin("z") == [] and r.zpopmin("z", 3) == []
    check(server)


def test_zrandmember_and_zscan(server, r):
    server.call(lambda: server.server.ks.rng.seed(3))
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    assert r.zrandmember("z") in (b"a", b"b", b"c")
    assert r.zrandmember("z", 10) == [b"c", b"b", b"a"]      # Redis walks from the tail
    assert len(set(r.zrandmember("z", 2))) == 2
    assert len(r.zrandmember("z", -7, withscores=True)) == 7
    assert r.zscan("z", 0) == (0, [(b"a", 1.0), (b"b", 2.0), (b"c", 3.0)])
    assert r.zscan("z", 0, match="b") == (0, [(b"b", 2.0)])


def test_memory_accounting_and_stats(server, r):
    ks = server.server.ks
    base = server.call(lambda: ks.used_memory)
    rng = random.Random(8)
    for i in range(300):
        m = b"m%d" % rng.randrange(200) * rng.randrange(1, 4)   # some members > 64 bytes
        op = rng.randrange(6)
        if op == 0:
            r.zadd("z", {m: rng.uniform(-5, 5), b"x%d" % i: rng.randrange(3)})
        elif op == 1:
            r.zincrby("z", rng.uniform(-1, 1), m)
        elif op == 2:
            r.zrem("z", m, b"x%d" % rng.randrange(i + 1))
        elif op == 3:
            r.zpopmin("z", rng.randrange(3))
        elif op == 4:
            r.zremrangebyscore("z", rng.uniform(-5, 0), rng.uniform(0, 5))
        else:
            r.zrangestore("z2", "z", 0, rng.randrange(-3, 20))
        if i % 25 == 0:
            check(server)
    r.delete("z", "z2")
    check(server)
    assert server.call(lambda: ks.used_memory) == base

    r.zadd("k", {"a": 1})
    hits, misses = server.call(lambda: (ks.hits, ks.misses))
    r.zscore("k", "a"), r.zrange("nokey", 0, -1), r.zadd("k", {"b": 2}), r.zpopmin("k")
    assert server.call(lambda: (ks.hits, ks.misses)) == (hits + 1, misses + 1)


def test_wrongtype_and_denyoom(make_server):
    s = make_server(maxmemory="1", maxmemory_policy="noeviction")
    c = redis.Redis(port=s.port, protocol=3)
    c.set("str", "x")
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        c.zadd("z", {"a": 1})
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
        c.zscore("str", "a")
    assert c.zpopmin("nokey") == []


ZSET_SCRIPT = r"""
set str x
zadd z 1 a 2 b 3 c 4 d 5 e
zadd z nx 10 a 10 f
zadd z xx 20 b 20 g
zadd z ch 1 a 2 b 7 h
zadd z gt ch 0 a 30 b
zadd z lt ch 100 c 0 c
zadd z incr 1 a
zadd z incr nx 1 a
zadd z incr xx 1 nope
zadd z incr gt -1 a
zadd z nx xx 1 a
zadd z gt lt 1 a
zadd z lt nx 1 a
zadd z incr 1 a 2 b
zadd z 1 a 2
zadd z nx
zadd z x a
zadd z nan a
zadd z 1e400 a
zadd z 1e-400 a
zadd z 1e-310 tiny
zadd z " 1" a
zadd z 1_0 a
zadd z 0x10 hex
zadd z inf inf -inf minf
zadd z incr -inf inf
zadd str 1 a
zadd str x a
zadd nz xx 1 a
zadd nz xx incr 1 a
exists nz
zadd z -0 negz
zscore z negz
zscore z tiny
zscore nz a
zscore str a
zmscore z a nope b
zmscore nz a b
zmscore str a
zincrby z 2.5 a
zincrby z x a
zincrby nz2 1.1 a
zincrby str 1 a
zcard str
zrank z nope
zrank nz a
zrevrank z a
zrange z 0 -1 withscores
zrange z 0 -1 rev withscores
zrange z 2 1
zrange z 0 x
zrange nz x 1
zrange str x 1
zrange str 0 -1
zrange z (1 5 byscore
zrange z 5 (1 byscore rev withscores
zrange z -inf +inf byscore limit 1 2
zrange z -inf +inf byscore limit 1 -1
zrange z -inf +inf byscore limit -1 2
zrange z +inf -inf byscore rev limit 2 3 withscores
zrange z 0 -1 limit 1 1
zrange z 0 -1 byscore limit 1
zrange z 0 -1 byscore limit 1 x
zrange z 0 -1 byscore byscore
zrange z 0 -1 rev rev
zrange z - + bylex withscores
zrange z x 1 byscore
zrange z ( 1 byscore
zrange z [1 2 byscore
zrange z 1e400 1 byscore
zrange z (nan 1 byscore
zrangebyscore z 1 5 withscores limit 0 2
zrangebyscore z 1 5 byscore
zrangebyscore z 1 5 rev
zrangebyscore z 1 5 limit 0
zrangebyscore nz x 5
zrangebyscore str 1 5
zrevrangebyscore z 5 1 withscores limit 1 2
zrevrange z 0 2 withscores
zrevrange z 0 2 byscore
zadd lex 0 a 0 b 0 c 0 d 0 e 0 f
zrangebylex lex [b (e
zrangebylex lex (b [e limit 1 2
zrangebylex lex + -
zrangebylex lex (a (a
zrangebylex lex - + withscores
zrangebylex lex a b
zrangebylex lex "" +
zrangebylex lex ++ -
zrevrangebylex lex (e [b
zrevrangebylex lex + - limit 1 2
zrange lex [e [b bylex rev
zrangebylex str - +
zlexcount lex [b (e
zlexcount lex x +
zlexcount nz - +
zlexcount str - +
zcount z (1 5
zcount z 5 1
zcount z x 1
zcount str 1 2
zadd mixed 1 b 2 a 3 d 0 c
zrangebylex mixed [a [c
zrangebylex mixed [a [b
zrevrangebylex mixed [c [a
zlexcount mixed [a [c
zrangestore dst z 0 2
zrange dst 0 -1 withscores
zrangestore dst lex [b [d bylex
zrangestore dst nz 0 -1
exists dst
zrangestore dst z 0 1 withscores
zrangestore dst str 0 1
zrangestore str z 0 1
type str
set str x
zpopmin z
zpopmax z 2
zpopmin z 0
zpopmin z -1
zpopmin z x
zpopmin z 1 2
zpopmin nz 2
zpopmin str
zpopmin str 0
zadd r 1 a 2 b 3 c 4 d 5 e 6 f
zremrangebyrank r -1 -1
zremrangebyrank r 5 1
zremrangebyrank r x 1
zremrangebyrank str 0 1
zremrangebyscore r (2 4
zremrangebyscore r x 1
zremrangebyscore nz 1 2
zrange r 0 -1 withscores
zremrangebylex lex x +
zremrangebylex lex - +
exists lex
zremrangebylex str - +
zrandmember nz
zrandmember nz 3
zrandmember str 3
zrandmember r x
zrandmember r 1 withscores x
zrandmember r -9223372036854775808
zrandmember r 0
zrandmember r 100
zrandmember r 100 withscores
zadd one 1.5 a
zrandmember one
zrandmember one -3 withscores
zscan one 0
zscan z 0
zscan z 0 match a
zscan z x
zscan z 0 count 0
zscan nz 0
zscan str 0
zadd fmt 0.1 a 1e20 b 1.5e-7 c -2.5 d 123456789012345678 e 3.0 f
zrange fmt 0 -1 withscores
zscan fmt 0
zadd neg0 -0 a
zscore neg0 a
zincrby neg0 -0 b
zscore neg0 b
zadd zz -0 m0 1 m1 2 m2 3 m3 4 m4 5 m5 6 m6 7 m7 8 m8 9 m9 10 m10 11 m11 12 m12 13 m13 14 m14 15 m15 16 m16 17 m17 18 m18 19 m19 20 m20 21 m21 22 m22 23 m23 24 m24 25 m25 26 m26 27 m27 28 m28 29 m29 30 m30 31 m31 32 m32 33 m33 34 m34 35 m35 36 m36 37 m37 38 m38 39 m39 40 m40 41 m41 42 m42 43 m43 44 m44 45 m45 46 m46 47 m47 48 m48 49 m49 50 m50 51 m51 52 m52 53 m53 54 m54 55 m55 56 m56 57 m57 58 m58 59 m59 60 m60 61 m61 62 m62 63 m63 64 m64 65 m65 66 m66 67 m67 68 m68 69 m69 70 m70 71 m71 72 m72 73 m73 74 m74 75 m75 76 m76 77 m77 78 m78 79 m79 80 m80 81 m81 82 m82 83 m83 84 m84 85 m85 86 m86 87 m87 88 m88 89 m89 90 m90 91 m91 92 m92 93 m93 94 m94 95 m95 96 m96 97 m97 98 m98 99 m99 100 m100 101 m101 102 m102 103 m103 104 m104 105 m105 106 m106 107 m107 108 m108 109 m109 110 m110 111 m111 112 m112 113 m113 114 m114 115 m115 116 m116 117 m117 118 m118 119 m119 120 m120 121 m121 122 m122 123 m123 124 m124 125 m125 126 m126 127 m127 128 m128 129 m129
zscore zz m0
zadd zz -0 late
zscore zz late
zadd zlong -0 a 1 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
zscore zlong a
zadd
zrange z 0
"""


@pytest.mark.needs_redis
def test_same_replies_as_redis(redis_server, server):
    assert assert_same_as_redis(redis_server, server.port, ZSET_SCRIPT) > 300


def _big_zset_script(seed: int) -> str:
    """Sets of 3000 members (several ScoreOrder sublists), then ranks, ranges, removals and
    updates at random positions; one set with tied scores, one all at score 0 (lex)."""
    rng = random.Random(seed)
    lines = []
    scores = ["-inf", "-2.5", "0", "1", "1", "7.25", "inf"]
    for i in range(0, 3000, 100):
        pairs = []
        for k in range(i, i + 100):
            s = rng.choice(scores) if rng.random() < 0.4 else "%d" % rng.randrange(-500, 500)
            pairs.append("%s m%04d" % (s, k))
        lines.append("zadd big " + " ".join(pairs))
        lines.append("zadd lex " + " ".join("0 w%04d" % k for k in range(i, i + 100)))
    for _ in range(150):
        op = rng.randrange(9)
        a, b = sorted(rng.randrange(-3100, 3100) for _ in range(2))
        m = "m%04d" % rng.randrange(3000)
        if op == 0:
            lines.append("zrank big %s" % m)
            lines.append("zrevrank big %s" % m)
        elif op == 1:
            lines.append("zrange big %d %d withscores" % (a, a + rng.randrange(40)))
        elif op == 2:
            lo, hi = sorted(rng.randrange(-520, 520) for _ in range(2))
            lines.append("zrangebyscore big (%d %d withscores limit %d 30"
                         % (lo, hi, rng.randrange(50)))
            lines.append("zcount big %d (%d" % (lo, hi))
        elif op == 3:
            lo, hi = sorted("w%04d" % rng.randrange(3000) for _ in range(2))
            lines.append("zrangebylex lex [%s (%s limit 0 25" % (lo, hi))
            lines.append("zlexcount lex (%s [%s" % (lo, hi))
        elif op == 4:
            lines.append("zremrangebyrank big %d %d" % (a, a + rng.randrange(20)))
        elif op == 5:
            lines.append("zpopmin big %d" % rng.randrange(1, 4))
            lines.append("zpopmax big %d" % rng.randrange(1, 4))
        elif op == 6:
            lines.append("zrem big %s m%04d" % (m, rng.randrange(3000)))
            lines.append("zrem lex w%04d" % rng.randrange(3000))
        elif op == 7:
            lines.append("zadd big %s %s" % (rng.choice(scores + ["%d" % rng.randrange(99)]), m))
            lines.append("zincrby big 1.5 %s" % m)
        else:
            lines.append("zremrangebyscore big %d %d" % (a // 10, a // 10 + 3))
            lines.append("zcard big")
    lines.append("zrange big 0 -1 withscores")
    lines.append("zrange lex 0 -1")
    return "\n".join(lines)


@pytest.mark.needs_redis
@pytest.mark.parametrize("seed", [1, 2])
def test_big_sets_same_replies_as_redis(redis_server, server, seed):
    redis.Redis(port=redis_server).delete("big", "lex")     # ours is a fresh server
    assert assert_same_as_redis(redis_server, server.port, _big_zset_script(seed)) > 600
    check(server)
