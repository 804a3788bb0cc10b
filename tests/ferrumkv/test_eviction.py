"""maxmemory enforcement (eviction/__init__.py): every policy keeps the data set under the
limit, OOM rules, volatile rules, sampling quality, time budget, and a live server.

The stress tests run in-process (Server objects without a socket, a ManualClock, a seeded
rng) and call ``make_room()`` before each write exactly as the dispatcher does before a
denyoom command.
"""

from __future__ import annotations

import random
import time

import pytest

from ferrumkv_py import memory
from ferrumkv_py.clock import ManualClock
from ferrumkv_py.config import Config
from ferrumkv_py.eviction import (EVICTION_CATCHUP_BUDGET_US, EVICTION_HEADROOM_MAX_BYTES,
                                  EVICTION_HEADROOM_SHIFT, tenacity_budget_us)
from ferrumkv_py.server import Server

from .inproc_util import NullTransport
from .score_reference import lfu_scores, lru_scores, ttl_scores

OOM = "OOM command not allowed when used memory > 'maxmemory'."
EVICTING = ("allkeys-lru", "volatile-lru", "allkeys-lfu", "volatile-lfu", "allkeys-random",
            "volatile-random", "volatile-ttl", "allkeys-ahe", "volatile-ahe")
VOLATILE = tuple(p for p in EVICTING if p.startswith("volatile-"))


def inproc(policy="allkeys-lru", seed=1, clock=None, **cfg):
    config = Config()
    config.set("maxmemory-policy", policy)
    for k, v in cfg.items():
        config.set(k.replace("_", "-"), str(v))
    clock = clock or ManualClock()
    return Server(config, clock=clock, rng=random.Random(seed)), clock


def fill(db, n, size=100, ttl_ms=None, prefix=b"k", clock=None):
    """Add n keys; with a clock, each key is 1 ms younger than the previous one."""
    ks = db.ks
    for i in range(n):
        if clock is not None:
            clock.advance(1)
            ks.refresh_time()
        e = db.set(b"%s%d" % (prefix, i), b"x" * size)
        if ttl_ms is not None:
            db.set_expire(e, ks.now_ms + ttl_ms)


def set_limit(srv, limit):
    srv.config.set("maxmemory", str(limit))


# ---- the invariant, with hundreds of thousands of keys ----

def test_every_write_leaves_room_under_maxmemory():
    """252k writes of 10 B .. 4 KB values over 2 DBs, most with TTLs, reads in between.

    The policy changes at runtime every 28k writes, through all nine evicting policies, so
    each works on a data set the previous one left behind.  Under volatile policies only a
    small set of keys is written without TTL (they could not be evicted).
    """
    srv, clock = inproc("allkeys-lru", seed=11)
    ks, ev = srv.ks, srv.evictor
    limit = 3_000_000
    set_limit(srv, limit)
    rng = random.Random(42)
    sizes = (10, 10, 100, 100, 300, 1000, 4000)
    writes = 0
    evicted_by = {}
    for policy in EVICTING:
        srv.config.set("maxmemory-policy", policy)
        vol = policy.startswith("volatile-")
        p_persistent = 0.02 if vol else 0.4
        before = ks.evicted_keys
        done = 0
        while done < 28_000:
            if done % 16 == 0:
                clock.advance(rng.randrange(0, 50))
                ks.refresh_time()
            db = ks.dbs[0 if rng.random() < 0.85 else 3]
            if rng.random() < 0.25:
                db.lookup_read(b"k%d" % rng.randrange(300_000))
                continue
            assert ev.make_room(), (policy, done)       # as the dispatcher does
            assert ks.used_memory <= limit, (policy, done, ks.used_memory)
            persistent = rng.random() < p_persistent
            key = b"p%d" % rng.randrange(200) if persistent else \
                b"k%d" % rng.randrange(300_000)
            e = db.set(key, b"v" * rng.choice(sizes))
            if not persistent:
                db.set_expire(e, ks.now_ms + rng.randrange(1_000, 3_600_000))
            cost = memory.entry_cost(key, db.vals[e]) + (memory.EXPIRE_COST if db.exp[e] else 0)
            assert ks.used_memory <= limit + cost       # only this write can overshoot
            done += 1
        writes += done
        evicted_by[policy] = ks.evicted_keys - before
        ks._check()
        ev.pool._check()
    ev.make_room()
    assert ks.used_memory <= limit
    assert writes == 9 * 28_000
    assert all(n > 3000 for n in evicted_by.values()), evicted_by
    ks._check()


# ---- OOM rules ----

def test_noeviction_refuses_and_loses_nothing():
    srv, _ = inproc("noeviction")
    db = srv.ks.dbs[0]
    fill(db, 1000)
    set_limit(srv, srv.ks.used_memory - 1)
    before = {k: db.vals[e] for k, e in db.items()}
    assert srv.evictor.make_room() is False
    assert srv.ks.evicted_keys == 0
    assert {k: db.vals[e] for k, e in db.items()} == before


@pytest.mark.parametrize("policy", VOLATILE)
def test_volatile_policies_refuse_without_ttl_keys(policy):
    srv, _ = inproc(policy)
    db = srv.ks.dbs[0]
    fill(db, 500)
    set_limit(srv, srv.ks.used_memory // 2)
    assert srv.evictor.make_room() is False
    assert len(db) == 500 and srv.ks.evicted_keys == 0


@pytest.mark.parametrize("policy", VOLATILE)
def test_volatile_policies_never_evict_keys_without_ttl(policy):
    srv, clock = inproc(policy)
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 300, prefix=b"keep", clock=clock)
    fill(db, 2000, ttl_ms=3_600_000, prefix=b"vol", clock=clock)
    per_key = memory.entry_cost(b"vol1000", b"x" * 100) + memory.EXPIRE_COST
    set_limit(srv, ks.used_memory - 1500 * per_key)
    assert srv.evictor.make_room()
    assert all(db.find(b"keep%d" % i) is not None for i in range(300))
    # an AHE controller's own memory (duel ring, probation ghost) counts against maxmemory
    ctl_mem = srv.evictor.ctl_mem() if srv.evictor.ctl_mem is not None else 0
    assert 1490 <= ks.evicted_keys <= 1520 + ctl_mem // per_key + 1
    # once the TTL keys are gone, nothing more can be freed
    set_limit(srv, 1)
    assert srv.evictor.make_room() is False
    assert db.volatile == 0 and len(db) == 300
    ks._check()


# ---- which keys go ----

def test_lru_sampling_is_not_fifo():
    """Touch the oldest keys; the eviction that follows must spare them.

    A sampler taking the first keys in dict (insertion) order would evict exactly those.
    """
    srv, clock = inproc("allkeys-lru")
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 10_000, clock=clock)
    clock.advance(1000)
    ks.refresh_time()
    for i in range(2000):                                # the 2000 oldest become recent
        db.lookup_read(b"k%d" % i)
    set_limit(srv, ks.used_memory * 7 // 10)
    assert srv.evictor.make_room()
    survivors_old = sum(1 for i in range(2000) if db.find(b"k%d" % i) is not None)
    survivors_rest = sum(1 for i in range(2000, 10_000) if db.find(b"k%d" % i) is not None)
    assert survivors_old >= 1980, survivors_old
    assert survivors_rest <= 5050
    ks._check()


def test_pool_brings_lru_close_to_exact_lru():
    """After evicting 30% of 20k keys, almost all victims are among the 45% oldest."""
    srv, clock = inproc("allkeys-lru")
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 20_000, clock=clock)
    set_limit(srv, ks.used_memory * 7 // 10)
    assert srv.evictor.make_room()
    evicted = [i for i in range(20_000) if db.find(b"k%d" % i) is None]
    assert len(evicted) >= 5900
    old = sum(1 for i in evicted if i < 9000)
    assert old / len(evicted) > 0.9, old / len(evicted)


def test_lfu_keeps_frequent_keys():
    srv, clock = inproc("allkeys-lfu", lfu_log_factor=1)
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 5000)
    for _ in range(30):
        for i in range(0, 5000, 10):                     # every 10th key is hot
            db.lookup_read(b"k%d" % i)
    set_limit(srv, ks.used_memory // 2)
    assert srv.evictor.make_room()
    hot = sum(1 for i in range(0, 5000, 10) if db.find(b"k%d" % i) is not None)
    assert hot >= 495, hot


def test_volatile_ttl_evicts_soonest_deadlines_first():
    srv, clock = inproc("volatile-ttl")
    ks = srv.ks
    db = ks.dbs[0]
    order = list(range(4000))
    random.Random(3).shuffle(order)
    for i in order:
        e = db.set(b"k%d" % i, b"x" * 100)
        db.set_expire(e, ks.now_ms + 10_000 + i * 1000)
    set_limit(srv, ks.used_memory // 2)
    assert srv.evictor.make_room()
    evicted = [i for i in range(4000) if db.find(b"k%d" % i) is None]
    assert sum(1 for i in evicted if i < 2600) / len(evicted) > 0.9


def test_random_policy_spreads_over_old_and_new_keys():
    srv, clock = inproc("allkeys-random")
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 10_000, clock=clock)
    set_limit(srv, ks.used_memory // 2)
    assert srv.evictor.make_room()
    first = sum(1 for i in range(5000) if db.find(b"k%d" % i) is None)
    second = sum(1 for i in range(5000, 10_000) if db.find(b"k%d" % i) is None)
    assert 0.8 < first / second < 1.25, (first, second)


def test_every_database_with_keys_is_sampled():
    srv, clock = inproc("allkeys-lru")
    ks = srv.ks
    fill(ks.dbs[3], 2000, clock=clock, prefix=b"old")        # older than everything in db 0
    fill(ks.dbs[0], 2000, clock=clock, prefix=b"new")
    set_limit(srv, ks.used_memory * 3 // 4)
    assert srv.evictor.make_room()
    assert len(ks.dbs[3]) < 1200 and len(ks.dbs[0]) > 1900


def test_expired_keys_met_while_sampling_are_expired_not_evicted():
    srv, clock = inproc("volatile-lru")
    ks = srv.ks
    db = ks.dbs[0]
    fill(db, 1000, ttl_ms=1000)
    clock.advance(5000)
    ks.refresh_time()
    set_limit(srv, ks.used_memory // 2)
    assert srv.evictor.make_room()
    assert ks.evicted_keys == 0 and ks.expired_keys >= 500
    ks._check()


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-ttl", "allkeys-lfu",
                                    "allkeys-ahe"])
def test_sampler_scores_match_the_reference_scorers(policy):
    # the spec controller scores each key on its own; the adaptive one is checked in
    # test_ahe_adaptive.py
    srv, clock = inproc(policy, lfu_log_factor=0, ahe_controller="spec")
    ks, ev = srv.ks, srv.evictor
    db = ks.dbs[0]
    rng = random.Random(8)
    for i in range(12):
        clock.advance(rng.randrange(1, 200_000))
        ks.refresh_time()
        db.set(b"k%d" % i, b"v")
        for _ in range(rng.randrange(0, 40)):
            db.lookup_read(b"k%d" % i)
    clock.advance(3 * 60_000)
    now = ks.refresh_time()
    for e in list((s for _, s in db.items())):                # some within AHE's 30 s TTL horizon
        db.set_expire(e, now + rng.choice((5_000, 40_000, 3_600_000)) + rng.randrange(99))
    ref = {"allkeys-lru": lru_scores, "volatile-ttl": ttl_scores,
           "allkeys-lfu": lambda d, ents, t: lfu_scores(d, ents, t, 1),
           "allkeys-ahe": ev.controller.scores}[policy]
    ev.sampler.samples = 12
    ev.sampler.populate(db, now, policy.startswith("volatile"))
    ev.pool._check()
    assert len(ev.pool) >= 5
    for score, (dbid, key) in zip(ev.pool.scores, ev.pool.items):
        assert score == ref(db, [db.find(key)], now)[0]


def test_a_pass_frees_a_little_headroom_below_the_limit():
    srv, clock = inproc("allkeys-lru")
    ks = srv.ks
    fill(ks.dbs[0], 20_000, clock=clock)
    limit = ks.used_memory - 100_000
    headroom = min(limit >> EVICTION_HEADROOM_SHIFT, EVICTION_HEADROOM_MAX_BYTES)
    srv.maxmemory = limit
    assert srv.evictor.make_room()
    one_key = memory.entry_cost(b"k10000", b"x" * 100)
    assert limit - headroom - one_key < ks.used_memory <= limit - headroom
    evicted = ks.evicted_keys
    for i in range(headroom // one_key):           # the next writes find room
        srv.evictor.make_room()
        ks.dbs[0].set(b"new%d" % i, b"x" * 100)
        assert ks.used_memory <= limit
    assert ks.evicted_keys == evicted


# ---- the loop's mechanics ----

class TickingClock(ManualClock):
    """monotonic() advances 1 ms per read, so any time budget runs out."""

    def monotonic(self) -> float:
        self.mono += 0.001
        return self.mono


def test_time_budget_stops_a_pass_without_refusing():
    srv, clock = inproc("allkeys-lru", clock=TickingClock())
    ks, ev = srv.ks, srv.evictor
    fill(ks.dbs[0], 5000)
    srv.maxmemory = ks.used_memory // 2     # bypass the CONFIG listener's catch-up mark
    assert ev.make_room() is True           # budget ran out: OK, still over the limit
    assert ev.lagging and ev.exceeded_count == 1
    assert ks.used_memory > srv.maxmemory
    assert ks.evicted_keys == 2 * 16        # first clock read at 16 loops, stop at 32
    for _ in range(200):                    # the cron (or writes) keep going
        if ks.used_memory <= srv.maxmemory:
            break
        ev.make_room()
    assert ks.used_memory <= srv.maxmemory and not ev.lagging


def test_tenacity_budgets_follow_redis():
    assert tenacity_budget_us(0) == 0
    assert tenacity_budget_us(10) == 500
    assert tenacity_budget_us(11) == 575
    assert tenacity_budget_us(99) > tenacity_budget_us(50) > 500
    assert tenacity_budget_us(100) is None
    assert EVICTION_CATCHUP_BUDGET_US > tenacity_budget_us(10)


def test_under_the_limit_nothing_happens():
    srv, _ = inproc("allkeys-lru")
    fill(srv.ks.dbs[0], 100)
    assert srv.evictor.make_room()                  # maxmemory 0: no limit
    set_limit(srv, srv.ks.used_memory)
    assert srv.evictor.make_room() and srv.ks.evicted_keys == 0
    assert srv.evictor.pool_fill() == 0


def test_policy_switch_clears_pool_and_switches_hooks():
    srv, clock = inproc("allkeys-lru")
    ks, ev = srv.ks, srv.evictor
    fill(ks.dbs[0], 1000, clock=clock)
    set_limit(srv, ks.used_memory - 1)
    ev.make_room()
    assert ev.pool_fill() > 0
    srv.config.set("maxmemory-policy", "allkeys-lfu")
    assert ev.pool_fill() == 0 and ks.lfu_on and ev.policy_kind == "lfu"
    srv.config.set("maxmemory-policy", "noeviction")
    assert not ks.lfu_on and ev.policy_kind == "none"


def test_config_set_maxmemory_lower_evicts_at_once_in_process():
    srv, clock = inproc("allkeys-lru")
    ks = srv.ks
    fill(ks.dbs[0], 3000)
    set_limit(srv, ks.used_memory // 3)       # the server's listener calls make_room()
    assert ks.used_memory <= srv.maxmemory
    ks._check()


# ---- a live server ----

def test_live_server_stays_under_limit_with_mixed_sizes_and_ttls(make_server):
    import redis
    s = make_server(maxmemory="2mb", maxmemory_policy="allkeys-lru")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    rng = random.Random(9)
    limit = 2 * 1024 * 1024
    for batch in range(20):
        p = r.pipeline(transaction=False)
        for i in range(500):
            key = b"k%d" % rng.randrange(50_000)
            p.set(key, b"v" * rng.choice((10, 100, 1000, 3000)))
        p.execute()
        s.call(lambda: [db.set_expire(e, s.server.ks.now_ms + 60_000)
                        for db in s.server.ks.dbs[:1] for e in db.sample(50)])
        r.set(b"probe", b"v")                 # a denyoom command makes room first
        r.set(b"probe", b"v")                 # same size again: no growth after
        assert r.info("memory")["used_memory"] <= limit
    assert r.info("stats")["evicted_keys"] > 1000
    s.call(s.server.ks._check)
    r.close()


def test_live_noeviction_oom_text_and_reads_still_served(make_server):
    import redis
    s = make_server(maxmemory_policy="noeviction")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    for i in range(200):
        r.set(b"k%d" % i, b"x" * 100)
    r.config_set("maxmemory", str(r.info("memory")["used_memory"] - 1))
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        r.set(b"new", b"x")
    assert r.get(b"k5") == b"x" * 100
    assert r.dbsize() == 200 and r.info("stats")["evicted_keys"] == 0
    from tests.conftest import RawConn
    raw = RawConn(s.port)
    raw.send(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n")
    assert raw.read_reply() == b"-" + OOM.encode() + b"\r\n"
    raw.close()
    r.close()


@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-ahe"])
def test_live_volatile_without_ttl_keys_is_oom(make_server, policy):
    import redis
    s = make_server(maxmemory_policy=policy)
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    for i in range(100):
        r.set(b"k%d" % i, b"x" * 100)
    r.config_set("maxmemory", "1000")
    with pytest.raises(redis.exceptions.OutOfMemoryError):
        r.set(b"other", b"y")
    assert r.dbsize() == 100
    r.close()


def test_live_config_set_maxmemory_lower_evicts_without_a_write(make_server):
    import redis
    s = make_server(maxmemory_policy="allkeys-random")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    p = r.pipeline(transaction=False)
    for i in range(20_000):
        p.set(b"k%d" % i, b"x" * 100)
    p.execute()
    used = r.info("memory")["used_memory"]
    r.config_set("maxmemory", str(used // 4))
    deadline = time.monotonic() + 20                 # a bound, not a timing assertion
    while r.info("memory")["used_memory"] > used // 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    info = r.info("memory")
    assert info["used_memory"] <= used // 4
    assert r.info("stats")["evicted_keys"] >= 14_000
    r.close()


def test_live_info_fields_are_plain_numbers(make_server):
    import redis
    s = make_server(maxmemory="1mb", maxmemory_policy="allkeys-ahe")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    mem = r.info("memory")
    for name in ("used_memory", "used_memory_rss", "used_memory_peak", "maxmemory",
                 "maxmemory_samples", "ahe_direction", "ahe_window_fill"):
        assert isinstance(mem[name], int), name
    for name in ("ahe_alpha", "ahe_last_hit_ratio"):
        assert isinstance(mem[name], float), name
    assert mem["maxmemory"] == 1024 * 1024 and mem["maxmemory_policy"] == "allkeys-ahe"
    assert mem["used_memory_human"].endswith(("B", "K", "M"))
    stats = r.info("stats")
    for name in ("evicted_keys", "expired_keys", "keyspace_hits", "keyspace_misses"):
        assert isinstance(stats[name], int), name
    r.close()


@pytest.mark.parametrize("policy", ["allkeys-ahe", "allkeys-lru"])
def test_dispatcher_room_limit_stays_exact(policy):
    """The dispatcher calls make_room() only above server.room_limit; that bound must equal
    maxmemory less the controller's memory (AHE ghosts, which resize during passes) after
    every write, through policy, controller and maxmemory changes."""
    from ferrumkv_py.client import Client
    srv, clock = inproc(policy, maxmemory=400_000)
    c = Client(srv)
    c.connection_made(NullTransport())
    ev, ks = srv.evictor, srv.ks

    def check():
        ctl = ev.ctl_mem() if ev.ctl_mem is not None else 0
        assert srv.room_limit == srv.maxmemory - ctl
        # evicting happens before a write (as in Redis); the write itself may add its own
        # cost on top until the next write's check
        assert ks.used_memory + ctl <= srv.maxmemory + memory.entry_cost(b"k" * 8, b"v" * 40)

    rng = random.Random(2)
    for i in range(20_000):
        c.data_received(b"*3\r\n$3\r\nSET\r\n$8\r\nk%07d\r\n$%d\r\n%s\r\n"
                        % (rng.randrange(60_000), 40, b"v" * 40))
        if i % 97 == 0:
            clock.advance(3)
        check()
        if i == 8_000:
            set_limit(srv, 250_000)
            check()
        if i == 14_000:
            srv.config.set("maxmemory-policy", "allkeys-lfu")
            check()
            srv.config.set("maxmemory-policy", policy)
            check()
    assert ks.evicted_keys > 10_000
    set_limit(srv, 0)
    assert srv.room_limit > 1 << 60


def test_adaptive_inline_scoring_evicts_exactly_like_the_controller():
    """SCORE_ADAPT (the adaptive AHE score inline in the sampler) against SCORE_CALL (the
    controller's scores()): the same seeded run evicts the same keys and moves alpha the
    same way, past the first turnover measurement (inline from then on)."""
    from ferrumkv_py.eviction.sampler import SCORE_ADAPT, SCORE_CALL

    def run(mode):
        srv, clock = inproc("allkeys-ahe", seed=4, maxmemory=300_000, ahe_controller="adaptive")
        assert srv.evictor.sampler.mode == SCORE_ADAPT
        srv.evictor.sampler.mode = mode
        srv.evictor.compiled = None     # the Python sampler (the kernel: test_eviction_kernel)
        ks, db = srv.ks, srv.ks.dbs[0]
        rng = random.Random(9)
        hot = [b"h%d" % i for i in range(300)]
        for i in range(30_000):
            clock.advance(rng.randrange(3))
            ks.refresh_time()
            if rng.random() < 0.5:
                db.lookup_read(rng.choice(hot))
            key = rng.choice(hot) if rng.random() < 0.3 else b"c%d" % i
            assert srv.evictor.make_room()
            e = db.set(key, b"v" * rng.randrange(10, 60))
            if rng.random() < 0.1:
                db.set_expire(e, ks.now_ms + rng.randrange(1, 20_000))
        ctl = srv.evictor.controller
        assert ctl.turnover_ms is not None and ks.evicted_keys > 5 * 1024
        return (sorted(k for k, _ in db.items()), ks.evicted_keys, ctl.alpha, ctl.duels, ctl.recency_wins,
                list(srv.evictor.pool.scores))         # the scores themselves, bit for bit

    assert run(SCORE_ADAPT) == run(SCORE_CALL)
