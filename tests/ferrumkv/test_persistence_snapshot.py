"""The forkless snapshot's point-in-time property (persistence/snapshot.py, docs/persistence.md
section 2): whatever happens to the keyspace between the cut and the end of the walk --
writes, in-place mutations, deletes, lazy and active expiry, renames, evictions, flushes,
SWAPDB, new keys -- the file holds exactly the keyspace as it was at the cut.

Hypothesis draws the interleavings; the walk's slices are driven by a fake clock, so each
slice serializes a random small number of keys.  The file is read back with the loader.
"""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings, strategies as st

from ferrumkv_py import lzf
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.commands.introspection import value_encoding
from ferrumkv_py.config import Config
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.persistence.rdbfile import (OP_EOF, Loader, header, install, key_record)
from ferrumkv_py.persistence.snapshot import Snapshot
from ferrumkv_py.values import RHash, RList, RSet
from ferrumkv_py.zset import ZSet

DBS = 3
KEYS = [b"k%d" % i for i in range(12)]
VIEW = types.SimpleNamespace(server=types.SimpleNamespace(config=Config()))


def record(db, s):
    v = db.vals[s]
    enc = value_encoding(VIEW, v).decode() if v.__class__ not in (bytes, RList) else ""
    return key_record(db.keys[s], v, enc, db.exp[s])


def canon(value):
    if value.__class__ is bytes:
        return value
    if value.__class__ is RList:
        return ("list", tuple(value))
    if value.__class__ is RHash:
        return ("hash", tuple(sorted(value.items())))
    if value.__class__ is RSet:
        return ("set", tuple(sorted(value)))
    return ("zset", tuple(sorted(value.scores.items())))


def state(ks) -> list:
    """Every database as {key: (value, deadline)}, keys past their deadline included (the
    file holds what the tables hold at the cut)."""
    return [{k: (canon(db.vals[s]), db.exp[s]) for k, s in db.items()} for db in ks.dbs]


def make_value(kind: int, n: int):
    if kind == 0:
        return b"v%d" % n if n % 3 else b"%d" % n
    if kind == 1:
        return RList([b"e%d" % i for i in range(n + 1)])
    if kind == 2:
        h = RHash()
        for i in range(n + 1):
            h[b"f%d" % i] = b"%d" % i
        return h
    if kind == 3:
        return RSet([b"%d" % i for i in range(n + 1)] if n % 2 else
                    [b"m%d" % i for i in range(n + 1)])
    z = ZSet()
    for i in range(n + 1):
        z.insert(b"z%d" % i, float(i) / 2)
    return z


def fill(ks, data):
    for db_id, key, kind, n, ttl in data:
        db = ks.dbs[db_id]
        if db.find(key) is not None:
            continue
        v = make_value(kind, n)
        if v.__class__ is not bytes:
            from ferrumkv_py import memory
            v.mem = memory.recount(v)
        s = db.add(key, v)
        if ttl:
            db.set_expire(s, ks.now_ms + ttl)


def mutate(ks, db, key, n):
    """An in-place change as the commands make it: lookup_write (touch: the hook), then the
    value changes under the slot."""
    s = db.lookup_write(key)
    if s is None:
        return
    v = db.vals[s]
    if v.__class__ is bytes:
        db.set_value(s, v + b"+")
    elif v.__class__ is RList:
        v.append(b"new%d" % n)
        db.grow(s, 1)
    elif v.__class__ is RHash:
        v[b"f0"] = b"changed"
        db.grow(s, 0)
    elif v.__class__ is RSet:
        v.add(b"added%d" % n)
        db.grow(s, 1)
    else:
        v.insert(b"zz%d" % n, 99.0) if b"zz%d" % n not in v.scores else None
        db.grow(s, 0)


def apply(ks, op, snap):
    kind, db_id, key, n = op
    db = ks.dbs[db_id]
    if kind == "set":
        db.set(key, b"new%d" % n)
    elif kind == "mutate":
        mutate(ks, db, key, n)
    elif kind == "del":
        db.delete(key, lazy=bool(n % 2))
    elif kind == "expire":
        s = db.find(key)
        if s is not None:
            db.set_expire(s, ks.now_ms + 1 + n)
    elif kind == "persist":
        s = db.find(key)
        if s is not None:
            db.persist(s)
    elif kind == "time":
        ks.clock.advance(n * 10)
        ks.refresh_time()
        db.lookup_write(key)                      # lazy expiry, if due
    elif kind == "active":
        s = db.find(key)
        if s is not None and db.exp[s]:
            db._expire_slot(s)
    elif kind == "rename":
        s = db.find(key)
        new = b"r%d" % n
        if s is not None and db.find(new) is None:
            db.rename(s, new)
    elif kind == "evict":
        slots = [s for _, s in list(db.items())[:1 + n % 3]]
        db.unlink_many(slots, len(slots))
    elif kind == "flushdb":
        db.clear(lazy=bool(n % 2))
    elif kind == "flushall":
        ks.flushall(lazy=bool(n % 2))
    elif kind == "swapdb":
        other = ks.dbs[(db_id + 1) % DBS]
        db.swap_contents(other)
    elif kind == "move":
        s = db.find(key)
        dst = ks.dbs[(db_id + 1) % DBS]
        if s is not None and dst.find(key) is None:
            db.move_to(s, dst)
    elif kind == "step":
        snap.step(n)


OPS = st.tuples(
    st.sampled_from(["set", "mutate", "del", "expire", "persist", "time", "active",
                     "rename", "evict", "flushdb", "flushall", "swapdb", "move",
                     "step", "step", "step", "step"]),
    st.integers(0, DBS - 1), st.sampled_from(KEYS), st.integers(0, 7))

DATA = st.lists(st.tuples(st.integers(0, DBS - 1), st.sampled_from(KEYS),
                          st.integers(0, 4), st.integers(0, 20),
                          st.sampled_from([0, 0, 5, 50, 100_000])), max_size=40)


class TickClock:
    """perf_counter_ns stand-in: each read is one tick, so ``step(n)`` walks about
    n / SLICE_KEYS_PER_CLOCK clock reads' worth of keys."""

    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 1
        return self.t


def load(data: bytes, clock):
    ks = Keyspace(DBS, clock=clock)
    loader = Loader(data, ks, 0)          # now 0: every key loads, expired or not
    while not loader.step(7):
        pass
    assert loader.stored_crc() == lzf.crc64(data[:-8])
    return ks


@settings(max_examples=250, deadline=None)
@given(DATA, st.lists(OPS, max_size=40))
def test_file_equals_keyspace_at_the_cut(data, ops):
    clock = ManualClock()
    ks = Keyspace(DBS, clock=clock)
    fill(ks, data)
    ks._check()
    at_cut = state(ks)
    out = [header([(b"redis-ver", b"7.0.15")])]
    snap = Snapshot(ks, record, out.append, clock_ns=TickClock())
    for op in ops:
        apply(ks, op, snap)
        ks._check()
        if snap.finished:
            break
    snap.run_all()
    assert ks.snapshot is None
    body = b"".join(out) + bytes((OP_EOF,))
    data_ = body + lzf.crc64(body).to_bytes(8, "little")
    got = state(load(data_, clock))
    assert got == at_cut
    assert snap.keys_processed == sum(len(d) for d in at_cut)


def test_compaction_waits_for_the_walk():
    ks = Keyspace(1, clock=ManualClock())
    db = ks.dbs[0]
    for i in range(300):
        db.add(b"k%d" % i, b"v")
    for i in range(0, 290):
        db.delete(b"k%d" % i)
    assert db.needs_compaction()
    snap = Snapshot(ks, record, lambda b: None)
    assert ks.maintain(1000) == 0               # paused: slots keep their keys
    snap.run_all()
    assert ks.maintain(1000) > 0


def test_install_swaps_in_whole_databases():
    clock = ManualClock()
    src = Keyspace(2, clock=clock)
    src.dbs[1].add(b"a", b"1")
    dst = Keyspace(2, clock=clock)
    assert install(src, dst) == 1
    assert dst.dbs[1].find(b"a") is not None and src.total_keys() == 0
    dst._check()


@pytest.mark.parametrize("lazy", [False, True])
def test_flush_and_swapdb_cost_the_command_nothing_of_the_walk(lazy):
    """FLUSHALL (sync or ASYNC) hands the tables to the walk and SWAPDB is followed by it:
    neither serializes anything inside the command; the walk then writes the cut."""
    clock = ManualClock()
    ks = Keyspace(2, clock=clock)
    for i in range(500):
        ks.dbs[0].add(b"a%d" % i, b"v")
        ks.dbs[1].add(b"b%d" % i, b"w")
    at_cut = state(ks)
    out = [header([])]
    snap = Snapshot(ks, record, out.append, clock_ns=TickClock())
    ks.dbs[0].swap_contents(ks.dbs[1])
    assert snap.keys_processed == 0
    ks.flushall(lazy=lazy)
    assert snap.keys_processed == 0 and snap.adopted_bytes > 0 and ks.used_memory == 0
    assert ks.lazyfree.pending_objects == 0      # the walk holds the tables for now
    ks.dbs[0].add(b"new", b"x")
    snap.run_all()
    assert snap.peak_extra_bytes >= snap.adopted_bytes == 0
    assert ks.lazyfree.pending_objects == 1000   # ... then lazy free has them
    while ks.lazyfree.release():                 # drain the queue slice by slice
        pass
    body = b"".join(out) + bytes((OP_EOF,))
    got = state(load(body + lzf.crc64(body).to_bytes(8, "little"), clock))
    assert got[:2] == at_cut
    ks._check()
