"""Bitmap commands (Redis 7.0): SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.

A bitmap is a plain string value (``bytes``), so GET, SETRANGE, APPEND, STRLEN and GETRANGE
see what these commands wrote and the other way round.  Bit 0 is the most significant bit
of byte 0 (``bits.py`` has the picture).  The kernels are in ``bits.py``; this module parses
arguments exactly as Redis's bitops.c does, in the same order, so the same bad call gets the
same error.

Offsets: a bit offset is a string2ll integer with ``offset >> 3 < proto-max-bulk-len``
(with the default 512 MB, ``offset < 2**32``); BITFIELD also takes ``#n`` = n times the
field width, multiplied in C's int64 (a wrapped product is checked like any other).

Writes: a value of 4 KiB or more that only its key holds is edited in place (``inplace.py``
explains when that is safe), O(1) as in Redis; otherwise (a small or shared value, or one
that grows) the new value is built with one copy (``memoryview`` slices joined), O(n).

Keyspace notifications, as Redis 7.0: SETBIT and BITFIELD publish ``setbit`` only when the
value changed (or was created or grown), BITOP ``set``, or ``del`` for an empty result.
"""

from __future__ import annotations

import sys

from .. import errors, inplace
from ..errors import CommandError, WrongTypeError
from ..first_use import Kernels, gate_commands
from ..lazy import LazyModule
from ..notify import NOTIFY_STRING
from ..registry import command
from ._stored import drop_notify
from ._util import parse_int

B = LazyModule("ferrumkv_py.bits")     # numpy kernels, loaded at the first bitmap command

_OPS = {b"and": "and", b"or": "or", b"xor": "xor", b"not": "not"}
_OVERFLOW = {b"wrap": "wrap", b"sat": "sat", b"fail": "fail"}
INT64_BITS = 64
UINT_MAX_BITS = 63          # u64 is refused: a reply is a signed 64-bit integer


def bit_offset(c, arg: bytes, hash_ok: bool = False, bits: int = 0) -> int:
    """Redis getBitOffsetFromArgument: a bit offset, or ``#n`` (n * bits) for BITFIELD."""
    usehash = hash_ok and len(arg) > 1 and arg[:1] == b"#"
    v = parse_int(arg[1:] if usehash else arg, errors.BIT_OFFSET)
    if usehash:
        v = B.wrap64(v * bits)
    if v < 0 or (v >> 3) >= c.server.config["proto-max-bulk-len"]:
        raise CommandError(errors.BIT_OFFSET)
    return v


def _read_string(c, key: bytes):
    """A counted read lookup of a string value: bytes, or None for a missing key."""
    e = c.db.lookup_read(key)
    if e is None:
        return None
    if c.db.vals[e].__class__ is not bytes:
        raise WrongTypeError()
    return c.db.vals[e]


def _write_lookup(c, key: bytes):
    """Redis lookupStringForBitCommand's lookup: the entry (None if missing) and its value."""
    e = c.db.lookup_write(key)
    if e is None:
        return None, b""
    if c.db.vals[e].__class__ is not bytes:
        raise WrongTypeError()
    return e, c.db.vals[e]


def _store(c, key: bytes, e, value: bytes) -> None:
    if e is None:
        c.db.add(key, value)
    else:
        c.db.set_value(e, value)


@command("setbit", 4, "write denyoom", first_key=1, group="bitmap")
def setbit(c, argv):
    """SETBIT key offset value
    Sets or clears the bit at offset of the string value; returns the bit's old value."""
    offset = bit_offset(c, argv[2])
    on = parse_int(argv[3], errors.BIT_VALUE)
    if on & ~1:
        raise CommandError(errors.BIT_VALUE)
    byte = offset >> 3
    shift = 7 - (offset & 7)
    db = c.db
    e = db.lookup_write(argv[1])
    if e is None:
        # int.to_bytes zero-pads on the left: one allocation, even at offset 2**32 - 1
        db.add(argv[1], (on << shift).to_bytes(byte + 1, "big"))
        if c.ks.notify_flags:       # created counts as changed
            c.ks.notify(db, NOTIFY_STRING, b"setbit", argv[1])
        return 0
    old = db.vals[e]
    if old.__class__ is not bytes:
        raise WrongTypeError()
    n = len(old)
    cur = old[byte] if byte < n else 0
    was = (cur >> shift) & 1
    if byte < n and was == on:
        return was                          # unchanged: no write, as Redis (no signal)
    new = (cur & ~(1 << shift)) | (on << shift)
    if byte < n:
        refs = sys.getrefcount(old)         # its own statement: a call's pushed arguments
        if inplace.unshared(old, refs):     # would count too; held by db.vals[e] and `old`
            inplace.write(old, byte, bytes((new,)))
            db.set_value(e, old)                # same object: WATCH signal, no size change
        else:
            mv = memoryview(old)
            db.set_value(e, b"".join((mv[:byte], bytes((new,)), mv[byte + 1:])))
    else:
        db.set_value(e, b"".join((old, new.to_bytes(byte - n + 1, "big"))))
    if c.ks.notify_flags:
        c.ks.notify(db, NOTIFY_STRING, b"setbit", argv[1])
    return was


@command("getbit", 3, "readonly fast", first_key=1, group="bitmap")
def getbit(c, argv):
    """GETBIT key offset
    Returns the bit value at offset in the string value (0 past the end)."""
    offset = bit_offset(c, argv[2])
    s = _read_string(c, argv[1])
    byte = offset >> 3
    if s is None or byte >= len(s):
        return 0
    return (s[byte] >> (7 - (offset & 7))) & 1


def _unit(arg: bytes) -> bool:
    """BYTE|BIT -> True for BIT."""
    low = arg.lower()
    if low == b"bit":
        return True
    if low == b"byte":
        return False
    raise CommandError(errors.SYNTAX)


def _clamp(start: int, end: int, total: int) -> tuple[int, int]:
    """Redis's range rule for BITCOUNT / BITPOS: negatives from the end, then clamped."""
    if start < 0:
        start += total
    if end < 0:
        end += total
    start = max(start, 0)
    end = max(end, 0)
    return start, min(end, total - 1)


@command("bitcount", -2, "readonly", first_key=1, group="bitmap")
def bitcount(c, argv):
    """BITCOUNT key [start end [BYTE|BIT]]
    Counts the set bits of a string, in a byte or bit range.  Complexity: O(range) at C speed."""
    s = _read_string(c, argv[1])
    if s is None:
        return 0                            # Redis looks the key up before the arguments
    n = len(argv)
    if n == 2:
        return B.popcount(s, 0, len(s))
    if n not in (4, 5):
        raise CommandError(errors.SYNTAX)
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    isbit = _unit(argv[4]) if n == 5 else False
    if start < 0 and end < 0 and start > end:
        return 0
    start, end = _clamp(start, end, len(s) * 8 if isbit else len(s))
    if start > end:
        return 0
    if not isbit:
        return B.popcount(s, start, end + 1)
    sb, eb = start >> 3, end >> 3
    count = B.popcount(s, sb, eb + 1)
    count -= (s[sb] >> (8 - (start & 7))).bit_count()          # bits before start
    count -= (s[eb] & ((1 << (7 - (end & 7))) - 1)).bit_count()  # bits after end
    return count


@command("bitpos", -3, "readonly", first_key=1, group="bitmap")
def bitpos(c, argv):
    """BITPOS key bit [start [end [BYTE|BIT]]]
    Returns the position of the first bit set to 1 or 0 in a string, or -1."""
    bit = parse_int(argv[2])
    if bit not in (0, 1):
        raise CommandError(errors.BITPOS_BIT)
    s = _read_string(c, argv[1])
    if s is None:
        return -1 if bit else 0             # a missing key is an endless run of zeros
    n = len(argv)
    if n > 6:
        raise CommandError(errors.SYNTAX)
    total = len(s)
    isbit = False
    end_given = n >= 5
    if n >= 4:
        start = parse_int(argv[3])
        if n == 6:
            isbit = _unit(argv[5])
        end = parse_int(argv[4]) if end_given else (total * 8 + 7 if isbit else total - 1)
        if isbit:
            total *= 8
        start, end = _clamp(start, end, total)
    else:
        start, end = 0, total - 1
    if start > end:
        return -1
    sbit, ebit = (start, end) if isbit else (start * 8, end * 8 + 7)
    pos = B.bitpos(s, bit, sbit, ebit)
    if pos < 0 and bit == 0 and not end_given:
        return (ebit >> 3) * 8 + 8          # the zero padding right after the string
    return pos


@command("bitop", -4, "write denyoom", first_key=2, last_key=-1, group="bitmap")
def bitop(c, argv):
    """BITOP AND|OR|XOR|NOT destkey key [key ...]
    Stores the bitwise operation of strings (zero-padded to the longest) in a key; returns
    its length.  Complexity: O(longest * keys) at C speed."""
    op = _OPS.get(argv[1].lower())
    if op is None:
        raise CommandError(errors.SYNTAX)
    if op == "not" and len(argv) != 4:
        raise CommandError(errors.BITOP_NOT_ONE_KEY)
    values = []
    for key in argv[3:]:
        s = _read_string(c, key)
        values.append(b"" if s is None else s)
    size = max(len(v) for v in values)
    db = c.db
    if not size:
        drop_notify(c, argv[2])
        return 0
    db.set(argv[2], B.bitop(op, values, size))
    c.ks.notify(db, NOTIFY_STRING, b"set", argv[2])
    return size


# ---- BITFIELD ----

def _field_type(arg: bytes) -> tuple[bool, int]:
    """Redis getBitfieldTypeFromArgument: ``i1..i64`` / ``u1..u63`` -> (signed, bits)."""
    nul = arg.find(b"\x00")
    if nul >= 0:
        arg = arg[:nul]                     # Redis reads the width as a C string
    kind = arg[:1]
    if kind not in (b"i", b"u"):
        raise CommandError(errors.BITFIELD_TYPE)
    signed = kind == b"i"
    width = parse_int(arg[1:], errors.BITFIELD_TYPE)
    if width < 1 or width > (INT64_BITS if signed else UINT_MAX_BITS):
        raise CommandError(errors.BITFIELD_TYPE)
    return signed, width


def _parse_bitfield(c, argv: list):
    """The operations of one call: (kind, signed, bits, offset, value, overflow) tuples,
    and the highest bit a write reaches (-1 if none).  Parsed in full before anything runs."""
    ops = []
    overflow = "wrap"
    highest = -1
    j, n = 2, len(argv)
    while j < n:
        remaining = n - j - 1
        sub = argv[j].lower()
        if sub == b"overflow" and remaining >= 1:
            overflow = _OVERFLOW.get(argv[j + 1].lower())
            if overflow is None:
                raise CommandError(errors.BITFIELD_OVERFLOW)
            j += 2
            continue
        if not ((sub == b"get" and remaining >= 2) or
                (sub in (b"set", b"incrby") and remaining >= 3)):
            raise CommandError(errors.SYNTAX)
        signed, width = _field_type(argv[j + 1])
        offset = bit_offset(c, argv[j + 2], True, width)
        value = 0
        if sub != b"get":
            highest = max(highest, offset + width - 1)
            value = parse_int(argv[j + 3])
        ops.append((sub, signed, width, offset, value, overflow))
        j += 3 if sub == b"get" else 4
    return ops, highest


def _bitfield(c, argv, readonly_cmd: bool):
    ops, highest = _parse_bitfield(c, argv)
    if highest < 0:
        s = _read_string(c, argv[1])
        s = s if s is not None else b""
        return [B.get_field(s, off, width, signed) for _, signed, width, off, _, _ in ops]
    if readonly_cmd:
        raise CommandError(errors.BITFIELD_RO_GET_ONLY)
    e, v = _write_lookup(c, argv[1])
    size = (highest >> 3) + 1
    grown = size > len(v)                   # a new key counts as grown (Redis "dirty")
    buf = B.Overlay(v, size)
    out = []
    changes = 0
    for sub, signed, width, off, value, owtype in ops:
        old = buf.get_field(off, width, signed)
        if sub == b"get":
            out.append(old)
            continue
        check = B.signed_overflow if signed else B.unsigned_overflow
        if sub == b"incrby":
            over, limit = check(old, value, width, owtype)
            new = limit if over else old + value
            reply = new
        else:
            new = value if signed else value & B.UINT64_MASK
            over, limit = check(new, 0, width, owtype)
            if over:
                new = limit
            reply = old
        if over and owtype == "fail":
            out.append(None)
            continue
        out.append(reply)
        buf.set_field(off, width, new)
        if grown or old != buf.get_field(off, width, signed):
            changes += 1
    if e is not None and changes and not grown:
        buf.base = None                     # so that only db.vals[e] and `v` hold the value
        refs = sys.getrefcount(v)
        if inplace.unshared(v, refs):
            for lo, data in buf.runs():
                inplace.write(v, lo, data)
            c.db.set_value(e, v)
            c.ks.notify(c.db, NOTIFY_STRING, b"setbit", argv[1])
            return out
        buf.base = v
    if e is None or changes or grown:
        _store(c, argv[1], e, buf.value())
    if changes:     # a new key whose writes all FAILed publishes only "new"
        c.ks.notify(c.db, NOTIFY_STRING, b"setbit", argv[1])
    return out


@command("bitfield", -2, "write denyoom", first_key=1, group="bitmap")
def bitfield(c, argv):
    """BITFIELD key [GET encoding offset | [OVERFLOW WRAP|SAT|FAIL] SET encoding offset value | [OVERFLOW WRAP|SAT|FAIL] INCRBY encoding offset increment ...]
    Reads, writes and increments integer fields of any width at any bit offset of a string."""
    return _bitfield(c, argv, False)


@command("bitfield_ro", -2, "readonly fast", first_key=1, group="bitmap")
def bitfield_ro(c, argv):
    """BITFIELD_RO key [GET encoding offset ...]
    Reads integer fields of a string (the read-only variant of BITFIELD)."""
    return _bitfield(c, argv, True)


# ---- first use (first_use.py): the kernels load on a thread while only the caller waits ----

KERNELS = Kernels("bitmaps", ("ferrumkv_py.bits",))
gate_commands(KERNELS, ['bitcount', 'bitpos', 'bitop', 'bitfield', 'bitfield_ro'])
