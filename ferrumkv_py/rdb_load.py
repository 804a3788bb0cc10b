"""The reading half of the RDB codec (``rdb.py`` has the format, the writer and the entry
point ``rdb.load``): a bounds-checked reader over the payload, Redis's string forms, and one
loader per object type, each refusing what Redis 7.0 refuses under ``sanitize-dump-payload
yes`` (see ``rdb.py``'s docstring).

Complexity: O(len(payload) + size of the value).
"""

from __future__ import annotations

import math
import re
import struct

from . import lzf, memory, rdb_kernels
from .rdb import (ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF, LEN_32BIT, LEN_64BIT, QL_PACKED,
                  QL_PLAIN, SCORE_NAN, SCORE_NEG_INF, SCORE_POS_INF, T_HASH,
                  T_HASH_LISTPACK, T_HASH_ZIPLIST, T_HASH_ZIPMAP, T_LIST, T_LIST_QUICKLIST,
                  T_LIST_QUICKLIST_2, T_LIST_ZIPLIST, T_SET, T_SET_INTSET, T_STRING, T_ZSET,
                  T_ZSET_2, T_ZSET_LISTPACK, T_ZSET_ZIPLIST, RdbError)
from .rdb_blobs import BlobError, intset_decode, lp_decode, zipmap_decode, zl_decode
from .score_order import ScoreOrder
from .values import RHash, RList, RSet
from . import zset as _zset   # thresholds read at call time (CONFIG SET changes them)
from .zset import ZSet

T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2 = 15, 19     # rdb_stream.py reads them

_LEN_6BIT_LIMIT = 1 << 6


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes):
        self.buf = buf
        self.pos = 0

    def take(self, n: int) -> bytes:
        p = self.pos
        if n < 0 or p + n > len(self.buf):
            raise RdbError("truncated")
        self.pos = p + n
        return self.buf[p:p + n]

    def byte(self) -> int:
        p = self.pos
        if p >= len(self.buf):
            raise RdbError("truncated")
        self.pos = p + 1
        return self.buf[p]

    def length(self) -> tuple[int, bool]:
        """(length, is_special): Redis rdbLoadLenByRef."""
        b = self.byte()
        kind = b >> 6
        if kind == 0:
            return b & 0x3F, False
        if kind == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if kind == 3:
            return b & 0x3F, True
        if b == LEN_32BIT:
            return int.from_bytes(self.take(4), "big"), False
        if b == LEN_64BIT:
            return int.from_bytes(self.take(8), "big"), False
        raise RdbError("unknown length encoding")

    def count(self) -> int:
        n, special = self.length()
        if special:
            raise RdbError("special encoding where a length belongs")
        return n

    def string(self) -> bytes:
        """Redis rdbGenericLoadStringObject: plain, int-encoded or LZF."""
        buf, p = self.buf, self.pos
        if p < len(buf) and buf[p] < _LEN_6BIT_LIMIT:     # the common short plain string
            q = p + 1 + buf[p]
            if q > len(buf):
                raise RdbError("truncated")
            self.pos = q
            return buf[p + 1:q]
        n, special = self.length()
        if not special:
            return self.take(n)
        if n == ENC_INT8:
            return b"%d" % struct.unpack("<b", self.take(1))[0]
        if n == ENC_INT16:
            return b"%d" % struct.unpack("<h", self.take(2))[0]
        if n == ENC_INT32:
            return b"%d" % struct.unpack("<i", self.take(4))[0]
        if n == ENC_LZF:
            clen = self.count()
            plain = self.count()
            packed = self.take(clen)
            if plain == 0:        # Redis: lzf_decompress returns 0, which equals the length
                return b""
            out = lzf.decompress(packed, plain)
            if out is None:
                raise RdbError("invalid LZF string")
            return out
        raise RdbError("unknown string encoding")


# strtod's grammar (what Redis reads a text score with): the longest valid prefix counts
_STRTOD = re.compile(
    rb"[ \t\n\v\f\r]*([+-]?)(?:(0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    rb"(?:[pP][+-]?[0-9]+)?)|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    rb"|(inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?))", re.IGNORECASE)
_STRTOD_MAX_CHARS = 127           # zzlStrtod copies at most this many bytes


def strtod(text: bytes):
    """C ``strtod`` on ``text`` (the value of its longest valid prefix), None if there is
    none.  Complexity: O(len(text))."""
    m = _STRTOD.match(text[:_STRTOD_MAX_CHARS])
    if m is None:
        return None
    sign, hexa, dec, word = m.groups()
    if hexa is not None:
        mant, _, exp = hexa[2:].lower().partition(b"p")
        try:
            v = float.fromhex("0x" + mant.decode() + ("p" + exp.decode() if exp else ""))
        except (ValueError, OverflowError):
            v = math.inf
    elif dec is not None:
        v = float(dec)
    else:
        v = math.nan if word[:1].lower() == b"n" else math.inf
    return -v if sign == b"-" else v


def _score(item) -> float:
    if item.__class__ is int:
        return float(item)
    v = strtod(item)
    return 0.0 if v is None else v           # strtod converts nothing: 0


def _text(item) -> bytes:
    return item if item.__class__ is bytes else b"%d" % item


def _blob_items(r: _Reader, decode) -> list:
    try:
        items = decode(r.string())
    except BlobError as e:
        raise RdbError(str(e)) from None
    if not items:
        raise RdbError("empty key")
    return items


def _pairs(items: list) -> list:
    if len(items) % 2:
        raise RdbError("odd number of entries")
    return list(zip(items[0::2], items[1::2]))


def _list_quicklist(r: _Reader, v2: bool) -> list:
    out = []
    for _ in range(r.count()):
        if v2:
            container = r.count()
            if container == QL_PLAIN:
                out.append(r.string())
                continue
            if container != QL_PACKED:
                raise RdbError("quicklist container")
        blob = r.string()
        try:
            items = rdb_kernels.scan(blob) if v2 else None
            if items is None:
                items = [x if x.__class__ is bytes else b"%d" % x
                         for x in (lp_decode if v2 else zl_decode)(blob)]
        except (BlobError, ValueError) as e:
            raise RdbError(str(e)) from None
        out.extend(items)     # an empty node is skipped, as Redis does
    return out


def _make_hash(pairs) -> RHash:
    h = RHash()
    for f, v in pairs:
        if f in h:
            raise RdbError("duplicate hash field")
        h[f] = v
    if not h:
        raise RdbError("empty key")
    return h


def _make_set(members) -> RSet:
    s = RSet()
    for m in members:
        if m in s:
            raise RdbError("duplicate set member")
        s.add(m)
    if not s:
        raise RdbError("empty key")
    return s


def _make_zset(pairs) -> ZSet:
    """The encoding after loading follows zset.py's thresholds on both counts (Redis keeps a
    loaded listpack with a member over 64 bytes as a listpack; ours cannot hold one)."""
    if not pairs:
        raise RdbError("empty key")
    seen = {}
    for member, score in pairs:
        if score != score:
            raise RdbError("NaN score")
        if member in seen:
            raise RdbError("duplicate sorted set member")
        seen[member] = score
    small = len(seen) <= _zset.ZSET_MAX_LISTPACK_ENTRIES and \
        all(len(m) <= _zset.ZSET_MAX_LISTPACK_VALUE for m in seen)
    z = ZSet()
    z.listpack = small
    if small:     # a listpack stores -0 as 0 (ZSet.insert's rule, applied in bulk)
        seen = {m: (0.0 if sc == 0.0 else sc) for m, sc in seen.items()}
    z.scores = seen
    z.order = ScoreOrder([(sc, m) for m, sc in seen.items()])
    return z


def _double_text(r: _Reader) -> float:
    """Redis rdbLoadDoubleValue (type 3 scores): a length byte and sscanf("%lg")."""
    n = r.byte()
    if n == SCORE_NAN:
        return math.nan
    if n == SCORE_POS_INF:
        return math.inf
    if n == SCORE_NEG_INF:
        return -math.inf
    v = strtod(r.take(n))
    if v is None:
        raise RdbError("bad double")
    return v


def _load_value(r: _Reader, t: int):
    if t == T_STRING:
        return r.string()
    if t == T_LIST:
        n = r.count()
        items = RList(r.string() for _ in range(n))
        if not items:
            raise RdbError("empty key")
        return items
    if t in (T_LIST_QUICKLIST, T_LIST_QUICKLIST_2):
        items = _list_quicklist(r, t == T_LIST_QUICKLIST_2)
        if not items:
            raise RdbError("empty key")
        return RList(items)
    if t == T_LIST_ZIPLIST:
        return RList(_text(x) for x in _blob_items(r, zl_decode))
    if t == T_SET:
        n = r.count()
        return _make_set(r.string() for _ in range(n))
    if t == T_SET_INTSET:
        return _make_set(b"%d" % x for x in _blob_items(r, intset_decode))
    if t == T_HASH:
        n = r.count()
        return _make_hash((r.string(), r.string()) for _ in range(n))
    if t in (T_HASH_LISTPACK, T_HASH_ZIPLIST, T_HASH_ZIPMAP):
        decode = {T_HASH_LISTPACK: lp_decode, T_HASH_ZIPLIST: zl_decode,
                  T_HASH_ZIPMAP: zipmap_decode}[t]
        return _make_hash((_text(f), _text(v)) for f, v in _pairs(_blob_items(r, decode)))
    if t == T_ZSET_2:
        n = r.count()
        unpack = struct.Struct("<d").unpack
        return _make_zset([(r.string(), unpack(r.take(8))[0]) for _ in range(n)])
    if t == T_ZSET:
        n = r.count()
        return _make_zset([(r.string(), _double_text(r)) for _ in range(n)])
    if t in (T_ZSET_LISTPACK, T_ZSET_ZIPLIST):
        items = _blob_items(r, lp_decode if t == T_ZSET_LISTPACK else zl_decode)
        return _make_zset([(_text(m), _score(s)) for m, s in _pairs(items)])
    if t in (T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2):
        from .rdb_stream import StreamFormatError, load as load_stream
        try:
            return load_stream(r, t)
        except StreamFormatError as e:
            raise RdbError(str(e)) from None
    raise RdbError("unsupported object type %d" % t)


def load_value(payload: bytes):
    """The value a verified payload holds (``bytes``, RList, RSet, RHash or ZSet, with its
    ``mem`` set), or RdbError.  Complexity: O(len(payload) + size of the value)."""
    r = _Reader(payload)
    value = _load_value(r, r.byte())
    if value.__class__ is not bytes:
        value.mem = memory.recount(value)
    return value
