"""The RDB file (version 10) as redis-server 7.0.15 writes it: records out, keyspace in.

Layout (``docs/persistence.md`` section 6)::

    "REDIS0010"
    0xFA <aux name> <aux value>            redis-ver, redis-bits, ctime, used-mem, aof-base
    0xF5 <library code>                    FUNCTION2, one per function library
    0xFE <db>  0xFB <keys> <expires>       SELECTDB, RESIZEDB (per non-empty database)
    [0xFC <deadline ms, u64 LE>] [0xF8 <idle s> | 0xF9 <freq byte>] <type> <key> <value>
    0xFF <CRC-64 of all bytes before, u64 LE; 0 = not computed>

A key record is the DUMP payload of its value without the footer, with the key after the
type byte; the value encodings are ``rdb.py``'s (one encoder for DUMP and files).

Value types are two tables, :data:`VALUE_WRITERS` (value class -> body) and
:data:`VALUE_LOADERS` (type byte -> loader): a new data type (streams) is one row in each.
A type byte no row knows fails the load with :class:`RdbFileError` naming the key, the
database and the type; the loader fills a scratch keyspace, so the caller installs nothing
unless the whole file, EOF and checksum included, was good.

Complexity: a record O(size of its value); loading O(file size).
"""

from __future__ import annotations

import struct

import numpy as np

from .. import memory, rdb
from . import rdb_scan
from ..rdb import RdbError, _len, _str
from ..keyspace import SHARDS
from ..rdb_load import T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, _load_value, _Reader
from ..stream import Stream
from ..values import RHash, RList, RSet
from ..zset import ZSet

MAGIC = b"REDIS"
RDB_VERSION = 10
OLDEST_VERSION = 1
# opcodes (Redis rdb.h)
OP_FUNCTION2, OP_FUNCTION, OP_MODULE_AUX = 0xF5, 0xF6, 0xF7
OP_IDLE, OP_FREQ, OP_AUX, OP_RESIZEDB = 0xF8, 0xF9, 0xFA, 0xFB
OP_EXPIRETIME_MS, OP_EXPIRETIME, OP_SELECTDB, OP_EOF = 0xFC, 0xFD, 0xFE, 0xFF
CRC_SIZE = 8
MS_PER_S = 1000
CHECKSUM_VERSION = 5              # files from version 5 on end with a CRC-64
# type names for the error of a type we cannot store
TYPE_NAMES = {6: "module (pre-GA)", 7: "module", 15: "stream", 19: "stream",
              20: "listpack set of Redis 7.2", 21: "stream of Redis 7.2"}


class RdbFileError(Exception):
    """A file we cannot load: the message says what and where."""


# ---- writing ----

def _body_of(value, encoding: str) -> bytes:
    return rdb.dump_body(value, encoding)


# value class -> (value, encoding) -> type byte + value (streams: rdb_stream.py, type 19).
VALUE_WRITERS = {bytes: _body_of, RList: _body_of, RHash: _body_of, RSet: _body_of,
                 ZSet: _body_of, Stream: _body_of}


def header(aux: list) -> bytes:
    """The magic and the AUX fields (``(name, value)`` as bytes).  O(len(aux))."""
    parts = [MAGIC + b"%04d" % RDB_VERSION]
    for name, value in aux:
        parts.append(bytes((OP_AUX,)) + _str(name) + _str(value))
    return b"".join(parts)


def function_record(code: bytes) -> bytes:
    """A FUNCTION2 record: one library's code.  O(len(code))."""
    return bytes((OP_FUNCTION2,)) + _str(code)


def db_header(db_id: int, keys: int, expires: int) -> bytes:
    """SELECTDB and RESIZEDB.  O(1)."""
    return (bytes((OP_SELECTDB,)) + _len(db_id) + bytes((OP_RESIZEDB,)) + _len(keys)
            + _len(expires))


def key_record(key: bytes, value, encoding: str = "", expire_ms: int = 0, idle_s: int = -1,
               freq: int = -1) -> bytes:
    """One key: optional deadline, optional IDLE / FREQ, then the type, key and value.
    Complexity: O(size of the value)."""
    head = b""
    if expire_ms:
        head = bytes((OP_EXPIRETIME_MS,)) + struct.pack("<q", expire_ms)
    if idle_s >= 0:
        head += bytes((OP_IDLE,)) + _len(idle_s)
    if freq >= 0:
        head += bytes((OP_FREQ, freq))
    if value.__class__ is bytes:            # the common case, no table lookup
        return head + b"\x00" + _str(key) + _str(value)
    body = VALUE_WRITERS[value.__class__](value, encoding)
    return head + body[:1] + _str(key) + body[1:]


# ---- loading ----

def _load_any(r: _Reader, t: int):
    value = _load_value(r, t)
    if value.__class__ is not bytes:
        value.mem = memory.recount(value)
    return value


# type byte -> loader(reader, type) -> value (streams 15 and 19: rdb_stream.py).
VALUE_LOADERS = {t: _load_any for t in (
    rdb.T_STRING, rdb.T_LIST, rdb.T_SET, rdb.T_ZSET, rdb.T_HASH, rdb.T_ZSET_2,
    rdb.T_HASH_ZIPMAP, rdb.T_LIST_ZIPLIST, rdb.T_SET_INTSET, rdb.T_ZSET_ZIPLIST,
    rdb.T_HASH_ZIPLIST, rdb.T_LIST_QUICKLIST, rdb.T_HASH_LISTPACK, rdb.T_ZSET_LISTPACK,
    rdb.T_LIST_QUICKLIST_2, T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2)}


class Loader:
    """Reads a whole RDB file into a scratch keyspace, a bounded number of keys per
    :meth:`step` (the server answers -LOADING between steps).

    ``keyspace`` is a fresh :class:`~ferrumkv_py.keyspace.Keyspace` with as many
    databases as the server's; :attr:`aux` collects the AUX fields, :attr:`functions` the
    FUNCTION2 libraries' code.  ``now_ms`` decides which keys are already expired (not
    loaded, counted in :attr:`expired`).  Nothing here touches the live keyspace.
    Complexity: O(file size) over all steps.
    """

    def __init__(self, data: bytes, keyspace, now_ms: int):
        if len(data) < 9 or data[:5] != MAGIC:
            raise RdbFileError("Wrong signature trying to load DB from file")
        try:
            version = int(data[5:9])
        except ValueError:
            raise RdbFileError("Wrong signature trying to load DB from file") from None
        if not OLDEST_VERSION <= version <= RDB_VERSION:
            raise RdbFileError("Can't handle RDB format version %d" % version)
        self.version = version
        self.data = data
        self.view = np.frombuffer(data, dtype=np.uint8)
        self.r = _Reader(data)
        self.r.pos = 9
        self.ks = keyspace
        self.db = keyspace.dbs[0]
        self.now_ms = now_ms
        self.aux: dict = {}
        self.functions: list = []
        self.loaded = self.expired = 0
        self.done = False
        self.crc_at = -1              # offset of the stored CRC (after EOF)

    def step(self, max_keys: int) -> bool:
        """Load up to ``max_keys`` keys; True once EOF was read.  Raises RdbFileError.
        Complexity: O(bytes read)."""
        try:
            return self._step(max_keys)
        except RdbError as e:
            raise RdbFileError("Short read or corrupt RDB file (%s) at offset %d"
                               % (e, self.r.pos)) from None

    def _step(self, max_keys: int) -> bool:
        r = self.r
        data = self.data
        end = len(data)
        now = self.now_ms
        expire = 0
        idle = freq = -1
        n = 0
        while n < max_keys:
            p = r.pos
            if p >= end:
                raise RdbError("truncated")
            t = data[p]
            if (t == 0 or t == OP_EXPIRETIME_MS) and not expire and idle < 0 and freq < 0:
                # a run of string records, read by the compiled scanner (rdb_scan.py)
                records, q = rdb_scan.read_run(data, self.view, p, max_keys - n)
                if records:
                    store = self._store
                    for key, value, x in records:
                        if x and x < now:
                            self.expired += 1
                        else:
                            store(key, value, x, -1, -1)
                    n += len(records)
                    r.pos = q
                    continue
            r.pos = p + 1
            if t == 0 and idle < 0 and freq < 0:   # a string key: the common record, inline
                key = r.string()
                value = r.string()
                n += 1
                if expire and expire < now:
                    self.expired += 1
                else:
                    self._store(key, value, expire, -1, -1)
                expire = 0
                continue
            if t == OP_EXPIRETIME_MS:
                expire = struct.unpack("<q", r.take(8))[0]
                continue
            if t == OP_EXPIRETIME:
                expire = struct.unpack("<i", r.take(4))[0] * MS_PER_S
                continue
            if t == OP_IDLE:
                idle = r.count()
                continue
            if t == OP_FREQ:
                freq = r.byte()
                continue
            if t == OP_SELECTDB:
                db_id = r.count()
                if db_id >= len(self.ks.dbs):
                    raise RdbFileError("FATAL: Data file was created with a Redis server "
                                       "configured to handle more than %d databases. "
                                       "Exiting" % len(self.ks.dbs))
                self.db = self.ks.dbs[db_id]
                continue
            if t == OP_RESIZEDB:
                r.count()
                r.count()
                continue
            if t == OP_AUX:
                name = r.string()
                self.aux[name] = r.string()
                continue
            if t == OP_FUNCTION2:
                self.functions.append(r.string())
                continue
            if t in (OP_FUNCTION, OP_MODULE_AUX):
                raise RdbFileError("the file holds %s data, which this server cannot load"
                                   % ("pre-7.0 function" if t == OP_FUNCTION else "module"))
            if t == OP_EOF:
                self.crc_at = r.pos
                if self.version >= CHECKSUM_VERSION:
                    r.take(CRC_SIZE)
                self.done = True
                return True
            key = r.string()
            loader = VALUE_LOADERS.get(t)
            if loader is None:
                raise RdbFileError(
                    "Can't load key '%s' (db %d): type %d (%s) is not supported by this "
                    "server" % (key.decode("utf-8", "backslashreplace"), self.db.id, t,
                                TYPE_NAMES.get(t, "unknown type")))
            value = loader(r, t)
            n += 1
            if expire and expire < self.now_ms:
                self.expired += 1
            else:
                self._store(key, value, expire, idle, freq)
            expire = 0
            idle = freq = -1
        return False

    def _store(self, key: bytes, value, expire: int, idle: int, freq: int) -> None:
        db = self.db
        shard = db.shards[hash(key) % SHARDS]
        if key in shard:
            raise RdbFileError("Duplicate key '%s' found in RDB file (db %d)"
                               % (key.decode("utf-8", "backslashreplace"), db.id))
        s = db.add(key, value, shard)
        if expire:
            db.set_expire(s, expire)
        if idle >= 0:
            db.lru[s] = max(0, self.now_ms - idle * MS_PER_S)
        if freq >= 0:
            db.lfu[s] = freq
        self.loaded += 1

    def stored_crc(self) -> int:
        """The CRC-64 the file ends with (0: not computed by its writer)."""
        if self.version < CHECKSUM_VERSION:
            return 0
        return int.from_bytes(self.data[self.crc_at:self.crc_at + CRC_SIZE], "little")


def install(loaded_ks, ks) -> int:
    """Swap the loaded databases' tables into the live keyspace ``ks`` (whose databases
    must be empty) and add their memory.  Returns the keys installed.  O(databases)."""
    n = 0
    for src, dst in zip(loaded_ks.dbs, ks.dbs):
        assert not dst.nkeys
        dst.swap_contents(src)
        n += dst.nkeys
    ks.used_memory += loaded_ks.used_memory
    loaded_ks.used_memory = 0
    ks.signal_all()
    return n
