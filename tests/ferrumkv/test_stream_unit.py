"""stream.py on its own: the node layout, ranges, deletion, trimming and the lag accounting
against a naive model (a sorted list of live entries), with ``Stream._check`` after every
mutation; listpack entry sizes against the real encoder (rdb_blobs.lp_entry)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ferrumkv_py import memory
from ferrumkv_py.rdb_blobs import lp_entry
from ferrumkv_py.stream import (FLAG_DELETED, INVALID_ENTRIES_READ, MAX_ID, TRIM_MAXLEN,
                                TRIM_MINID, Nack, Stream, id_text, lp_size, make_id)

BYTES, ENTRIES = 4096, 100


def _add(s: Stream, model: list, i: int, fv=(b"f", b"v"), max_bytes=BYTES,
         max_entries=ENTRIES):
    s.append(i, tuple(fv), max_bytes, max_entries)
    model.append((i, tuple(fv)))
    s._check()


def test_lp_size_matches_the_encoder():
    samples = [b"", b"a", b"0", b"-1", b"127", b"128", b"-4096", b"4095", b"4096", b"32767",
               b"-32769", b"8388607", b"2147483648", b"9223372036854775807",
               b"9223372036854775808", b"01", b"+1", b"x" * 63, b"x" * 64, b"x" * 4095,
               b"x" * 4096, b"1.5", b"-"]
    for item in samples:
        assert lp_size(item) == len(lp_entry(item)), item
    for v in (0, 127, 128, -1, -4096, -4097, 70000, -(1 << 40), (1 << 63) - 1):
        assert lp_size(v) == len(lp_entry(v)), v


def test_ids_as_one_int():
    assert make_id(5, 7) == (5 << 64) | 7
    assert id_text(make_id(5, 7)) == b"5-7"
    assert id_text(MAX_ID) == b"18446744073709551615-18446744073709551615"


def test_nodes_split_by_entries_and_bytes():
    s, model = Stream(), []
    for n in range(1, 251):
        _add(s, model, make_id(n, 0))
    assert [len(node.ids) for node in s.nodes] == [100, 100, 50]
    s2, model2 = Stream(), []
    for n in range(1, 40):
        _add(s2, model2, make_id(n, 0), (b"f", b"v" * 30), max_bytes=100)
    # each entry is ~38 listpack bytes: a node reaches 100 bytes after two of them
    assert all(node.lp_bytes() < 100 + 40 for node in s2.nodes)
    assert len(s2.nodes) > 10


def test_samefields_flag_and_master_fields():
    s, model = Stream(), []
    _add(s, model, make_id(1, 0), (b"a", b"1", b"b", b"2"))
    _add(s, model, make_id(2, 0), (b"a", b"3", b"b", b"4"))
    _add(s, model, make_id(3, 0), (b"a", b"3"))
    node = s.nodes[0]
    assert node.mfields == (b"a", b"b")
    assert list(node.flags) == [2, 2, 0]


def test_delete_marks_tombstones_and_drops_empty_nodes():
    s, model = Stream(), []
    for n in range(1, 4):
        _add(s, model, make_id(n, 0))
    assert s.delete(make_id(2, 0)) and not s.delete(make_id(2, 0))
    assert s.nodes[0].flags[1] & FLAG_DELETED and s.length == 2
    s.delete(make_id(1, 0))
    s.first_id = s.first_live()
    s._check()
    s.delete(make_id(3, 0))
    s.first_id = 0
    assert s.nodes == [] and s.length == 0
    s._check()


def test_exact_trim_leaves_tombstones_approx_whole_nodes():
    s, model = Stream(), []
    for n in range(1, 251):
        _add(s, model, make_id(n, 0))
    assert s.trim(TRIM_MAXLEN, maxlen=200, approx=True) == 0     # no whole node fits
    assert s.trim(TRIM_MAXLEN, maxlen=140, approx=True) == 100
    assert len(s.nodes) == 2
    assert s.trim(TRIM_MAXLEN, maxlen=140) == 10
    assert s.nodes[0].dead == 10 and s.first_id == make_id(111, 0)
    assert s.trim(TRIM_MINID, minid=make_id(201, 0)) == 90
    assert s.first_id == make_id(201, 0) and len(s.nodes) == 1
    s._check()


def test_lag_and_read_counter():
    s, model = Stream(), []
    for n in range(1, 6):
        _add(s, model, make_id(n, 0))
    g = s.add_group(b"g", 0, INVALID_ENTRIES_READ)
    assert s.lag(g) == 5                  # 0-0 is before the first entry, no tombstones
    s.advance(g, make_id(1, 0))
    assert g.entries_read == 1 and s.lag(g) == 4
    s.delete(make_id(3, 0))
    s.max_deleted_id = make_id(3, 0)
    assert s.lag(g) is None               # a tombstone ahead of the group
    s.advance(g, make_id(2, 0))           # ... makes the counter unknown
    assert g.entries_read == INVALID_ENTRIES_READ
    s.advance(g, make_id(4, 0))
    assert g.entries_read == INVALID_ENTRIES_READ and s.lag(g) is None
    s.advance(g, make_id(5, 0))
    assert g.entries_read == 5 and s.lag(g) == 0     # at the last ID: exact again


def test_pel_bookkeeping_and_memory():
    s, model = Stream(), []
    _add(s, model, make_id(1, 0))
    g = s.add_group(b"g", 0, 0)
    alice = s.add_consumer(g, b"alice", 0)
    s.add_nack(g, make_id(1, 0), Nack(alice, 0))
    s._check()
    copy = s.copy()
    copy._check()
    assert s.drop_consumer(g, alice) == 1 and not g.pel
    s._check()
    assert s.drop_group(b"g")
    s._check()
    assert memory.recount(s) == s.mem
    assert memory.type_name(s) == "stream"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("aadtmr"), st.integers(0, 40), st.booleans()),
                max_size=120), st.integers(1, 6), st.sampled_from([60, 120, 4096]))
def test_against_a_naive_model(ops, max_entries, max_bytes):
    rnd = random.Random(len(ops))
    s, model = Stream(), []
    next_ms = 1
    for op, n, flag in ops:
        if op == "a":
            next_ms += 1 + (n % 3)
            fv = (b"f", b"v" * (n % 7)) if flag else (b"g%d" % n, b"1", b"h", b"x")
            _add(s, model, make_id(next_ms, n % 2), fv, max_bytes, max_entries)
        elif op == "d" and model:
            i = model[n % len(model)][0] if flag else make_id(n, 0)
            gone = s.delete(i)
            assert gone == any(x == i for x, _ in model)
            model[:] = [(x, fv) for x, fv in model if x != i]
            first = s.first_live()
            s.first_id = first if first is not None else 0
        elif op == "t":
            if flag:
                removed = s.trim(TRIM_MAXLEN, maxlen=n)
                keep = model[-n:] if n else []
            else:
                removed = s.trim(TRIM_MINID, minid=make_id(n, 0))
                keep = [(x, fv) for x, fv in model if x >= make_id(n, 0)]
            assert removed == len(model) - len(keep)
            model[:] = keep
        elif op == "m":                   # approximate trims keep at least the bound
            before = s.length
            s.trim(TRIM_MAXLEN, maxlen=n, approx=True, limit=rnd.choice([0, 5]))
            assert s.length >= min(n, before)
            model[:] = model[len(model) - s.length:]
        elif op == "r":
            lo, hi = sorted((make_id(n, 0), make_id(rnd.randint(0, 60), 1)))
            want = [(x, fv) for x, fv in model if lo <= x <= hi]
            assert s.range(lo, hi) == want
            assert s.range(lo, hi, rev=True) == want[::-1]
            assert s.range(lo, hi, count=2) == want[:2]
            assert s.range(lo, hi, rev=True, count=3) == want[::-1][:3]
        s._check()
        assert s.length == len(model)
        assert s.range(0, MAX_ID) == model
        for x, fv in model[:3]:
            assert s.get(x) == fv
