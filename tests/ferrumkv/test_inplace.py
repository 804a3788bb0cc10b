"""inplace.py: when a bytes value may be edited in place, and that an edit behaves like a new
value (content and hash).  The commands' side (shared values copy, WATCH, pipelines) is in
test_bitmaps.py."""

from __future__ import annotations

import sys

import pytest

from ferrumkv_py import inplace


def _fresh(n: int) -> bytes:
    return bytes(bytearray(range(256)) * (n // 256))


def test_enabled_on_cpython():
    assert inplace.ENABLED


def test_unshared_needs_exactly_the_entry_and_one_local():
    holder = [_fresh(8192)]             # plays the entry's slot
    v = holder[0]
    refs = sys.getrefcount(v)
    assert inplace.unshared(v, refs)
    other = v                           # one more holder: must copy
    refs = sys.getrefcount(v)
    assert not inplace.unshared(v, refs)
    del other
    small = [_fresh(1024)][0]
    assert not inplace.unshared(small, 3)                # below MIN_BYTES
    assert not inplace.unshared(bytearray(8192), 3)      # only exact bytes


def test_write_changes_content_and_resets_the_cached_hash():
    holder = [_fresh(8192)]
    v = holder[0]
    before = hash(v)                    # cached in the object now
    inplace.write(v, 100, b"\xff\xfe")
    assert v[100:102] == b"\xff\xfe" and holder[0] is v
    assert hash(v) == hash(bytes(bytearray(v))) != before
    with pytest.raises(IndexError):
        inplace.write(v, 8191, b"ab")
