"""Bitmap commands end to end (redis-py RESP2/RESP3, raw bytes), their interplay with the
string commands, limits, WATCH and memory accounting, and differential runs against
redis-server 7.0 (fixed edge cases plus seeded random workloads, replies byte-equal)."""

from __future__ import annotations

import random

import pytest
import redis

from ferrumkv_py.values import RList

from .conftest import err
from .diff_util import same_replies

BIT_OFFSET_ERR = "bit offset is not an integer or out of range"


@pytest.fixture
def lst(put):
    put(b"l", RList([b"a"]))
    return b"l"


def test_setbit_getbit_and_strings(r, r2):
    assert r.setbit("k", 7, 1) == 0
    assert r.get("k") == b"\x01"
    assert r.setbit("k", 7, 1) == 1 and r.setbit("k", 7, 0) == 1
    assert r.setbit("k", 100, 1) == 0
    assert r.strlen("k") == 13 and r.get("k") == bytes(12) + b"\x08"
    assert r2.getbit("k", 100) == 1 and r2.getbit("k", 101) == 0
    assert r.getbit("k", 10 ** 9) == 0 and r.getbit("nokey", 5) == 0
    r.set("s", "a")                                   # 0x61 = 01100001
    assert [r.getbit("s", i) for i in range(8)] == [0, 1, 1, 0, 0, 0, 0, 1]
    r.append("s", b"\xff")
    assert r.bitcount("s") == 11 and r.bitpos("s", 0, 1) == 16 and r.bitpos("s", 0, 1, 1) == -1
    r.setrange("s", 0, b"\x00")
    assert r.getbit("s", 1) == 0 and r.getrange("s", 0, 0) == b"\x00"


def test_bitcount_bitpos(r):
    r.set("k", "foobar")
    assert r.bitcount("k") == 26
    assert r.bitcount("k", 1, 1) == 6
    assert r.bitcount("k", 5, 30, "BIT") == 17
    assert r.bitcount("k", -1, -2) == 0
    r.set("z", b"\xff\xf0\x00")
    assert r.bitpos("z", 0) == 12 and r.bitpos("z", 1, 2) == -1
    assert r.bitpos("z", 0, 0, 0) == -1          # explicit end: no padding counted
    assert r.bitpos("z", 1, 7, 15, "BIT") == 7
    r.set("ones", b"\xff\xff")
    assert r.bitpos("ones", 0) == 16            # no end given: the zero padding after it
    assert r.bitpos("nokey", 0) == 0 and r.bitpos("nokey", 1) == -1


def test_bitop(r):
    r.set("a", b"\x0f\xf0")
    r.set("b", b"\xff")
    assert r.bitop("AND", "d", "a", "b") == 2 and r.get("d") == b"\x0f\x00"
    assert r.bitop("OR", "d", "a", "b") == 2 and r.get("d") == b"\xff\xf0"
    assert r.bitop("XOR", "d", "a", "b", "nokey") == 2 and r.get("d") == b"\xf0\xf0"
    assert r.bitop("NOT", "d", "a") == 2 and r.get("d") == b"\xf0\x0f"
    r.expire("d", 100)
    assert r.bitop("OR", "d", "a") == 2 and r.ttl("d") == -1   # stored as SET: TTL gone
    assert r.bitop("AND", "d", "nokey", "nokey2") == 0 and r.exists("d") == 0
    assert err(r, "BITOP", "NOT", "d", "a", "b") == \
        "BITOP NOT must be called with a single source key."
    assert err(r, "BITOP", "NAND", "d", "a") == "syntax error"


def test_bitfield(r, r2):
    assert r.bitfield("f").set("i8", 0, 100).incrby("i8", 0, 100).get("u8", 0).execute() == \
        [0, -56, 200]
    ops = r.bitfield("f", default_overflow="FAIL").incrby("u2", 100, 5).get("u2", 100)
    assert ops.execute() == [None, 0]
    assert r2.execute_command("BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", 100, 5) == \
        [None]
    assert r.execute_command("BITFIELD", "f", "OVERFLOW", "SAT", "INCRBY", "i4", "#3", 100,
                             "GET", "i4", 12) == [7, 7]
    assert r.bitfield_ro("f", "u8", 0, items=[("i4", 12)]) == [200, 7]
    assert r.execute_command("BITFIELD", "f") == []
    assert err(r, "BITFIELD_RO", "f", "SET", "u8", 0, 1) == \
        "BITFIELD_RO only supports the GET subcommand"
    assert err(r, "BITFIELD", "f", "GET", "u64", 0).startswith("Invalid bitfield type.")
    assert err(r, "BITFIELD", "f", "OVERFLOW", "x") == "Invalid OVERFLOW type specified"
    assert err(r, "BITFIELD", "f", "GET", "u8", "#536870912") == BIT_OFFSET_ERR


def test_raw_bytes(raw):
    c = raw()
    c.send(b"SETBIT k 1 1\r\nGETBIT k 1\r\nBITFIELD k OVERFLOW FAIL INCRBY u1 0 5\r\n"
           b"HELLO 3\r\nBITFIELD k OVERFLOW FAIL INCRBY u1 0 5\r\nSETBIT k 4294967296 1\r\n")
    assert c.read_reply() == b":0\r\n"
    assert c.read_reply() == b":1\r\n"
    assert c.read_reply() == b"*1\r\n$-1\r\n"
    c.read_reply()
    assert c.read_reply() == b"*1\r\n_\r\n"
    assert c.read_reply() == b"-ERR " + BIT_OFFSET_ERR.encode() + b"\r\n"


def test_wrong_type_and_argument_errors(r, lst):
    for args in (("SETBIT", "l", 0, 1), ("GETBIT", "l", 0), ("BITCOUNT", "l"),
                 ("BITPOS", "l", 1), ("BITOP", "AND", "d", "l"), ("BITFIELD", "l", "GET", "u8", 0)):
        with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
            r.execute_command(*args)
    assert err(r, "SETBIT", "k", -1, 1) == BIT_OFFSET_ERR
    assert err(r, "SETBIT", "k", 4294967296, 1) == BIT_OFFSET_ERR
    assert err(r, "SETBIT", "k", 0, 2) == "bit is not an integer or out of range"
    assert err(r, "BITPOS", "k", 2) == "The bit argument must be 1 or 0."
    r.set("k", "x")
    assert err(r, "BITCOUNT", "k", 0) == "syntax error"
    assert err(r, "BITCOUNT", "k", 0, 1, "bits") == "syntax error"
    assert r.exists("l") == 1 and r.get("k") == b"x"          # nothing lost


def test_offset_limit_follows_proto_max_bulk_len(r):
    r.config_set("proto-max-bulk-len", 1024 * 1024)
    assert err(r, "SETBIT", "k", 8 * 1024 * 1024, 1) == BIT_OFFSET_ERR
    assert r.setbit("k", 8 * 1024 * 1024 - 1, 1) == 0
    assert r.strlen("k") == 1024 * 1024


def test_watch_and_memory_accounting(server, r):
    r.set("k", "a")
    with r.pipeline() as p:
        p.watch("k")
        r.setbit("k", 1, 1)                         # already 1: no change, WATCH holds
        p.multi()
        p.get("k")
        assert p.execute() == [b"a"]
    with r.pipeline() as p:
        p.watch("k")
        r.setbit("k", 0, 1)
        p.multi()
        p.get("k")
        with pytest.raises(redis.WatchError):
            p.execute()
    r.setbit("big", 80000, 1)
    r.bitfield("big").set("u8", 200000, 7).execute()
    r.bitop("OR", "dst", "big", "k")
    r.pfadd("h", *range(2000))
    server.call(server.server.ks._check)


def test_big_values_are_edited_in_place_only_when_unshared(server, r, raw, monkeypatch):
    from ferrumkv_py import inplace
    writes = []
    real_write = inplace.write

    def counting_write(value, offset, data):
        writes.append(offset)
        real_write(value, offset, data)
    monkeypatch.setattr(inplace, "write", counting_write)
    big = bytes(range(256)) * 32                     # 8 KiB: above inplace.MIN_BYTES
    r.set("k", big)
    assert r.setbit("k", 7, 1) == 0 and r.getbit("k", 7) == 1
    assert r.bitfield("k").incrby("u8", 8, 1).execute() == [2]
    assert writes == [0, 1]                          # both edited in place
    want = bytearray(big)
    want[0] |= 1
    want[1] += 1
    assert r.get("k") == bytes(want)
    r.copy("k", "k2")                                # COPY shares the object: must copy
    assert r.setbit("k", 14, 0) == 1                 # byte 1 was 2: now 0
    assert r.get("k")[1] == 0 and r.get("k2") == bytes(want) and writes == [0, 1]
    r.delete("k2")
    c = raw()                                        # a GET reply not yet sent holds it
    c.send(b"GET k\r\nSETBIT k 23 1\r\nGET k\r\n")
    first, _, second = (rep[rep.index(b"\r\n") + 2:-2] for rep in
                        (c.read_reply(), c.read_reply(), c.read_reply()))
    assert first[2] == want[2] and second[2] == want[2] | 1 and writes == [0, 1]
    with r.pipeline() as p:                          # WATCH sees an in-place edit
        p.watch("k")
        assert r.setbit("k", 24, 1) == 0             # byte 3 was 3: a real change
        p.multi()
        p.get("k")
        with pytest.raises(redis.WatchError):
            p.execute()
    assert writes == [0, 1, 3]
    server.call(server.server.ks._check)


# ---- differential against redis-server 7.0 ----

EDGE_CASES = [
    "SET k foobar", "BITCOUNT k 0", "BITCOUNT k a b", "BITCOUNT k 0 1 bit x", "BITCOUNT k 1 1 BIT",
    "BITCOUNT k 0 -1 bit", "BITCOUNT k 5 30 bit", "BITCOUNT k -5 -1 bit", "BITCOUNT k -1 -5",
    "BITCOUNT nokey a b", "BITPOS k 1 0 1 BIT x", "BITPOS k 2", "BITPOS k 1 a", "BITPOS k 0",
    "BITPOS k 1 2 -1 bit", "BITPOS k 0 7 20 bit", "BITPOS k 1 0 1 2 3 4", "BITPOS nokey 0 x",
    "SET z \xff\xff", "BITPOS z 0", "BITPOS z 0 0 -1", "BITPOS z 0 3 bit", "BITPOS z 0 3 -1 bit",
    "BITPOS z 1 15 bit", "BITPOS z 0 -100 -50", "SETBIT k 4294967296 1", "SETBIT k -1 1",
    "SETBIT k 0 2", "SETBIT k 0 -0", "SETBIT k +1 1", "GETBIT k 4294967296",
    "BITFIELD k GET i64 -1", "BITFIELD k GET i64 #-1", "BITFIELD k GET i8 4294967296",
    "BITFIELD k GET i8 4294967295", "BITFIELD k GET i8 #536870912", "BITFIELD k GET i8 #536870911",
    "BITFIELD k GET i8 #144115188075855873", "BITFIELD k GET i8 +5", "BITFIELD k GET i8 #",
    "BITFIELD k OVERFLOW foo", "BITFIELD k INCRBY u2 0", "BITFIELD k INCRBY u2 0 x",
    "BITFIELD_RO k SET u2 0 1", "BITFIELD_RO k GET u2 0 GET i3 1", "BITFIELD k GET",
    "BITFIELD k", "BITFIELD nokey GET u8 0", "BITFIELD k FOO", "BITFIELD k GET u0 0",
    "BITFIELD k GET i65 0", "BITFIELD k GET U8 0", "BITFIELD k GET u8\x009 0",
    "BITFIELD k OVERFLOW fail SET u2 0 7 INCRBY u2 0 5 OVERFLOW sat INCRBY i4 0 100",
    "BITFIELD k GET u63 0 GET i64 3 GET i64 #2 GET u8 #100",
    "BITFIELD k OVERFLOW SAT SET i8 0 -9223372036854775808 GET i8 0",
    "BITFIELD k OVERFLOW SAT SET u8 0 -1 OVERFLOW WRAP SET u8 8 -1 GET u16 0",
    "BITFIELD k OVERFLOW WRAP INCRBY i64 0 9223372036854775807 INCRBY i64 0 1",
    "BITFIELD k OVERFLOW SAT INCRBY i64 0 9223372036854775807 INCRBY u63 64 -1",
    "BITFIELD newkey OVERFLOW FAIL INCRBY u8 80 300", "STRLEN newkey", "GET k",
    "SETBIT n 100 1", "GET n", "SETBIT n 7 1", "BITOP and d k n nokey", "GET d",
    "BITOP XOR d k n", "GET d", "BITOP not d n", "GET d", "BITOP not d nokey", "EXISTS d",
    "BITOP bogus d k", "BITOP NOT d k n", "SET k a", "WATCH k", "SETBIT k 1 1", "MULTI", "GET k",
    "EXEC", "WATCH k", "SETBIT k 0 1", "MULTI", "GET k", "EXEC",
    "CONFIG SET proto-max-bulk-len 1048576", "SETBIT k 8388608 1", "SETBIT k 8388607 0",
    "BITFIELD k GET u8 #1048576", "CONFIG SET proto-max-bulk-len 536870912",
]


@pytest.mark.needs_redis
def test_edge_cases_against_redis(redis_server, server):
    cmds = [[a.encode("latin-1") for a in line.split(" ")] for line in EDGE_CASES]
    same_replies(redis_server, server.port, cmds)
    same_replies(redis_server, server.port, cmds, proto=3)


def _random_bitmap_commands(rng, n: int) -> list:
    keys = [b"a", b"b", b"c"]
    types = [b"i1", b"u1", b"i5", b"u7", b"i8", b"u8", b"i13", b"u31", b"i63", b"u63",
             b"i64", b"i32"]
    values = [0, 1, -1, 7, 127, -128, 255, 2 ** 31, 2 ** 63 - 1, -2 ** 63, 2 ** 62]

    def rint(lo, hi):
        return b"%d" % rng.randint(lo, hi)

    def bound():
        return rint(-30, 30) if rng.random() < 0.8 else rint(-2000, 2000)

    out = []
    for _ in range(n):
        k = rng.choice(keys)
        op = rng.randrange(12)
        if op < 3:
            out.append([b"SETBIT", k, rint(0, 300 if rng.random() < 0.9 else 5000),
                        rint(0, 1)])
        elif op == 3:
            out.append([b"GETBIT", k, rint(0, 400)])
        elif op == 4:
            args = [b"BITCOUNT", k]
            if rng.random() < 0.8:
                args += [bound(), bound()] + ([rng.choice([b"BIT", b"byte"])]
                                              if rng.random() < 0.5 else [])
            out.append(args)
        elif op == 5:
            args = [b"BITPOS", k, rint(0, 1)]
            extra = rng.randrange(4)
            if extra:
                args.append(bound())
            if extra > 1:
                args.append(bound())
            if extra > 2:
                args.append(rng.choice([b"BIT", b"BYTE"]))
            out.append(args)
        elif op == 6:
            name = rng.choice([b"AND", b"OR", b"XOR", b"NOT"])
            srcs = [rng.choice(keys + [b"missing"])
                    for _ in range(1 if name == b"NOT" else rng.randrange(1, 4))]
            out.append([b"BITOP", name, rng.choice(keys)] + srcs)
        elif op in (7, 8):
            args = [rng.choice([b"BITFIELD", b"BITFIELD", b"BITFIELD_RO"]), k]
            for _ in range(rng.randrange(1, 5)):
                kind = rng.randrange(4)
                t = rng.choice(types)
                off = rint(0, 200) if rng.random() < 0.8 else b"#" + rint(0, 20)
                if kind == 0:
                    args += [b"GET", t, off]
                elif kind == 1:
                    args += [b"OVERFLOW", rng.choice([b"WRAP", b"SAT", b"FAIL"])]
                else:
                    v = rng.choice(values) if rng.random() < 0.5 else rng.randint(-300, 300)
                    args += [b"SET" if kind == 2 else b"INCRBY", t, off, b"%d" % v]
            out.append(args)
        elif op == 9:
            out.append(rng.choice([[b"GET", k], [b"STRLEN", k],
                                   [b"GETRANGE", k, bound(), bound()]]))
        elif op == 10:
            out.append(rng.choice([[b"SETRANGE", k, rint(0, 40), rng.randbytes(3)],
                                   [b"APPEND", k, rng.randbytes(rng.randrange(4))]]))
        else:   # big values take the in-place write path
            out.append(rng.choice([[b"DEL", k], [b"SET", k, rng.randbytes(rng.randrange(8))],
                                   [b"SET", k, rng.randbytes(5000)]]))
    return out


@pytest.mark.needs_redis
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_bitmap_workload_against_redis(redis_server, server, seed):
    rng = random.Random(seed)
    cmds = _random_bitmap_commands(rng, 1500)
    cmds += [[b"GET", k] for k in (b"a", b"b", b"c")]
    same_replies(redis_server, server.port, cmds, proto=2 if seed != 2 else 3)
