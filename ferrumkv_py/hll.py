"""HyperLogLog in Redis's own string representation, byte for byte.

A HyperLogLog is a string value, so GET / SET / DUMP carry it between servers.  Layout
(Redis hyperloglog.c)::

    +------+---+-----+----------+--------------------------------+
    | HYLL | E | N/U | Cardin.  |  registers ...                 |
    +------+---+-----+----------+--------------------------------+
      4 B   1 B  3 B     8 B      dense: 16384 x 6 bits = 12288 B
                                  sparse: run-length opcodes

``E`` is the encoding (0 dense, 1 sparse).  ``Cardin.`` caches the last PFCOUNT, little
endian; its most significant bit set means "stale".  Each element is hashed with
MurmurHash64A (seed 0xadc83b19): the low 14 bits pick a register, the run of zero bits
above them plus one (1..51) is the value the register keeps the maximum of.

Dense registers are packed LSB first: register 0 is the low 6 bits of byte 0, register 1
the top 2 bits of byte 0 and the low 4 of byte 1, and so on (4 registers in 3 bytes).

Sparse opcodes (all registers start at 0, so runs of zeros dominate)::

    ZERO   00xxxxxx            1..64 zero registers
    XZERO  01xxxxxx yyyyyyyy   1..16384 zero registers (14-bit length - 1)
    VAL    1vvvvvxx            1..4 registers of value 1..32

A new HyperLogLog is sparse (one XZERO of 16384: 18 bytes).  PFADD edits the opcodes in
place exactly as Redis does (split a run, then merge equal neighbour VALs among the next 5
opcodes), so the same additions give the same bytes; a value above 32, or a sparse string
that would grow past ``hll-sparse-max-bytes``, turns it dense for good.

The opcode walk and the hash run per element, so they are compiled with numba
(``hll_kernels.py``); the register histogram, the dense unpacking and packing and the merges
are numpy array operations.
The estimator is Otmar Ertl's (arXiv:1702.01284), as Redis 7.0.

Complexity: PFADD O(elements x sparse length) while sparse (length <= hll-sparse-max-bytes),
O(elements) when dense; a count or merge O(registers) = O(16384).
"""

from __future__ import annotations

import math

import numpy as np

from .hll_kernels import (  # noqa: F401  (re-exported: the format constants)
    MAGIC, HLL_P, HLL_Q, HLL_REGISTERS, HLL_P_MASK, HLL_BITS, HLL_REGISTER_MAX, HDR_SIZE,
    ENCODING_OFFSET, CARD_OFFSET, CARD_STALE_BYTE, CARD_STALE_BIT, DENSE_REG_BYTES,
    DENSE_SIZE, DENSE, SPARSE, MAX_ENCODING, SEED, SPARSE_VAL_MAX_VALUE, SPARSE_VAL_MAX_LEN,
    SPARSE_ZERO_MAX_LEN, SPARSE_XZERO_MAX_LEN, UNCHANGED, UPDATED, INVALID, PROMOTE,
    OP_KIND_MASK, OP_XZERO, OP_VAL, ZERO_LEN_MASK, VAL_VALUE_SHIFT, VAL_VALUE_MASK,
    VAL_LEN_MASK, BYTE_MASK, _hash_all, _dense_add_all, _sparse_add_all, _sparse_registers)

ALPHA_INF = 0.721347520444481703680        # 0.5 / ln(2)
LLONG_LIMIT = 2.0 ** 63
LLROUND_OVERFLOW = -(1 << 63)       # llroundl of inf / out of range on x86-64
UINT64_MASK = (1 << 64) - 1
HASH_ZERO_COPY_BYTES = 1 << 16      # PFADD elements at least this long are not joined


class HLLCorrupt(Exception):
    """A value with a valid header whose registers cannot be decoded (Redis INVALIDOBJ)."""


# ---- Python side: values in and out ----

def is_hll(value) -> bool:
    """Redis isHLLObjectOrReply's checks on a string value."""
    return (len(value) >= HDR_SIZE and value[:4] == MAGIC
            and value[ENCODING_OFFSET] <= MAX_ENCODING
            and (value[ENCODING_OFFSET] != DENSE or len(value) == DENSE_SIZE))


def encoding(value: bytes) -> int:
    return value[ENCODING_OFFSET]


def new_sparse() -> bytes:
    """An empty HyperLogLog as Redis creates it (cached cardinality 0, valid)."""
    run = HLL_REGISTERS - 1                 # one XZERO opcode covers every register
    return MAGIC + bytes((SPARSE,)) + bytes(HDR_SIZE - ENCODING_OFFSET - 1) \
        + bytes((run >> 8 | OP_XZERO, run & BYTE_MASK))


def hash_elements(elements: list) -> tuple:
    """(register index, count) arrays for the elements, in order.

    Small elements are joined into one buffer per numba call; an element of
    ``HASH_ZERO_COPY_BYTES`` or more is hashed where it lies (a numpy view, no copy), so a
    PFADD of huge elements never doubles its memory.  Complexity: O(total bytes).
    """
    n = len(elements)
    idxs = np.empty(n, np.int64)
    cnts = np.empty(n, np.int64)
    i = 0
    while i < n:
        j = i
        while j < n and len(elements[j]) < HASH_ZERO_COPY_BYTES:
            j += 1
        if j > i:                           # elements[i:j] are small: one joined buffer
            batch = elements[i:j]
            data = np.frombuffer(b"".join(batch) or b"\x00", np.uint8)
            offsets = np.zeros(j - i + 1, np.int64)
            np.cumsum([len(e) for e in batch], out=offsets[1:])
            _hash_all(data, offsets, idxs[i:j], cnts[i:j])
        if j < n:                           # elements[j] is big: hashed in place
            offsets = np.array([0, len(elements[j])], np.int64)
            _hash_all(np.frombuffer(elements[j], np.uint8), offsets, idxs[j:j + 1],
                      cnts[j:j + 1])
            j += 1
        i = j
    return idxs, cnts


def registers(value) -> np.ndarray:
    """The 16384 registers of a valid-header value as uint8; HLLCorrupt if the sparse
    opcodes do not decode.  Complexity: O(16384)."""
    if value[ENCODING_OFFSET] == DENSE:
        b = np.frombuffer(value, np.uint8, DENSE_REG_BYTES, HDR_SIZE).reshape(-1, 3)
        b0, b1, b2 = (b[:, i].astype(np.uint16) for i in range(3))
        regs = np.empty((len(b), 4), np.uint8)
        regs[:, 0] = b0 & HLL_REGISTER_MAX
        regs[:, 1] = ((b0 >> 6) | (b1 << 2)) & HLL_REGISTER_MAX
        regs[:, 2] = ((b1 >> 4) | (b2 << 4)) & HLL_REGISTER_MAX
        regs[:, 3] = b2 >> 2
        return regs.reshape(-1)
    regs = np.zeros(HLL_REGISTERS, np.uint8)
    if not _sparse_registers(np.frombuffer(value, np.uint8), HDR_SIZE, len(value), regs):
        raise HLLCorrupt()
    return regs


def pack_dense(header: bytes, regs: np.ndarray) -> bytes:
    """A dense value: ``header`` (16 bytes) with the encoding set to dense, then the
    registers packed 4 in 3 bytes.  Complexity: O(16384)."""
    r = regs.reshape(-1, 4).astype(np.uint16)
    out = np.empty((len(r), 3), np.uint8)
    out[:, 0] = (r[:, 0] | (r[:, 1] << 6)) & BYTE_MASK
    out[:, 1] = ((r[:, 1] >> 2) | (r[:, 2] << 4)) & BYTE_MASK
    out[:, 2] = ((r[:, 2] >> 4) | (r[:, 3] << 2)) & BYTE_MASK
    return header[:ENCODING_OFFSET] + bytes((DENSE,)) + header[ENCODING_OFFSET + 1:HDR_SIZE] \
        + out.tobytes()


def to_dense(value: bytes) -> bytes:
    """hllSparseToDense (the header, cached cardinality included, is kept)."""
    if value[ENCODING_OFFSET] == DENSE:
        return value
    return pack_dense(value, registers(value))


def set_registers(value: bytes, idxs, cnts, max_bytes: int) -> tuple:
    """Raise registers ``idxs`` to at least ``cnts`` in order, as PFADD / PFMERGE do:
    ``(new value, how many calls raised a register)``.  Marks the cached cardinality stale
    when one did.  HLLCorrupt if sparse opcodes are broken.
    Complexity: O(n x sparse length) while sparse, O(n) dense, O(16384) per promotion."""
    n = len(idxs)
    updated = 0
    start = 0
    if value[ENCODING_OFFSET] == SPARSE:
        length = len(value)
        cap = max(length, min(max_bytes, length + 3 * n)) + 4
        buf = np.zeros(cap, np.uint8)
        buf[:length] = np.frombuffer(value, np.uint8)
        status, length, updated, start = _sparse_add_all(buf, length, idxs, cnts, max_bytes)
        value = buf[:length].tobytes()
        if status == INVALID:
            raise HLLCorrupt()
        if status == UNCHANGED:
            return value, updated
        value = to_dense(value)
    buf = np.frombuffer(value, np.uint8).copy()
    raised = _dense_add_all(buf, idxs, cnts, start)
    if raised:
        buf[CARD_STALE_BYTE] |= CARD_STALE_BIT
    return buf.tobytes(), updated + raised


def add(value: bytes, elements: list, max_bytes: int) -> tuple:
    """PFADD's core: ``(new value, registers raised)``."""
    idxs, cnts = hash_elements(elements)
    return set_registers(value, idxs, cnts, max_bytes)


def cached_card(value: bytes):
    """The cached cardinality, or None when marked stale."""
    if value[CARD_STALE_BYTE] & CARD_STALE_BIT:
        return None
    return int.from_bytes(value[CARD_OFFSET:HDR_SIZE], "little")


def mark_stale(value: bytes) -> bytes:
    """The value with its cached cardinality marked stale."""
    if value[CARD_STALE_BYTE] & CARD_STALE_BIT:
        return value
    return value[:CARD_STALE_BYTE] + bytes((value[CARD_STALE_BYTE] | CARD_STALE_BIT,)) \
        + value[HDR_SIZE:]


def with_card(value: bytes, card: int) -> bytes:
    """The value with ``card`` cached (as C's uint64: a negative one reads back stale)."""
    return value[:CARD_OFFSET] + (card & UINT64_MASK).to_bytes(8, "little") \
        + value[HDR_SIZE:]


# ---- the estimator ----

def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        z_prev = z
        z += x * y
        y += y
        if z_prev == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        z_prev = z
        y *= 0.5
        z -= math.pow(1 - x, 2) * y
        if z_prev == z:
            return z / 3


def count_registers(regs: np.ndarray) -> int:
    """Ertl's improved raw estimator (Redis hllCount) from the register histogram.

    With C_k registers equal to k, m = 16384, q = 50:
    z = m tau(1 - C_{q+1}/m) + sum_{k=1..q} C_k 2^-k + m sigma(C_0/m) (the sum folded
    from k = q down, halving each step, as Redis does, so the doubles round alike), and
    the estimate is round(alpha_inf m^2 / z).  Complexity: O(16384) for the histogram.
    """
    hist = np.bincount(regs, minlength=64).tolist()
    m = float(HLL_REGISTERS)
    z = m * _tau((m - hist[HLL_Q + 1]) / m)
    for j in range(HLL_Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    e = ALPHA_INF * m * m / z if z else math.inf
    if not e < LLONG_LIMIT:
        return LLROUND_OVERFLOW     # crafted registers (all >= 51): what x86 llroundl gives
    f = math.floor(e)
    return int(f) + (1 if e - f >= 0.5 else 0)      # llroundl: halves away from zero


def count(value: bytes) -> int:
    """The estimate of one value (the cache is not read).  HLLCorrupt if broken."""
    return count_registers(registers(value))


def decode_sparse(value: bytes) -> str:
    """PFDEBUG DECODE: ``z:<run>``, ``Z:<run>``, ``v:<value>,<run>`` per opcode."""
    out = []
    p, end = HDR_SIZE, len(value)
    while p < end:
        b = value[p]
        if b & OP_KIND_MASK == 0:
            out.append("z:%d" % ((b & ZERO_LEN_MASK) + 1))
            p += 1
        elif b & OP_VAL == 0:
            lo = value[p + 1] if p + 1 < end else 0
            out.append("Z:%d" % ((((b & ZERO_LEN_MASK) << 8) | lo) + 1))
            p += 2
        else:
            out.append("v:%d,%d" % (((b >> VAL_VALUE_SHIFT) & VAL_VALUE_MASK) + 1,
                                    (b & VAL_LEN_MASK) + 1))
            p += 1
    return " ".join(out)


def _warm_up() -> None:
    """Compile (or load from numba's cache) every kernel now, not in the first PFADD."""
    v, _ = add(new_sparse(), [b"a", b"b"], 3000)
    set_registers(to_dense(v), *hash_elements([b"c"]), 3000)
    count(v)


_warm_up()
