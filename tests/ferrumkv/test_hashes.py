"""Hash commands: redis-py RESP3 and RESP2, raw bytes, long double increments, memory
accounting, and a differential replay against a real redis-server 7.0."""

from __future__ import annotations

import random

import pytest
import redis

from tests.ferrumkv.container_diff import assert_same_as_redis


def check(server):
    server.call(server.server.ks._check)


def test_set_get_resp3_map(server, r):
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hset("h", "a", "one") == 0
    assert not r.hsetnx("h", "a", "x") and r.hsetnx("h", "c", "3")
    assert r.hget("h", "a") == b"one" and r.hget("h", "zz") is None
    assert r.hmget("h", "a", "zz", "c") == [b"one", None, b"3"]
    assert r.hgetall("h") == {b"a": b"one", b"b": b"2", b"c": b"3"}
    assert r.hgetall("nokey") == {}
    assert r.hkeys("h") == [b"a", b"b", b"c"] and r.hvals("h") == [b"one", b"2", b"3"]
    assert r.hlen("h") == 3 and r.hexists("h", "b") is True and r.hstrlen("h", "a") == 3
    assert r.hdel("h", "a", "b", "nope") == 2
    assert r.hdel("h", "c") == 1 and r.exists("h") == 0
    check(server)


def test_hgetall_wire_types(raw):
    c = raw()
    c.send(b"*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\nv\r\n")
    assert c.read_reply() == b":1\r\n"
    c.send(b"*2\r\n$7\r\nHGETALL\r\n$1\r\nh\r\n")
    assert c.read_reply() == b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"       # RESP2: flat array
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"*2\r\n$7\r\nHGETALL\r\n$1\r\nh\r\n")
    assert c.read_reply() == b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n"       # RESP3: map
    c.send(b"*2\r\n$7\r\nHGETALL\r\n$1\r\nx\r\n")
    assert c.read_reply() == b"%0\r\n"


def test_hincrby_and_errors(r2):
    assert r2.hincrby("h", "n", 5) == 5 and r2.hincrby("h", "n", -7) == -2
    r2.hset("h", "s", "abc")
    with pytest.raises(redis.ResponseError, match="^hash value is not an integer$"):
        r2.hincrby("h", "s", 1)
    r2.hset("h", "big", "9223372036854775807")
    with pytest.raises(redis.ResponseError, match="^increment or decrement would overflow$"):
        r2.hincrby("h", "big", 1)
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'hset'"):
        r2.execute_command("HSET", "h", "a", "1", "b")


def test_hincrbyfloat_is_long_double(raw, r2):
    c = raw()

    def incr(field, by):
        c.send(b"*4\r\n$12\r\nHINCRBYFLOAT\r\n$1\r\nf\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"
               % (len(field), field, len(by), by))
        return c.read_reply()

    assert incr(b"x", b"0.1") == b"$3\r\n0.1\r\n"
    assert incr(b"x", b"0.2") == b"$3\r\n0.3\r\n"          # a double sum prints 0.30000000000000004
    assert incr(b"y", b"10.5") == b"$4\r\n10.5\r\n"
    assert incr(b"y", b"0.1") == b"$4\r\n10.6\r\n"
    assert incr(b"z", b"0x10") == b"$2\r\n16\r\n"
    assert incr(b"z", b"-16") == b"$1\r\n0\r\n"
    assert incr(b"z", b"inf") == b"-ERR value is NaN or Infinity\r\n"
    r2.hset("f", "bad", "1x")
    with pytest.raises(redis.ResponseError, match="^hash value is not a float$"):
        r2.hincrbyfloat("f", "bad", 1)
    assert r2.hincrbyfloat("f", "x", 1) == 1.3                # redis-py parses the text


def test_hrandfield(r, r2):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hrandfield("h") in (b"a", b"b", b"c")
    assert sorted(r.hrandfield("h", 2)) in ([b"a", b"b"], [b"a", b"c"], [b"b", b"c"])
    assert r.hrandfield("h", 5) == [b"a", b"b", b"c"]
    many = r.hrandfield("h", -20)
    assert len(many) == 20 and set(many) <= {b"a", b"b", b"c"}
    pairs = r.execute_command("HRANDFIELD", "h", "-4", "WITHVALUES")     # RESP3: pairs
    assert len(pairs) == 4 and all(dict(a=1, b=2, c=3)[k.decode()] == int(v) for k, v in pairs)
    flat = r2.execute_command("HRANDFIELD", "h", "2", "WITHVALUES")       # RESP2: flat
    assert len(flat) == 4
    assert r.hrandfield("nokey") is None and r.hrandfield("nokey", 3) == []


def test_hscan(r):
    r.hset("h", mapping={"f1": "a", "f2": "b", "g": "c"})
    assert r.hscan("h", 0) == (0, {b"f1": b"a", b"f2": b"b", b"g": b"c"})
    assert r.hscan("h", 0, match="f*") == (0, {b"f1": b"a", b"f2": b"b"})
    with pytest.raises(redis.ResponseError, match="^invalid cursor$"):
        r.execute_command("HSCAN", "h", "x")


def test_memory_accounting_and_stats(server, r):
    ks = server.server.ks
    base = server.call(lambda: ks.used_memory)
    rng = random.Random(5)
    for i in range(300):
        f = b"f%d" % rng.randrange(20)
        op = rng.randrange(5)
        if op == 0:
            r.hset("h", f, b"v" * rng.randrange(50))
        elif op == 1:
            r.hdel("h", f, b"f%d" % rng.randrange(20))
        elif op == 2:
            r.hsetnx("h", f, b"n" * rng.randrange(9))
        elif op == 3:
            try:
                r.hincrby("h", f, rng.randrange(-99, 99))
            except redis.ResponseError:
                pass
        else:
            try:
                r.hincrbyfloat("h", f, rng.random())
            except redis.ResponseError:
                pass
        if i % 25 == 0:
            check(server)
    r.delete("h")
    check(server)
    assert server.call(lambda: ks.used_memory) == base

    r.hset("k", "f", "v")
    hits, misses = server.call(lambda: (ks.hits, ks.misses))
    r.hget("k", "f"), r.hget("nokey", "f"), r.hgetall("k"), r.hset("k", "g", "w")
    assert server.call(lambda: (ks.hits, ks.misses)) == (hits + 2, misses + 1)


def test_wrongtype(r):
    r.rpush("l", "a")
    for call in (lambda: r.hset("l", "f", "v"), lambda: r.hget("l", "f"),
                 lambda: r.hgetall("l"), lambda: r.hincrbyfloat("l", "f", 1)):
        with pytest.raises(redis.ResponseError, match="^WRONGTYPE"):
            call()


HASH_SCRIPT = r"""
set str x
hset h f1 v1 f2 v2
hset h f1 V1 f3 v3
hset h f1 v1 f2
hset str f v
hmset h a 1 b 2
hmset h a
hmset str a 1
hsetnx h a 9
hsetnx h new 9
hsetnx str a 1
hget h f1
hget nh f
hget str f
hmget h f1 nope f3
hmget nh a b
hmget str a
hgetall h
hgetall nh
hgetall str
hkeys h
hvals h
hkeys nh
hvals str
hlen str
hexists h f1
hexists nh f
hstrlen h f1
hstrlen nh f
hdel h f1 f1 nope
hdel nh f
hdel str f
hincrby h n 5
hincrby h n x
hincrby h n 9223372036854775807
hincrby h f2 1
hset h neg -9223372036854775808
hincrby h neg -1
hincrby h n 9223372036854775808
hincrby str n x
hincrby str n 1
hset h sp " 1"
hincrby h sp 1
hset h lead 01
hincrby h lead 1
hgetall h
hincrbyfloat f fl 0.1
hincrbyfloat f fl 0.2
hincrbyfloat f fl2 10.5
hincrbyfloat f fl2 0.1
hincrbyfloat f fl2 -10.6
hincrbyfloat f fl3 5.0e3
hincrbyfloat f fl3 2.0e2
hincrbyfloat f fl3 inf
hincrbyfloat f fl3 -inf
hincrbyfloat f fl3 nan
hincrbyfloat f fl3 x
hincrbyfloat f fl3 " 1"
hincrbyfloat f fl3 "1 "
hincrbyfloat f fl3 0x1.8p1
hincrbyfloat f fl3 1e-30
hincrbyfloat f fl4 -0
hincrbyfloat f fl6 3
hincrbyfloat f fl6 -3
hincrbyfloat str f 1
hincrbyfloat str f x
hincrbyfloat str f inf
hset f infv inf
hincrbyfloat f infv 1
hset f nanv nan
hincrbyfloat f nanv 1
hincrbyfloat big g 1e400
hincrbyfloat big g 1e308
hincrbyfloat big k 1e4000
hincrbyfloat big k 1e4000
hincrbyfloat big m 1e5000
hincrbyfloat big t 1.7976931348623157e308
hincrbyfloat big t 1.7976931348623157e308
hgetall f
hrandfield nh
hrandfield nh 3
hrandfield str
hrandfield str 3
hrandfield h x
hrandfield h 1 withvalues x
hrandfield h 1 foo
hrandfield h -9223372036854775808
hrandfield h 0
hrandfield h 0 withvalues
hrandfield h 100
hrandfield h 100 withvalues
hrandfield nh x
hrandfield str x
hset one f v
hrandfield one
hrandfield one -3
hrandfield one -3 withvalues
hrandfield one 1 WITHVALUES
hscan h 0
hscan h 0 match f*
hscan h 0 match f? count 100
hscan h x
hscan h " 1"
hscan h 0 count 0
hscan h 0 count x
hscan h 0 match
hscan h 0 novalues
hscan nh 0
hscan str 0
hscan nh x
hdel one f
exists one
hset
hget h
"""


@pytest.mark.needs_redis
def test_same_replies_as_redis(redis_server, server):
    assert assert_same_as_redis(redis_server, server.port, HASH_SCRIPT) > 200
