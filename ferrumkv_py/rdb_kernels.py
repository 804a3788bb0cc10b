"""Compiled listpack loops for the list paths of DUMP and RESTORE (the slowest in Python).

A list's DUMP is one listpack entry per element plus node splits; its RESTORE is one entry
decode per element.  In Python both cost about a microsecond an element (~60 ms for 100k,
where redis-server copies its nodes in ~1 ms), so these two loops run compiled by numba
when it can, on flat buffers:

    build:  all elements joined + offsets  ->  the nodes' listpacks, back to back, and
            where each ends (the same bytes ``rdb._list_nodes`` makes: a test compares)
    scan:   one listpack  ->  per entry (start, length) of a string, or (value, -1) of an
            integer, after the same validation as ``rdb_blobs.lp_decode``

Without numba, ``build_nodes`` and ``scan`` return None and the callers use the Python
versions.  Complexity: O(bytes) for both.
"""

from __future__ import annotations

import logging

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a declared dependency
    njit = None

log = logging.getLogger("ferrumkv")
# helpers are compiled where they are defined (lazily: the first call compiles them, inside
# _compile's probe, so a failure there still falls back to Python)
_jit = njit(cache=True, nogil=True) if njit is not None else (lambda f: f)

LP_HEADER_SIZE = 6
LP_EOF = 0xFF
LP_COUNT_UNKNOWN = 65535
NODE_MAX_BYTES = 8192             # rdb.LIST_NODE_MAX_BYTES
ENTRY_OVERHEAD_ESTIMATE = 8       # rdb.LIST_ENTRY_OVERHEAD_ESTIMATE
LONG_STR_SIZE = 21                # string2ll refuses strings this long
MAX_ENTRY_EXTRA = 10              # encoding header (<= 5) + back-length (<= 5) per element
INT64_DIGITS = 19
_LIMIT_POS = np.frombuffer(b"9223372036854775807", dtype=np.uint8)
_LIMIT_NEG = np.frombuffer(b"9223372036854775808", dtype=np.uint8)
_MINUS, _ZERO, _NINE = 45, 48, 57


@_jit
def _as_ll(data, a, b, out):
    """Redis string2ll over data[a:b]: 1 and the value in out[0], or 0.  The value is
    accumulated negatively, so INT64_MIN fits; 19 digits are compared with the limit."""
    n = b - a
    if n == 0 or n >= LONG_STR_SIZE:
        return 0
    if n == 1 and data[a] == _ZERO:
        out[0] = 0
        return 1
    neg = data[a] == _MINUS
    p = a + 1 if neg else a
    digits = b - p
    if digits == 0 or digits > INT64_DIGITS or data[p] <= _ZERO or data[p] > _NINE:
        return 0
    for j in range(p, b):
        if data[j] < _ZERO or data[j] > _NINE:
            return 0
    if digits == INT64_DIGITS:
        limit = _LIMIT_NEG if neg else _LIMIT_POS
        for j in range(INT64_DIGITS):
            c = data[p + j]
            if c < limit[j]:
                break
            if c > limit[j]:
                return 0
    v = np.int64(0)
    for j in range(p, b):
        v = v * 10 - (data[j] - _ZERO)
    out[0] = v if neg else -v
    return 1


@_jit
def _put_le(out, p, v, width):
    for k in range(width):
        out[p + k] = (v >> (8 * k)) & 0xFF


@_jit
def _backlen_size(n):
    if n <= 127:
        return 1
    if n < 16383:
        return 2
    if n < 2097151:
        return 3
    if n < 268435455:
        return 4
    return 5


@_jit
def _put_backlen(out, p, n):
    size = _backlen_size(n)
    out[p] = (n >> (7 * (size - 1))) & 0xFF
    for k in range(1, size):
        out[p + k] = ((n >> (7 * (size - 1 - k))) & 0x7F) | 0x80
    return p + size


@_jit
def _end_node(out, start, op, cur):
    """Close the node that starts at ``start``: its terminator, then its total bytes and
    entry count in the header; returns where it ends."""
    out[op] = LP_EOF
    op += 1
    _put_le(out, start, op - start, 4)
    _put_le(out, start + 4, cur if cur < LP_COUNT_UNKNOWN else LP_COUNT_UNKNOWN, 2)
    return op


def _build_nodes(data, offs, out, ends, tmp):
    """Listpack nodes of the elements ``data[offs[i]:offs[i+1]]``; returns how many
    (``ends[k]`` = where node k ends in ``out``)."""
    count = len(offs) - 1
    nodes = 0
    op = 0
    start = 0       # where the current node starts in out
    cur = 0         # its entries
    size = 0        # its bytes so far, header and terminator included
    for i in range(count):
        a = offs[i]
        b = offs[i + 1]
        n = b - a
        if cur > 0 and size + n + ENTRY_OVERHEAD_ESTIMATE > NODE_MAX_BYTES:
            op = _end_node(out, start, op, cur)
            ends[nodes] = op
            nodes += 1
            cur = 0
        if cur == 0:
            start = op
            op += LP_HEADER_SIZE
            size = LP_HEADER_SIZE + 1
        e0 = op
        if _as_ll(data, a, b, tmp):
            v = tmp[0]
            if 0 <= v <= 127:
                out[op] = v
                op += 1
            elif -4096 <= v <= 4095:
                u = v & 0x1FFF
                out[op] = 0xC0 | (u >> 8)
                out[op + 1] = u & 0xFF
                op += 2
            elif -32768 <= v <= 32767:
                out[op] = 0xF1
                _put_le(out, op + 1, v, 2)
                op += 3
            elif -8388608 <= v <= 8388607:
                out[op] = 0xF2
                _put_le(out, op + 1, v, 3)
                op += 4
            elif -2147483648 <= v <= 2147483647:
                out[op] = 0xF3
                _put_le(out, op + 1, v, 4)
                op += 5
            else:
                out[op] = 0xF4
                _put_le(out, op + 1, v, 8)
                op += 9
        else:
            if n <= 63:
                out[op] = 0x80 | n
                op += 1
            elif n <= 4095:
                out[op] = 0xE0 | (n >> 8)
                out[op + 1] = n & 0xFF
                op += 2
            else:
                out[op] = 0xF0
                _put_le(out, op + 1, n, 4)
                op += 5
            out[op:op + n] = data[a:b]
            op += n
        op = _put_backlen(out, op, op - e0)
        size += op - e0
        cur += 1
    if cur > 0:
        op = _end_node(out, start, op, cur)
        ends[nodes] = op
        nodes += 1
    return nodes


@_jit
def _get_le(blob, p, width, signed):
    v = 0
    for k in range(width):
        v |= np.int64(blob[p + k]) << (8 * k)
    if signed and width < 8 and v >= (np.int64(1) << (8 * width - 1)):
        v -= np.int64(1) << (8 * width)
    return v


def _scan(blob, starts, lens):
    """Entries of a listpack: string k is blob[starts[k]:starts[k]+lens[k]], an integer has
    lens[k] = -1 and its value in starts[k].  Returns the count, or -1 if malformed."""
    size = len(blob)
    if size < LP_HEADER_SIZE + 1 or blob[size - 1] != LP_EOF:
        return -1
    if _get_le(blob, 0, 4, False) != size:
        return -1
    hcount = _get_le(blob, 4, 2, False)
    end = size - 1
    p = LP_HEADER_SIZE
    k = 0
    while p < end:
        b = blob[p]
        ln = -1
        if b < 0x80:
            v = np.int64(b)
            n = 1
        elif b < 0xC0:
            ln = b & 0x3F
            v = p + 1
            n = 1 + ln
        elif b < 0xE0:
            if p + 2 > end:
                return -1
            v = (np.int64(b & 0x1F) << 8) | blob[p + 1]
            if v >= 4096:
                v -= 8192
            n = 2
        elif b < 0xF0:
            if p + 2 > end:
                return -1
            ln = ((b & 0x0F) << 8) | blob[p + 1]
            v = p + 2
            n = 2 + ln
        elif b == 0xF0:
            if p + 5 > end:
                return -1
            ln = _get_le(blob, p + 1, 4, False)
            v = p + 5
            n = 5 + ln
        elif b <= 0xF4:
            width = 2 if b == 0xF1 else 3 if b == 0xF2 else 4 if b == 0xF3 else 8
            n = 1 + width
            if p + n > end:
                return -1
            v = _get_le(blob, p + 1, width, True)
        else:
            return -1
        q = p + n
        if q >= end:
            return -1
        bl = _backlen_size(n)
        if q + bl > end:
            return -1
        if blob[q] != (n >> (7 * (bl - 1))) & 0xFF:
            return -1
        for j in range(1, bl):
            if blob[q + j] != (((n >> (7 * (bl - 1 - j))) & 0x7F) | 0x80):
                return -1
        p = q + bl
        if k >= len(starts):      # more entries than the header's count
            return -1
        starts[k] = v
        lens[k] = ln
        k += 1
    if p != end:
        return -1
    if hcount != LP_COUNT_UNKNOWN and hcount != k:
        return -1
    return k


def _compile():
    if njit is None:  # pragma: no cover
        return None, None
    try:
        build = njit(cache=True, nogil=True)(_build_nodes)
        scan = njit(cache=True, nogil=True)(_scan)
        data = np.frombuffer(b"a-1", dtype=np.uint8)
        offs = np.array([0, 1, 3], dtype=np.int64)
        out = np.empty(64, dtype=np.uint8)
        ends = np.empty(2, dtype=np.int64)
        tmp = np.empty(1, dtype=np.int64)
        if build(data, offs, out, ends, tmp) != 1:
            raise RuntimeError("compiled listpack builder is wrong")
        blob = out[:ends[0]].copy()
        starts = np.empty(4, dtype=np.int64)
        lens = np.empty(4, dtype=np.int64)
        if scan(blob, starts, lens) != 2 or lens[1] != -1 or starts[1] != -1:
            raise RuntimeError("compiled listpack scanner is wrong")
    except Exception:  # pragma: no cover - a platform numba cannot compile for
        log.warning("rdb_kernels: no compiled listpack loops, lists use Python",
                    exc_info=True)
        return None, None
    return build, scan


_BUILD, _SCAN = _compile()
COMPILED = _BUILD is not None


def build_nodes(items) -> list | None:
    """The listpack nodes of a list's elements (``rdb._list_nodes``'s result), or None
    without a compiler.  Complexity: O(total bytes)."""
    if _BUILD is None:
        return None
    items = list(items)
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    offs = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    out = np.empty(int(offs[-1]) + MAX_ENTRY_EXTRA * len(items) + LP_HEADER_SIZE + 1
                   + (LP_HEADER_SIZE + 1) * len(items), dtype=np.uint8)
    ends = np.empty(max(len(items), 1), dtype=np.int64)
    n = _BUILD(data, offs, out, ends, np.empty(1, dtype=np.int64))
    raw = out[:ends[n - 1]].tobytes() if n else b""
    bounds = [0] + ends[:n].tolist()
    return [raw[bounds[k]:bounds[k + 1]] for k in range(n)]


def scan(blob: bytes) -> list | None:
    """A listpack's entries as ``bytes`` (integers as decimal text); ValueError if it is
    malformed; None without a compiler.  Complexity: O(len(blob))."""
    if _SCAN is None:
        return None
    cap = max((len(blob) - LP_HEADER_SIZE - 1) // 2, 0)   # an entry takes >= 2 bytes
    if len(blob) >= LP_HEADER_SIZE:
        count = blob[4] | (blob[5] << 8)
        if count != LP_COUNT_UNKNOWN:
            cap = min(cap, count)      # arrays no larger than the entries it claims
    starts = np.empty(cap, dtype=np.int64)
    lens = np.empty(cap, dtype=np.int64)
    n = _SCAN(np.frombuffer(blob, dtype=np.uint8), starts, lens)
    if n < 0:
        raise ValueError("malformed listpack")
    return [blob[s:s + ln] if ln >= 0 else b"%d" % s
            for s, ln in zip(starts[:n].tolist(), lens[:n].tolist())]
