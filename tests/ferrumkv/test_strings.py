"""String commands end to end (redis-py RESP3 and RESP2, raw bytes), the long double
arithmetic of INCRBYFLOAT, keyspace hit/miss counting, and a differential run against a real
redis-server 7.0 when one is installed."""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py.commands._longdouble import (LD_INF, format_long_double_human, long_double_add,
                                             parse_long_double)
from ferrumkv_py.errors import CommandError
from ferrumkv_py.values import RList

from .conftest import START_MS, err, stats
from .diff_util import same_replies


@pytest.fixture
def plain(server):
    """A RESP3 redis-py client without reply callbacks: replies exactly as sent."""
    client = redis.Redis(port=server.port, protocol=3, socket_timeout=10)
    client.response_callbacks.clear()
    yield client
    client.close()


@pytest.fixture
def lst(put):
    """A list value at key ``l``, inserted directly (no dependency on list commands)."""
    put(b"l", RList([b"a"]))
    return b"l"


# ---- GET / SET ----

def test_get_set_resp3_and_resp2(r, r2):
    assert r.get("k") is None and r2.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v" and r2.get("k") == b"v"
    assert r2.set("k", b"\x00\xffbinary") is True
    assert r.get("k") == b"\x00\xffbinary"


def test_raw_replies(raw):
    c = raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
           b"*2\r\n$3\r\nGET\r\n$2\r\nno\r\n*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nw\r\n$2\r\nNX\r\n")
    assert [c.read_reply() for _ in range(4)] == [b"+OK\r\n", b"$1\r\nv\r\n", b"$-1\r\n",
                                                  b"$-1\r\n"]
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"GET no\r\nSETNX k x\r\nINCRBYFLOAT f 10.5\r\nAPPEND k xyz\r\n")
    assert [c.read_reply() for _ in range(4)] == [b"_\r\n", b":0\r\n", b"$4\r\n10.5\r\n",
                                                  b":4\r\n"]
    c.send(b"SET k v EX 0\r\nGET\r\n")
    assert c.read_reply() == b"-ERR invalid expire time in 'set' command\r\n"
    assert c.read_reply() == b"-ERR wrong number of arguments for 'get' command\r\n"


@pytest.mark.parametrize("args,message", [
    (("EX",), "syntax error"),
    (("EX", "abc"), "value is not an integer or out of range"),
    (("EX", "0"), "invalid expire time in 'set' command"),
    (("PX", "-1"), "invalid expire time in 'set' command"),
    (("EX", "9223372036854775"), "invalid expire time in 'set' command"),   # overflows + now
    (("EX", "9223372036854776"), "invalid expire time in 'set' command"),
    (("NX", "XX"), "syntax error"),
    (("EX", "10", "PX", "10"), "syntax error"),
    (("KEEPTTL", "EX", "10"), "syntax error"),
    (("EX", "10", "KEEPTTL"), "syntax error"),
    (("EX", "abc", "NX", "XX"), "syntax error"),            # syntax is checked first
    (("PERSIST",), "syntax error"),
    (("FOO",), "syntax error"),
])
def test_set_option_errors(r, args, message):
    assert err(r, "SET", "k", "v", *args) == message
    assert r.exists("k") == 0


def test_set_options(r, clock):
    assert r.execute_command("SET", "k", "v", "EX", "10", "EX", "20") is True   # last wins
    assert r.pttl("k") == 20_000
    assert r.set("k", "w", keepttl=True) and r.pttl("k") == 20_000
    assert r.set("k", "x") and r.ttl("k") == -1
    assert r.set("k", "v", px=1500) and r.pttl("k") == 1500
    assert r.set("k", "v", exat=START_MS // 1000 + 100) and r.ttl("k") == 100
    assert r.set("k", "v", pxat=START_MS + 5) and r.pttl("k") == 5
    assert r.set("k", "v", nx=True) is None
    assert r.set("k2", "v", xx=True) is None and r.exists("k2") == 0
    assert r.set("k", "new", nx=True, get=True) == b"v" and r.get("k") == b"v"
    assert r.set("k", "new", xx=True, get=True) == b"v" and r.get("k") == b"new"
    assert r.set("k2", "v", xx=True, get=True) is None and r.exists("k2") == 0
    assert r.set("k2", "v", nx=True, get=True) is None and r.get("k2") == b"v"
    assert r.set("k", "v", ex=10, get=True) == b"new"


def test_set_past_deadline_expires_lazily(r, clock):
    hits, misses, expired = stats(r)
    assert r.set("k", "v", exat=1)
    assert r.get("k") is None
    assert stats(r) == (hits, misses + 1, expired + 1)


def test_set_get_on_wrong_type(r, lst):
    assert err(r, "SET", lst, "x", "GET").startswith("WRONGTYPE")
    assert r.type(lst) == b"list"
    assert err(r, "SET", lst, "x", "GET", "EX", "0") == "invalid expire time in 'set' command"
    assert r.set(lst, "x") and r.get(lst) == b"x"          # plain SET ignores the type


def test_setnx_setex_psetex(r, clock):
    assert r.setnx("k", "1") is True and r.setnx("k", "2") is False
    assert r.get("k") == b"1"
    assert r.execute_command("SETEX", "k", 10, "v") and r.ttl("k") == 10
    assert r.execute_command("PSETEX", "k", 2500, "v") and r.pttl("k") == 2500
    assert err(r, "SETEX", "k", "0", "v") == "invalid expire time in 'setex' command"
    assert err(r, "PSETEX", "k", "-5", "v") == "invalid expire time in 'psetex' command"
    assert err(r, "SETEX", "k", "x", "v") == "value is not an integer or out of range"


def test_getex(r, lst, clock):
    assert r.getex("nope", ex=0) is None                      # missing key: no validation
    r.set("k", "v")
    assert err(r, "GETEX", "k", "EX", "0") == "invalid expire time in 'getex' command"
    for bad in (("PERSIST", "EX", "1"), ("EX", "1", "PERSIST"), ("KEEPTTL",), ("NX",)):
        assert err(r, "GETEX", "k", *bad) == "syntax error"
    assert r.getex("k", ex=7) == b"v" and r.ttl("k") == 7
    assert r.getex("k", px=1234) == b"v" and r.pttl("k") == 1234
    assert r.getex("k", persist=True) == b"v" and r.ttl("k") == -1
    assert r.getex("k", exat=START_MS // 1000 + 60) == b"v" and r.ttl("k") == 60
    assert r.getex("k") == b"v" and r.ttl("k") == 60
    _, _, expired = stats(r)
    assert r.getex("k", pxat=START_MS) == b"v"                # past absolute: deleted
    assert r.exists("k") == 0 and stats(r)[2] == expired      # a delete, not an expiry
    assert err(r, "GETEX", lst).startswith("WRONGTYPE")


def test_getdel_getset_mget_mset(r, lst, clock):
    r.set("a", "1", ex=100)
    assert r.getset("a", "2") == b"1" and r.ttl("a") == -1    # GETSET drops the TTL
    assert r.getset("new", "x") is None and r.get("new") == b"x"
    assert r.getdel("a") == b"2" and r.getdel("a") is None
    assert err(r, "GETDEL", lst).startswith("WRONGTYPE")
    assert err(r, "GETSET", lst, "1").startswith("WRONGTYPE")
    assert r.mset({"a": "1", "b": "2"})
    assert r.mget("a", "nope", "b", lst) == [b"1", None, b"2", None]
    assert err(r, "MSET", "a", "1", "b") == "wrong number of arguments for 'mset' command"
    assert r.msetnx({"a": "9", "c": "3"}) is False and r.exists("c") == 0
    assert r.execute_command("MSETNX", "c", "1", "d", "2", "c", "3") == 1
    assert r.mget("c", "d") == [b"3", b"2"]
    r.expire("c", 100)
    r.mset({"c": "x"})
    assert r.ttl("c") == -1


# ---- counters ----

def test_incr_family(r, lst, clock):
    assert r.incr("n") == 1 and r.incrby("n", 41) == 42 and r.decr("n") == 41
    assert r.decrby("n", 50) == -9
    r.expire("n", 100)
    assert r.incr("n") == -8 and r.ttl("n") == 100           # counters keep the TTL
    r.set("big", "9223372036854775806")
    assert r.incr("big") == 9223372036854775807
    assert err(r, "INCR", "big") == "increment or decrement would overflow"
    assert err(r, "DECRBY", "big", "-9223372036854775808") == "decrement would overflow"
    r.set("low", "-9223372036854775808")
    assert err(r, "DECR", "low") == "increment or decrement would overflow"
    for bad in (" 1", "01", "-0", "+1", "1.0", "", "12345678901234567890"):
        r.set("s", bad)
        assert err(r, "INCR", "s") == "value is not an integer or out of range"
    assert err(r, "INCRBY", "n", "abc") == "value is not an integer or out of range"
    assert err(r, "INCRBY", lst, "abc") == "value is not an integer or out of range"
    assert err(r, "INCRBY", lst, "1").startswith("WRONGTYPE")


@pytest.mark.parametrize("start,incr,result", [
    (None, "10.5", b"10.5"), ("10.5", "0.1", b"10.6"), ("0.1", "0.2", b"0.3"),
    ("3", "-3", b"0"), ("0", "-1e-20", b"0"), ("5000", ".5", b"5000.5"), ("1", "5.", b"6"),
    ("1", "+5", b"6"), ("16", "1.5e-10", b"16.00000000015"), ("0", "0x10", b"16"),
    ("0", "1.23456789012345678901", b"1.23456789012345679"),
    ("1.23456789012345679", "1e20", b"100000000000000000000"),
    ("1e3", "1", b"1001"), ("0", "0x1.8p1", b"3"), ("1", "1e-4940", b"1"),
])
def test_incrbyfloat_matches_redis_long_double(r, plain, start, incr, result):
    if start is not None:
        r.set("f", start)
    assert plain.execute_command("INCRBYFLOAT", "f", incr) == result
    assert r.get("f") == result


def test_incrbyfloat_errors_and_huge_values(r, plain, lst):
    r.set("f", "1")
    for bad in ("abc", " 1", "1 ", "1_0", "nan", "1e5000", "1.2e4932", "1e-5000", "1e", "0x",
                ""):
        assert err(r, "INCRBYFLOAT", "f", bad) == "value is not a valid float", bad
    for inf in ("inf", "-infinity"):
        assert err(r, "INCRBYFLOAT", "f", inf) == "increment would produce NaN or Infinity"
    r.set("f", "1.1e4932")
    assert err(r, "INCRBYFLOAT", "f", "1.1e4932") == "increment would produce NaN or Infinity"
    assert err(r, "INCRBYFLOAT", lst, "abc").startswith("WRONGTYPE")
    r.set("f", "1e308")
    doubled = plain.execute_command("INCRBYFLOAT", "f", "1e308")   # past a double's range
    assert len(doubled) == 309 and doubled.startswith(b"19999999999999999999")
    r.set("f", "1e4000")
    assert len(plain.execute_command("INCRBYFLOAT", "f", "1")) == 4000   # 1e4000 rounds down


def test_long_double_helpers_exact():
    def add(a, b):
        return format_long_double_human(long_double_add(parse_long_double(a),
                                                        parse_long_double(b)))
    # 10.5 + 0.1 in doubles prints 10.59999999999999964; the 64-bit significand gives 10.6
    assert add(b"10.5", b"0.1") == b"10.6"
    assert add(b"0", b"1e308").startswith(b"99999999999999999996685879655845645660560099847")
    assert len(add(b"0", b"1e4932")) == 4933                # past CPython's str() limit
    assert parse_long_double(b"inf") is LD_INF and parse_long_double(b"-INF") is LD_INF
    with pytest.raises(CommandError):
        parse_long_double(b"1\x00")          # Redis checks strtold consumed every byte
    assert long_double_add(parse_long_double(b"1.1e4932"),
                           parse_long_double(b"1.1e4932")) is LD_INF
    assert format_long_double_human(parse_long_double(b"-0.0")) == b"0"
    assert format_long_double_human(parse_long_double(b"-1e-30")) == b"0"
    assert format_long_double_human(parse_long_double(b"-2.5")) == b"-2.5"
    with pytest.raises(CommandError):
        parse_long_double(b"x" * 6000)


# ---- APPEND / STRLEN / ranges ----

def test_append_strlen_getrange(r, lst):
    assert r.append("a", "12") == 2 and r.append("a", "3") == 3 and r.get("a") == b"123"
    assert r.strlen("a") == 3 and r.strlen("nope") == 0
    r.set("g", "Hello World")
    cases = [(0, 4, b"Hello"), (-3, -1, b"rld"), (-1, -3, b""), (5, 2, b""),
             (0, -100, b"H"), (-100, -100, b"H"), (100, 200, b""), (-100, 100, b"Hello World")]
    for start, end, want in cases:
        assert r.getrange("g", start, end) == want, (start, end)
    assert r.execute_command("SUBSTR", "g", 0, 2) == b"Hel"
    assert r.getrange("nope", 0, -1) == b""
    assert err(r, "GETRANGE", "g", "a", "1") == "value is not an integer or out of range"
    for args in (("APPEND", lst, "x"), ("STRLEN", lst), ("GETRANGE", lst, 0, 1)):
        assert err(r, *args).startswith("WRONGTYPE")


def test_setrange(r, lst, server):
    assert err(r, "SETRANGE", "b", "-1", "x") == "offset is out of range"
    assert err(r, "SETRANGE", "b", "x", "x") == "value is not an integer or out of range"
    assert r.setrange("b", 0, "") == 0 and r.exists("b") == 0
    assert r.setrange("b", 3, "x") == 4 and r.get("b") == b"\x00\x00\x00x"
    assert r.setrange("b", 1, "") == 4
    assert r.setrange("b", 1, "yy") == 4 and r.get("b") == b"\x00yyx"
    assert r.setrange("b", 0, "zzzzzz") == 6 and r.get("b") == b"zzzzzz"
    r.config_set("proto-max-bulk-len", "1mb")
    too_big = "string exceeds maximum allowed size (proto-max-bulk-len)"
    assert err(r, "SETRANGE", "b", 1024 * 1024, "x") == too_big
    assert err(r, "SETRANGE", "nb", 1024 * 1024, "x") == too_big
    assert r.setrange("nb", 1024 * 1024, "") == 0
    assert r.setrange("b", 1024 * 1024 - 1, "x") == 1024 * 1024
    r.set("a", "x")
    assert err(r, "APPEND", "a", "y" * (1024 * 1024)) == too_big
    assert err(r, "SETRANGE", lst, 0, "x").startswith("WRONGTYPE")
    server.call(server.server.ks._check)


# ---- keyspace statistics (Redis 7.0.15, measured) ----

@pytest.mark.parametrize("cmd,hits,misses", [
    (("GET", "s"), 1, 0), (("GET", "nope"), 0, 1), (("MGET", "s", "nope", "s"), 2, 1),
    (("GETEX", "s"), 1, 0), (("GETDEL", "nope"), 0, 1), (("GETSET", "s", "2"), 1, 0),
    (("SET", "s", "3", "GET"), 1, 0), (("SET", "nope", "3", "GET"), 0, 1),
    (("STRLEN", "s"), 1, 0), (("GETRANGE", "nope", 0, 1), 0, 1), (("SUBSTR", "s", 0, 1), 1, 0),
    (("SET", "s", "1"), 0, 0), (("SETNX", "s", "1"), 0, 0), (("MSETNX", "s", "1"), 0, 0),
    (("MSET", "s", "1"), 0, 0), (("INCR", "s"), 0, 0), (("INCRBYFLOAT", "s", "1"), 0, 0),
    (("APPEND", "s", "1"), 0, 0), (("SETRANGE", "s", 0, "x"), 0, 0), (("SETEX", "s", 9, "v"), 0, 0),
])
def test_keyspace_hits_and_misses(r, cmd, hits, misses):
    r.set("s", "1")
    h0, m0, _ = stats(r)
    r.execute_command(*cmd)
    h1, m1, _ = stats(r)
    assert (h1 - h0, m1 - m0) == (hits, misses)


def test_invariants_after_string_workload(r, server):
    for i in range(200):
        r.set("k%d" % (i % 50), "v" * (i % 7), ex=(i % 3) or None)
        r.append("a%d" % (i % 13), "xy")
        r.incrby("n%d" % (i % 11), i)
        r.setrange("r%d" % (i % 5), i % 17, "zz")
        if i % 9 == 0:
            r.getdel("k%d" % (i % 50))
    server.call(server.server.ks._check)


# ---- differential: the same bytes to redis-server 7.0 and to ferrumkv ----

DIFF_SCRIPT = [
    "SET k v EX", "SET k v EX abc", "SET k v EX 0", "SET k v NX XX", "SET k v NX GET",
    "SET k v GET GET", "SET k v nx", "GET k", "SET k w NX GET", "SET k w XX GET",
    "SET k2 w XX GET", "SET k2 w NX GET", "SET k v KEEPTTL GET", "SETNX k v", "SETNX k9 v",
    "GETEX k EX 0", "GETEX k PERSIST EX 1", "GETEX k FOO", "GETEX missing EX 0", "GETEX k",
    "GETEX k EXAT 1", "EXISTS k", "INCR n", "INCRBY n abc", "INCRBY n 9223372036854775806",
    "INCR n", "DECRBY n -9223372036854775808", "DECRBY n 9223372036854775807", "DECR x",
    "SET s 01", "INCR s", "SET f 10.5", "INCRBYFLOAT f 0.1", "INCRBYFLOAT f 1e308",
    "INCRBYFLOAT f 1e4000", "INCRBYFLOAT f -1e4000", "INCRBYFLOAT f 1e5000", "INCRBYFLOAT g 0x10",
    "INCRBYFLOAT g 1.5e-10", "INCRBYFLOAT h -1e-20", "INCRBYFLOAT h 1e-4940", "INCRBYFLOAT i 0.1",
    "INCRBYFLOAT i 0.7", "INCRBYFLOAT i -0.8", "INCRBYFLOAT i 5e-18",
    "INCRBYFLOAT j 123456789.123456789", "INCRBYFLOAT j 9007199254740993", "SETRANGE j 2 \x00",
    "INCRBYFLOAT j 1", "INCRBYFLOAT h infinity", "APPEND a 12", "APPEND a 3",
    "GET a", "SETRANGE b 3 x", "GET b", "SETRANGE b -1 x", "SET g Hello", "GETRANGE g -3 -1",
    "GETRANGE g -1 -3", "GETRANGE g 0 -100", "SUBSTR g 1 2", "STRLEN g", "MSET a", "MSET a 1 b 2",
    "MSETNX a 1 c 2", "MSETNX c 1 c 2", "GET c", "MGET a b nokey c", "GETSET a 9", "GETDEL a",
    "GETDEL a", "SETEX k 0 v", "PSETEX k abc v", "SET k v PXAT 1", "GET k",
]


@pytest.mark.needs_redis
def test_differential_against_redis(redis_server, server):
    same_replies(redis_server, server.port, [line.split() for line in DIFF_SCRIPT])


def _random_float_text(rng) -> str:
    kind = rng.randrange(5)
    if kind == 0:
        return "%.*f" % (rng.randrange(25), rng.uniform(-1e6, 1e6))
    if kind == 1:
        return "%de%d" % (rng.randrange(-10 ** 20, 10 ** 20), rng.randrange(-4960, 4935))
    if kind == 2:
        return "0x%x.%xp%d" % (rng.randrange(1 << 70), rng.randrange(1 << 20),
                               rng.randrange(-16500, 16400))
    if kind == 3:
        return rng.choice(["0.1", "0.2", "-0", "1e-17", "5e-18", "3.6e-4951", "1.8e-4951",
                           "1.18973149535723176502e+4932", "0x1.fffffffffffffffep16383"])
    return "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 40))) + "." + \
        "".join(rng.choice("0123456789") for _ in range(rng.randrange(40)))


@pytest.mark.needs_redis
def test_incrbyfloat_random_differential(redis_server, server):
    """Random decimal and hex operands, subnormals and near-overflow values: the replies
    (sums, "not a valid float", "NaN or Infinity") are byte-identical to Redis 7.0."""
    import random
    rng = random.Random(2024)
    commands = []
    for i in range(300):
        key = "f%d" % (i % 10)
        if i % 10 == 0:
            commands.append(["SET", key, _random_float_text(rng)])
        commands.append(["INCRBYFLOAT", key, _random_float_text(rng)])
    same_replies(redis_server, server.port, commands)
