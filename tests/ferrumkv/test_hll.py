"""hll.py: the hash against an independent MurmurHash64A, the sparse editor against a plain
register array, the dense packing, promotion, corruption checks and the estimator.  Golden
bytes come from redis-server 7.0.15 (``PFADD h a b c`` then ``GET h``)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ferrumkv_py import hll

MASK64 = (1 << 64) - 1


def murmur_ref(data: bytes, seed: int = hll.SEED) -> int:
    """MurmurHash64A written from the published algorithm, in Python integers."""
    m, r = 0xC6A4A7935BD1E995, 47
    h = (seed ^ (len(data) * m)) & MASK64
    n8 = len(data) - len(data) % 8
    for i in range(0, n8, 8):
        k = int.from_bytes(data[i:i + 8], "little")
        k = (k * m) & MASK64
        k ^= k >> r
        k = (k * m) & MASK64
        h ^= k
        h = (h * m) & MASK64
    tail = data[n8:]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & MASK64
    h ^= h >> r
    h = (h * m) & MASK64
    h ^= h >> r
    return h


def patlen_ref(data: bytes) -> tuple[int, int]:
    h = murmur_ref(data)
    idx = h & hll.HLL_P_MASK
    h = (h >> hll.HLL_P) | (1 << hll.HLL_Q)
    count = 1
    while not h & 1:
        count += 1
        h >>= 1
    return idx, count


REDIS_ABC = bytes.fromhex("48594c4c010000000000000000000080" "60f38050b1844bfb80425a")


def test_hash_matches_reference_for_all_tail_lengths():
    rng = random.Random(5)
    big = rng.randbytes(hll.HASH_ZERO_COPY_BYTES + 3)          # hashed without a join
    elements = [rng.randbytes(n) for n in range(0, 40)] + [b"a", b"", b"x" * 1000, big,
                                                           b"b", big[:-5], big + b"!"]
    idxs, cnts = hll.hash_elements(elements)
    for e, i, c in zip(elements, idxs, cnts):
        assert (int(i), int(c)) == patlen_ref(e), e


def test_golden_bytes_from_redis():
    value, updated = hll.add(hll.new_sparse(), [b"a", b"b", b"c"], 3000)
    assert updated == 3
    assert value == REDIS_ABC
    assert hll.decode_sparse(value) == "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    assert hll.count(value) == 3


def test_new_sparse_layout():
    v = hll.new_sparse()
    assert v == b"HYLL\x01" + bytes(11) + b"\x7f\xff"
    assert hll.is_hll(v) and hll.cached_card(v) == 0
    assert hll.count(v) == 0


def _sparse_check(value: bytes) -> None:
    """Invariants of a sparse value built by PFADD: opcodes cover 16384 registers, every
    zero run is one opcode (ZERO iff <= 64), no VAL of a value above 32."""
    p, total, prev_zero = hll.HDR_SIZE, 0, False
    while p < len(value):
        b = value[p]
        if b & 0x80:
            total += (b & 3) + 1
            prev_zero = False
            p += 1
            continue
        run = (b & 0x3F) + 1 if b & 0x40 == 0 else (((b & 0x3F) << 8) | value[p + 1]) + 1
        assert not prev_zero, "two zero opcodes in a row"
        assert (b & 0x40 == 0) == (run <= hll.SPARSE_ZERO_MAX_LEN)
        prev_zero = True
        total += run
        p += 1 if b & 0x40 == 0 else 2
    assert total == hll.HLL_REGISTERS


def test_sparse_edits_match_a_plain_register_array():
    rng = random.Random(6)
    value = hll.new_sparse()
    want = np.zeros(hll.HLL_REGISTERS, np.uint8)
    for step in range(300):
        idxs = np.array([rng.randrange(hll.HLL_REGISTERS) if rng.random() < 0.7 else
                         rng.randrange(100, 140) for _ in range(rng.randrange(1, 5))], np.int64)
        cnts = np.array([rng.randrange(1, 8) for _ in idxs], np.int64)
        value, _ = hll.set_registers(value, idxs, cnts, 100_000)
        for i, c in zip(idxs, cnts):
            want[i] = max(want[i], c)
        assert hll.encoding(value) == hll.SPARSE
        _sparse_check(value)
        assert np.array_equal(hll.registers(value), want), step


def test_promotion_by_size_and_by_value():
    rng = random.Random(7)
    value = hll.new_sparse()
    elements = [b"%d" % rng.randrange(10 ** 12) for _ in range(3000)]
    value, _ = hll.add(value, elements[:300], 300)
    assert hll.encoding(value) == hll.DENSE and len(value) == hll.DENSE_SIZE
    assert hll.cached_card(value) is None
    big, _ = hll.set_registers(hll.new_sparse(), np.array([5], np.int64),
                               np.array([hll.SPARSE_VAL_MAX_VALUE + 1], np.int64), 3000)
    assert hll.encoding(big) == hll.DENSE and hll.registers(big)[5] == 33
    # the element that forced the promotion and the ones after it are all applied
    sparse, _ = hll.add(hll.new_sparse(), elements, 10 ** 9)
    dense, _ = hll.add(hll.new_sparse(), elements, 500)
    assert np.array_equal(hll.registers(sparse), hll.registers(dense))
    assert hll.count(sparse) == hll.count(dense)


def test_dense_pack_round_trip_and_to_dense_keeps_header():
    rng = np.random.default_rng(8)
    regs = rng.integers(0, 64, hll.HLL_REGISTERS, dtype=np.uint8)
    value = hll.pack_dense(hll.new_sparse(), regs)
    assert len(value) == hll.DENSE_SIZE and np.array_equal(hll.registers(value), regs)
    cached = hll.with_card(REDIS_ABC, 3)
    dense = hll.to_dense(cached)
    assert dense[:16] == b"HYLL\x00\x00\x00\x00\x03" + bytes(7)
    assert np.array_equal(hll.registers(dense), hll.registers(REDIS_ABC))


def test_corrupt_values():
    assert not hll.is_hll(b"HYLL")
    assert not hll.is_hll(b"HYLL\x02" + bytes(11))
    assert not hll.is_hll(b"HYLL\x00" + bytes(11) + b"abc")       # dense of the wrong size
    assert not hll.is_hll(b"HYLX\x01" + bytes(13))
    short = b"HYLL\x01" + bytes(11) + b"\x7f\xfe"                  # 16383 registers
    assert hll.is_hll(short)
    with pytest.raises(hll.HLLCorrupt):
        hll.count(short)
    with pytest.raises(hll.HLLCorrupt):
        hll.to_dense(b"HYLL\x01" + bytes(11))                      # no opcodes at all
    with pytest.raises(hll.HLLCorrupt):
        hll.add(b"HYLL\x01" + bytes(11), [b"a"], 3000)
    with pytest.raises(hll.HLLCorrupt):                            # a VAL past 16384
        hll.registers(b"HYLL\x01" + bytes(11) + b"\x7f\xfe\x83")


def test_estimator_small_and_large():
    assert hll.count_registers(np.zeros(hll.HLL_REGISTERS, np.uint8)) == 0
    for n in (1, 2, 5, 50, 500):
        v, _ = hll.add(hll.new_sparse(), [b"el%d" % i for i in range(n)], 3000)
        assert abs(hll.count(v) - n) <= max(1, n // 50)
    v, _ = hll.add(hll.new_sparse(), [b"%d" % i for i in range(200_000)], 3000)
    assert abs(hll.count(v) - 200_000) < 200_000 * 0.03
    # crafted registers all at the cap: z = 0, Redis replies llroundl(inf) as x86 gives it
    # (checked against redis-server 7.0.15 with PFCOUNT of two keys)
    for v in (51, 63):
        full = np.full(hll.HLL_REGISTERS, v, np.uint8)
        assert hll.count_registers(full) == -(1 << 63)
    assert hll.count_registers(np.full(hll.HLL_REGISTERS, 40, np.uint8)) == 12994641697113596
    assert hll.cached_card(hll.with_card(REDIS_ABC, -(1 << 63))) is None


def test_cache_bytes():
    v = hll.with_card(REDIS_ABC, 12345)
    assert hll.cached_card(v) == 12345
    assert hll.cached_card(hll.mark_stale(v)) is None
    assert hll.mark_stale(REDIS_ABC) == REDIS_ABC
