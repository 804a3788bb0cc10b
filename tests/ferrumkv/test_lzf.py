"""LZF and CRC-64 (ferrumkv_py/lzf.py): check values, compiled against plain Python, and
corrupt compressed input that must decode to None, never raise or overrun."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferrumkv_py import lzf

# Redis's crc64.c check value, and the footer redis-server 7.0.15 wrote for DUMP of "hello"
CRC_VECTORS = [
    (b"123456789", 0xE9C6D914C4B8D9CA),
    (b"\x00\x05hello\n\x00", int.from_bytes(b"cr\xdfve4 \n", "little")),
]


@pytest.mark.parametrize("data,expected", CRC_VECTORS)
def test_crc64_vectors(data, expected):
    assert lzf.crc64(data) == expected
    assert lzf.crc64_py(data) == expected


def test_crc64_continues():
    data = os.urandom(1000)
    assert lzf.crc64(data[500:], lzf.crc64(data[:500])) == lzf.crc64(data)
    assert lzf.crc64(b"") == 0


def test_kernels_are_compiled():
    assert lzf.COMPILED     # numba is a dependency: DUMP compresses as Redis does


def _samples():
    rng = random.Random(7)
    yield b"abcabcabcabcabcabcabcabcabc"
    yield b"a" * 100_000                        # long references (length byte 255)
    yield bytes(rng.choice(b"ab") for _ in range(5000))
    yield os.urandom(3000)                      # incompressible: None
    yield b"".join(b"%d," % i for i in range(20_000))   # offsets up to the 8 KiB window
    yield (b"0123456789" * 1000)[:8193] + b"0123"


@pytest.mark.parametrize("data", list(_samples()), ids=lambda d: "%d bytes" % len(d))
def test_round_trip_and_same_as_python(data):
    packed = lzf.compress(data, len(data))
    assert packed == lzf.compress_py(data, len(data))
    if packed is None:
        return
    assert len(packed) <= len(data)
    assert lzf.decompress(packed, len(data)) == data
    assert lzf.decompress_py(packed, len(data)) == data
    # any other claimed length is refused
    assert lzf.decompress(packed, len(data) + 1) is None
    assert lzf.decompress(packed, len(data) - 1) is None


def test_compress_respects_the_output_bound():
    data = b"abcd" * 50
    full = lzf.compress(data, 1000)
    assert full is not None
    assert lzf.compress(data, len(full) + 4) == full     # liblzf keeps a few bytes of slack
    assert lzf.compress(data, len(full) - 1) is None
    assert lzf.compress_py(data, len(full) - 1) is None


def test_back_reference_overlapping_itself():
    # literal "ab", then a reference of length 6 at offset 1 (2 back): "abababab"
    packed = bytes([1]) + b"ab" + bytes([(4 << 5) | 0, 1])
    assert lzf.decompress(packed, 8) == b"abababab"
    assert lzf.decompress_py(packed, 8) == b"abababab"


@pytest.mark.parametrize("packed,n", [
    (b"\x05ab", 6),                   # literal run longer than the input
    (b"\x00a\x20\x05", 5),            # reference before the start of the output
    (b"\x00a\xe0", 10),               # reference cut after its first byte
    (b"\x00a\xe0\x01", 10),           # long reference cut before its offset
    (b"\x00a\x20\x00", 2),            # output longer than claimed
    (b"", 0), (b"\x00a", 0),
])
def test_corrupt_input_is_refused(packed, n):
    assert lzf.decompress(packed, n) is None
    assert lzf.decompress_py(packed, n) is None


def test_claimed_size_is_bounded_before_allocation():
    # 3 input bytes can make at most 264 bytes: a claim of 2**40 is refused at once
    assert lzf.decompress(b"\x00a\xe0", 1 << 40) is None
    assert lzf.decompress(b"abc", lzf.MAX_RATIO * 3 + 1) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 2000))
def test_random_input_never_raises(packed, n):
    a = lzf.decompress(packed, n)
    assert a == lzf.decompress_py(packed, n)
    assert a is None or len(a) == n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"b", b"xyz", b"\x00", b"hello world"]), max_size=400))
def test_round_trip_property(parts):
    data = b"".join(parts)
    packed = lzf.compress(data, len(data) + 64)
    assert packed == lzf.compress_py(data, len(data) + 64)
    if data:
        assert packed is not None
        assert lzf.decompress(packed, len(data)) == data
