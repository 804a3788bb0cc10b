"""The compiled (numba) half of ``hll.py``: the hash, the dense register access and the
sparse opcode editor, which run once per element and so cannot be numpy array operations.

The format and the algorithms are described in ``hll.py``; each kernel here follows the
Redis 7.0 function named in its docstring step for step, so the bytes come out the same.
Compiled with ``cache=True`` (``hll._warm_up`` loads or compiles them at import).
Complexity: per element O(length of the element) to hash, O(1) dense, O(sparse bytes) sparse.
"""

from __future__ import annotations

import numpy as np
from numba import njit

MAGIC = b"HYLL"
HLL_P = 14                          # register index bits
HLL_Q = 64 - HLL_P                  # bits left for the zero run
HLL_REGISTERS = 1 << HLL_P          # 16384
HLL_P_MASK = HLL_REGISTERS - 1
HLL_BITS = 6                        # bits per dense register
HLL_REGISTER_MAX = (1 << HLL_BITS) - 1
HDR_SIZE = 16                       # magic, encoding, 3 unused, 8 cached cardinality
ENCODING_OFFSET = 4
CARD_OFFSET = 8
CARD_STALE_BYTE = 15                # its top bit marks the cached cardinality stale
CARD_STALE_BIT = 0x80
DENSE_REG_BYTES = (HLL_REGISTERS * HLL_BITS + 7) // 8     # 12288
DENSE_SIZE = HDR_SIZE + DENSE_REG_BYTES                    # 12304
DENSE, SPARSE = 0, 1
MAX_ENCODING = SPARSE
SEED = 0xADC83B19
SPARSE_VAL_MAX_VALUE = 32
SPARSE_VAL_MAX_LEN = 4
SPARSE_ZERO_MAX_LEN = 64
SPARSE_XZERO_MAX_LEN = 16384
SPARSE_MERGE_SCAN_OPCODES = 5
# sparse opcode bits (the table in hll.py)
OP_KIND_MASK = 0xC0                 # top two bits: 00 ZERO, 01 XZERO, 1x VAL
OP_XZERO = 0x40
OP_VAL = 0x80
ZERO_LEN_MASK = 0x3F                # ZERO: run - 1; XZERO: high 6 bits of run - 1
VAL_VALUE_SHIFT = 2
VAL_VALUE_MASK = 0x1F               # VAL: value - 1 in bits 2..6
VAL_LEN_MASK = 0x3                  # VAL: run - 1 in bits 0..1
BYTE_MASK = 0xFF
# results of the compiled sparse kernels
UNCHANGED, UPDATED, INVALID, PROMOTE = 0, 1, -1, 2

_M = np.uint64(0xC6A4A7935BD1E995)
_R = np.uint64(47)


_jit = njit(cache=True, nogil=True)


@_jit
def _murmur64a(data, start, n, seed):
    """MurmurHash64A as Redis (little-endian word reads) over ``data[start:start+n]``.
    Complexity: O(n)."""
    h = np.uint64(seed) ^ (np.uint64(n) * _M)
    p = start
    end = start + (n - (n & 7))
    while p != end:
        k = np.uint64(0)
        for i in range(8):
            k |= np.uint64(data[p + i]) << np.uint64(8 * i)
        k *= _M
        k ^= k >> _R
        k *= _M
        h ^= k
        h *= _M
        p += 8
    rem = n & 7
    if rem:
        for i in range(rem - 1, -1, -1):
            h ^= np.uint64(data[p + i]) << np.uint64(8 * i)
        h *= _M
    h ^= h >> _R
    h *= _M
    h ^= h >> _R
    return h


@_jit
def _hash_all(data, offsets, idx_out, cnt_out):
    """Register index and zero-run count (hllPatLen) of every element
    ``data[offsets[i]:offsets[i+1]]``."""
    one = np.uint64(1)
    for i in range(len(idx_out)):
        start = offsets[i]
        h = _murmur64a(data, start, offsets[i + 1] - start, SEED)
        idx_out[i] = np.int64(h & np.uint64(HLL_P_MASK))
        h >>= np.uint64(HLL_P)
        h |= one << np.uint64(HLL_Q)
        count = 1
        while (h & one) == 0:
            count += 1
            h >>= one
        cnt_out[i] = count


@_jit
def _dense_get(buf, reg):
    byte = HDR_SIZE + reg * HLL_BITS // 8
    fb = (reg * HLL_BITS) & 7
    b0 = np.int64(buf[byte])
    b1 = np.int64(buf[byte + 1]) if byte + 1 < len(buf) else 0
    return ((b0 >> fb) | (b1 << (8 - fb))) & HLL_REGISTER_MAX


@_jit
def _dense_set(buf, reg, val):
    byte = HDR_SIZE + reg * HLL_BITS // 8
    fb = (reg * HLL_BITS) & 7
    v = np.int64(val)
    buf[byte] = (np.int64(buf[byte]) & ~(HLL_REGISTER_MAX << fb) | (v << fb)) & BYTE_MASK
    if byte + 1 < len(buf):
        b1 = np.int64(buf[byte + 1]) & ~(HLL_REGISTER_MAX >> (8 - fb))
        buf[byte + 1] = (b1 | (v >> (8 - fb))) & BYTE_MASK


@_jit
def _dense_add_all(buf, idxs, cnts, start):
    """hllDenseSet for elements ``start..``: how many raised their register."""
    updated = 0
    for i in range(start, len(idxs)):
        if cnts[i] > _dense_get(buf, idxs[i]):
            _dense_set(buf, idxs[i], cnts[i])
            updated += 1
    return updated


@_jit
def _op_span(buf, p):
    """(registers covered, opcode bytes, kind 0 zero / 1 xzero / 2 val) at ``p``."""
    b = np.int64(buf[p])
    if b & OP_KIND_MASK == 0:
        return (b & ZERO_LEN_MASK) + 1, 1, 0
    if b & OP_VAL:
        return (b & VAL_LEN_MASK) + 1, 1, 2
    return (((b & ZERO_LEN_MASK) << 8) | np.int64(buf[p + 1])) + 1, 2, 1


@_jit
def _val_value(b):
    """The register value a VAL opcode byte stores (1..32)."""
    return ((b >> VAL_VALUE_SHIFT) & VAL_VALUE_MASK) + 1


@_jit
def _val_op(value, run):
    return OP_VAL | ((value - 1) << VAL_VALUE_SHIFT) | (run - 1)


@_jit
def _move(buf, dst, src, n):
    """memmove inside ``buf``."""
    if dst > src:
        for i in range(n - 1, -1, -1):
            buf[dst + i] = buf[src + i]
    else:
        for i in range(n):
            buf[dst + i] = buf[src + i]


@_jit
def _zero_run(seq, n, run):
    if run > SPARSE_ZERO_MAX_LEN:
        seq[n] = ((run - 1) >> 8) | OP_XZERO
        seq[n + 1] = (run - 1) & BYTE_MASK
        return n + 2
    seq[n] = run - 1
    return n + 1


@_jit
def _sparse_set(buf, length, index, count, max_bytes, seq):
    """Redis hllSparseSet on ``buf[:length]`` (``buf[length]`` = 0 and 3 spare bytes):
    ``(new length, UNCHANGED | UPDATED | INVALID | PROMOTE)``; PROMOTE leaves it as it was.

    Walk the opcodes to the one covering ``index``; a VAL already >= ``count`` is no change;
    a one-register VAL or ZERO is rewritten; otherwise the run is split into up to three
    opcodes (XZERO-VAL-XZERO worst case, 5 bytes), the tail moved right, and then equal
    neighbouring VALs among the next 5 opcodes from the previous one merged.
    Complexity: O(length) (the walk and the move).
    """
    if count > SPARSE_VAL_MAX_VALUE:
        return length, PROMOTE
    end = length
    p = HDR_SIZE
    first = 0
    prev = -1
    span = 0
    while p < end:
        span, oplen, kind = _op_span(buf, p)
        if index <= first + span - 1:
            break
        prev = p
        p += oplen
        first += span
    if span == 0 or p >= end:
        return length, INVALID
    runlen, oplen, kind = _op_span(buf, p)
    nxt = p + oplen
    if nxt >= end:
        nxt = -1
    done = False
    if kind == 2:
        oldcount = _val_value(np.int64(buf[p]))
        if oldcount >= count:
            return length, UNCHANGED
        if runlen == 1:
            buf[p] = _val_op(count, 1)
            done = True
    if not done and kind == 0 and runlen == 1:
        buf[p] = _val_op(count, 1)
        done = True
    if not done:
        last = first + span - 1
        n = 0
        if kind != 2:
            if index != first:
                n = _zero_run(seq, n, index - first)
            seq[n] = _val_op(count, 1)
            n += 1
            if index != last:
                n = _zero_run(seq, n, last - index)
        else:
            curval = _val_value(np.int64(buf[p]))
            if index != first:
                seq[n] = _val_op(curval, index - first)
                n += 1
            seq[n] = _val_op(count, 1)
            n += 1
            if index != last:
                seq[n] = _val_op(curval, last - index)
                n += 1
        delta = n - oplen
        if delta > 0 and length + delta > max_bytes:
            return length, PROMOTE
        if delta != 0 and nxt >= 0:
            _move(buf, nxt + delta, nxt, end - nxt)
        length += delta
        buf[length] = 0
        for i in range(n):
            buf[p + i] = seq[i]
        end += delta
    # merge equal adjacent VAL opcodes among the next few, starting at the previous one
    p = prev if prev >= 0 else HDR_SIZE
    scan = SPARSE_MERGE_SCAN_OPCODES
    while p < end and scan > 0:
        scan -= 1
        b = np.int64(buf[p])
        if b & OP_KIND_MASK == OP_XZERO:
            p += 2
            continue
        if b & OP_KIND_MASK == 0:
            p += 1
            continue
        if p + 1 < end and buf[p + 1] & OP_VAL:
            b2 = np.int64(buf[p + 1])
            v1 = _val_value(b)
            if v1 == _val_value(b2):
                run = (b & VAL_LEN_MASK) + (b2 & VAL_LEN_MASK) + 2
                if run <= SPARSE_VAL_MAX_LEN:
                    buf[p + 1] = _val_op(v1, run)
                    _move(buf, p, p + 1, end - p)
                    length -= 1
                    buf[length] = 0
                    end -= 1
                    continue
        p += 1
    buf[CARD_STALE_BYTE] |= CARD_STALE_BIT
    return length, UPDATED


@_jit
def _sparse_add_all(buf, length, idxs, cnts, max_bytes):
    """hllSparseSet for each element: ``(status, length, updated, stopped at)``; status
    PROMOTE means element ``stopped at`` and the rest go to the dense form."""
    seq = np.zeros(5, np.uint8)
    updated = 0
    for i in range(len(idxs)):
        length, r = _sparse_set(buf, length, idxs[i], cnts[i], max_bytes, seq)
        if r == UPDATED:
            updated += 1
        elif r != UNCHANGED:
            return r, length, updated, i
    return UNCHANGED, length, updated, len(idxs)


@_jit
def _sparse_registers(buf, start, end, regs):
    """Decode sparse opcodes into ``regs``; False if they do not cover exactly 16384
    registers (the check hllSparseToDense, hllMerge and the histogram make)."""
    idx = 0
    p = start
    while p < end:
        b = np.int64(buf[p])
        if b & OP_KIND_MASK == 0:
            idx += (b & ZERO_LEN_MASK) + 1
            p += 1
        elif b & OP_VAL == 0:
            lo = np.int64(buf[p + 1]) if p + 1 < end else 0
            idx += (((b & ZERO_LEN_MASK) << 8) | lo) + 1
            p += 2
        else:
            run = (b & VAL_LEN_MASK) + 1
            if idx + run > HLL_REGISTERS:
                return False
            val = _val_value(b)
            for i in range(run):
                regs[idx + i] = val
            idx += run
            p += 1
    return idx == HLL_REGISTERS
