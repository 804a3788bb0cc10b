"""Unit tests of keyspace.py: Database / Keyspace on a ManualClock, _check() after every
mutation, seeded stress, uniform sampling and the SCAN cursor guarantee."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.sample_lists import COMPACT_MIN_DEAD, SCAN_REMAP_HISTORY
from ferrumkv_py.values import EXP_PERSISTED, TOMBSTONE, RList, index_span


@pytest.fixture
def ks():
    return Keyspace(databases=4, clock=ManualClock(), rng=random.Random(1234))


def k(i: int) -> bytes:
    return b"key:%d" % i


def test_add_set_delete_memory_and_check(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    ks._check()
    assert ks.used_memory == memory.entry_cost(b"a", b"1")
    db.set(b"a", b"longer value")
    ks._check()
    assert db.lookup_read(b"a") is e and e.value == b"longer value"
    db.set(b"b", b"x")
    ks._check()
    assert db.delete(b"a") and not db.delete(b"a")
    ks._check()
    assert ks.used_memory == memory.entry_cost(b"b", b"x")
    db.clear()
    ks._check()
    assert ks.used_memory == 0 and len(db) == 0


def test_lookup_stats_and_touch(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    created = e.lru
    ks.clock.advance(5000)
    ks.refresh_time()
    assert db.lookup_notouch(b"a", stats=True) is e
    assert (ks.hits, ks.misses) == (1, 0) and e.lru == created
    assert db.lookup_notouch(b"nope", stats=True) is None and ks.misses == 1
    assert db.lookup_write(b"a") is e and e.lru == ks.now_ms
    assert (ks.hits, ks.misses) == (1, 1)
    ks.clock.advance(1000)
    ks.refresh_time()
    assert db.lookup_read(b"a") is e and e.lru == ks.now_ms and ks.hits == 2
    assert db.lookup_read(b"zz") is None and ks.misses == 2


def test_lazy_expiry_is_strict_and_counted(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    db.set_expire(e, ks.now_ms + 100)
    ks._check()
    ks.clock.advance(100)
    ks.refresh_time()
    assert db.lookup_read(b"a") is e          # deadline == now: still alive (now > when)
    ks.clock.advance(1)
    ks.refresh_time()
    assert db.lookup_read(b"a") is None
    assert ks.expired_keys == 1 and len(db) == 0 and db.volatile == 0
    ks._check()


def test_set_drops_or_keeps_ttl(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    db.set_expire(e, ks.now_ms + 1000)
    db.set(b"a", b"2", keep_ttl=True)
    ks._check()
    assert e.exp == ks.now_ms + 1000 and db.volatile == 1
    db.set(b"a", b"3")
    ks._check()
    assert e.exp == EXP_PERSISTED and db.volatile == 0
    db.set_expire(e, ks.now_ms + 5)          # back in the volatile list, not appended twice
    ks._check()
    assert len(db.vlist) == 1 and db.volatile == 1


def test_set_over_expired_key_counts_expiry(ks):
    db = ks.dbs[0]
    old = db.add(b"a", b"1")
    db.set_expire(old, ks.now_ms + 1)
    ks.clock.advance(2)
    ks.refresh_time()
    new = db.set(b"a", b"2")
    ks._check()
    assert new is not old and ks.expired_keys == 1 and new.exp == 0


def test_rename_move_keep_metadata(ks):
    db, other = ks.dbs[0], ks.dbs[1]
    e = db.add(b"a", b"value")
    db.set_expire(e, ks.now_ms + 500)
    e.lfu = 42
    lru = e.lru
    ks.clock.advance(10)
    ks.refresh_time()
    db.rename(e, b"a-much-longer-name")
    ks._check()
    assert db.data[b"a-much-longer-name"] is e and b"a" not in db.data
    ne = db.move_to(e, other)
    ks._check()
    assert not db.data and other.data[b"a-much-longer-name"] is ne
    assert (ne.exp, ne.lfu, ne.lru) == (ks.now_ms - 10 + 500, 42, lru)
    assert other.volatile == 1 and db.volatile == 0


def test_container_grow_and_delete(ks):
    db = ks.dbs[0]
    lst = RList([b"x"])
    lst.mem = memory.CONTAINER_BASE["list"] + memory.list_elem_cost(b"x")
    e = db.add(b"l", lst)
    ks._check()
    e.value.append(b"yy")
    db.grow(e, memory.list_elem_cost(b"yy"))
    ks._check()
    assert memory.recount(e.value) == e.value.mem
    db.delete(b"l")
    ks._check()
    assert ks.used_memory == 0


def test_random_key_deletes_expired_and_ends(ks):
    db = ks.dbs[0]
    assert db.random_key() is None
    for i in range(50):
        e = db.add(k(i), b"v")
        db.set_expire(e, ks.now_ms + 10)
    live = db.add(b"live", b"v")
    ks.clock.advance(11)
    ks.refresh_time()
    assert db.random_key() == b"live"
    ks._check()
    db.unlink(live)
    assert db.random_key() is None and len(db) == 0
    assert ks.expired_keys == 50
    ks._check()


def test_swap_and_flushall(ks):
    a, b = ks.dbs[0], ks.dbs[1]
    a.add(b"x", b"1")
    b.add(b"y", b"2")
    a.swap_contents(b)
    ks._check()
    assert list(a.data) == [b"y"] and list(b.data) == [b"x"]
    assert ks.flushall() == 2
    ks._check()
    assert ks.used_memory == 0


# ---- sampling ----

def test_sampling_is_uniform_not_fifo(ks):
    """Chi-square over 20 keys with 40000 draws: expected 2000 each.  With 19 degrees of
    freedom the 99.999th percentile is about 51; the seeded bound 60 cannot flake."""
    db = ks.dbs[0]
    n = 20
    for i in range(n):
        db.add(k(i), b"v")
    for i in range(0, n, 3):            # some dead slots in the array too
        db.delete(k(i))
        db.add(k(i), b"v")
    draws = Counter(e.key for _ in range(4000) for e in db.sample(10))
    expected = 40000 / n
    chi2 = sum((draws[k(i)] - expected) ** 2 / expected for i in range(n))
    assert set(draws) == {k(i) for i in range(n)}
    assert chi2 < 60, chi2
    first_keys = {k(i) for i in range(5)}
    assert not all(e.key in first_keys for e in db.sample(5))


def test_volatile_sampling_only_returns_ttl_keys(ks):
    db = ks.dbs[0]
    for i in range(100):
        e = db.add(k(i), b"v")
        if i % 4 == 0:
            db.set_expire(e, ks.now_ms + 1000)
    for i in range(0, 100, 8):
        db.persist(db.data[k(i)])
    ks._check()
    got = db.sample(200, volatile=True)
    assert got and all(e.exp > 0 for e in got)
    assert {e.key for e in got} <= {k(i) for i in range(4, 100, 8)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_stress_keeps_invariants(seed):
    """Random add/set/delete/expire/persist/rename/sample/clock steps against a dict model
    of (value, deadline); _check() after every step."""
    rng = random.Random(seed)
    ks = Keyspace(databases=2, clock=ManualClock(), rng=random.Random(seed))
    db = ks.dbs[0]
    model: dict = {}                      # key -> [value, deadline or 0]

    def alive(key):
        v = model.get(key)
        if v is not None and 0 < v[1] < ks.now_ms:
            del model[key]                # the database expires it lazily, so may we
            return None
        return v

    for _step in range(3000):
        op = rng.random()
        key = k(rng.randrange(300))
        if op < 0.35:
            v = b"x" * rng.randrange(20)
            keep = rng.random() < 0.3
            old = alive(key)
            db.set(key, v, keep_ttl=keep)
            model[key] = [v, old[1] if (old and keep) else 0]
        elif op < 0.55:
            assert db.delete(key) == (alive(key) is not None)
            model.pop(key, None)
        elif op < 0.7:
            e = db.lookup_write(key)
            assert (e is None) == (alive(key) is None)
            if e is not None:
                model[key][1] = ks.now_ms + rng.randrange(1, 50)
                db.set_expire(e, model[key][1])
        elif op < 0.78:
            e = db.lookup_write(key)
            assert (e is None) == (alive(key) is None)
            if e is not None:
                assert db.persist(e) == (model[key][1] > 0)
                model[key][1] = 0
        elif op < 0.86:
            e = db.lookup_write(key)
            new = k(rng.randrange(300))
            assert (e is None) == (alive(key) is None)
            if e is not None and db.lookup_write(new) is None and new != key:
                model.pop(new, None)
                db.rename(e, new)
                model[new] = model.pop(key)
        elif op < 0.93:
            for e in db.sample(5, volatile=rng.random() < 0.5):
                assert e.value is not None and db.data[e.key] is e
        else:
            ks.clock.advance(rng.randrange(30))
            ks.refresh_time()
        ks._check()
    for key in list(model):
        e = db.lookup_notouch(key)
        v = alive(key)
        assert (e is None) == (v is None)
        if e is not None:
            assert e.value == v[0] and max(e.exp, 0) == v[1]
    ks._check()
    assert set(db.data) == set(model)


# ---- SCAN ----

def _full_scan(db, count=10, between=None):
    seen, cursor, calls = [], 0, 0
    while True:
        cursor, entries = db.scan(cursor, count)
        seen += [e.key for e in entries]
        calls += 1
        if between:
            between(calls)
        db._check()
        if cursor == 0:
            return seen, calls


def test_scan_returns_every_key_once_when_quiet(ks):
    db = ks.dbs[0]
    for i in range(1000):
        db.add(k(i), b"v")
    seen, calls = _full_scan(db, count=10)
    assert sorted(seen) == sorted(db.data) and calls == 100
    for i in range(0, 1000, 2):
        db.delete(k(i))
    seen, _ = _full_scan(db, count=7)
    assert sorted(seen) == sorted(db.data)


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_scan_guarantee_under_churn(seed):
    """Keys present for the whole scan are all returned even while others are added and
    deleted fast enough to force many alist compactions mid-scan."""
    rng = random.Random(seed)
    ks = Keyspace(databases=1, clock=ManualClock(), rng=random.Random(seed))
    db = ks.dbs[0]
    stable = {b"stable:%d" % i for i in range(400)}
    for key in stable:
        db.add(key, b"v")
    churn = [k(i) for i in range(2000)]   # live churn keys
    for key in churn:
        db.add(key, b"v")
    gens = db.agen
    counter = [2000]

    def mutate(_calls):
        for _ in range(60):
            if rng.random() < 0.7 and churn:
                j = rng.randrange(len(churn))
                churn[j], churn[-1] = churn[-1], churn[j]
                assert db.delete(churn.pop())
            else:
                key = k(counter[0])
                counter[0] += 1
                churn.append(key)
                db.add(key, b"v")

    seen, _ = _full_scan(db, count=5, between=mutate)
    assert stable <= set(seen)
    assert db.agen > gens, "the test must exercise compactions"


@pytest.mark.parametrize("volatile", [False, True])
def test_dead_slots_found_by_sampling_are_reused(volatile):
    """Eviction-like churn (add one key, sample, delete one sampled key): the draws turn dead
    slots into tombstones on the free stack and new keys take them, so the sample list settles
    well below the half-dead point that compaction waits for, and never compacts.  (Under
    volatile sampling the alist is not sampled, so it still compacts as before.)"""
    ks = Keyspace(databases=1, clock=ManualClock(), rng=random.Random(5))
    db = ks.dbs[0]
    n = 2000
    for i in range(n):
        e = db.add(k(i), b"v")
        if volatile:
            db.set_expire(e, 10**12)
    gens = db.agen
    lst_len = []
    for i in range(n, n + 20 * n):
        e = db.add(k(i), b"v")
        if volatile:
            db.set_expire(e, 10**12)
        got = db.sample(5, volatile=volatile)
        db.unlink(got[0])
        lst_len.append(len(db.vlist if volatile else db.alist))
    ks._check()
    assert volatile or db.agen == gens, "no compaction was needed"
    steady = max(lst_len[len(lst_len) // 2:])
    assert steady < 1.35 * n, steady          # about n / (1 - 1/6), not 2n
    free = db.vfree if volatile else db.afree
    assert all((db.vlist if volatile else db.alist)[i] is TOMBSTONE for i in free)


@pytest.mark.parametrize("seed", [3, 4])
def test_scan_guarantee_with_slot_reuse(seed):
    """New keys taking freed slots (anywhere in the list) never hide a key that is present
    for the whole scan."""
    rng = random.Random(seed)
    ks = Keyspace(databases=1, clock=ManualClock(), rng=random.Random(seed))
    db = ks.dbs[0]
    stable = {b"stable:%d" % i for i in range(300)}
    churn = []
    for i in range(1500):
        key = k(i)
        churn.append(key)
        db.add(key, b"v")
    for key in stable:
        db.add(key, b"v")
    counter = [1500]

    def mutate(_calls):
        for _ in range(40):
            j = rng.randrange(len(churn))
            churn[j], churn[-1] = churn[-1], churn[j]
            assert db.delete(churn.pop())
            db.sample(5)                      # finds dead slots, frees them
            key = k(counter[0])
            counter[0] += 1
            churn.append(key)
            db.add(key, b"v")                 # likely into a freed slot

    seen, _ = _full_scan(db, count=5, between=mutate)
    assert stable <= set(seen)
    assert counter[0] > 1500 + 1000


def test_scan_cursor_survives_compaction_and_clear(ks):
    db = ks.dbs[0]
    for i in range(200):
        db.add(k(i), b"v")
    cursor, first = db.scan(0, 50)         # the walk goes from the newest key down
    assert {e.key for e in first} == {k(i) for i in range(150, 200)}
    for i in range(40, 150):               # most of what comes next is deleted
        db.delete(k(i))
    assert db.agen == 1                    # one compaction happened
    rest, cursor2 = [], cursor
    while True:
        cursor2, entries = db.scan(cursor2, 50)
        rest += [e.key for e in entries]
        if cursor2 == 0:
            break
    assert {k(i) for i in range(40)} <= set(rest)
    assert len(rest) <= 40 + 16            # at most one checkpoint step returned again
    cursor, _ = db.scan(0, 10)
    db.clear()
    db.add(b"fresh", b"v")
    cursor, entries = db.scan(cursor, 10)   # a cursor from before FLUSHDB just ends
    assert entries == [] and cursor == 0
    cursor, entries = db.scan(0, 10)
    assert [e.key for e in entries] == [b"fresh"] and cursor == 0


def test_scan_old_cursor_restarts_instead_of_skipping(ks):
    db = ks.dbs[0]
    for i in range(100):
        db.add(k(i), b"v")
    cursor, _ = db.scan(0, 90)             # 10 keys left to walk
    for _round in range(SCAN_REMAP_HISTORY + 1):
        for i in range(COMPACT_MIN_DEAD * 2):
            db.add(b"tmp", b"v")
            db.delete(b"tmp")
    _, entries = db.scan(cursor, 1000)
    assert {e.key for e in entries} == {k(i) for i in range(100)}


@pytest.mark.parametrize("n,start,end,span", [
    (5, 1, -2, (1, 4)), (5, -100, 2, (0, 3)), (5, 3, 1, (0, 0)), (5, 0, -1, (0, 5)),
    (5, 5, 9, (0, 0)), (5, -1, 100, (4, 5)), (0, 0, -1, (0, 0)), (5, -6, -6, (0, 0)),
])
def test_index_span(n, start, end, span):
    """Redis's inclusive index rule (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK): negative
    indexes count from the end, the range is clamped, an empty one is (0, 0)."""
    assert index_span(n, start, end) == span
