"""HyperLogLog commands end to end (redis-py, raw bytes) and against redis-server 7.0: the same
PFADD / PFMERGE give byte-equal values and equal counts, and values copied with GET / SET
between the two servers work on both, sparse and dense, in both directions."""

from __future__ import annotations

import random

import pytest
import redis

from ferrumkv_py import hll
from ferrumkv_py.values import RList

from .conftest import err
from .diff_util import Pair, same_replies

NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
CORRUPT = "INVALIDOBJ Corrupted HLL object detected"
HDR_SPARSE_STALE = b"HYLL\x01" + bytes(10) + b"\x80"


def _err_full(client, *args) -> str:
    with pytest.raises(redis.ResponseError) as info:
        client.execute_command(*args)
    return str(info.value)


def test_pfadd_pfcount_pfmerge(r, r2):
    assert r.pfadd("h", "a", "b", "c") == 1
    assert r.pfadd("h", "a") == 0
    assert r.pfcount("h") == 3 and r2.pfcount("h") == 3
    assert r.pfadd("empty") == 1 and r.pfadd("empty") == 0 and r.pfcount("empty") == 0
    r.pfadd("h2", *[b"x%d" % i for i in range(100)])
    union = r.pfcount("h", "h2", "nokey")
    assert abs(union - 103) <= 2
    assert r.pfmerge("m", "h", "h2", "nokey") is True
    assert r.pfcount("m") == union
    assert r.pfmerge("only") is True and r.pfcount("only") == 0
    assert r.pfcount("nokey") == 0 and r.pfcount("nokey", "nokey2") == 0


def test_pfcount_caches_and_invalidates(r):
    r.pfadd("h", "a", "b")
    v = r.get("h")
    assert v[15] & 0x80                                      # stale after PFADD
    assert r.pfcount("h") == 2
    v = r.get("h")
    assert v[8:16] == (2).to_bytes(8, "little")             # cached, valid
    r.pfadd("h", "c")
    assert r.get("h")[15] & 0x80


def test_pfcount_changes_the_value_so_watch_fires(r):
    r.pfadd("h", "a")
    with r.pipeline() as p:
        p.watch("h")
        r.pfcount("h")
        p.multi()
        p.get("h")
        with pytest.raises(redis.WatchError):
            p.execute()


def test_wrong_type_and_corrupt_values(r, put):
    put(b"l", RList([b"a"]))
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE Operation against"):
        r.pfadd("l", "a")
    r.set("s", "not an hll")
    for args in (("PFADD", "s", "a"), ("PFCOUNT", "s"), ("PFCOUNT", "s", "nokey"),
                 ("PFMERGE", "d", "s"), ("PFDEBUG", "GETREG", "s")):
        assert _err_full(r, *args) == NOT_HLL, args
    r.set("bad", HDR_SPARSE_STALE + b"\x7f\xfe")              # opcodes cover 16383 registers
    for args in (("PFCOUNT", "bad"), ("PFCOUNT", "bad", "nokey"), ("PFMERGE", "d", "bad"),
                 ("PFDEBUG", "TODENSE", "bad")):
        assert _err_full(r, *args) == CORRUPT, args
    assert r.exists("d") == 0 and r.get("s") == b"not an hll"


def test_pfdebug(r):
    r.pfadd("h", "a", "b", "c")
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"sparse"
    assert r.execute_command("PFDEBUG", "DECODE", "h") == \
        b"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    regs = r.execute_command("PFDEBUG", "GETREG", "h")       # converts to dense
    assert len(regs) == 16384 and regs[8436] == 1 and regs[12711] == 2 and sum(regs) == 4
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense"
    assert r.strlen("h") == hll.DENSE_SIZE
    assert r.execute_command("PFDEBUG", "TODENSE", "h") == 0
    assert err(r, "PFDEBUG", "DECODE", "h") == "HLL encoding is not sparse"
    assert err(r, "PFDEBUG", "nope", "h") == "Unknown PFDEBUG subcommand 'nope'"
    assert err(r, "PFDEBUG", "GETREG", "nokey") == "The specified key does not exist"
    r.pfadd("t", "x")
    assert r.execute_command("PFDEBUG", "TODENSE", "t") == 1
    assert r.pfcount("t") == 1


def test_pfselftest(r):
    assert r.execute_command("PFSELFTEST") == b"OK"


def test_sparse_max_bytes_config(r):
    assert r.config_get("hll-sparse-max-bytes") == {"hll-sparse-max-bytes": "3000"}
    r.config_set("hll-sparse-max-bytes", 100)
    r.pfadd("h", *range(40))
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == b"dense"
    r.config_set("hll-sparse-max-bytes", 3000)
    r.pfadd("g", *range(40))
    assert r.execute_command("PFDEBUG", "ENCODING", "g") == b"sparse"


def test_raw_bytes(raw):
    c = raw()
    c.send(b"PFADD h a b c\r\nPFCOUNT h\r\nPFDEBUG ENCODING h\r\nPFMERGE h\r\n"
           b"GET h\r\n")
    assert [c.read_reply() for _ in range(4)] == [b":1\r\n", b":3\r\n", b"+sparse\r\n",
                                                  b"+OK\r\n"]
    # PFCOUNT cached 3; PFMERGE marked it stale by the top bit only, as Redis
    assert c.read_reply() == b"$27\r\nHYLL\x01\x00\x00\x00\x03" + bytes(6) + b"\x80" \
        + bytes.fromhex("60f38050b1844bfb80425a") + b"\r\n"


# ---- differential against redis-server 7.0 ----

EDGE_CASES = [
    [b"PFADD", b"h"], [b"GET", b"h"], [b"PFCOUNT", b"h"], [b"GET", b"h"], [b"PFADD", b"h", b"a"],
    [b"PFDEBUG", b"ENCODING", b"h"], [b"PFDEBUG", b"DECODE", b"h"], [b"PFDEBUG", b"foo", b"h"],
    [b"PFDEBUG", b"FOO\x00bar", b"h"], [b"PFDEBUG", b"getreg", b"nokey"],
    [b"PFDEBUG", b"TODENSE", b"h"], [b"PFDEBUG", b"todense", b"h"], [b"PFDEBUG", b"decode", b"h"],
    [b"PFCOUNT", b"h"], [b"SET", b"s", b"HYLL"], [b"PFADD", b"s", b"a"],
    [b"SET", b"s", b"HYLL\x02" + bytes(11)], [b"PFADD", b"s", b"a"],
    [b"SET", b"s", b"HYLL\x00" + bytes(11) + b"abc"], [b"PFCOUNT", b"s"],
    [b"SET", b"s", HDR_SPARSE_STALE], [b"PFCOUNT", b"s"], [b"PFADD", b"s", b"a"],
    [b"PFCOUNT", b"s", b"h"], [b"PFMERGE", b"d", b"s"], [b"PFDEBUG", b"GETREG", b"s"],
    [b"PFDEBUG", b"DECODE", b"s"],
    [b"SET", b"s", HDR_SPARSE_STALE + b"\x7f\xff\x7f\xff"], [b"PFCOUNT", b"s"],
    [b"PFADD", b"s", b"a"], [b"PFDEBUG", b"DECODE", b"s"], [b"GET", b"s"],
    [b"SET", b"s", HDR_SPARSE_STALE + b"\x7f\xfe\xff"], [b"PFCOUNT", b"s"],
    [b"PFADD", b"s", b"zz"], [b"PFDEBUG", b"TODENSE", b"s"], [b"PFDEBUG", b"DECODE", b"s"],
    [b"SET", b"s", b"HYLL\x01\x00\x00\x00\x05" + bytes(7) + b"\x7f\xff"], [b"PFCOUNT", b"s"],
    [b"PFCOUNT", b"s", b"s"], [b"PFMERGE", b"d", b"h", b"s"], [b"PFCOUNT", b"d"],
    [b"PFDEBUG", b"ENCODING", b"d"], [b"GET", b"d"], [b"PFMERGE", b"x"], [b"GET", b"x"],
    [b"PFMERGE", b"x", b"nokey"], [b"PFCOUNT", b"nokey", b"nokey2"], [b"LPUSH", b"l", b"a"],
    [b"PFADD", b"l", b"a"], [b"PFMERGE", b"l"], [b"PFCOUNT", b"l", b"h"],
    [b"SET", b"w", b"a"], [b"WATCH", b"h"], [b"PFCOUNT", b"h"], [b"MULTI"], [b"GET", b"w"],
    [b"EXEC"], [b"PFDEBUG", b"GETREG"], [b"PFSELFTEST", b"x"],
]


@pytest.mark.needs_redis
def test_edge_cases_against_redis(redis_server, server):
    same_replies(redis_server, server.port, EDGE_CASES)
    same_replies(redis_server, server.port, EDGE_CASES[:20], proto=3)


@pytest.mark.needs_redis
@pytest.mark.parametrize("max_bytes", [3000, 400])
def test_random_hll_workload_against_redis(redis_server, server, max_bytes):
    """PFADD batches into a few keys (sparse growing into dense), PFMERGE and PFCOUNT
    between them: every reply and every value is byte-equal to Redis's."""
    rng = random.Random(max_bytes)
    pair = Pair(redis_server, server.port)
    try:
        pair.same([b"FLUSHALL"])
        pair.same([b"CONFIG", b"SET", b"hll-sparse-max-bytes", b"%d" % max_bytes])
        keys = [b"h1", b"h2", b"h3"]
        for step in range(250):
            k = rng.choice(keys)
            op = rng.randrange(10)
            if op < 6:
                n = rng.choice([1, 3, 20, 200]) if step > 150 else rng.choice([1, 2, 5, 20])
                pair.same([b"PFADD", k] + [b"%x" % rng.randrange(10 ** 6) for _ in range(n)])
            elif op == 6:
                pair.same([b"PFCOUNT", k])
            elif op == 7:
                pair.same([b"PFCOUNT"] + rng.sample(keys + [b"none"], 2))
            elif op == 8:
                pair.same([b"PFMERGE", k] + rng.sample(keys + [b"none"], rng.randrange(0, 3)))
            else:
                pair.same([b"PFDEBUG", b"ENCODING", k])
            pair.same([b"GET", k])
        encodings = {pair.same([b"PFDEBUG", b"ENCODING", k]) for k in keys}
        assert encodings == {b"+dense\r\n"} if max_bytes == 400 else len(encodings) >= 1
    finally:
        pair.same([b"CONFIG", b"SET", b"hll-sparse-max-bytes", b"3000"])
        pair.same([b"FLUSHALL"])
        pair.close()


@pytest.mark.needs_redis
@pytest.mark.parametrize("n", [50, 20000])
def test_values_copied_between_servers(redis_server, server, n):
    """A sparse (n=50) or dense (n=20000) HyperLogLog made on either server, copied with
    GET/SET to the other, counts the same there and keeps taking PFADD / PFMERGE alike."""
    real = redis.Redis(port=redis_server)
    ours = redis.Redis(port=server.port)
    try:
        real.flushall()
        ours.flushall()
        elements = [b"el:%d" % i for i in range(n)]
        real.pfadd("from_real", *elements)
        ours.pfadd("from_ours", *elements)
        assert real.get("from_real") == ours.get("from_ours")
        assert real.pfcount("from_real") == ours.pfcount("from_ours")
        ours.set("from_real", real.get("from_real"))
        real.set("from_ours", ours.get("from_ours"))
        for key in ("from_real", "from_ours"):
            assert real.pfcount(key) == ours.pfcount(key)
            more = [b"more:%d" % i for i in range(300)]
            assert real.pfadd(key, *more) == ours.pfadd(key, *more)
            assert real.get(key) == ours.get(key)
            assert real.pfcount(key) == ours.pfcount(key)
        for r in (real, ours):
            r.pfmerge("m", "from_real", "from_ours")
        assert real.get("m") == ours.get("m")
        assert real.execute_command("PFDEBUG", "ENCODING", "m") == \
            ours.execute_command("PFDEBUG", "ENCODING", "m")
    finally:
        real.flushall()
        real.close()
        ours.close()


def test_pfselftest_reports_planted_faults(monkeypatch):
    """The self-test fails, with Redis's texts, when the registers or the counts are wrong."""
    import numpy as np

    from ferrumkv_py.commands import hyperloglog as cmd
    from ferrumkv_py.errors import CommandError
    rng = random.Random(1)
    real_registers = hll.registers
    monkeypatch.setattr(hll, "registers", lambda v: np.zeros(hll.HLL_REGISTERS, np.uint8))
    with pytest.raises(CommandError, match="^TESTFAILED Register [0-9]+ should be [1-9]"):
        cmd._selftest_registers(rng)
    monkeypatch.setattr(hll, "registers", real_registers)
    monkeypatch.setattr(hll, "count", lambda v: 7 if hll.encoding(v) == hll.SPARSE else 1)
    with pytest.raises(CommandError, match="^TESTFAILED dense/sparse disagree$"):
        cmd._selftest_error(rng, 3000)
    monkeypatch.setattr(hll, "count", lambda v: 0)
    with pytest.raises(CommandError, match="^TESTFAILED Too big error. card:10 abserr:10$"):
        cmd._selftest_error(rng, 3000)
