"""The RDB value codec (ferrumkv_py/rdb.py, rdb_blobs.py): exact bytes where Redis's are
known, round trips of every type and size class, the older encodings Redis 7.0 still loads,
and hostile payloads (corrupt, truncated, huge claimed lengths) that must give RdbError.

``legacy`` payload builders live here (test side) so the cross-server tests in
test_dump.py can feed the same bytes to redis-server.
"""

from __future__ import annotations

import math
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrumkv_py import lzf, memory, rdb, rdb_load
from ferrumkv_py.rdb_blobs import (BlobError, as_ll, intset_build, intset_decode, lp_build,
                                   lp_decode, lp_entry)
from ferrumkv_py.values import RHash, RList, RSet
from ferrumkv_py.zset import ZSet

# ---- builders ----


def sign(body: bytes, version: int = rdb.RDB_VERSION) -> bytes:
    """A payload around ``body``: version and CRC-64 as DUMP writes them."""
    head = body + struct.pack("<H", version)
    return head + struct.pack("<Q", lzf.crc64(head))


def rlen(n: int) -> bytes:
    return rdb._len(n)


def rstr(s: bytes) -> bytes:
    """A plain (not encoded) RDB string."""
    return rlen(len(s)) + s


def ziplist(items: list) -> bytes:
    entries, prev = [], 0
    for it in items:
        pl = bytes([prev]) if prev < 254 else b"\xfe" + struct.pack("<I", prev)
        if isinstance(it, int):
            if 0 <= it <= 12:
                enc = bytes([0xF1 + it])
            elif -128 <= it <= 127:
                enc = b"\xfe" + struct.pack("<b", it)
            elif -32768 <= it <= 32767:
                enc = b"\xc0" + struct.pack("<h", it)
            elif -(1 << 23) <= it < 1 << 23:
                enc = b"\xf0" + struct.pack("<i", it)[:3]
            elif -(1 << 31) <= it < 1 << 31:
                enc = b"\xd0" + struct.pack("<i", it)
            else:
                enc = b"\xe0" + struct.pack("<q", it)
        else:
            n = len(it)
            if n < 64:
                enc = bytes([n]) + it
            elif n < 16384:
                enc = bytes([0x40 | (n >> 8), n & 0xFF]) + it
            else:
                enc = b"\x80" + struct.pack(">I", n) + it
        entries.append(pl + enc)
        prev = len(pl + enc)
    body = b"".join(entries)
    tail = 10 + sum(len(e) for e in entries[:-1])
    return struct.pack("<IIH", 10 + len(body) + 1, tail, len(items)) + body + b"\xff"


def zipmap(pairs: list) -> bytes:
    out = bytes([len(pairs)])
    for f, v in pairs:
        out += bytes([len(f)]) + f + bytes([len(v)]) + b"\x00" + v
    return out + b"\xff"


def legacy_payloads() -> dict:
    """name -> (payload, expected read-back) for every older encoding 7.0 loads."""
    big = [b"e%d" % i for i in range(300)]
    return {
        "list-1": (sign(bytes([rdb.T_LIST]) + rlen(3) + rstr(b"a") + rstr(b"10")
                        + rstr(b"c" * 30)), [b"a", b"10", b"c" * 30]),
        "list-ziplist": (sign(bytes([rdb.T_LIST_ZIPLIST]) + rstr(
            ziplist([b"x", 7, -100, 1000, 100000, 1 << 40, b"y" * 70]))),
            [b"x", b"7", b"-100", b"1000", b"100000", b"%d" % (1 << 40), b"y" * 70]),
        "list-quicklist": (sign(bytes([rdb.T_LIST_QUICKLIST]) + rlen(2)
                                + rstr(ziplist([b"a", b"b"])) + rstr(ziplist(big))),
                           [b"a", b"b"] + big),
        "zset-1": (sign(bytes([rdb.T_ZSET]) + rlen(4) + rstr(b"a") + bytes([3]) + b"1.5"
                        + rstr(b"b") + bytes([254]) + rstr(b"c") + bytes([255])
                        + rstr(b"d") + bytes([4]) + b"-2e3"),
                   [(b"c", -math.inf), (b"d", -2000.0), (b"a", 1.5), (b"b", math.inf)]),
        "zset-ziplist": (sign(bytes([rdb.T_ZSET_ZIPLIST]) + rstr(
            ziplist([b"m3", -7, b"m2", b"2.25", b"m1", 5]))),
            [(b"m3", -7.0), (b"m2", 2.25), (b"m1", 5.0)]),
        "hash-ziplist": (sign(bytes([rdb.T_HASH_ZIPLIST]) + rstr(
            ziplist([b"f", b"v", b"n", 42]))), {b"f": b"v", b"n": b"42"}),
        "hash-zipmap": (sign(bytes([rdb.T_HASH_ZIPMAP]) + rstr(
            zipmap([(b"f1", b"v1"), (b"f2", b"")]))), {b"f1": b"v1", b"f2": b""}),
    }


def readback(value):
    """A comparable form of a loaded value."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, RList):
        return list(value)
    if isinstance(value, RHash):
        return dict(value)
    if isinstance(value, RSet):
        return set(value)
    return [(m, s) for s, m in value.order]


def zset_of(pairs) -> ZSet:
    z = ZSet(max(len(m) for m, _ in pairs))
    for m, s in pairs:
        z.insert(m, s)
    z.mem = memory.recount(z)
    return z


def load(payload: bytes):
    assert rdb.verify(payload)
    return rdb.load(payload)


# ---- footer and exact bytes ----

def test_hello_is_byte_exact_with_redis():
    # redis-server 7.0.15: DUMP of "hello" (shared/notes exchanges)
    assert rdb.dump(b"hello", "embstr") == b"\x00\x05hello\n\x00cr\xdfve4 \n"


@pytest.mark.parametrize("s,body", [
    (b"0", b"\xc0\x00"), (b"-128", b"\xc0\x80"), (b"127", b"\xc0\x7f"),
    (b"128", b"\xc1\x80\x00"), (b"-32769", b"\xc2\xff\x7f\xff\xff"),
    (b"2147483647", b"\xc2\xff\xff\xff\x7f"),
    (b"2147483648", b"\x0a2147483648"),         # beyond int32: plain digits
    (b"012", b"\x03012"), (b"+1", b"\x02+1"),   # not canonical: plain
    (b"12345678901", b"\x0b12345678901"),        # 11 chars but beyond int32
])
def test_string_encodings(s, body):
    payload = rdb.dump(s, "raw")
    assert payload[:-10] == b"\x00" + body
    assert load(payload) == s


def test_long_strings_are_lzf_compressed_when_it_pays():
    s = b"ab" * 500
    payload = rdb.dump(s, "raw")
    assert payload[1] == 0xC3 and len(payload) < 100
    assert load(payload) == s
    noise = random.Random(1).randbytes(500)
    assert rdb.dump(noise, "raw")[1:4] == b"\x41\xf4" + noise[:1]   # 14-bit length, raw


@pytest.mark.parametrize("n,head", [(0, b"\x00"), (63, b"\x3f"), (64, b"\x40\x40"),
                                    (16383, b"\x7f\xff"), (16384, b"\x80\x00\x00\x40\x00"),
                                    (1 << 32, b"\x81\x00\x00\x00\x01\x00\x00\x00\x00")])
def test_length_encoding(n, head):
    assert rdb._len(n) == head
    assert rdb_load._Reader(head).count() == n


def test_verify_checks_size_version_and_checksum():
    good = rdb.dump(b"v", "embstr")
    assert rdb.verify(good)
    assert not rdb.verify(good[:9])
    assert not rdb.verify(good[:-1] + bytes([good[-1] ^ 1]))
    assert not rdb.verify(b"\x01" + good[1:])        # body changed, checksum not
    assert not rdb.verify(sign(b"\x00\x01v", version=11))   # Redis 7.2's version
    assert rdb.verify(sign(b"\x00\x01v", version=9))        # older versions load
    assert rdb.verify(sign(b""))                             # an empty body verifies...
    with pytest.raises(rdb.RdbError):
        rdb.load(sign(b""))                                  # ...and fails to load


# ---- listpack / intset ----

@pytest.mark.parametrize("item,enc", [
    (b"0", b"\x00"), (b"127", b"\x7f"), (b"128", b"\xc0\x80"), (b"-1", b"\xdf\xff"),
    (b"-4096", b"\xd0\x00"), (b"4096", b"\xf1\x00\x10"), (b"-32768", b"\xf1\x00\x80"),
    (b"32768", b"\xf2\x00\x80\x00"), (b"8388608", b"\xf3\x00\x00\x80\x00"),
    (b"2147483648", b"\xf4\x00\x00\x00\x80\x00\x00\x00\x00"),
    (b"a", b"\x81a"), (b"", b"\x80"), (b"01", b"\x8201"),
])
def test_listpack_entry_encodings(item, enc):
    e = lp_entry(item)
    assert e[:len(enc)] == enc
    assert lp_decode(lp_build([e])) == [as_ll(item) if as_ll(item) is not None else item]


@pytest.mark.parametrize("n", [63, 64, 4095, 4096, 16378, 16379])
def test_listpack_string_sizes_and_back_lengths(n):
    s = b"s" * n
    blob = lp_build([lp_entry(s), lp_entry(b"x")])
    assert lp_decode(blob) == [s, b"x"]


def test_listpack_validation():
    blob = lp_build([lp_entry(b"a"), lp_entry(b"5")])
    assert lp_decode(blob) == [b"a", 5]
    bad = [blob[:-1] + b"\x00",                         # no terminator
           struct.pack("<I", len(blob) + 1) + blob[4:],  # header size
           blob[:4] + struct.pack("<H", 3) + blob[6:],   # count
           blob[:8] + b"\x03" + blob[9:],                # back-length of the first entry
           blob[:6] + b"\xf5" + blob[7:]]                # unknown encoding
    for b in bad:
        with pytest.raises(BlobError):
            lp_decode(b)
    unknown_count = blob[:4] + struct.pack("<H", 65535) + blob[6:]
    assert lp_decode(unknown_count) == [b"a", 5]


def test_intset():
    assert intset_decode(intset_build([3, -2, 1])) == [-2, 1, 3]
    assert intset_build([1, 2])[:4] == b"\x02\x00\x00\x00"
    assert intset_build([1, 1 << 20])[:4] == b"\x04\x00\x00\x00"
    assert intset_build([1, 1 << 40])[:4] == b"\x08\x00\x00\x00"
    with pytest.raises(BlobError):
        intset_decode(struct.pack("<II2h", 2, 2, 5, 5))     # not strictly ascending
    with pytest.raises(BlobError):
        intset_decode(struct.pack("<II2h", 3, 2, 1, 5))     # width
    with pytest.raises(BlobError):
        intset_decode(struct.pack("<II2h", 2, 3, 1, 5))     # count


def test_as_ll():
    assert [as_ll(s) for s in (b"0", b"-5", b"9223372036854775807")] == [0, -5, (1 << 63) - 1]
    for s in (b"", b"-", b"-0", b"01", b"+1", b" 1", b"1 ", b"9223372036854775808", b"1e3"):
        assert as_ll(s) is None


# ---- round trips ----

def _values():
    yield "string", b"hello", "embstr"
    yield "string-empty", b"", "embstr"
    yield "string-int", b"-12345", "int"
    yield "string-big", b"xyz" * 10_000, "raw"
    yield "list-small", RList([b"a", b"1", b"-70000", b""]), "quicklist"
    yield "list-big", RList(b"item-%d" % i for i in range(5000)), "quicklist"
    yield "list-huge-element", RList([b"a", b"q" * 20_000, b"b"]), "quicklist"
    yield "set-intset", RSet([b"1", b"-2", b"70000"]), "intset"
    yield "set-hashtable", RSet([b"a", b"b", b"1"]), "hashtable"
    yield "set-big", RSet(b"%d" % i for i in range(1000)), "hashtable"
    yield "hash-listpack", RHash({b"f": b"v", b"n": b"12"}), "listpack"
    yield "hash-hashtable", RHash({b"f%d" % i: b"v" * (i % 100) for i in range(600)}), \
        "hashtable"
    yield "zset-listpack", zset_of([(b"a", 1.0), (b"b", -2.5), (b"c", 1e300),
                                   (b"d", math.inf), (b"e", 0.1)]), "listpack"
    yield "zset-skiplist", zset_of([(b"m%d" % i, i / 7) for i in range(300)]), "skiplist"
    yield "zset-long-member", zset_of([(b"x" * 100, 2.0), (b"y", -0.0)]), "skiplist"


@pytest.mark.parametrize("name,value,encoding", list(_values()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_round_trip(name, value, encoding):
    payload = rdb.dump(value, encoding)
    back = load(payload)
    assert type(back) is type(value)
    assert readback(back) == readback(value)
    if not isinstance(value, bytes):
        assert back.mem == memory.recount(back)
    if isinstance(value, ZSet):
        back._check()
        assert back.listpack == value.listpack
        for (s1, _), (s2, _) in zip(value.order, back.order):
            assert math.copysign(1, s1) == math.copysign(1, s2)   # -0 survives a skiplist
    assert payload[0] == {
        "string": rdb.T_STRING, "list": rdb.T_LIST_QUICKLIST_2, "set-intset": rdb.T_SET_INTSET,
        "set": rdb.T_SET, "hash-listpack": rdb.T_HASH_LISTPACK, "hash": rdb.T_HASH,
        "zset-listpack": rdb.T_ZSET_LISTPACK, "zset": rdb.T_ZSET_2,
    }[name if name in ("set-intset", "hash-listpack", "zset-listpack")
      else name.split("-")[0]]


def test_big_list_is_split_into_8k_nodes():
    value = RList(b"item-%d" % i for i in range(5000))
    nodes = rdb._list_nodes(value)
    assert len(nodes) > 1 and all(len(n) <= rdb.LIST_NODE_MAX_BYTES for n in nodes)
    assert sum(len(lp_decode(n)) for n in nodes) == 5000


def test_skiplist_payload_is_highest_first():
    payload = rdb.dump(zset_of([(b"a", 1.0), (b"b", 2.0)]), "skiplist")
    assert payload[:-10] == b"\x05\x02\x01b" + struct.pack("<d", 2.0) + b"\x01a" + \
        struct.pack("<d", 1.0)


@pytest.mark.parametrize("name", sorted(legacy_payloads()))
def test_legacy_encodings_load(name):
    payload, expected = legacy_payloads()[name]
    assert readback(load(payload)) == expected


def test_quicklist2_plain_node_and_empty_listpack_node():
    body = (bytes([rdb.T_LIST_QUICKLIST_2]) + rlen(3) + rlen(rdb.QL_PLAIN) + rstr(b"big")
            + rlen(rdb.QL_PACKED) + rstr(lp_build([])) + rlen(rdb.QL_PACKED)
            + rstr(lp_build([lp_entry(b"z")])))
    assert list(load(sign(body))) == [b"big", b"z"]


def test_lzf_string_of_length_zero_is_empty():
    # Redis's lzf_decompress returns 0 into a 0-byte buffer, which "matches" the length
    assert load(sign(bytes([rdb.T_STRING, 0xC3]) + rlen(2) + rlen(0) + b"\x05a")) == b""


def test_quicklist_skips_empty_ziplist_nodes():
    body = bytes([rdb.T_LIST_QUICKLIST]) + rlen(2) + rstr(ziplist([])) + rstr(ziplist([b"a"]))
    assert list(load(sign(body))) == [b"a"]


def test_zset_listpack_text_scores_follow_strtod():
    items = [b"a", b"1.5", b"b", b" 2e1xyz", b"c", b"0x10", b"d", b"junk"]
    z = load(sign(bytes([rdb.T_ZSET_LISTPACK]) + rstr(lp_build([lp_entry(i) for i in items]))))
    assert readback(z) == [(b"d", 0.0), (b"a", 1.5), (b"c", 16.0), (b"b", 20.0)]


def test_strtod():
    assert rdb_load.strtod(b"  -1.25e2abc") == -125.0
    assert rdb_load.strtod(b"INF") == math.inf and rdb_load.strtod(b"-infinity") == -math.inf
    assert math.isnan(rdb_load.strtod(b"nan"))
    assert rdb_load.strtod(b"0x1p4") == 16.0 and rdb_load.strtod(b".5") == 0.5
    assert rdb_load.strtod(b"abc") is None and rdb_load.strtod(b"") is None


# ---- refused payloads ----

BAD_BODIES = {
    "empty list": bytes([rdb.T_LIST]) + rlen(0),
    "empty set": bytes([rdb.T_SET]) + rlen(0),
    "empty hash": bytes([rdb.T_HASH]) + rlen(0),
    "empty zset": bytes([rdb.T_ZSET_2]) + rlen(0),
    "empty quicklist": bytes([rdb.T_LIST_QUICKLIST_2]) + rlen(0),
    "only empty nodes": bytes([rdb.T_LIST_QUICKLIST_2]) + rlen(1) + rlen(2) + rstr(lp_build([])),
    "empty hash listpack": bytes([rdb.T_HASH_LISTPACK]) + rstr(lp_build([])),
    "empty intset": bytes([rdb.T_SET_INTSET]) + rstr(intset_build([])),
    "odd hash listpack": bytes([rdb.T_HASH_LISTPACK]) + rstr(lp_build([lp_entry(b"f")])),
    "duplicate set member": bytes([rdb.T_SET]) + rlen(2) + rstr(b"a") + rstr(b"a"),
    "duplicate hash field": bytes([rdb.T_HASH]) + rlen(2) + rstr(b"f") + rstr(b"1")
    + rstr(b"f") + rstr(b"2"),
    "duplicate zset member": bytes([rdb.T_ZSET_2]) + rlen(2) + rstr(b"m")
    + struct.pack("<d", 1) + rstr(b"m") + struct.pack("<d", 2),
    "nan score": bytes([rdb.T_ZSET_2]) + rlen(1) + rstr(b"m") + struct.pack("<d", math.nan),
    "nan text score": bytes([rdb.T_ZSET]) + rlen(1) + rstr(b"m") + bytes([253]),
    "bad quicklist container": bytes([rdb.T_LIST_QUICKLIST_2]) + rlen(1) + rlen(3) + rstr(b"x"),
    "stream": bytes([15]) + rlen(0),
    "module": bytes([7]) + rlen(0),
    "unknown type": bytes([42]),
    "special length as count": bytes([rdb.T_LIST]) + b"\xc0\x01",
    "unknown length": bytes([rdb.T_STRING]) + b"\x82",
    "unknown string encoding": bytes([rdb.T_STRING]) + b"\xc4",
    "truncated string": bytes([rdb.T_STRING]) + rlen(100) + b"short",
    "huge string": bytes([rdb.T_STRING]) + b"\x81" + struct.pack(">Q", 1 << 63),
    "huge lzf claim": bytes([rdb.T_STRING, 0xC3]) + rlen(3) + b"\x81"
    + struct.pack(">Q", 1 << 40) + b"\x00a\xe0",
    "lzf wrong length": bytes([rdb.T_STRING, 0xC3]) + rlen(2) + rlen(5) + b"\x00a",
    "huge list count": bytes([rdb.T_LIST]) + b"\x81" + struct.pack(">Q", 1 << 62) + rstr(b"a"),
    "corrupt ziplist": bytes([rdb.T_LIST_ZIPLIST]) + rstr(ziplist([b"a"])[:-1] + b"\x00"),
    "only empty ziplist nodes": bytes([rdb.T_LIST_QUICKLIST]) + rlen(1) + rstr(ziplist([])),
    "corrupt zipmap": bytes([rdb.T_HASH_ZIPMAP]) + rstr(b"\x01\x05ab\xff"),
}


@pytest.mark.parametrize("name", sorted(BAD_BODIES))
def test_bad_payloads_are_refused(name):
    with pytest.raises(rdb.RdbError):
        load(sign(BAD_BODIES[name]))


def _valid_payloads() -> list:
    out = [rdb.dump(v, enc) for _, v, enc in _values() if len(rdb.dump(v, enc)) < 3000]
    out += [p for p, _ in legacy_payloads().values()]
    return out


VALID = _valid_payloads()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VALID), st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255),
                                                   st.sampled_from("sid")), min_size=1,
                                         max_size=4))
def test_mutated_payloads_load_or_fail_cleanly(payload, edits):
    body = bytearray(payload[:-10])
    for pos, byte, op in edits:
        pos %= len(body) + 1
        if op == "s" and pos < len(body):
            body[pos] = byte
        elif op == "i":
            body[pos:pos] = bytes([byte])
        elif op == "d" and pos < len(body):
            del body[pos]
    try:
        value = load(sign(bytes(body)))
    except rdb.RdbError:
        return
    if not isinstance(value, bytes):       # whatever loads is a consistent value
        assert len(value) > 0 and value.mem == memory.recount(value)
        if isinstance(value, ZSet):
            value._check()
    rdb.dump(value, "skiplist" if isinstance(value, ZSet) else "hashtable")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_random_payloads_load_or_fail_cleanly(body):
    try:
        load(sign(body))
    except rdb.RdbError:
        pass


def test_every_truncation_fails_cleanly():
    """Each valid payload cut at every position, read without its footer (so the reader
    meets the end of its buffer) and with a fresh footer: RdbError or a value, nothing else."""
    for payload in VALID:
        body = payload[:-10]
        for cut in range(len(body)):
            for candidate in (body[:cut], sign(body[:cut])):
                try:
                    rdb.load(candidate)
                except rdb.RdbError:
                    pass


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted({p[0] for p in VALID})), st.binary(max_size=60))
def test_typed_random_bodies_fail_cleanly(type_byte, rest):
    try:
        rdb.load(bytes([type_byte]) + rest)
    except rdb.RdbError:
        pass


def test_allocation_failure_is_a_load_error(monkeypatch):
    def no_memory(data, out_len):
        raise MemoryError
    monkeypatch.setattr(lzf, "decompress", no_memory)
    with pytest.raises(rdb.RdbError):
        rdb.load(rdb.dump(b"ab" * 100, "raw"))


def test_verify_takes_a_memoryview_without_copying():
    payload = rdb.dump(b"v" * 1000, "raw")
    assert rdb.verify(payload) and rdb.verify(bytearray(payload))
