"""The compiled list loops (ferrumkv_py/rdb_kernels.py) against their Python references:
``build_nodes`` must make the bytes ``rdb._list_nodes_py`` makes, and ``scan`` must accept
and refuse exactly what ``rdb_blobs.lp_decode`` does, with the same entries."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrumkv_py import rdb, rdb_kernels
from ferrumkv_py.rdb_blobs import BlobError, lp_build, lp_decode, lp_entry

EDGE = [b"", b"0", b"-0", b"007", b"+1", b"-1", b"127", b"128", b"-4096", b"-4097", b"4095",
        b"4096", b"32767", b"-32768", b"-32769", b"8388607", b"-8388609", b"2147483647",
        b"-2147483649", b"9223372036854775807", b"-9223372036854775808",
        b"9223372036854775808", b"-9223372036854775809", b"1" * 20, b"9" * 19, b"-" + b"9" * 19,
        b"a", b"x" * 63, b"x" * 64, b"y" * 4095, b"y" * 4096, b"z" * 9000, b"1a", b"-"]
words = st.one_of(st.sampled_from(EDGE), st.binary(max_size=20),
                  st.integers(-(1 << 64), 1 << 64).map(lambda i: b"%d" % i))


def python_entries(blob: bytes) -> list:
    return [x if x.__class__ is bytes else b"%d" % x for x in lp_decode(blob)]


def test_compiled():
    assert rdb_kernels.COMPILED


def test_edge_words_build_and_scan_like_python():
    items = EDGE * 3
    nodes = rdb_kernels.build_nodes(items)
    assert nodes == rdb._list_nodes_py(items)
    for node in nodes:
        assert rdb_kernels.scan(node) == python_entries(node)


def test_node_split_and_large_counts():
    items = [b"%d" % (i % 100) for i in range(70_000)]     # 1-byte int entries
    nodes = rdb_kernels.build_nodes(items)
    assert nodes == rdb._list_nodes_py(items)
    assert all(len(n) <= rdb.LIST_NODE_MAX_BYTES for n in nodes)
    big = lp_build([lp_entry(b"1")] * 70_000)             # count field: 65535 = unknown
    assert big[4:6] == b"\xff\xff"
    assert rdb_kernels.scan(big) == [b"1"] * 70_000
    assert rdb_kernels.build_nodes([]) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(words, min_size=1, max_size=300))
def test_build_matches_python(items):
    assert rdb_kernels.build_nodes(items) == rdb._list_nodes_py(items)


@settings(max_examples=400, deadline=None)
@given(st.lists(words, min_size=0, max_size=20), st.integers(0, 10_000), st.integers(0, 255),
       st.sampled_from("sidn"))
def test_scan_accepts_and_refuses_like_python(items, pos, byte, op):
    blob = bytearray(lp_build([lp_entry(w) for w in items]))
    pos %= len(blob)
    if op == "s":
        blob[pos] = byte
    elif op == "i":
        blob[pos:pos] = bytes([byte])
    elif op == "d":
        del blob[pos]
    blob = bytes(blob)
    try:
        expected = python_entries(blob)
    except BlobError:
        with pytest.raises(ValueError):
            rdb_kernels.scan(blob)
    else:
        assert rdb_kernels.scan(blob) == expected


def test_scan_arrays_follow_the_header_count():
    blob = lp_build([lp_entry(b"a"), lp_entry(b"b"), lp_entry(b"c")])
    assert rdb_kernels.scan(blob) == [b"a", b"b", b"c"]
    short = blob[:4] + b"\x02\x00" + blob[6:]          # claims 2, holds 3
    with pytest.raises(ValueError):
        rdb_kernels.scan(short)
    with pytest.raises(BlobError):
        lp_decode(short)
