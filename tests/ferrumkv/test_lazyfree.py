"""Lazy free (lazyfree.py): detach, reply, release by bounded slices; used_memory drops now."""

from __future__ import annotations

import redis

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.lazyfree import LAZYFREE_THRESHOLD, SLICE_ITEMS
from ferrumkv_py.values import RHash, RList, RSet

KEYS = 5000


def filled(n: int = KEYS, db: int = 0) -> Keyspace:
    ks = Keyspace(4, clock=ManualClock(1_000_000))
    d = ks.dbs[db]
    for i in range(n):
        e = d.add(b"k%d" % i, b"v" * 10)
        if i % 3 == 0:
            d.set_expire(e, 2_000_000)
    return ks


def drain(ks: Keyspace) -> int:
    """Release slice by slice (no time budget: one clock check per SLICE_ITEMS pops),
    checking the invariants after each; returns the number of slices."""
    slices = 0
    while ks.lazyfree.release(budget_ns=0):
        slices += 1
        ks._check()
    ks._check()
    return slices + 1


def test_flushall_async_detaches_and_zeroes_used_memory():
    ks = filled()
    ks.dbs[1].add(b"other", b"x")
    n = ks.flushall(lazy=True)
    assert n == KEYS + 1
    assert ks.used_memory == 0 and ks.total_keys() == 0
    assert ks.lazyfree.pending_objects == KEYS + 1
    ks._check()
    # a slice frees at most SLICE_ITEMS keys: never the whole database in one go
    ks.lazyfree.release(budget_ns=0)
    assert ks.lazyfree.pending_objects >= KEYS + 1 - 2 * SLICE_ITEMS
    assert drain(ks) > KEYS // SLICE_ITEMS - 2
    assert ks.lazyfree.pending_objects == 0
    assert ks.lazyfree.freed_objects == KEYS + 1


def test_flushdb_async_alone_drops_memory_now():
    ks = filled()
    ks.dbs[0].clear(lazy=True)
    assert ks.used_memory == 0 and not ks.dbs[0].nkeys
    drain(ks)


def test_flushdb_async_with_other_databases_charges_by_slices():
    ks = filled()
    d1 = ks.dbs[1]
    d1.add(b"stay", b"here")
    before = ks.used_memory
    stay = memory.entry_cost(b"stay", b"here")
    ks.dbs[0].clear(lazy=True)
    ks._check()                     # what is queued is still counted, exactly
    assert ks.used_memory == before
    drain(ks)
    assert ks.used_memory == stay
    assert d1.vals[d1.lookup_read(b"stay")] == b"here"


def test_new_keys_during_release_are_kept():
    ks = filled()
    ks.flushall(lazy=True)
    ks.lazyfree.release(budget_ns=0)
    ks.dbs[0].add(b"k1", b"new")
    drain(ks)
    assert ks.dbs[0].vals[ks.dbs[0].lookup_read(b"k1")] == b"new"
    assert ks.used_memory == memory.entry_cost(b"k1", b"new")


def test_unlink_big_value_is_released_by_slices():
    ks = Keyspace(1, clock=ManualClock(1_000_000))
    d = ks.dbs[0]
    for key, value in ((b"h", RHash((b"f%d" % i, b"v") for i in range(3000))),
                       (b"l", RList(b"e%d" % i for i in range(3000))),
                       (b"s", RSet(b"m%d" % i for i in range(3000)))):
        value.mem = memory.recount(value)
        d.add(key, value)
        before = ks.used_memory
        assert d.delete(key, lazy=True)
        assert ks.used_memory == before - memory.entry_cost(key, value)
        assert ks.lazyfree.pending_objects == 1
        del value
        assert drain(ks) >= 3           # 3000 elements, SLICE_ITEMS a slice
        assert ks.lazyfree.pending_objects == 0


def test_small_value_and_plain_del_are_freed_at_once():
    ks = Keyspace(1, clock=ManualClock(1_000_000))
    d = ks.dbs[0]
    small = RHash((b"f%d" % i, b"v") for i in range(LAZYFREE_THRESHOLD))
    small.mem = memory.recount(small)
    d.add(b"small", small)
    big = RList(b"e" for _ in range(1000))
    big.mem = memory.recount(big)
    d.add(b"big", big)
    assert d.delete(b"small", lazy=True) and d.delete(b"big")
    assert not ks.lazyfree.busy() and ks.used_memory == 0


def test_big_value_inside_flushed_database_gets_its_own_job():
    ks = Keyspace(1, clock=ManualClock(1_000_000))
    h = RHash((b"f%d" % i, b"v") for i in range(5000))
    h.mem = memory.recount(h)
    ks.dbs[0].add(b"h", h)
    del h
    ks.flushall(lazy=True)
    assert drain(ks) >= 5


def test_zset_unlink_by_slices(server):
    r = redis.Redis(port=server.port)
    r.zadd("z", {b"m%d" % i: i for i in range(3000)})
    r.set("s", "v")
    assert r.unlink("z", "s", "nokey") == 2
    assert r.exists("z") == 0
    info = r.info("memory")
    assert "lazyfree_pending_objects" in info and "lazyfreed_objects" in info


def test_flush_commands_e2e(server):
    r = redis.Redis(port=server.port)
    for args in (("FLUSHALL", "ASYNC"), ("FLUSHDB", "ASYNC"), ("FLUSHALL",), ("FLUSHDB", "SYNC")):
        r.mset({b"k%d" % i: b"v" for i in range(2000)})
        assert r.execute_command(*args) is True
        assert r.dbsize() == 0
        assert r.info("memory")["used_memory"] == 0
    r.config_set("lazyfree-lazy-user-flush", "yes")
    r.mset({b"k%d" % i: b"v" for i in range(2000)})

    def flush_and_look():
        c = next(iter(server.server.clients.values()))
        from ferrumkv_py.commands.admin import flushall
        flushall(c, [b"flushall"])
        return server.server.ks.lazyfree.pending_objects
    assert server.call(flush_and_look) == 2000      # queued, not freed in the command
    r.config_set("lazyfree-lazy-user-flush", "no")
    r.config_set("lazyfree-lazy-user-del", "yes")
    r.rpush("l", *range(500))

    def del_and_look():
        c = next(iter(server.server.clients.values()))
        from ferrumkv_py.commands.keys import del_
        return del_(c, [b"del", b"l"]), server.server.ks.lazyfree.pending_objects
    assert server.call(del_and_look) == (1, 1)
    for _ in range(100):
        if r.info("memory")["lazyfree_pending_objects"] == 0:
            break
    assert r.info("memory")["lazyfree_pending_objects"] == 0


def test_lazy_free_slices_leave_the_server_state_alone(server):
    """Draining a flush through the server's call_soon chain changes nothing but the
    queue: no listener added, used_memory_startup kept."""
    r = redis.Redis(port=server.port)
    before = server.call(lambda: (len(server.server.config._listeners["maxclients"]),
                                  server.server.startup_rss))
    r.mset({b"k%d" % i: b"v" for i in range(5000)})
    r.flushall(asynchronous=True)
    for _ in range(200):
        if r.info("memory")["lazyfree_pending_objects"] == 0:
            break
    after = server.call(lambda: (len(server.server.config._listeners["maxclients"]),
                                 server.server.startup_rss))
    assert after == before
    assert r.info("memory")["lazyfreed_objects"] >= 5000


def test_flush_async_releases_the_index_by_slices_too():
    """The index dicts hold the only reference to each key's slot number (an int object
    per key): FLUSHDB ASYNC queues them with the slots instead of dropping them whole
    inside the command (55 ms at 1M keys before)."""
    import sys
    ks = filled()
    db = ks.dbs[0]
    old = [d for d in db.shards if d]
    slot_int = db.find(b"k4999")
    refs = sys.getrefcount(slot_int)
    db.clear(lazy=True)
    assert sum(map(len, old)) == KEYS               # still whole: the command freed none
    assert sys.getrefcount(slot_int) == refs
    assert drain(ks) > 1
    assert not any(old)                             # released, a slice at a time
    assert ks.lazyfree.pending_objects == 0 and ks.lazyfree.freed_objects == KEYS
