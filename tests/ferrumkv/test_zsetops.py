"""ZUNION / ZINTER / ZDIFF (+STORE) and ZINTERCARD: redis-py, raw RESP3, and differential
replays against a real redis-server 7.0 (errors, inf/NaN rules, random workloads)."""

from __future__ import annotations

import random

import pytest
import redis

from tests.ferrumkv.container_diff import assert_same_as_redis


def test_union_inter_diff_redis_py(r):
    r.zadd("a", {"x": 1, "y": 2, "z": 3})
    r.zadd("b", {"y": 10, "z": 20, "w": 30})
    r.sadd("s", "z", "w", "q")
    assert r.zunion(["a", "b"], withscores=True) == [
        [b"x", 1.0], [b"y", 12.0], [b"z", 23.0], [b"w", 30.0]]
    assert r.zinter(["a", "b", "s"], aggregate="MAX") == [b"z"]
    assert r.zdiff(["a", "s"]) == [b"x", b"y"]
    assert r.zunionstore("d", {"a": 2, "s": -1}) == 5
    assert r.zscore("d", "q") == -1.0 and r.zscore("d", "z") == 5.0
    assert r.zinterstore("d", ["a", "nokey"]) == 0 and r.exists("d") == 0
    assert r.zintercard(2, ["a", "b"]) == 2
    assert r.zintercard(2, ["a", "b"], limit=1) == 1
    assert r.zdiffstore("d", ["b", "a"]) == 1 and r.zrange("d", 0, -1) == [b"w"]
    r.set("str", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.zunion(["a", "str"])


def test_inf_minus_inf_raw(raw):
    c = raw()
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"ZADD p inf m\r\nZADD n -inf m\r\nZUNION 2 p n WITHSCORES\r\n")
    assert c.read_reply() == b":1\r\n" and c.read_reply() == b":1\r\n"
    assert c.read_reply() == b"*1\r\n*2\r\n$1\r\nm\r\n,0\r\n"
    c.send(b"ZINTER 2 p n WEIGHTS 0 1 AGGREGATE MIN WITHSCORES\r\n")
    assert c.read_reply() == b"*1\r\n*2\r\n$1\r\nm\r\n,-inf\r\n"


EDGES = """
zadd a 1 x 2 y 3 z 0 zero
zadd b 10 y 20 z 30 w -0 zero
sadd s z w q zero
zadd inf inf x -inf y inf z
zunion 0 a
zunionstore d 0 a
zunion 3 a
zunion -1 a
zunion x a
zintercard 0 a
zintercard 2 a
zintercard 1 a limit -1
zintercard 1 a limit x
zintercard 1 a limit 1 limit 0
zunion 1 a weights x
zunion 1 a weights 1 2
zunion 1 a aggregate foo
zunion 1 a aggregate
zdiff 1 a weights 1
zunionstore d 1 a withscores
zunion 1 a weights nan
zintercard 1 a withscores
zunion 99999999999999999999 a
zunion 2 a b withscores
zinter 2 a b withscores
zinter 3 a b s withscores aggregate max
zinter 3 a b s weights 1 2 3 aggregate min withscores
zunion 3 a b s weights 0.5 -1 inf withscores
zunion 2 a inf weights 0 1 withscores
zunion 2 inf inf weights 1 -1 withscores
zinter 2 inf inf weights 1 -1 withscores
zinter 2 inf a weights 0 1 withscores aggregate max
zunion 2 inf a aggregate min withscores
zunion 2 a b weights -1 -1 withscores
zunionstore d 2 a b weights -1 -1
zrange d 0 -1 withscores
zdiff 3 a b s withscores
zdiff 1 nokey
zdiff 2 nokey a
zdiffstore d 2 a b
zrange d 0 -1 withscores
zdiffstore d 2 a a
exists d
zinterstore a 2 a b
zrange a 0 -1 withscores
object encoding a
zintercard 3 a b s
zintercard 2 a nokey
zunion 2 s s withscores
zinter 2 s s withscores aggregate sum
set str v
zunion 2 a str
zunionstore str 1 b
type str
zunion 2 a b WITHSCORES WEIGHTS 2 3 AGGREGATE SUM
zunion 2 a b withscores withscores
"""


def test_edges_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, EDGES)


def _script(seed: int) -> str:
    rng = random.Random(seed)
    keys = ["k%d" % i for i in range(5)]
    members = ["m%d" % i for i in range(40)] + ["long" + "x" * 70]
    scores = ["1", "2.5", "-3", "0.1", "1e300", "-1e300", "inf", "-inf", "0", "7", "0.3"]
    lines = []
    for k in keys:
        n = rng.choice([0, 3, 20, 150])
        if n == 0:
            continue
        if rng.random() < 0.2:
            lines.append("sadd %s %s" % (k, " ".join(rng.sample(members, min(n, 41)))))
        else:
            pairs = []
            for _ in range(n):
                pairs += [rng.choice(scores) if rng.random() < 0.5 else repr(rng.uniform(-9, 9)),
                          rng.choice(members)]
            lines.append("zadd %s %s" % (k, " ".join(pairs)))
    for _ in range(80):
        op = rng.choice(["zunion", "zinter", "zdiff", "zunionstore", "zinterstore",
                         "zdiffstore", "zintercard"])
        ks = [rng.choice(keys + ["none"]) for _ in range(rng.randint(1, 4))]
        args = [str(len(ks))] + ks
        if op in ("zunion", "zinter", "zunionstore", "zinterstore"):
            if rng.random() < 0.5:
                args += ["weights"] + [rng.choice(["1", "2", "-1", "0", "0.5", "inf", "1.1"])
                                       for _ in ks]
            if rng.random() < 0.5:
                args += ["aggregate", rng.choice(["sum", "min", "max", "MAX"])]
        if op in ("zunion", "zinter", "zdiff") and rng.random() < 0.7:
            args.append("withscores")
        if op == "zintercard" and rng.random() < 0.5:
            args += ["limit", str(rng.randint(0, 5))]
        if op.endswith("store"):
            dst = rng.choice(keys + ["dst"])
            lines.append("%s %s %s" % (op, dst, " ".join(args)))
            lines.append("zrange %s 0 -1 withscores" % dst)
            lines.append("object encoding %s" % dst)
        else:
            lines.append("%s %s" % (op, " ".join(args)))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(5))
def test_random_same_as_redis(redis_server, server, seed):
    assert_same_as_redis(redis_server, server.port, _script(seed))
