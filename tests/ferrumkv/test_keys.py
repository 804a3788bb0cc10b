"""Generic key commands end to end: DEL/EXISTS/TYPE, RENAME/COPY/MOVE, KEYS/SCAN/RANDOMKEY,
EXPIRE/TTL families, OBJECT and MEMORY USAGE (redis-py RESP3/RESP2 and raw bytes), keyspace
hit/miss counting, and a differential run against a real redis-server 7.0."""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py import memory
from ferrumkv_py.values import RHash, RList, RSet

from ..conftest import RawConn, command_frame
from .conftest import START_MS, err, stats


def check(server):
    server.call(server.server.ks._check)


# ---- DEL EXISTS TOUCH TYPE ----

def test_del_unlink_exists_touch_type(r, r2, put):
    r.mset({"a": "1", "b": "2", "c": "3"})
    put(b"l", RList([b"x"]))
    assert r.exists("a", "a", "nope") == 2 and r2.exists("nope") == 0
    assert r.touch("a", "nope", "l") == 2
    assert r.type("a") == b"string" and r.type("l") == b"list" and r.type("nope") == b"none"
    assert r2.type("a") == b"string"
    assert r.delete("a", "nope", "a") == 1
    assert r.unlink("b", "c", "l") == 3 and r.unlink("b") == 0
    assert r.dbsize() == 0


def test_type_is_a_status_reply(raw, put):
    put(b"h", RHash({b"f": b"v"}))
    put(b"s", RSet({b"m"}))
    c = raw()
    c.send(b"TYPE h\r\nTYPE s\r\nTYPE nope\r\n")
    assert [c.read_reply() for _ in range(3)] == [b"+hash\r\n", b"+set\r\n", b"+none\r\n"]


# ---- RENAME COPY MOVE ----

def test_rename_and_renamenx(r, clock):
    assert err(r, "RENAME", "nope", "x") == "no such key"
    assert err(r, "RENAMENX", "nope", "nope") == "no such key"
    r.set("a", "1", ex=100)
    assert r.rename("a", "a") is True and r.renamenx("a", "a") is False
    r.set("b", "2")
    assert r.renamenx("a", "b") is False
    assert r.rename("a", "b") is True
    assert r.get("b") == b"1" and r.ttl("b") == 100 and r.exists("a") == 0
    assert r.renamenx("b", "c") is True and r.ttl("c") == 100
    r.set("d", "x", px=5)
    clock.advance(10)
    assert r.renamenx("c", "d") is True        # an expired destination counts as absent


def test_copy(r, server, put, clock):
    r.set("s", "val", ex=50)
    assert err(r, "COPY", "s", "s") == "source and destination objects are the same"
    assert err(r, "COPY", "s", "t", "DB", "16") == "DB index is out of range"
    assert err(r, "COPY", "s", "t", "DB", "-1") == "DB index is out of range"
    assert err(r, "COPY", "s", "t", "DB", "x") == "value is not an integer or out of range"
    assert err(r, "COPY", "s", "t", "DB", "2147483648") == \
        "value is out of range, value must between -2147483648 and 2147483647"
    assert err(r, "COPY", "s", "t", "DB") == "syntax error"
    assert err(r, "COPY", "s", "t", "FOO") == "syntax error"
    assert r.copy("nope", "t") is False
    assert r.copy("s", "t") is True and r.get("t") == b"val" and r.ttl("t") == 50
    r.set("t", "other")
    assert r.copy("s", "t") is False and r.get("t") == b"other"
    assert r.copy("s", "t", replace=True) is True and r.get("t") == b"val"
    assert r.copy("s", "s", destination_db=1) is True
    r.execute_command("SELECT", 1)
    assert r.get("s") == b"val" and r.ttl("s") == 50
    r.execute_command("SELECT", 0)
    put(b"h", RHash({b"f": b"v"}))
    assert r.copy("h", "h2") is True

    def independent():
        dbs = server.server.ks.dbs
        a, b = dbs[0].vals[dbs[0].find(b"h")], dbs[0].vals[dbs[0].find(b"h2")]
        assert a == b and a is not b and a.mem == b.mem
    server.call(independent)
    check(server)


def test_copy_of_every_type_is_independent(r, server):
    r.rpush("l", "a", "b")
    r.hset("h", mapping={"f": "v"})
    r.sadd("s", "1", "2")
    r.zadd("z", {"m": 1.5})
    for key in ("l", "h", "s", "z"):
        assert r.copy(key, key + "2") is True
    r.rpush("l", "c")
    r.hset("h", "g", "w")
    r.sadd("s", "x")
    r.zadd("z", {"n": 2})
    assert r.lrange("l2", 0, -1) == [b"a", b"b"] and r.hgetall("h2") == {b"f": b"v"}
    assert r.smembers("s2") == {b"1", b"2"} and r.zrange("z2", 0, -1, withscores=True) == \
        [[b"m", 1.5]]
    assert [r.object("encoding", k) for k in ("l2", "h2", "s2", "z2", "s")] == \
        [b"quicklist", b"listpack", b"intset", b"listpack", b"hashtable"]
    check(server)


def test_move(r, server, clock):
    r.set("k", "v", ex=30)
    assert err(r, "MOVE", "k", "0") == "source and destination objects are the same"
    assert err(r, "MOVE", "k", "16") == "DB index is out of range"
    assert err(r, "MOVE", "k", "x") == "value is not an integer or out of range"
    assert r.move("nope", 1) is False
    assert r.move("k", 1) is True and r.exists("k") == 0
    r.set("k", "again")
    assert r.move("k", 1) is False and r.get("k") == b"again"    # exists in db 1
    r.execute_command("SELECT", 1)
    assert r.get("k") == b"v" and r.ttl("k") == 30
    check(server)


# ---- KEYS SCAN RANDOMKEY ----

def test_keys_patterns_and_expired(r, clock):
    r.mset({"hello": 1, "hallo": 2, "hxllo": 3, "heeello": 4, "a*b": 5, "h\nllo": 6})
    r.set("gone", 1, px=5)
    clock.advance(10)
    assert sorted(r.keys("*")) == sorted([b"hello", b"hallo", b"hxllo", b"heeello", b"a*b",
                                          b"h\nllo"])
    assert sorted(r.keys("h?llo")) == [b"h\nllo", b"hallo", b"hello", b"hxllo"]
    assert sorted(r.keys("h*llo")) == [b"h\nllo", b"hallo", b"heeello", b"hello", b"hxllo"]
    assert sorted(r.keys("h[ae]llo")) == [b"hallo", b"hello"]
    assert sorted(r.keys("h[^e]llo")) == [b"h\nllo", b"hallo", b"hxllo"]
    assert r.keys("a\\*b") == [b"a*b"] and r.keys("A*") == []
    assert r.dbsize() == 7           # KEYS skipped the expired key without deleting it


def test_compiled_glob_agrees_with_redis_stringmatch():
    """KEYS/SCAN compile '*'/'?' patterns to a regex; it must match exactly what the
    byte-by-byte stringmatch port does (seeded random patterns and subjects)."""
    import random

    from ferrumkv_py.commands._util import glob_match, glob_matcher
    rng = random.Random(5)
    alphabet = b"ab*?.\n$^(|+"
    for _ in range(3000):
        pattern = bytes(rng.choice(alphabet) for _ in range(rng.randrange(1, 7)))
        subject = bytes(rng.choice(b"ab.\n$^(|+*?") for _ in range(rng.randrange(0, 7)))
        match = glob_matcher(pattern)
        if match is None:          # "*": callers list everything (Redis's allkeys)
            continue
        assert bool(match(subject)) == glob_match(pattern, subject), (pattern, subject)


def test_scan_iterates_everything(r, r2, put):
    r.mset({"key:%d" % i: i for i in range(250)})
    put(b"list:1", RList([b"x"]))
    assert sorted(r.scan_iter(count=7)) == sorted([b"key:%d" % i for i in range(250)]
                                                  + [b"list:1"])
    assert sorted(r2.scan_iter(match="key:1?")) == sorted(b"key:1%d" % i for i in range(10))
    assert list(r.scan_iter(_type="list")) == [b"list:1"]
    assert list(r.scan_iter(_type="LIST", match="key*")) == []
    cursor, keys = r.scan(0, count=1000)
    assert cursor == 0 and len(keys) == 251


def test_scan_errors_and_cursor_parsing(r, raw):
    for bad in ("abc", " 0", "5abc", "18446744073709551616", "-"):
        assert err(r, "SCAN", bad) == "invalid cursor"
    for opts in (("COUNT", "0"), ("COUNT", "-1"), ("MATCH",), ("FOO", "bar"), ("TYPE",)):
        assert err(r, "SCAN", "0", *opts) == "syntax error"
    assert err(r, "SCAN", "0", "COUNT", "x") == "value is not an integer or out of range"
    c = raw()
    c.send(b"SCAN 18446744073709551615\r\nSCAN -1\r\nSCAN +0\r\n")
    assert [c.read_reply() for _ in range(3)] == [b"*2\r\n$1\r\n0\r\n*0\r\n"] * 3


def test_scan_returns_stable_keys_despite_churn(r, server):
    """Keys present for the whole scan come back even while others are added (into free
    slots) and deleted between calls, and the slot table is compacted meanwhile (what the
    cron does, run here between calls so that it happens for sure)."""
    stable = {b"stable:%d" % i for i in range(300)}
    r.mset({"churn:%d" % i: 1 for i in range(600)})
    r.mset({k: 1 for k in stable})
    r.mset({"churn:%d" % i: 1 for i in range(600, 1200)})
    ks = server.server.ks
    seen, cursor, gone, n, calls = set(), 0, 0, 1200, 0
    while True:
        cursor, keys = r.scan(cursor, count=10)
        seen.update(keys)
        calls += 1
        r.delete(*["churn:%d" % (gone + j) for j in range(30)])
        gone += 30
        r.mset({"churn:%d" % (n + j): 1 for j in range(10)})
        n += 10
        server.call(lambda: ks.maintain(100))
        if cursor == 0:
            break
    assert stable <= seen
    assert calls < 200 and server.call(lambda: ks.slot_moves) > 0
    check(server)


def test_scan_deletes_expired_keys_it_meets(r, clock):
    r.set("gone", 1, px=5)
    r.set("kept", 1)
    clock.advance(10)
    _, _, expired = stats(r)
    assert r.scan(0, match="zz") == (0, [])        # filtered by MATCH first: not expired
    assert stats(r)[2] == expired
    assert r.scan(0) == (0, [b"kept"])
    assert stats(r)[2] == expired + 1 and r.dbsize() == 1


def test_randomkey(r, clock):
    assert r.randomkey() is None
    r.set("gone", 1, px=5)
    clock.advance(10)
    assert r.randomkey() is None and r.dbsize() == 0
    r.mset({"a": 1, "b": 2, "c": 3})
    assert {r.randomkey() for _ in range(60)} == {b"a", b"b", b"c"}


# ---- EXPIRE / TTL ----

@pytest.mark.parametrize("args,message", [
    (("100", "NX", "XX"), "NX and XX, GT or LT options at the same time are not compatible"),
    (("100", "NX", "GT"), "NX and XX, GT or LT options at the same time are not compatible"),
    (("100", "GT", "LT"), "GT and LT options at the same time are not compatible"),
    (("100", "FOO"), "Unsupported option FOO"),
    (("100", "nx", "foo"), "Unsupported option foo"),
    (("abc",), "value is not an integer or out of range"),
    (("abc", "FOO"), "Unsupported option FOO"),         # options are checked first
    (("9223372036854776",), "invalid expire time in 'expire' command"),
    (("9223372036854775",), "invalid expire time in 'expire' command"),   # + now overflows
    (("-9223372036854776",), "invalid expire time in 'expire' command"),
])
def test_expire_errors(r, args, message):
    r.set("k", "v")
    assert err(r, "EXPIRE", "k", *args) == message


def test_expire_family_and_ttls(r, r2, clock):
    now_s = START_MS // 1000
    assert r.expire("nope", 10) is False and r.ttl("nope") == -2 and r2.pttl("nope") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1 and r.expiretime("k") == -1 and r.pexpiretime("k") == -1
    assert r.expire("k", 100) is True and r.ttl("k") == 100 and r.pttl("k") == 100_000
    assert r.expiretime("k") == now_s + 100 and r.pexpiretime("k") == START_MS + 100_000
    assert r.pexpire("k", 1500) is True and r.pttl("k") == 1500 and r.ttl("k") == 2
    clock.advance(1000)
    assert r.pttl("k") == 500 and r.ttl("k") == 1            # (500 + 500) // 1000
    clock.advance(1)
    assert r.ttl("k") == 0
    assert r.expireat("k", now_s + 50) is True and r.ttl("k") == 49
    assert r.pexpireat("k", START_MS + 70_000) is True and r.pexpiretime("k") == START_MS + 70_000
    assert r.persist("k") is True and r.persist("k") is False and r.ttl("k") == -1
    assert r.persist("nope") is False
    assert err(r, "PEXPIRE", "k", "9223372036854775807") == \
        "invalid expire time in 'pexpire' command"


def test_expire_conditions(r, clock):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False
    assert r.expire("k", 100, gt=True) is False               # no TTL counts as infinite
    assert r.expire("k", 100, lt=True) is True
    assert r.expire("k", 200, nx=True) is False
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 150, gt=True) is True
    assert r.expire("k", 200, lt=True) is False
    assert r.expire("k", 50, lt=True) is True and r.ttl("k") == 50
    assert r.expire("k", 60, xx=True) is True and r.ttl("k") == 60


def test_past_deadline_deletes_without_counting_expiry(r, clock):
    _, _, expired = stats(r)
    for cmd in (("EXPIRE", "k", "0"), ("EXPIRE", "k", "-1"), ("PEXPIREAT", "k", "0"),
                ("EXPIREAT", "k", "1"), ("PEXPIRE", "k", "-9223372036854775808")):
        r.set("k", "v")
        assert r.execute_command(*cmd) == 1 and r.exists("k") == 0
    assert stats(r)[2] == expired
    r.set("k", "v")
    assert r.pexpire("k", 0, gt=True) is False and r.exists("k") == 1


def test_lazy_expiry_on_reads(r, clock):
    r.set("k", "v", px=100)
    clock.advance(100)
    assert r.get("k") == b"v"                                  # now == deadline: alive
    clock.advance(1)
    _, _, expired = stats(r)
    assert r.ttl("k") == -2 and stats(r)[2] == expired + 1


# ---- OBJECT / MEMORY ----

def test_object_encoding(r, put):
    cases = {"int": b"int", "-9223372036854775808": b"int", "12345678901234567890": b"embstr",
             "01": b"embstr", "": b"embstr", "x" * 44: b"embstr", "x" * 45: b"raw"}
    for value, enc in cases.items():
        r.set("s", value)
        if value == "int":
            r.set("s", "1234")
        assert r.object("encoding", "s") == enc, value
    put(b"l", RList([b"a"]))
    put(b"h", RHash({b"f": b"v"}))
    put(b"h2", RHash({b"f": b"v" * 65}))
    put(b"h3", RHash({b"f%d" % i: b"v" for i in range(513)}))
    put(b"i", RSet({b"1", b"-2"}))
    put(b"i2", RSet({b"1", b"01"}))
    put(b"i3", RSet({b"%d" % i for i in range(513)}))
    expect = {"l": b"quicklist", "h": b"listpack", "h2": b"hashtable", "h3": b"hashtable",
              "i": b"intset", "i2": b"hashtable", "i3": b"hashtable"}
    for key, enc in expect.items():
        assert r.object("encoding", key) == enc, key
    assert r.object("encoding", "nope") is None


def test_object_refcount_idletime_freq(r, server, clock):
    r.set("n", "5")
    r.set("big", "10000")
    assert r.object("refcount", "n") == 2147483647 and r.object("refcount", "big") == 1
    assert r.object("refcount", "nope") is None
    clock.advance(7_500)
    assert r.object("idletime", "n") == 7
    assert r.object("idletime", "n") == 7                       # OBJECT does not touch
    r.get("n")
    assert r.object("idletime", "n") == 0
    lfu_off = ("An LFU maxmemory policy is not selected, access frequency not tracked. "
               "Please note that when switching between policies at runtime LRU and LFU data "
               "will take some time to adjust.")
    assert err(r, "OBJECT", "FREQ", "n") == lfu_off
    assert r.object("freq", "nope") is None                    # missing key: null first
    r.config_set("maxmemory-policy", "allkeys-lfu")
    assert isinstance(r.object("freq", "n"), int)
    assert err(r, "OBJECT", "IDLETIME", "n").startswith("An LFU maxmemory policy is selected")
    r.config_set("maxmemory", "100mb")
    r.set("n", "5")
    assert r.object("refcount", "n") == 1                      # no shared ints under LFU
    r.config_set("maxmemory-policy", "noeviction")
    assert r.object("refcount", "n") == 2147483647


def test_object_and_memory_raw_errors(raw):
    c = raw()
    c.send(b"OBJECT\r\nOBJECT FREQ\r\nOBJECT foo k\r\nOBJECT HELP x\r\nMEMORY FOO\r\n"
           b"OBJECT HELP\r\nMEMORY HELP\r\n")
    assert c.read_reply() == b"-ERR wrong number of arguments for 'object' command\r\n"
    assert c.read_reply() == b"-ERR wrong number of arguments for 'object|freq' command\r\n"
    assert c.read_reply() == b"-ERR unknown subcommand 'foo'. Try OBJECT HELP.\r\n"
    assert c.read_reply() == b"-ERR wrong number of arguments for 'object|help' command\r\n"
    assert c.read_reply() == b"-ERR unknown subcommand 'FOO'. Try MEMORY HELP.\r\n"
    help_reply = c.read_reply()
    assert help_reply.startswith(b"*15\r\n+OBJECT <subcommand> [<arg> [value] [opt] ...]. ")
    assert c.read_reply().startswith(b"*14\r\n+MEMORY <subcommand>")


def test_memory_usage(r, clock):
    r.set("k", "value")
    base = memory.entry_cost(b"k", b"value")
    assert r.memory_usage("k") == base
    r.expire("k", 100)
    assert r.memory_usage("k") == base + memory.EXPIRE_COST
    assert r.memory_usage("k", samples=0) == base + memory.EXPIRE_COST
    assert r.memory_usage("nope") is None
    for opts in (("SAMPLES",), ("SAMPLES", "-1"), ("FOO", "1")):
        assert err(r, "MEMORY", "USAGE", "k", *opts) == "syntax error"
    assert err(r, "MEMORY", "USAGE", "k", "SAMPLES", "x") == \
        "value is not an integer or out of range"
    r.set("gone", "v", px=5)
    clock.advance(10)
    assert r.memory_usage("gone") is not None                   # no lazy expiry, as Redis


# ---- keyspace statistics (Redis 7.0.15, measured) ----

@pytest.mark.parametrize("cmd,hits,misses", [
    (("EXISTS", "s", "nope", "s"), 2, 1), (("TOUCH", "s", "nope"), 1, 1), (("TTL", "s"), 1, 0),
    (("PTTL", "nope"), 0, 1), (("EXPIRETIME", "s"), 1, 0), (("PEXPIRETIME", "nope"), 0, 1),
    (("TYPE", "s"), 1, 0), (("TYPE", "nope"), 0, 1), (("COPY", "s", "c"), 1, 0),
    (("COPY", "nope", "c"), 0, 1), (("OBJECT", "ENCODING", "s"), 1, 0),
    (("OBJECT", "ENCODING", "nope"), 0, 1), (("OBJECT", "REFCOUNT", "s"), 1, 0),
    (("OBJECT", "IDLETIME", "s"), 1, 0), (("SCAN", "0", "TYPE", "string"), 2, 0),
    (("SCAN", "0", "TYPE", "list", "MATCH", "s*"), 1, 0), (("SCAN", "0"), 0, 0),
    (("KEYS", "*"), 0, 0), (("RANDOMKEY",), 0, 0), (("DEL", "s"), 0, 0), (("UNLINK", "s"), 0, 0),
    (("EXPIRE", "s", "10"), 0, 0), (("PERSIST", "s"), 0, 0), (("RENAME", "s", "r"), 0, 0),
    (("RENAMENX", "s", "r"), 0, 0), (("MOVE", "s", "1"), 0, 0), (("MEMORY", "USAGE", "s"), 0, 0),
    (("DBSIZE",), 0, 0),
])
def test_keyspace_hits_and_misses(r, cmd, hits, misses):
    r.mset({"s": "1", "t": "2"})
    h0, m0, _ = stats(r)
    try:
        r.execute_command(*cmd)
    except redis.ResponseError:
        pass
    h1, m1, _ = stats(r)
    assert (h1 - h0, m1 - m0) == (hits, misses)


def test_object_freq_counts_a_hit_even_when_it_errors(r):
    r.set("s", "1")
    h0, _, _ = stats(r)
    assert err(r, "OBJECT", "FREQ", "s").startswith("An LFU maxmemory policy is not selected")
    assert stats(r)[0] == h0 + 1


# ---- differential: the same bytes to redis-server 7.0 and to ferrumkv ----

DIFF_SCRIPT = [
    "SET a 1", "EXPIRE a 100 NX XX", "EXPIRE a 100 GT LT", "EXPIRE a 100 FOO", "EXPIRE a abc",
    "EXPIRE a 9223372036854776", "EXPIRE a 100 XX", "EXPIRE a 100 GT", "EXPIRE a 100 LT",
    "TTL a", "EXPIRE a 100 NX", "EXPIRE a 150 GT", "EXPIRE a 50 LT", "TTL a", "PERSIST a",
    "PERSIST a", "TTL a", "TTL nokey", "PTTL nokey", "EXPIRETIME a", "PEXPIRETIME nokey",
    "EXPIRE a 0", "EXISTS a", "SET c 1", "EXPIREAT c 1", "EXISTS c", "SET a 1", "TYPE a",
    "TYPE nokey", "RENAME nokey b", "RENAME a a", "RENAMENX a a", "RENAMENX nokey a",
    "SET b 2", "RENAMENX a b", "RENAME a b", "GET b", "COPY b b", "COPY b c DB 0",
    "COPY b b DB 1", "COPY b c DB 16", "COPY b c DB abc", "COPY b c DB 2147483648",
    "COPY b c DB", "COPY b c FOO", "COPY b c REPLACE", "COPY b c", "COPY nokey c",
    "MOVE b 0", "MOVE b 16", "MOVE b abc", "MOVE nokey 1", "MOVE b 1", "SELECT 1", "GET b",
    "DEL b", "SELECT 0", "DEL b c nokey b", "UNLINK b c", "EXISTS nokey nokey", "SET e 1",
    "EXISTS e e nokey", "TOUCH e e nokey", "SCAN abc", "SCAN 18446744073709551616",
    "SCAN 0 COUNT 0", "SCAN 0 COUNT abc", "SCAN 0 MATCH", "SCAN 0 FOO bar", "SCAN 0 TYPE foo",
    "SCAN 0 MATCH e", "KEYS *", "KEYS", "MEMORY USAGE nokey", "MEMORY USAGE e SAMPLES -1",
    "MEMORY USAGE e FOO 1", "MEMORY FOO", "MEMORY", "OBJECT ENCODING nokey", "OBJECT foo k",
    "OBJECT", "OBJECT FREQ", "OBJECT HELP", "OBJECT HELP x", "OBJECT FREQ e",
    "OBJECT IDLETIME e", "OBJECT REFCOUNT e", "OBJECT ENCODING e", "SET e abc",
    "OBJECT ENCODING e", "SET e 12345678901234567890", "OBJECT ENCODING e",
    "SET e 123456789012345678901234567890123456789012345", "OBJECT ENCODING e",
    "RANDOMKEY", "FLUSHDB", "RANDOMKEY", "SCAN 0",
]


@pytest.mark.needs_redis
def test_differential_against_redis(redis_server, server):
    real, ours = RawConn(redis_server), RawConn(server.port)
    try:
        for conn in (real, ours):
            conn.send(b"FLUSHALL\r\n")
            conn.read_reply()
        for line in DIFF_SCRIPT:
            args = line.split()
            frame = command_frame(*args)
            replies = []
            for conn in (real, ours):
                conn.send(frame)
                replies.append(conn.read_reply())
            if args[0] == "TTL" and all(x[:1] == b":" and x[1:2] != b"-" for x in replies):
                # both count down from the same EXPIRE on their own clocks: a slow moment
                # between the two servers' commands may show 99 on one and 100 on the other
                assert abs(int(replies[1][1:]) - int(replies[0][1:])) <= 1, (line, replies)
                continue
            assert replies[1] == replies[0], line
    finally:
        for conn in (real, ours):
            conn.send(b"FLUSHALL\r\n")
            conn.read_reply()
            conn.close()


@pytest.mark.needs_redis
def test_random_commands_differential(redis_server, server):
    """Seeded random string and key commands over six keys in two databases: every reply
    byte-identical to Redis 7.0 (timing-sensitive replies and OBJECT internals left out)."""
    import random

    from .diff_util import same_replies
    rng = random.Random(99)
    keys = ["k%d" % i for i in range(6)]
    vals = ["", "0", "1", "-1", "9999", "10000", "abc", "x" * 50, "3.5", "01", " 1",
            "9223372036854775807", "-9223372036854775808"]
    nums = ["0", "1", "-1", "5", "abc", "9223372036854775807", "-9223372036854775808", ""]

    def k():
        return rng.choice(keys)

    gens = [
        lambda: ["SET", k(), rng.choice(vals)] + rng.sample(
            ["NX", "XX", "GET", "KEEPTTL", "EX", "100", "PX", "0", "EXAT", "4000000000"],
            rng.randrange(3)),
        lambda: ["GET", k()], lambda: ["GETDEL", k()], lambda: ["GETSET", k(), "v"],
        lambda: ["GETEX", k()] + rng.choice([[], ["PERSIST"], ["EX", "100"], ["EXAT", "1"]]),
        lambda: ["MGET", k(), k(), k()], lambda: ["MSET", k(), "1", k(), "2"],
        lambda: ["MSETNX", k(), "1", k(), "2"], lambda: ["INCRBY", k(), rng.choice(nums)],
        lambda: ["DECRBY", k(), rng.choice(nums)], lambda: ["INCRBYFLOAT", k(), "1.5"],
        lambda: ["APPEND", k(), rng.choice(vals)], lambda: ["STRLEN", k()],
        lambda: ["GETRANGE", k(), rng.choice(nums), rng.choice(nums)],
        lambda: ["SETRANGE", k(), rng.choice(["0", "3", "-1"]), rng.choice(vals)],
        lambda: ["SETNX", k(), "v"], lambda: ["SETEX", k(), rng.choice(["100", "0"]), "v"],
        lambda: ["DEL", k(), k()], lambda: ["EXISTS", k(), k()], lambda: ["TYPE", k()],
        lambda: ["TOUCH", k()], lambda: ["RENAME", k(), k()], lambda: ["RENAMENX", k(), k()],
        lambda: ["COPY", k(), k()] + rng.choice([[], ["REPLACE"], ["DB", "1"]]),
        lambda: ["MOVE", k(), rng.choice(["0", "1"])],
        lambda: ["EXPIRE", k(), rng.choice(["100", "0", "-5", "abc"])] +
        rng.sample(["NX", "XX"], rng.randrange(2)),
        lambda: ["PERSIST", k()], lambda: ["LPUSH", k(), "x"], lambda: ["DBSIZE"],
        lambda: ["SELECT", rng.choice(["0", "0", "1"])],
    ]
    commands = [rng.choice(gens)() for _ in range(1500)]
    same_replies(redis_server, server.port, commands + [["SELECT", "1"], ["FLUSHDB"]])
