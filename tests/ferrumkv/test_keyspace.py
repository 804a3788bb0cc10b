"""Unit tests of keyspace.py and slots.py: Database / Keyspace on a ManualClock, _check()
after every mutation, seeded stress, uniform sampling, compaction and the SCAN guarantee."""

from __future__ import annotations

import gc
import random
import threading
from collections import Counter

import pytest

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.slots import COMPACT_MIN_HOLES, FREE_SLOT, GROW_FRACTION, GROW_MIN_SLOTS
from ferrumkv_py.values import RList, index_span


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
    assert db.lookup_read(b"a") == e and db.vals[e] == b"longer value"
    db.set(b"b", b"x")
    ks._check()
    assert db.delete(b"a") and not db.delete(b"a")
    ks._check()
    assert db.keys[e] is None and db.lru[e] == FREE_SLOT
    assert db.holes == len(db.keys) - len(db) == GROW_MIN_SLOTS - 1
    assert ks.used_memory == memory.entry_cost(b"b", b"x")
    assert db.add(b"c", b"z") == e            # the free slot is taken first
    ks._check()
    db.clear()
    ks._check()
    assert ks.used_memory == 0 and len(db) == 0


def test_keyspace_holds_no_gc_tracked_object_per_key(ks):
    """The point of the slot layout: keys, string values and metadata are not tracked by
    the cyclic collector, so full collections do not walk the keyspace."""
    for t in threading.enumerate():     # an earlier test's server may be importing numba
        if t.name == "resp_scan-load":  # (resp_scan._load): its objects are not ours
            t.join()
    db = ks.dbs[0]
    db.add(b"first", b"v")
    gc.collect()
    before = len(gc.get_objects())
    for i in range(1000):
        s = db.add(k(i), b"v%d" % i)
        if i % 2:
            db.set_expire(s, ks.now_ms + 10_000)
    assert len(gc.get_objects()) - before < 10          # not one per key
    assert not any(gc.is_tracked(shard) for shard in db.shards)
    assert not any(gc.is_tracked(x) for x in db.keys + db.vals)


def test_lookup_stats_and_touch(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    created = db.lru[e]
    ks.clock.advance(5000)
    ks.refresh_time()
    assert db.lookup_notouch(b"a", stats=True) == e
    assert (ks.hits, ks.misses) == (1, 0) and db.lru[e] == created
    assert db.lookup_notouch(b"nope", stats=True) is None and ks.misses == 1
    assert db.lookup_write(b"a") == e and db.lru[e] == ks.now_ms
    assert (ks.hits, ks.misses) == (1, 1)
    ks.clock.advance(1000)
    ks.refresh_time()
    assert db.lookup_read(b"a") == e and db.lru[e] == ks.now_ms and ks.hits == 2
    assert db.lookup_read(b"zz") is None and ks.misses == 2
    assert db.peek(b"a") == e and db.peek(b"zz") is None


def test_touch_is_the_one_access_rule(ks):
    """touch() sets the LRU clock and, when a policy keeps it, runs the LFU hook on the
    counter and the previous access time (the lookups and fast paths all call it)."""
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    seen = []
    ks.lfu_touch = lambda c, last, now: seen.append((c, last, now)) or c + 3
    ks.clock.advance(7)
    ks.refresh_time()
    db.touch(e)
    assert seen == [] and db.lru[e] == ks.now_ms and db.lfu[e] == 5   # lfu off
    ks.lfu_on = True
    last = db.lru[e]
    ks.clock.advance(9)
    ks.refresh_time()
    db.touch(e)
    assert seen == [(5, last, ks.now_ms)] and db.lfu[e] == 8 and db.lru[e] == ks.now_ms


def test_lazy_expiry_is_strict_and_counted(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    db.set_expire(e, ks.now_ms + 100)
    ks._check()
    ks.clock.advance(100)
    ks.refresh_time()
    assert db.lookup_read(b"a") == e          # deadline == now: still alive (now > when)
    assert db.exp[e] == ks.now_ms             # 0 ms left
    ks.clock.advance(1)
    ks.refresh_time()
    assert db.peek(b"a") is None              # past the deadline, not yet deleted
    assert db.lookup_read(b"a") is None
    assert ks.expired_keys == 1 and len(db) == 0 and db.volatile == 0
    ks._check()


def test_set_drops_or_keeps_ttl(ks):
    db = ks.dbs[0]
    e = db.add(b"a", b"1")
    db.set_expire(e, ks.now_ms + 1000)
    db.set(b"a", b"2", keep_ttl=True)
    ks._check()
    assert db.exp[e] == ks.now_ms + 1000 and db.volatile == 1
    db.set(b"a", b"3")
    ks._check()
    assert db.exp[e] == 0 and db.volatile == 0
    db.set_expire(e, ks.now_ms + 5)
    db.set_expire(e, ks.now_ms + 6)          # a new deadline, listed once
    ks._check()
    assert list(db.vslots) == [e] and db.volatile == 1


def test_set_over_expired_key_counts_expiry(ks):
    db = ks.dbs[0]
    old = db.add(b"a", b"1")
    db.set_expire(old, ks.now_ms + 1)
    ks.clock.advance(2)
    ks.refresh_time()
    new = db.set(b"a", b"2")
    ks._check()
    assert ks.expired_keys == 1 and db.exp[new] == 0 and db.vals[new] == b"2"


def test_rename_move_keep_metadata(ks):
    db, other = ks.dbs[0], ks.dbs[1]
    e = db.add(b"a", b"value")
    db.set_expire(e, ks.now_ms + 500)
    db.set_access(e, db.lru[e], 42)
    lru = db.lru[e]
    ks.clock.advance(10)
    ks.refresh_time()
    db.rename(e, b"a-much-longer-name")
    ks._check()
    assert db.find(b"a-much-longer-name") == e and db.find(b"a") is None
    ne = other.move_to(e, other) if False else db.move_to(e, other)
    ks._check()
    assert not db.nkeys and other.find(b"a-much-longer-name") == ne
    assert (other.exp[ne], other.lfu[ne], other.lru[ne]) == (ks.now_ms - 10 + 500, 42, lru)
    assert other.volatile == 1 and db.volatile == 0


def test_container_grow_and_delete(ks):
    db = ks.dbs[0]
    lst = RList([b"x"])
    lst.mem = memory.CONTAINER_BASE["list"] + memory.list_elem_cost(b"x")
    e = db.add(b"l", lst)
    ks._check()
    db.vals[e].append(b"yy")
    db.grow(e, memory.list_elem_cost(b"yy"))
    ks._check()
    assert memory.recount(db.vals[e]) == db.vals[e].mem
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
    assert [k for k, _ in a.items()] == [b"y"] and [k for k, _ in b.items()] == [b"x"]
    assert ks.flushall() == 2
    ks._check()
    assert ks.used_memory == 0


def test_flushall_async_releases_by_slices_and_accounts(ks):
    a, b = ks.dbs[0], ks.dbs[1]
    for i in range(3000):
        s = a.add(k(i), b"v" * 10)
        if i % 3 == 0:
            a.set_expire(s, ks.now_ms + 10_000)
    b.add(b"other", b"1")
    assert a.clear(lazy=True) == 3000         # b holds keys: a's share leaves by slices
    assert len(a) == 0 and ks.lazyfree.pending_objects == 3000
    ks._check()
    assert ks.lazyfree.release(budget_ns=0)   # one slice, work remains
    ks._check()
    while ks.lazyfree.release(budget_ns=1 << 62):
        pass
    ks._check()
    assert ks.used_memory == memory.entry_cost(b"other", b"1")
    assert ks.lazyfree.pending_objects == 0 and ks.lazyfree.freed_objects == 3000


# ---- sampling ----

def test_sampling_is_uniform_not_fifo(ks):
    """Chi-square over 20 keys with 40000 draws: expected 2000 each.  With 19 degrees of
    freedom the 99.999th percentile is about 51; the seeded bound 60 cannot flake."""
    db = ks.dbs[0]
    n = 20
    for i in range(n):
        db.add(k(i), b"v")
    for i in range(0, n, 3):            # some free slots in the table too
        db.delete(k(i))
    db.add(b"extra", b"v")
    for i in range(0, n, 3):
        db.delete(b"extra") if i == 0 else None
        db.add(k(i), b"v")
    draws = Counter(db.keys[e] for _ in range(4000) for e in db.sample(10))
    expected = 40000 / n
    chi2 = sum((draws[k(i)] - expected) ** 2 / expected for i in range(n))
    assert set(draws) == {k(i) for i in range(n)}
    assert chi2 < 60, chi2
    first_keys = {k(i) for i in range(5)}
    assert not all(db.keys[e] in first_keys for e in db.sample(5))


def test_volatile_sampling_only_returns_ttl_keys(ks):
    db = ks.dbs[0]
    for i in range(100):
        e = db.add(k(i), b"v")
        if i % 4 == 0:
            db.set_expire(e, ks.now_ms + 1000)
    for i in range(0, 100, 8):
        db.persist(db.find(k(i)))
    ks._check()
    got = db.sample(200, volatile=True)
    assert got and all(db.exp[e] > 0 for e in got)
    assert {db.keys[e] for e in got} == {k(i) for i in range(4, 100, 8)}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_seeded_stress_keeps_invariants(seed):
    """Random add/set/delete/expire/persist/rename/sample/compact/clock steps against a dict
    model of (value, deadline); _check() after every step."""
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
        elif op < 0.9:
            for e in db.sample(5, volatile=rng.random() < 0.5):
                assert db.keys[e] is not None and db.find(db.keys[e]) == e
        elif op < 0.93:
            db.compact_some(rng.randrange(1, 40))
        else:
            ks.clock.advance(rng.randrange(30))
            ks.refresh_time()
        ks._check()
    for key in list(model):
        e = db.lookup_notouch(key)
        v = alive(key)
        assert (e is None) == (v is None)
        if e is not None:
            assert db.vals[e] == v[0] and db.exp[e] == v[1]
    ks._check()
    assert set(k for k, _ in db.items()) == set(model)


def test_free_slots_keep_the_table_size_under_churn(ks):
    """Eviction-like churn (add one key, delete a sampled one): new keys take the freed
    slots, so the table does not grow."""
    db = ks.dbs[0]
    n = 2000
    for i in range(n):
        db.add(k(i), b"v")
    size = len(db.keys)
    assert n < size <= n + n // GROW_FRACTION + GROW_MIN_SLOTS   # grown by chunks
    for i in range(n, n + 10 * n):
        db.add(k(i), b"v")
        db.unlink(db.sample(5)[0])
        assert len(db.keys) == size
    ks._check()
    assert db.holes == size - n and len(db) == n


def test_growth_hands_out_a_fresh_tail_without_pushing_it(ks):
    """A growth adds a chunk to every column but pushes nothing onto ``free``: new keys take
    the fresh tail in order (at 2.8M keys pushing the chunk cost 18 ms, slots.py); freed
    slots are reused first, and a compaction that truncates the tail leaves it consistent."""
    db = ks.dbs[0]
    for i in range(100):
        db.add(k(i), b"v")
    size = len(db.keys)
    assert not db.free and db.fresh == 100 and db.holes == size - 100
    assert [db.add(k(i), b"v") for i in range(100, 103)] == [100, 101, 102]
    s = db.find(k(7))
    db.unlink(s)
    assert db.add(k(999), b"v") == s                 # a freed slot before the tail
    for i in range(103, size):
        db.add(k(i), b"v")                           # the tail used up exactly ...
    assert len(db.keys) == size and db.fresh == size
    db.add(k(5000), b"v")                            # ... then one more chunk
    assert len(db.keys) > size and db.fresh == size + 1
    ks._check()
    for i in range(0, size, 2):                      # holes, then a compaction that
        db.delete(k(i))                              # truncates the top (the tail too)
    while db.compact_some(50):
        pass
    ks._check()
    for i in range(6000, 6000 + size):
        db.add(k(i), b"v")
    ks._check()


def test_growth_chunks_are_capped(ks, monkeypatch):
    from ferrumkv_py import slots
    monkeypatch.setattr(slots, "GROW_MAX_SLOTS", 40)
    db = ks.dbs[0]
    sizes = set()
    for i in range(2000):
        db.add(k(i), b"v")
        sizes.add(len(db.keys))
    steps = sorted(sizes)
    assert max(b - a for a, b in zip(steps, steps[1:])) == 40    # 1/8 of 2000 would be 250
    ks._check()


def test_large_blocks_are_mmapped_where_glibc_allows():
    import platform
    from ferrumkv_py.malloc_tuning import mmap_large_blocks
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert mmap_large_blocks() is True


def test_compaction_moves_keys_down_and_truncates(ks):
    db = ks.dbs[0]
    n = 1000
    for i in range(n):
        s = db.add(k(i), b"v")
        if i % 10 == 0:
            db.set_expire(s, ks.now_ms + 10_000)
    for i in range(n):
        if i % 5:
            db.delete(k(i))                # 80% holes
    assert db.needs_compaction()
    kept = {key: (db.vals[s], db.exp[s], db.lru[s]) for key, s in db.items()}
    moved = 0
    while db.needs_compaction():
        m = db.compact_some(37)            # bounded steps, as the cron takes them
        assert 0 < m <= 37
        moved += m
        ks._check()
    assert db.holes * 2 <= len(db.keys) + GROW_MIN_SLOTS and not db.needs_compaction()
    assert {key: (db.vals[s], db.exp[s], db.lru[s]) for key, s in db.items()} == kept
    assert ks.maintain(10) == 0            # nothing left to do
    for i in range(0, n, 5):
        db.delete(k(i))
    ks._check()
    assert len(db) == 0
    ks.maintain(10_000)
    assert len(db.keys) == 0 and db.holes == 0


def test_maintain_respects_its_budget(ks):
    db = ks.dbs[0]
    for i in range(5000):
        db.add(k(i), b"v")
    for i in range(0, 5000):
        if i % 4:
            db.delete(k(i))
    assert ks.maintain(100) == 100 and ks.slot_moves == 100
    ks._check()


# ---- SCAN ----

def _full_scan(db, count=10, between=None):
    seen, cursor, calls = [], 0, 0
    while True:
        cursor, slots = db.scan(cursor, count)
        seen += [db.keys[s] for s in slots]
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
    assert sorted(seen) == sorted(k for k, _ in db.items()) and calls == 100
    for i in range(0, 1000, 2):
        db.delete(k(i))
    seen, _ = _full_scan(db, count=7)
    assert sorted(seen) == sorted(k for k, _ in db.items())


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_scan_guarantee_under_churn_and_compaction(seed):
    """Keys present for the whole scan are all returned while others are added, deleted
    (new keys taking free slots anywhere) and the table is compacted between calls."""
    rng = random.Random(seed)
    ks = Keyspace(databases=1, clock=ManualClock(), rng=random.Random(seed))
    db = ks.dbs[0]
    stable = {b"stable:%d" % i for i in range(400)}
    churn = [k(i) for i in range(2000)]   # live churn keys
    for i, key in enumerate(churn):
        db.add(key, b"v")
        if i == 1000:
            for s_key in stable:           # stable keys in the middle of the table
                db.add(s_key, b"v")
    counter = [2000]
    moves = [0]

    def mutate(_calls):
        for _ in range(60):
            if rng.random() < 0.75 and churn:
                j = rng.randrange(len(churn))
                churn[j], churn[-1] = churn[-1], churn[j]
                assert db.delete(churn.pop())
            else:
                key = k(counter[0])
                counter[0] += 1
                churn.append(key)
                db.add(key, b"v")
        moves[0] += ks.maintain(rng.randrange(0, 200))

    seen, _ = _full_scan(db, count=5, between=mutate)
    assert stable <= set(seen)
    assert moves[0] > 0, "the test must exercise compaction"


def test_scan_cursor_beyond_a_truncated_table_restarts_at_its_end(ks):
    db = ks.dbs[0]
    for i in range(200):
        db.add(k(i), b"v")
    cursor, first = db.scan(0, 50)         # the walk goes from the newest slot down
    assert {db.keys[s] for s in first} == {k(i) for i in range(150, 200)}
    for i in range(40, 200):
        db.delete(k(i))
    ks.maintain(10_000)                    # truncates the table below the cursor
    assert len(db.keys) < cursor
    rest = []
    while True:
        cursor, slots = db.scan(cursor, 50)
        rest += [db.keys[s] for s in slots]
        if cursor == 0:
            break
    assert set(rest) == {k(i) for i in range(40)}
    db.clear()
    db.add(b"fresh", b"v")
    cursor, slots = db.scan(0, 10)
    assert [db.keys[s] for s in slots] == [b"fresh"] and cursor == 0


@pytest.mark.parametrize("n,start,end,span", [
    (5, 1, -2, (1, 4)), (5, -100, 2, (0, 3)), (5, 3, 1, (0, 0)), (5, 0, -1, (0, 5)),
    (5, 5, 9, (0, 0)), (5, -1, 100, (4, 5)), (0, 0, -1, (0, 0)), (5, -6, -6, (0, 0)),
])
def test_index_span(n, start, end, span):
    """Redis's inclusive index rule (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK): negative
    indexes count from the end, the range is clamped, an empty one is (0, 0)."""
    assert index_span(n, start, end) == span
