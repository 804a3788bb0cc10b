"""Compiled reading of the common RDB record: a string key with a string value.

A cache's file is mostly ``[EXPIRETIME_MS] 0x00 <key> <value>`` records.  Read one by one
in Python, each costs ~2.5 us of byte and length reads (``Loader``'s general path); this
kernel scans a run of such records in one call and returns, per record, where its key and
value lie, and a second one inflates all the run's LZF values into one buffer, so Python
only slices bytes and inserts keys.  The run stops at the first record of another shape
(another type, IDLE / FREQ, an opcode, a key that is int- or LZF-encoded, or bytes that do
not add up), which the general path then reads, raising the same errors as before.

Row layout (int64): expire ms (0: none), key offset, key length, value kind, value offset
or integer, stored length, plain length, offset of the next record.

Complexity: O(bytes of the run) per call.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import lzf

COLS = 8
RUN_MAX = 4096                    # records per call (the rows array: 256 KiB)
C_EXP, C_KOFF, C_KLEN, C_KIND, C_VOFF, C_VLEN, C_PLAIN, C_NEXT = range(COLS)
V_PLAIN, V_INT, V_LZF = 0, 1, 2
OP_EXPIRETIME_MS = 0xFC
T_STRING = 0
LEN_32BIT, LEN_64BIT = 0x80, 0x81
ENC_INT8, ENC_INT16, ENC_INT32, ENC_LZF = 0, 1, 2, 3


@njit(cache=True, nogil=True)
def _length(buf, p, end):
    """(value, special, next position); next = -1 when the bytes end or are unknown."""
    if p >= end:
        return 0, 0, -1
    b = buf[p]
    kind = b >> 6
    if kind == 0:
        return b & 0x3F, 0, p + 1
    if kind == 1:
        if p + 1 >= end:
            return 0, 0, -1
        return ((b & 0x3F) << 8) | buf[p + 1], 0, p + 2
    if kind == 3:
        return b & 0x3F, 1, p + 1
    if b == LEN_32BIT and p + 5 <= end:
        v = 0
        for i in range(1, 5):
            v = (v << 8) | buf[p + i]
        return v, 0, p + 5
    if b == LEN_64BIT and p + 9 <= end:
        v = 0
        for i in range(1, 9):
            v = (v << 8) | buf[p + i]
        if v < 0:                  # past 2**63: no file is that long
            return 0, 0, -1
        return v, 0, p + 9
    return 0, 0, -1


@njit(cache=True, nogil=True)
def _le(buf, p, width):
    """Signed little-endian integer of ``width`` bytes at ``p``."""
    v = 0
    for i in range(width - 1, -1, -1):
        v = (v << 8) | buf[p + i]
    if v >= 1 << (8 * width - 1):
        v -= 1 << (8 * width)
    return v


@njit(cache=True, nogil=True)
def scan_strings(buf, pos, max_n, rows):
    """Read up to ``max_n`` string records from ``pos`` into ``rows``; how many."""
    end = len(buf)
    n = 0
    while n < max_n:
        p = pos
        exp = 0
        if p < end and buf[p] == OP_EXPIRETIME_MS:
            if p + 9 > end:
                break
            exp = _le(buf, p + 1, 8)
            p += 9
        if p >= end or buf[p] != T_STRING:
            break
        klen, special, p = _length(buf, p + 1, end)
        if p < 0 or special or p + klen > end:
            break
        koff = p
        p += klen
        v, special, p = _length(buf, p, end)
        if p < 0:
            break
        plain = 0
        if not special:
            if p + v > end:
                break
            kind, voff, vlen, plain = V_PLAIN, p, v, v
            p += v
        elif v == ENC_INT8 and p + 1 <= end:
            kind, voff, vlen = V_INT, _le(buf, p, 1), 1
            p += 1
        elif v == ENC_INT16 and p + 2 <= end:
            kind, voff, vlen = V_INT, _le(buf, p, 2), 2
            p += 2
        elif v == ENC_INT32 and p + 4 <= end:
            kind, voff, vlen = V_INT, _le(buf, p, 4), 4
            p += 4
        elif v == ENC_LZF:
            clen, s1, p = _length(buf, p, end)
            if p < 0 or s1:
                break
            plain, s2, p = _length(buf, p, end)
            if p < 0 or s2 or p + clen > end or plain > lzf.MAX_RATIO * clen:
                break
            kind, voff, vlen = V_LZF, p, clen
            p += clen
        else:
            break
        rows[n, C_EXP] = exp
        rows[n, C_KOFF] = koff
        rows[n, C_KLEN] = klen
        rows[n, C_KIND] = kind
        rows[n, C_VOFF] = voff
        rows[n, C_VLEN] = vlen
        rows[n, C_PLAIN] = plain
        rows[n, C_NEXT] = p
        pos = p
        n += 1
    return n


_inflate_one = njit(cache=True, nogil=True)(lzf._decompress)


@njit(cache=True, nogil=True)
def inflate(buf, rows, n):
    """The LZF values of rows ``0..n-1``, one after the other in one array, and the first
    row whose value does not inflate to its plain length (or -1).
    Complexity: O(plain bytes)."""
    total = 0
    for i in range(n):
        if rows[i, C_KIND] == V_LZF:
            total += rows[i, C_PLAIN]
    out = np.empty(total, dtype=np.uint8)
    a = 0
    for i in range(n):
        if rows[i, C_KIND] != V_LZF or rows[i, C_PLAIN] == 0:
            continue
        b = a + rows[i, C_PLAIN]
        got = _inflate_one(buf[rows[i, C_VOFF]:rows[i, C_VOFF] + rows[i, C_VLEN]],
                           out[a:b])
        if got != rows[i, C_PLAIN]:
            return out, i
        a = b
    return out, -1


def read_run(data: bytes, view, pos: int, max_n: int):
    """The string records from ``pos``: ``(records, next position)`` with records as
    ``(key, value, expire_ms)``, or ``([], pos)`` when the record there has another shape
    (or a corrupt LZF value: the general path then reports it).  ``view`` is ``data`` as
    a uint8 array.  Complexity: O(bytes read)."""
    max_n = min(max_n, RUN_MAX)
    rows = np.empty((max_n, COLS), dtype=np.int64)
    n = scan_strings(view, pos, max_n, rows)
    if n == 0:
        return [], pos
    out, bad = inflate(view, rows, n)
    if bad >= 0:                      # stop before it: the general path raises there
        if bad == 0:
            return [], pos
        n = bad
    table = rows[:n].tolist()
    inflated = out.tobytes()
    records = []
    append = records.append
    at = 0
    for exp, koff, klen, kind, voff, vlen, plain, _next in table:
        if kind == V_PLAIN:
            value = data[voff:voff + vlen]
        elif kind == V_INT:
            value = b"%d" % voff
        else:
            value = inflated[at:at + plain]
            at += plain
        append((data[koff:koff + klen], value, exp))
    return records, table[-1][C_NEXT]


def warm() -> None:
    """Compile (or load from numba's cache) both kernels now (tests, before servers run:
    a cold compile takes seconds).  Complexity: O(1) once compiled."""
    data = b"\x00\x01k\x01v\x00\x01l\xc3\x0b\x1e\x03abca\xe0\x0f\x02\x01bc"  # k=v, l=abc*10
    assert len(read_run(data, np.frombuffer(data, dtype=np.uint8), 0, 4)[0]) == 2
