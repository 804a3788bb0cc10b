"""Redis 7.0's RDB value serialization, as DUMP writes it and RESTORE reads it.

Payload
-------
::

    <type byte> <value> <RDB version, u16 LE: 10> <CRC-64 of everything before, u64 LE>

    DUMP of the string "hello":
    00 | 05 68 65 6c 6c 6f | 0a 00 | 63 72 df 76 65 34 20 0a

:func:`verify` checks the footer (Redis's ``verifyDumpPayload``: at least 10 bytes, version
at most 10, checksum); :func:`load` then reads the value and raises :class:`RdbError` for
anything malformed -- RESTORE's ``Bad data format``.  The reader sees the whole payload,
footer included, as Redis's does.

Lengths: the top two bits of the first byte say how it continues::

    00xxxxxx             6-bit length          10000000 + u32 BE     32-bit length
    01xxxxxx yyyyyyyy    14-bit length         10000001 + u64 BE     64-bit length
    11xxxxxx             a specially encoded string: xxxxxx = 0 int8, 1 int16 LE,
                         2 int32 LE, 3 LZF (<compressed len> <plain len> <LZF bytes>)

Strings are a length and the bytes, or one of the special forms: a canonical integer of at
most 11 characters that fits in 32 bits is written as int8/16/32, and a string of more than
20 bytes is LZF-compressed when that saves at least 4 bytes (``rdbSaveRawString``).

Types written (Redis 7.0's choice for the value's size, from the encoding OBJECT ENCODING
reports): string 0; list 18 (quicklist of listpacks, split where RPUSH splits Redis's
8 KiB nodes, one blob per node); set 11 (intset) or 2 (members); sorted set 17 (listpack of member, score) or 5
(members with binary double scores, highest first); hash 16 (listpack of field, value) or 4.
Types read, in addition: list 1, 10 (ziplist) and 14 (quicklist of ziplists), sorted set 3
(text scores) and 12 (ziplist), hash 9 (zipmap) and 13 (ziplist).  Streams: 19 written,
19 and 15 read (``rdb_stream.py``).  Modules are not supported (``Bad data format``);
version 11 payloads (Redis 7.2) fail the version check
as they do on Redis 7.0.

Safety: every claimed length is checked against the bytes left before anything is read or
allocated (an LZF plain length against ``lzf.MAX_RATIO`` times its compressed length), and
every loop consumes input, so a hostile payload costs time and memory linear in its size.
Empty containers, duplicate members or fields and NaN scores are refused, as Redis 7.0
does with ``sanitize-dump-payload yes`` (its default ``no`` lets some of them through).
Byte for byte, DUMP equals redis-server's except for hash-table element order.

Complexity: dump and load are O(size of the value).
"""

from __future__ import annotations

import struct

from . import lzf, memory, rdb_kernels
from .rdb_blobs import as_ll, intset_build, lp_build, lp_entry
from .zset import ZSet, score_text

RDB_VERSION = 10
FOOTER_SIZE = 10                  # version (2) + CRC-64 (8)
# object types
T_STRING, T_LIST, T_SET, T_ZSET, T_HASH, T_ZSET_2 = 0, 1, 2, 3, 4, 5
T_HASH_ZIPMAP, T_LIST_ZIPLIST, T_SET_INTSET, T_ZSET_ZIPLIST, T_HASH_ZIPLIST = 9, 10, 11, 12, 13
T_LIST_QUICKLIST, T_HASH_LISTPACK, T_ZSET_LISTPACK, T_LIST_QUICKLIST_2 = 14, 16, 17, 18
# lengths and special strings
LEN_6BIT, LEN_14BIT, LEN_32BIT, LEN_64BIT = 0, 1, 0x80, 0x81
ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3
INT_ENCODE_MAX_CHARS = 11         # rdbTryIntegerEncoding only tries strings this short
LZF_MIN_LEN = 21                  # rdbSaveRawString compresses strings longer than 20
LZF_MIN_SAVING = 4                # ... into at most len - 4 bytes
# quicklist
QL_PLAIN, QL_PACKED = 1, 2
LIST_NODE_MAX_BYTES = rdb_kernels.NODE_MAX_BYTES    # list-max-listpack-size -2: 8 KiB
LP_EMPTY_SIZE = 7                 # listpack header + terminator
LIST_ENTRY_OVERHEAD_ESTIMATE = rdb_kernels.ENTRY_OVERHEAD_ESTIMATE   # bytes Redis adds to
                                                                     # an element to size a node
# old sorted-set text scores
SCORE_NAN, SCORE_POS_INF, SCORE_NEG_INF = 253, 254, 255

_LEN6_HEAD = tuple(bytes((n,)) for n in range(1 << 6))
_INT_FIRST = frozenset(b"-0123456789")   # how a string that could be an integer starts


class RdbError(Exception):
    """A payload that does not hold a value we can load (``Bad data format``)."""


# ---- footer ----

def verify(payload: bytes) -> bool:
    """Redis ``verifyDumpPayload``: footer present, version <= 10, checksum right.  O(n)."""
    if len(payload) < FOOTER_SIZE:
        return False
    version = payload[-10] | (payload[-9] << 8)
    if version > RDB_VERSION:
        return False
    crc = int.from_bytes(payload[-8:], "little")
    return lzf.crc64(memoryview(payload)[:-8]) == crc


def _footer(body: bytes) -> bytes:
    head = body + struct.pack("<H", RDB_VERSION)
    return head + struct.pack("<Q", lzf.crc64(head))


# ---- writing ----

def _len(n: int) -> bytes:
    if n < 1 << 6:
        return bytes((n,))
    if n < 1 << 14:
        return bytes((0x40 | (n >> 8), n & 0xFF))
    if n <= 0xFFFFFFFF:
        return b"\x80" + struct.pack(">I", n)
    return b"\x81" + struct.pack(">Q", n)


def _str(s: bytes) -> bytes:
    """Redis ``rdbSaveRawString``: int-encoded, LZF-compressed or plain."""
    n = len(s)
    if n < LZF_MIN_LEN and (n == 0 or s[0] not in _INT_FIRST):    # short, not a number
        return _LEN6_HEAD[n] + s
    if n <= INT_ENCODE_MAX_CHARS:
        v = as_ll(s)
        if v is not None:
            if -(1 << 7) <= v < 1 << 7:
                return struct.pack("<Bb", 0xC0 | ENC_INT8, v)
            if -(1 << 15) <= v < 1 << 15:
                return struct.pack("<Bh", 0xC0 | ENC_INT16, v)
            if -(1 << 31) <= v < 1 << 31:
                return struct.pack("<Bi", 0xC0 | ENC_INT32, v)
    if n >= LZF_MIN_LEN:
        packed = lzf.compress(s, n - LZF_MIN_SAVING)
        if packed is not None:
            return bytes((0xC0 | ENC_LZF,)) + _len(len(packed)) + _len(n) + packed
    return _len(n) + s


def _list_nodes(items) -> list:
    """Listpacks split where RPUSH would split Redis's quicklist (``list-max-listpack-size
    -2``): an element joins the tail node while the node's bytes plus its length plus 8
    stay within 8 KiB (``_quicklistNodeAllowInsert``).  Compiled (``rdb_kernels``) when
    it can be; :func:`_list_nodes_py` is the same in Python.  Complexity: O(total bytes).
    """
    nodes = rdb_kernels.build_nodes(items)
    return nodes if nodes is not None else _list_nodes_py(items)


def _list_nodes_py(items) -> list:
    nodes, cur, size = [], [], LP_EMPTY_SIZE
    for item in items:
        e = lp_entry(item)
        if cur and size + len(item) + LIST_ENTRY_OVERHEAD_ESTIMATE > LIST_NODE_MAX_BYTES:
            nodes.append(lp_build(cur))
            cur, size = [], LP_EMPTY_SIZE
        cur.append(e)
        size += len(e)
    if cur:
        nodes.append(lp_build(cur))
    return nodes


def dump(value, encoding: str) -> bytes:
    """The DUMP payload of a value stored in ``encoding`` (what OBJECT ENCODING says:
    listpack / intset / hashtable / skiplist / quicklist / a string encoding).

    Complexity: O(size of the value).
    """
    return _footer(dump_body(value, encoding))


def dump_body(value, encoding: str) -> bytes:
    """The type byte and the value, without DUMP's footer: what an RDB file's key record
    holds (``persistence/rdbfile.py`` puts the key after the type byte).

    Complexity: O(size of the value).
    """
    kind = memory.type_name(value)
    if kind == "string":
        body = bytes((T_STRING,)) + _str(value)
    elif kind == "list":
        nodes = _list_nodes(value)
        parts = [bytes((T_LIST_QUICKLIST_2,)), _len(len(nodes))]
        for node in nodes:
            parts.append(_len(QL_PACKED))
            parts.append(_str(node))
        body = b"".join(parts)
    elif kind == "set":
        if encoding == "intset":
            body = bytes((T_SET_INTSET,)) + _str(intset_build([int(m) for m in value]))
        else:
            body = b"".join([bytes((T_SET,)), _len(len(value))] + [_str(m) for m in value])
    elif kind == "hash":
        if encoding == "listpack":
            entries = []
            for f, v in value.items():
                entries.append(lp_entry(f))
                entries.append(lp_entry(v))
            body = bytes((T_HASH_LISTPACK,)) + _str(lp_build(entries))
        else:
            parts = [bytes((T_HASH,)), _len(len(value))]
            for f, v in value.items():
                parts.append(_str(f))
                parts.append(_str(v))
            body = b"".join(parts)
    elif kind == "stream":
        from .rdb_stream import dump as dump_stream
        body = dump_stream(value, _len, _str)
    else:
        body = _dump_zset(value, encoding)
    return body


def _dump_zset(z: ZSet, encoding: str) -> bytes:
    pairs = list(z.order)                         # (score, member), ascending
    if encoding == "listpack":
        entries = []
        for score, member in pairs:
            entries.append(lp_entry(member))
            entries.append(lp_entry(score_text(z, score)))
        return bytes((T_ZSET_LISTPACK,)) + _str(lp_build(entries))
    parts = [bytes((T_ZSET_2,)), _len(len(pairs))]
    pack = struct.Struct("<d").pack
    for score, member in reversed(pairs):          # highest first, as Redis
        parts.append(_str(member))
        parts.append(pack(score))
    return b"".join(parts)


def load(payload: bytes):
    """The value a verified payload holds (``bytes``, RList, RSet, RHash or ZSet, with its
    ``mem`` set), or RdbError.  The reader lives in ``rdb_load.py`` (imported here, on first
    use, because it imports this module's constants).

    Complexity: O(len(payload) + size of the value).
    """
    from .rdb_load import load_value
    try:
        return load_value(payload)
    except MemoryError:           # Redis: ztrymalloc failed -> the load fails
        raise RdbError("allocation failed") from None
