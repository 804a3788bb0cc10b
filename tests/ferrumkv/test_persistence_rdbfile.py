"""The RDB file format, byte by byte (persistence/rdbfile.py): records as redis-server 7.0.15
writes them, and a loader that refuses what it cannot store with the key, database and
type named, without touching anything outside its scratch keyspace."""

from __future__ import annotations

import struct

import pytest

from ferrumkv_py import lzf
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.persistence.rdbfile import (OP_EOF, VALUE_LOADERS, Loader, RdbFileError,
                                             db_header, function_record, header, key_record)
from ferrumkv_py.values import RList

NOW = 1_700_000_000_000


def finish(body: bytes) -> bytes:
    body += bytes((OP_EOF,))
    return body + struct.pack("<Q", lzf.crc64(body))


def load(data: bytes, dbs: int = 16):
    ks = Keyspace(dbs, clock=ManualClock(NOW))
    loader = Loader(data, ks, NOW)
    while not loader.step(3):
        pass
    return loader, ks


def test_header_and_records_bytes():
    assert header([(b"redis-ver", b"7.0.15")]) == b"REDIS0010\xfa\x09redis-ver\x067.0.15"
    assert db_header(3, 2, 1) == b"\xfe\x03\xfb\x02\x01"
    assert key_record(b"k", b"v") == b"\x00\x01k\x01v"
    assert key_record(b"k", b"12", expire_ms=NOW) == \
        b"\xfc" + struct.pack("<q", NOW) + b"\x00\x01k\xc0\x0c"
    assert key_record(b"k", b"v", idle_s=70) == b"\xf8\x40\x46\x00\x01k\x01v"
    assert key_record(b"k", b"v", freq=9) == b"\xf9\x09\x00\x01k\x01v"
    rec = key_record(b"l", RList([b"a"]), "")
    assert rec[:3] == b"\x12\x01l"                    # type 18, then the key
    assert function_record(b"#!lua name=x") == b"\xf5\x0c#!lua name=x"


def test_round_trip_with_ttls_metadata_and_databases():
    body = header([(b"redis-ver", b"7.0.15"), (b"ctime", b"1")])
    body += db_header(0, 2, 1) + key_record(b"a", b"1") + \
        key_record(b"t", b"x", expire_ms=NOW + 5000, idle_s=10, freq=42)
    body += db_header(15, 1, 1) + key_record(b"gone", b"x", expire_ms=NOW - 1)
    loader, ks = load(finish(body))
    assert loader.aux == {b"redis-ver": b"7.0.15", b"ctime": b"1"}
    assert (loader.loaded, loader.expired) == (2, 1)  # an expired key is not loaded
    db = ks.dbs[0]
    s = db.find(b"t")
    assert db.exp[s] == NOW + 5000 and db.lfu[s] == 42 and db.lru[s] == NOW - 10_000
    assert ks.dbs[15].nkeys == 0
    ks._check()


@pytest.mark.parametrize("data,text", [
    (b"REDIS0011" + bytes((OP_EOF,)) + bytes(8), "Can't handle RDB format version 11"),
    (b"RADIS0010", "Wrong signature"),
    (b"REDIS", "Wrong signature"),
    (b"REDIS0010\x00\x01k", "Short read or corrupt RDB file"),
    (b"REDIS0010\xf7\x01", "module"),
    (b"REDIS0010\xfe\x20", "more than 16 databases"),
])
def test_bad_files_are_refused(data, text):
    with pytest.raises(RdbFileError, match=text):
        load(data)


def test_unknown_types_name_the_key_and_database():
    for t, name in ((7, "module"), (20, "listpack set of Redis 7.2"), (30, "unknown")):
        data = finish(header([]) + db_header(4, 1, 0) + bytes((t,)) + b"\x03key" + b"junk")
        with pytest.raises(RdbFileError) as e:
            load(data)
        assert "Can't load key 'key' (db 4): type %d (%s" % (t, name) in str(e.value)
    assert 19 in VALUE_LOADERS and 18 in VALUE_LOADERS and 7 not in VALUE_LOADERS


def test_duplicate_key_is_refused():
    data = finish(header([]) + db_header(0, 2, 0) + key_record(b"a", b"1") +
                  key_record(b"a", b"2"))
    with pytest.raises(RdbFileError, match="Duplicate key 'a'"):
        load(data)


def test_crc_is_stored_and_an_old_version_loads():
    data = finish(header([]) + db_header(0, 1, 0) + key_record(b"a", b"1"))
    loader, _ = load(data)
    assert loader.stored_crc() == lzf.crc64(data[:-8])
    old = b"REDIS0004" + db_header(0, 1, 0)[:2] + key_record(b"a", b"1") + bytes((OP_EOF,))
    loader, ks = load(old)                      # version < 5: no CRC after EOF
    assert loader.stored_crc() == 0 and ks.dbs[0].find(b"a") is not None


def test_string_runs_read_by_the_scanner_equal_the_records():
    """The compiled scanner (rdb_scan.py) reads runs of string records; every shape of
    string (6/14/32-bit lengths, int8/16/32, LZF, empty), TTLs, int-encoded keys (which
    end a run) and a non-string record in the middle load as written."""
    values = [b"", b"a", b"7", b"-129", b"40000", b"-2147483648", b"x" * 70,
              b"y" * 20000, b"abc" * 100, bytes(range(256)) * 300, b"z" * 70000]
    want = {}
    body = header([]) + db_header(0, 40, 10)
    for i in range(40):
        key = b"%d" % i if i % 9 == 0 else b"k%d" % i       # "0", "9": int-encoded keys
        value = values[i % len(values)]
        x = NOW + 1000 * i if i % 4 == 0 else 0
        if i == 20:
            body += key_record(key, RList([b"l"]), "")
            continue
        body += key_record(key, value, expire_ms=x)
        want[key] = (value, x)
    for step in (1, 5, 1000):
        ks = Keyspace(16, clock=ManualClock(NOW))
        loader = Loader(finish(body), ks, NOW - 1)
        while not loader.step(step):
            pass
        db = ks.dbs[0]
        got = {k: (db.vals[s], db.exp[s]) for k, s in db.items() if k != b"k20"}
        assert got == want
        ks._check()


def test_a_corrupt_lzf_value_in_a_run_is_reported():
    body = header([]) + db_header(0, 2, 0) + key_record(b"a", b"1") + \
        key_record(b"b", b"abc" * 100)
    data = bytearray(finish(body))
    at = data.index(b"\x01b\xc3") + 3           # b's LZF: <clen> <plain len: 300>
    assert data[at] < 64 and data[at + 1:at + 3] == b"\x41\x2c"
    data[at + 2] += 1                             # claims 301 plain bytes
    with pytest.raises(RdbFileError, match="invalid LZF string"):
        load(bytes(data))
