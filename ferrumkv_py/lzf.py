"""LZF compression and Redis's CRC-64, the two byte kernels of a DUMP payload.

Both run compiled by numba when it can (``compress``, ``decompress``, ``crc64``); the same
functions run as plain Python otherwise (and in the tests, which compare the two).  Without
a compiler, :func:`compress` declines (returns None), so DUMP writes strings raw -- which
redis-server accepts -- rather than stall the event loop in a Python byte loop.

LZF format (liblzf, as Redis ships it)
--------------------------------------
A stream of tokens; the first byte of each says which kind::

    000LLLLL <L+1 literal bytes>            literal run of 1..32 bytes
    LLLooooo oooooooo                       back reference, length L+2 (L = 1..6)
    111ooooo LLLLLLLL oooooooo              back reference, length L+9 (9..264)

A back reference copies ``length`` bytes starting ``offset + 1`` bytes back in the output
(offset is 13 bits, so up to 8192 back); it may overlap what it writes (``ab`` then a
reference of length 6 at offset 1 gives ``abababab``).  A reference of 3 input bytes makes
at most 264 output bytes, so a payload claiming more than :data:`MAX_RATIO` times its
compressed size is refused before anything is allocated.

The compressor is liblzf's, step for step (so DUMP payloads equal redis-server's byte for
byte): it hashes the next 3 bytes, looks up the last position with the same hash (64 K
slots) and, when those 3 bytes match within the window, extends the match up to 264 bytes,
then remembers the last two positions of the match and goes on after it.  Redis leaves its
table uninitialised (a stale slot is only a candidate that fails the byte comparison, or a
valid match elsewhere); ours starts empty on every call.

CRC-64
------
Redis's ``crc64.c``: the Jones polynomial 0xad93d23594c935a9, reflected input and output,
initial value 0, no final xor; ``crc64(b"123456789") == 0xe9c6d914c4b8d9ca``.  One table
lookup per byte.

Complexity: compress, decompress and crc64 are O(n) in the bytes read and written.
"""

from __future__ import annotations

import logging

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a declared dependency
    njit = None

log = logging.getLogger("ferrumkv")

MAX_LITERAL = 32          # bytes in one literal run
MAX_OFFSET = 8192         # bytes back a reference can reach (13 bits + 1)
MAX_REF = 264             # bytes one reference can copy (7 + 255 + 2)
MIN_MATCH = 3             # shortest match worth a reference
MAX_RATIO = 88            # output bytes per input byte at most (264 from 3)
HASH_LOG = 16             # liblzf's HLOG: a hash table of 2**16 positions
HASH_SIZE = 1 << HASH_LOG
_HASH_SHIFT = 24 - HASH_LOG
_HASH_MASK = HASH_SIZE - 1
_UNROLLED = 16            # liblzf compares the first 16 bytes of a match unrolled
CRC64_POLY = 0xAD93D23594C935A9   # Jones polynomial, normal form
CRC64_CHECK = 0xE9C6D914C4B8D9CA  # crc64(b"123456789")
_BYTE = 0xFF
_LEN_SHIFT = 5            # token bits: length above, offset high bits below
_OFF_HIGH_MASK = 0x1F
_LONG_LEN = 7             # length field value meaning "one more length byte follows"


# ---- kernels (plain Python; compiled below when numba is present) ----

def _decompress(src, out):
    """Decode ``src`` into ``out`` (exactly its size); bytes written, or -1 if corrupt."""
    n = len(src)
    cap = len(out)
    ip = 0
    op = 0
    while ip < n:
        ctrl = src[ip]
        ip += 1
        if ctrl < MAX_LITERAL:
            run = ctrl + 1
            if op + run > cap or ip + run > n:
                return -1
            out[op:op + run] = src[ip:ip + run]
            op += run
            ip += run
        else:
            length = ctrl >> _LEN_SHIFT
            ref = op - ((ctrl & _OFF_HIGH_MASK) << 8) - 1
            if ip >= n:
                return -1
            if length == _LONG_LEN:
                length += src[ip]
                ip += 1
                if ip >= n:
                    return -1
            ref -= src[ip]
            ip += 1
            length += 2
            if ref < 0 or op + length > cap:
                return -1
            for k in range(length):      # byte by byte: the copy may overlap itself
                out[op + k] = out[ref + k]
            op += length
    return op


def _compress(src, out, htab, base):
    """Encode ``src`` into ``out``; compressed size, or 0 when it does not fit in ``out``.

    liblzf 3.6's ``lzf_compress`` as Redis builds it (HLOG 16, VERY_FAST, STRICT_ALIGN),
    step for step, including its output bound tests, so the result and whether there is
    one match Redis's.  ``htab`` holds ``base + position``: an entry below ``base`` is left
    from an earlier call and reads as a negative position, never a match (as position 0
    never is), so the table needs no reset between calls (a 64 K-slot fill per call cost
    ~10 us, most of an RDB save of short strings: persistence/, bench/persistence.py).
    """
    n = len(src)
    cap = len(out)
    if n == 0 or cap == 0:
        return 0
    ip = 0
    op = 1          # out[0] is the control byte of the first literal run
    lit = 0
    while ip < n - 2:
        v = (src[ip] << 16) | (src[ip + 1] << 8) | src[ip + 2]
        h = ((v >> _HASH_SHIFT) - v * 5) & _HASH_MASK
        ref = htab[h] - base
        htab[h] = base + ip
        off = ip - ref - 1
        if (ref > 0 and off < MAX_OFFSET and src[ref + 2] == src[ip + 2]
                and src[ref] == src[ip] and src[ref + 1] == src[ip + 1]):
            length = 2
            maxlen = n - ip - length
            if maxlen > MAX_REF:
                maxlen = MAX_REF
            if op + 4 >= cap and op - (1 if lit == 0 else 0) + 4 >= cap:
                return 0
            out[op - lit - 1] = (lit - 1) & _BYTE     # stop the literal run
            if lit == 0:
                op -= 1                               # ... or undo an empty one
            mismatch = False
            if maxlen > _UNROLLED:                    # liblzf's unrolled first 16 checks
                for _ in range(_UNROLLED):
                    length += 1
                    if src[ref + length] != src[ip + length]:
                        mismatch = True
                        break
            if not mismatch:
                length += 1
                while length < maxlen and src[ref + length] == src[ip + length]:
                    length += 1
            length -= 2                               # now the length code
            ip += 1
            if length < _LONG_LEN:
                out[op] = (off >> 8) + (length << _LEN_SHIFT)
                op += 1
            else:
                out[op] = (off >> 8) + (_LONG_LEN << _LEN_SHIFT)
                out[op + 1] = length - _LONG_LEN
                op += 2
            out[op] = off & _BYTE
            op += 2          # and start the next run
            lit = 0
            ip += length + 1
            if ip >= n - 2:
                break
            ip -= 2          # remember the last two positions of the match
            for _ in range(2):
                v = (src[ip] << 16) | (src[ip + 1] << 8) | src[ip + 2]
                htab[((v >> _HASH_SHIFT) - v * 5) & _HASH_MASK] = base + ip
                ip += 1
        else:
            # a literal byte; the tail loop below repeats these lines on purpose, as liblzf's
            # lzf_c.c does (kept step for step so output and "does not fit" match Redis's)
            if op >= cap:
                return 0
            out[op] = src[ip]
            op += 1
            ip += 1
            lit += 1
            if lit == MAX_LITERAL:
                out[op - lit - 1] = lit - 1
                lit = 0
                op += 1
    if op + 3 > cap:
        return 0
    while ip < n:    # the last 0-2 bytes: the main loop's literal step again (liblzf's tail)
        out[op] = src[ip]
        op += 1
        ip += 1
        lit += 1
        if lit == MAX_LITERAL:
            out[op - lit - 1] = lit - 1
            lit = 0
            op += 1
    out[op - lit - 1] = (lit - 1) & _BYTE
    if lit == 0:
        op -= 1
    return op


def _crc64(buf, table, crc):
    """Continue a reflected table CRC over ``buf`` from ``crc``."""
    for b in buf:
        crc = table[(crc ^ b) & _BYTE] ^ (crc >> 8)
    return crc


def _crc64_table() -> list:
    poly = int("{:064b}".format(CRC64_POLY)[::-1], 2)   # reflected polynomial
    table = []
    for i in range(256):
        crc = i
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc64_table()
_TABLE_NP = np.array(_TABLE, dtype=np.uint64)


def _compile():
    """The three compiled kernels, or Nones (then Python, and no compression)."""
    if njit is None:  # pragma: no cover
        return None, None, None
    try:
        dec = njit(cache=True, nogil=True)(_decompress)
        com = njit(cache=True, nogil=True)(_compress)
        crc = njit(cache=True, nogil=True)(_crc64)
        probe = np.frombuffer(b"abcabcabcabcabcabcabcabc", dtype=np.uint8)
        out = np.empty(64, dtype=np.uint8)
        size = com(probe, out, np.full(HASH_SIZE, -1, dtype=np.int64), 0)
        back = np.empty(len(probe), dtype=np.uint8)
        if dec(out[:size], back) != len(probe) or bytes(back) != bytes(probe):
            raise RuntimeError("compiled LZF does not round-trip")
        if crc(np.frombuffer(b"123456789", dtype=np.uint8), _TABLE_NP,
               np.uint64(0)) != CRC64_CHECK:
            raise RuntimeError("compiled CRC-64 check value is wrong")
    except Exception:  # pragma: no cover - a platform numba cannot compile for
        log.warning("lzf: no compiled kernels; DUMP writes uncompressed strings",
                    exc_info=True)
        return None, None, None
    return dec, com, crc


_DEC, _COM, _CRC = _compile()
_HTAB = np.full(HASH_SIZE, -1, dtype=np.int64)   # compress()'s table (see _compress)
_HTAB_BASE = [0]                                 # positions of the next call start here
_HTAB_BASE_MAX = 1 << 62                         # then the table is reset once
COMPILED = _COM is not None


# ---- public API ----

def decompress(data: bytes, out_len: int) -> bytes | None:
    """The ``out_len`` bytes ``data`` decodes to, or None if it is corrupt or decodes to any
    other length (what Redis's ``lzf_decompress(...) != len`` test refuses).

    Complexity: O(len(data) + out_len); nothing is allocated for a claimed ``out_len``
    above ``MAX_RATIO * len(data)``.
    """
    if not data or out_len <= 0 or out_len > MAX_RATIO * len(data):
        return None
    if _DEC is not None:
        out = np.empty(out_len, dtype=np.uint8)
        n = _DEC(np.frombuffer(data, dtype=np.uint8), out)
        return out.tobytes() if n == out_len else None
    out = bytearray(out_len)
    n = _decompress(data, out)
    return bytes(out) if n == out_len else None


def compress(data: bytes, max_out: int) -> bytes | None:
    """LZF of ``data`` when it fits in ``max_out`` bytes, else None (also None when no
    compiled kernel is available).  Complexity: O(len(data)) (the hash table is not reset:
    each call's positions start above the last call's, ``_compress``)."""
    if _COM is None or max_out <= 0 or not data:
        return None
    base = _HTAB_BASE[0] + 1
    if base + len(data) > _HTAB_BASE_MAX:
        _HTAB.fill(-1)
        base = 1
    _HTAB_BASE[0] = base + len(data)
    out = np.empty(max_out, dtype=np.uint8)
    n = _COM(np.frombuffer(data, dtype=np.uint8), out, _HTAB, base)
    return out[:n].tobytes() if n else None


def crc64(data: bytes, crc: int = 0) -> int:
    """Redis's CRC-64 (Jones) of ``data``, continuing from ``crc``.  Complexity: O(n)."""
    if _CRC is not None:
        return int(_CRC(np.frombuffer(data, dtype=np.uint8), _TABLE_NP, np.uint64(crc)))
    return _crc64(data, _TABLE, crc)


def compress_py(data: bytes, max_out: int) -> bytes | None:
    """The compressor as plain Python (tests compare it with the compiled one)."""
    if max_out <= 0 or not data:
        return None
    out = bytearray(max_out)
    n = _compress(data, out, [-1] * HASH_SIZE, 0)
    return bytes(out[:n]) if n else None


def decompress_py(data: bytes, out_len: int) -> bytes | None:
    """The decompressor as plain Python (tests compare it with the compiled one)."""
    if not data or out_len <= 0 or out_len > MAX_RATIO * len(data):
        return None
    out = bytearray(out_len)
    return bytes(out) if _decompress(data, out) == out_len else None


def crc64_py(data: bytes, crc: int = 0) -> int:
    """The CRC as plain Python (tests compare it with the compiled one)."""
    return _crc64(data, _TABLE, crc)
