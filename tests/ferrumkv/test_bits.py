"""bits.py against naive per-bit oracles: popcount, first-bit search, BITOP, BITFIELD
integers and Redis's overflow rules (with the C int64 quirk)."""

from __future__ import annotations

import random

import pytest

from ferrumkv_py import bits as B


def _bit(s: bytes, i: int) -> int:
    return (s[i >> 3] >> (7 - (i & 7))) & 1


def _rand_bytes(rng, n, density=0.5):
    return bytes(sum((rng.random() < density) << k for k in range(8)) for _ in range(n))


def test_popcount_matches_naive_on_every_range():
    rng = random.Random(1)
    s = _rand_bytes(rng, 41)
    for a in range(len(s) + 1):
        for b in range(a, len(s) + 1):
            assert B.popcount(s, a, b) == sum(bin(x).count("1") for x in s[a:b]), (a, b)


def test_popcount_crosses_chunks(monkeypatch):
    monkeypatch.setattr(B, "CHUNK_BYTES", 16)
    rng = random.Random(2)
    s = _rand_bytes(rng, 203)
    assert B.popcount(s, 3, 200) == sum(bin(x).count("1") for x in s[3:200])


@pytest.mark.parametrize("density", [0.02, 0.5, 0.98])
def test_bitpos_matches_naive(density, monkeypatch):
    monkeypatch.setattr(B, "CHUNK_BYTES", 8)     # many chunks in a short string
    rng = random.Random(int(density * 100))
    s = _rand_bytes(rng, 30, density)
    n = len(s) * 8
    for _ in range(400):
        a = rng.randrange(n)
        b = rng.randrange(a, n)
        for bit in (0, 1):
            want = next((i for i in range(a, b + 1) if _bit(s, i) == bit), -1)
            assert B.bitpos(s, bit, a, b) == want, (bit, a, b)


def test_first_byte_not_long_runs():
    s = bytes(5000) + b"\x10" + bytes(10)
    assert B.first_byte_not(s, 0, 0, len(s)) == 5000
    assert B.first_byte_not(s, 0, 5001, len(s)) == -1
    assert B.first_byte_not(b"\xff" * 100, 0xFF, 0, 100) == -1


def test_bitop_matches_naive():
    rng = random.Random(3)
    for _ in range(50):
        vals = [_rand_bytes(rng, rng.randrange(0, 12)) for _ in range(rng.randrange(1, 4))]
        size = max(len(v) for v in vals)
        if not size:
            continue
        padded = [v + bytes(size - len(v)) for v in vals]
        for op, f in (("and", lambda x, y: x & y), ("or", lambda x, y: x | y),
                      ("xor", lambda x, y: x ^ y)):
            want = padded[0]
            for p in padded[1:]:
                want = bytes(f(x, y) for x, y in zip(want, p))
            assert B.bitop(op, vals, size) == want, (op, vals)
        assert B.bitop("not", vals[:1], len(vals[0])) == bytes(255 - x for x in vals[0])


def test_fields_round_trip_against_bit_oracle():
    rng = random.Random(4)
    for _ in range(500):
        buf = bytearray(_rand_bytes(rng, 12))
        width = rng.randrange(1, 65)
        off = rng.randrange(0, 96 - width + 1)
        signed = rng.random() < 0.5 and True
        raw = sum(_bit(bytes(buf), off + i) << (width - 1 - i) for i in range(width))
        want = raw - (1 << width) if signed and raw >> (width - 1) else raw
        assert B.get_field(bytes(buf), off, width, signed) == want
        value = rng.randrange(-(1 << 63), 1 << 63)
        before = bytes(buf)
        B.set_field(buf, off, width, value)
        assert B.get_field(bytes(buf), off, width, False) == value & ((1 << width) - 1)
        for i in list(range(off)) + list(range(off + width, 96)):   # neighbours untouched
            assert _bit(bytes(buf), i) == _bit(before, i)


def test_get_field_past_the_end_reads_zeros():
    assert B.get_field(b"\xff", 4, 8, False) == 0xF0
    assert B.get_field(b"", 1000, 64, True) == 0


def test_signed_overflow_rules():
    # i8: 100 + 100 wraps to -56, saturates at 127, fails
    assert B.signed_overflow(100, 100, 8, "wrap") == (1, -56)
    assert B.signed_overflow(100, 100, 8, "sat") == (1, 127)
    assert B.signed_overflow(100, 100, 8, "fail") == (1, None)
    assert B.signed_overflow(-100, -100, 8, "sat") == (-1, -128)
    assert B.signed_overflow(-100, -100, 8, "wrap") == (-1, 56)
    assert B.signed_overflow(1, 2, 8, "sat") == (0, None)
    # i64 wraps as C's int64
    assert B.signed_overflow(B.INT64_MAX, 1, 64, "wrap") == (1, B.INT64_MIN)
    # SET of INT64_MIN into i8: C's wrapped maxincr takes the "up" branch (SAT -> 127)
    assert B.signed_overflow(B.INT64_MIN, 0, 8, "sat") == (1, 127)
    assert B.signed_overflow(B.INT64_MIN + 200, 0, 8, "sat") == (-1, -128)


def test_unsigned_overflow_rules():
    assert B.unsigned_overflow(250, 10, 8, "wrap") == (1, 4)
    assert B.unsigned_overflow(250, 10, 8, "sat") == (1, 255)
    assert B.unsigned_overflow(5, -10, 8, "sat") == (-1, 0)
    assert B.unsigned_overflow(5, -10, 8, "wrap") == (-1, 251)
    assert B.unsigned_overflow(B.UINT64_MASK, 0, 8, "sat") == (1, 255)   # SET u8 -1
    assert B.unsigned_overflow(3, 4, 8, "fail") == (0, None)


def test_wrap64():
    assert B.wrap64(1 << 63) == B.INT64_MIN
    assert B.wrap64(-(1 << 63) - 1) == B.INT64_MAX
    assert B.wrap64((1 << 64) + 64) == 64


def test_overlay_matches_a_bytearray():
    rng = random.Random(9)
    for _ in range(300):
        base = rng.randbytes(rng.randrange(0, 20))
        size = max(len(base), rng.randrange(0, 30))
        ov = B.Overlay(base, size)
        want = bytearray(base) + bytearray(size - len(base))
        for _ in range(rng.randrange(0, 6)):
            width = rng.randrange(1, 65)
            if size * 8 < width:
                break
            off = rng.randrange(0, size * 8 - width + 1)
            value = rng.randrange(-(1 << 63), 1 << 63)
            B.set_field(want, off, width, value)
            ov.set_field(off, width, value)
            assert ov.get_field(off, width, True) == B.get_field(bytes(want), off, width, True)
        assert ov.value() == bytes(want)


def test_first_byte_not_every_range(monkeypatch):
    monkeypatch.setattr(B, "CHUNK_BYTES", 16)
    rng = random.Random(10)
    for skip in (0, 0xFF):
        s = bytearray([skip] * 60)
        for i in rng.sample(range(60), 4):
            s[i] = rng.choice([1, 0x80, 0x7F, 0xFE])
        s = bytes(s)
        for a in range(61):
            for b in range(a, 61):
                want = next((i for i in range(a, b) if s[i] != skip), -1)
                assert B.first_byte_not(s, skip, a, b) == want, (skip, a, b)
