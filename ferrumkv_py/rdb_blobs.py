"""The packed blobs inside an RDB value: listpack, intset, and (read only) ziplist and zipmap.

Each decoder validates the whole blob, as Redis 7.0 does under ``sanitize-dump-payload
yes``: header sizes equal the blob's, every entry lies inside it, back-lengths agree, the
terminator is where the header says.  Anything else raises :class:`BlobError`.  Entries come
back as ``bytes`` or, for integer entries, ``int`` (callers turn them into decimal text).

Listpack (Redis 7.0 lists, small hashes and sorted sets)::

    <total bytes u32 LE> <count u16 LE, 65535 = unknown> <entry> ... <0xFF>
    entry = <encoding + data> <back-length: size of encoding + data, 1-5 bytes>

    0xxxxxxx             7-bit unsigned int       10xxxxxx <6-bit len> string
    110xxxxx yyyyyyyy    13-bit signed int        1110xxxx yyyyyyyy <12-bit len> string
    11110000 <u32 LE len> string                  11110001/2/3/4   int16/24/32/64 LE

    ["a", 5]  ->  0f000000 0200 | 81 61 02 | 05 01 | ff

The back-length stores the entry size 7 bits a byte, most significant group first, every
byte but the first with its high bit set (so it can be read backwards).

Intset (small integer sets)::  <width u32 LE: 2, 4 or 8> <count u32 LE> <sorted ints LE>

Ziplist (Redis <= 6.2 lists, hashes and sorted sets; 7.0 still loads them)::

    <total u32 LE> <tail offset u32 LE> <count u16 LE> <entry> ... <0xFF>
    entry = <prevlen: 1 byte < 254, or 0xFE + u32 LE> <encoding> <data>
    00pppppp / 01pppppp qqqqqqqq (BE) / 10000000 + u32 BE: string of that length
    11000000 int16, 11010000 int32, 11100000 int64, 11110000 int24, 11111110 int8 (LE)
    1111xxxx with xxxx in 1..13: the integer xxxx - 1, no data

Zipmap (Redis <= 2.6 hashes)::  <count u8> (<len> field <len> <free u8> value <free bytes>)* 0xFF
with ``len`` one byte below 254, or 254 + u32 LE.

Complexity: every function is O(blob size).
"""

from __future__ import annotations

import struct

LP_HEADER_SIZE = 6
LP_EOF = 0xFF
LP_COUNT_UNKNOWN = 65535
LP_MAX_COUNT = 65535            # a header count at this value means "count them"
INTSET_HEADER_SIZE = 8
INTSET_WIDTHS = (2, 4, 8)
ZL_HEADER_SIZE = 10
ZL_END = 0xFF
ZL_BIG_PREVLEN = 254
ZIPMAP_BIGLEN = 254
ZIPMAP_END = 0xFF
LONG_STR_SIZE = 21              # string2ll refuses strings this long or longer
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_STR6_MAX, _STR12_MAX = 63, 4095
_BACKLEN_LIMITS = (127, 16383, 2097151, 268435455)
_INT_FIRST = frozenset(b"-0123456789")   # how a string that could be an integer starts
_LP_STR6_HEAD = tuple(bytes((0x80 | n,)) for n in range(_STR6_MAX + 1))
_LP_STR6_BACKLEN = tuple(bytes((n + 1,)) for n in range(_STR6_MAX + 1))   # entry <= 64 bytes


class BlobError(Exception):
    """A malformed blob (RESTORE answers ``Bad data format``)."""


# ---- integers as Redis's string2ll sees them ----

def as_ll(s: bytes):
    """The int64 ``s`` spells in Redis's canonical form (no sign '+', spaces or leading
    zeros), else None: what listpacks, intsets and RDB int strings accept.  O(len(s))."""
    n = len(s)
    if n == 0 or n >= LONG_STR_SIZE:
        return None
    if s == b"0":
        return 0
    body = s[1:] if s[:1] == b"-" else s
    if not body or not body.isdigit() or body[:1] == b"0":
        return None
    v = int(s)
    return v if INT64_MIN <= v <= INT64_MAX else None


# ---- listpack ----

def _backlen(size: int) -> bytes:
    """Redis lpEncodeBacklen: 1 to 5 bytes, by its thresholds (16383 takes 3 bytes)."""
    if size <= _BACKLEN_LIMITS[0]:
        return bytes((size,))
    nbytes = 2 if size < _BACKLEN_LIMITS[1] else 3 if size < _BACKLEN_LIMITS[2] else \
        4 if size < _BACKLEN_LIMITS[3] else 5
    out = [size >> (7 * (nbytes - 1))]
    for k in range(nbytes - 2, -1, -1):
        out.append((size >> (7 * k)) & 0x7F | 0x80)
    return bytes(out)


def _lp_int(v: int) -> bytes:
    if 0 <= v <= 127:
        return bytes((v,))
    if -4096 <= v <= 4095:
        u = v & 0x1FFF
        return bytes((0xC0 | (u >> 8), u & 0xFF))
    if -32768 <= v <= 32767:
        return b"\xf1" + struct.pack("<h", v)
    if -8388608 <= v <= 8388607:
        return b"\xf2" + struct.pack("<i", v)[:3]
    if -2147483648 <= v <= 2147483647:
        return b"\xf3" + struct.pack("<i", v)
    return b"\xf4" + struct.pack("<q", v)


def lp_entry(item) -> bytes:
    """One listpack entry with its back-length; a ``bytes`` that spells an int64 is stored
    as an integer, as Redis's lpAppend does.  Complexity: O(len(item))."""
    if item.__class__ is not int:
        n = len(item)
        if n <= _STR6_MAX and (n == 0 or item[0] not in _INT_FIRST):   # short, not a number
            return _LP_STR6_HEAD[n] + item + _LP_STR6_BACKLEN[n]
        v = as_ll(item) if n < LONG_STR_SIZE else None
        if v is None:
            n = len(item)
            if n <= _STR6_MAX:
                enc = bytes((0x80 | n,)) + item
            elif n <= _STR12_MAX:
                enc = bytes((0xE0 | (n >> 8), n & 0xFF)) + item
            else:
                enc = b"\xf0" + struct.pack("<I", n) + item
            return enc + _backlen(len(enc))
        item = v
    enc = _lp_int(item)
    return enc + _backlen(len(enc))


def lp_build(entries: list) -> bytes:
    """A listpack of already-encoded entries (``lp_entry``).  Complexity: O(total size)."""
    body = b"".join(entries)
    total = LP_HEADER_SIZE + len(body) + 1
    count = len(entries) if len(entries) < LP_COUNT_UNKNOWN else LP_COUNT_UNKNOWN
    return struct.pack("<IH", total, count) + body + b"\xff"


def lp_decode(blob: bytes) -> list:
    """Every entry of a listpack (``bytes`` or ``int``), fully validated.  Complexity: O(n)."""
    size = len(blob)
    if size < LP_HEADER_SIZE + 1:
        raise BlobError("listpack too short")
    total, count = struct.unpack_from("<IH", blob, 0)
    if total != size or blob[-1] != LP_EOF:
        raise BlobError("listpack header")
    out = []
    append = out.append
    p = LP_HEADER_SIZE
    end = size - 1
    from_bytes = int.from_bytes
    while p < end:
        b = blob[p]
        if b < 0x80:
            v, n = b, 1
        elif b < 0xC0:
            n = 1 + (b & 0x3F)
            v = blob[p + 1:p + n]
        elif b < 0xE0:
            if p + 2 > end:
                raise BlobError("listpack entry")
            v = ((b & 0x1F) << 8) | blob[p + 1]
            if v >= 4096:
                v -= 8192
            n = 2
        elif b < 0xF0:
            if p + 2 > end:
                raise BlobError("listpack entry")
            ln = ((b & 0x0F) << 8) | blob[p + 1]
            n = 2 + ln
            v = blob[p + 2:p + n]
        elif b == 0xF0:
            if p + 5 > end:
                raise BlobError("listpack entry")
            ln = from_bytes(blob[p + 1:p + 5], "little")
            n = 5 + ln
            v = blob[p + 5:p + n]
        elif 0xF1 <= b <= 0xF4:
            width = (2, 3, 4, 8)[b - 0xF1]
            n = 1 + width
            if p + n > end:
                raise BlobError("listpack entry")
            v = from_bytes(blob[p + 1:p + n], "little", signed=True)
        else:
            raise BlobError("listpack encoding")
        q = p + n
        if q >= end:
            raise BlobError("listpack entry past the end")
        if n <= _BACKLEN_LIMITS[0]:            # one back-length byte: no call
            if blob[q] != n:
                raise BlobError("listpack back-length")
            p = q + 1
        else:
            bl = _backlen(n)
            if blob[q:q + len(bl)] != bl:
                raise BlobError("listpack back-length")
            p = q + len(bl)
        append(v)
    if p != end:
        raise BlobError("listpack entries overrun the terminator")
    if count != LP_COUNT_UNKNOWN and count != len(out):
        raise BlobError("listpack count")
    return out


# ---- intset ----

def intset_build(values: list) -> bytes:
    """An intset of int64 values (any order, distinct).  Complexity: O(n log n)."""
    values = sorted(values)
    lo, hi = (values[0], values[-1]) if values else (0, 0)
    if -32768 <= lo and hi <= 32767:
        width, fmt = 2, "h"
    elif -2147483648 <= lo and hi <= 2147483647:
        width, fmt = 4, "i"
    else:
        width, fmt = 8, "q"
    return struct.pack("<II%d%s" % (len(values), fmt), width, len(values), *values)


def intset_decode(blob: bytes) -> list:
    """The integers of an intset: width, size and strict ascending order checked.
    Complexity: O(n)."""
    if len(blob) < INTSET_HEADER_SIZE:
        raise BlobError("intset too short")
    width, count = struct.unpack_from("<II", blob, 0)
    if width not in INTSET_WIDTHS or INTSET_HEADER_SIZE + count * width != len(blob):
        raise BlobError("intset header")
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    values = list(struct.unpack_from("<%d%s" % (count, fmt), blob, INTSET_HEADER_SIZE))
    for a, b in zip(values, values[1:]):
        if a >= b:
            raise BlobError("intset order")
    return values


# ---- ziplist (read only) ----

_ZL_INT = {0xC0: (2, 0), 0xD0: (4, 0), 0xE0: (8, 0), 0xF0: (3, 0), 0xFE: (1, 0)}


def zl_decode(blob: bytes) -> list:
    """Every entry of a ziplist (``bytes`` or ``int``), fully validated.  Complexity: O(n)."""
    size = len(blob)
    if size < ZL_HEADER_SIZE + 1:
        raise BlobError("ziplist too short")
    total, tail, count = struct.unpack_from("<IIH", blob, 0)
    if total != size or blob[-1] != ZL_END or tail >= size:
        raise BlobError("ziplist header")
    out = []
    p = ZL_HEADER_SIZE
    end = size - 1
    prev = 0
    last = p
    from_bytes = int.from_bytes
    while p < end:
        start = p
        if blob[p] < ZL_BIG_PREVLEN:
            prevlen, p = blob[p], p + 1
        elif blob[p] == ZL_BIG_PREVLEN and p + 5 <= end:
            prevlen, p = from_bytes(blob[p + 1:p + 5], "little"), p + 5
        else:
            raise BlobError("ziplist prevlen")
        if prevlen != prev or p >= end:
            raise BlobError("ziplist prevlen")
        b = blob[p]
        kind = b >> 6
        if kind == 0:
            ln, p = b & 0x3F, p + 1
        elif kind == 1:
            if p + 2 > end:
                raise BlobError("ziplist entry")
            ln, p = ((b & 0x3F) << 8) | blob[p + 1], p + 2
        elif b == 0x80:
            if p + 5 > end:
                raise BlobError("ziplist entry")
            ln, p = from_bytes(blob[p + 1:p + 5], "big"), p + 5
        elif kind == 2:
            raise BlobError("ziplist encoding")
        else:
            ln = -1
        if ln >= 0:
            if p + ln > end:
                raise BlobError("ziplist entry past the end")
            out.append(blob[p:p + ln])
            p += ln
        elif b in _ZL_INT:
            width = _ZL_INT[b][0]
            if p + 1 + width > end:
                raise BlobError("ziplist entry past the end")
            out.append(from_bytes(blob[p + 1:p + 1 + width], "little", signed=True))
            p += 1 + width
        elif 0xF1 <= b <= 0xFD:
            out.append((b & 0x0F) - 1)
            p += 1
        else:
            raise BlobError("ziplist encoding")
        prev = p - start
        last = start
    if p != end or (out and tail != last) or (not out and tail != ZL_HEADER_SIZE):
        raise BlobError("ziplist layout")
    if count != LP_COUNT_UNKNOWN and count != len(out):
        raise BlobError("ziplist count")
    return out


# ---- zipmap (read only) ----

def zipmap_decode(blob: bytes) -> list:
    """The fields and values of a zipmap, alternating, fully validated.  Complexity: O(n)."""
    size = len(blob)
    if size < 2 or blob[-1] != ZIPMAP_END:
        raise BlobError("zipmap layout")
    p = 1
    end = size - 1
    out = []

    def length(p):
        if p >= end:
            raise BlobError("zipmap length")
        if blob[p] < ZIPMAP_BIGLEN:
            return blob[p], p + 1
        if blob[p] == ZIPMAP_BIGLEN and p + 5 <= end:
            return int.from_bytes(blob[p + 1:p + 5], "little"), p + 5
        raise BlobError("zipmap length")

    while p < end:
        ln, p = length(p)
        if p + ln > end:
            raise BlobError("zipmap field")
        out.append(blob[p:p + ln])
        p += ln
        ln, p = length(p)
        if p >= end:
            raise BlobError("zipmap value")
        free = blob[p]
        p += 1
        if p + ln + free > end:
            raise BlobError("zipmap value")
        out.append(blob[p:p + ln])
        p += ln + free
    if p != end:
        raise BlobError("zipmap layout")
    if blob[0] < ZIPMAP_BIGLEN and blob[0] * 2 != len(out):
        raise BlobError("zipmap count")
    return out
