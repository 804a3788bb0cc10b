"""AHE-adaptive controller (eviction/ahe_adaptive.py): scores, duels on synthetic feeds,
bounds, the ghost memory bound, determinism, and a small in-process read-through run."""

from __future__ import annotations

import math
import random
import sys

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.eviction import ahe_adaptive as A
from ferrumkv_py.eviction import lfu
from ferrumkv_py.eviction.ahe import AHE_ALPHA_MAX, AHE_ALPHA_MIN, CONTROLLERS, AheSettings
from ferrumkv_py.eviction.pool import EvictionPool
from ferrumkv_py.eviction.scores import adapt_params
from ferrumkv_py.eviction.scores import adaptive_score as product_score
from ferrumkv_py.keyspace import Keyspace

from . import score_reference as R

NOW = 1_700_000_000_000


_DB = [None]        # the database of the test's keyspace: ent() creates keys there


def make(alpha=0.5, keys=0, probation=False):
    """A keyspace with ``keys`` keys and a controller; probation off unless asked (these
    tests are about scores and duels; test_probation.py covers probation)."""
    ks = Keyspace(databases=1, clock=ManualClock(NOW), rng=random.Random(7))
    db = ks.dbs[0]
    for i in range(keys):
        db.add(b"fill:%d" % i, b"v")
    ctl = A.AdaptiveController(ks, AheSettings(alpha_init=alpha, probation=probation))
    _DB[0] = db
    return ks, ctl


class K:
    """A key made for a test in a slot of the test's database, with its metadata as
    attributes (the controller reads the slot arrays; these read and write them)."""

    def __init__(self, db, key, lru, lfu, exp):
        while db.find(key) is not None:          # the same name twice: a distinct key each time
            key += b"'"
        self.db, self.key = db, key
        self.slot = db.add(key, b"v")
        db.set_access(self.slot, lru, lfu)
        if exp > 0:
            db.set_expire(self.slot, exp)

    lru = property(lambda self: self.db.lru[self.slot],
                   lambda self, v: self.db.lru.__setitem__(self.slot, v))
    lfu = property(lambda self: self.db.lfu[self.slot])
    exp = property(lambda self: self.db.exp[self.slot])

    def unlink(self):
        """What the Evictor does after on_evict."""
        self.db.unlink(self.slot)


def ent(key, idle_ms, counter, now=NOW, exp=0):
    return K(_DB[0], key, now - idle_ms, counter, exp)


def scores(ctl, ents, now):
    return ctl.scores(_DB[0], [e.slot for e in ents], now)


def evict(ctl, e, now):
    ctl.on_evict(e.db, e.slot, now)


def duel(ctl, victim_recency: bool, i: int, now=NOW):
    """Score a recency pick and a frequency pick, evict one; returns (victim, other)."""
    r = ent(b"r%d" % i, 50_000, 9, now)       # idle, but read often before
    f = ent(b"f%d" % i, 10, 5, now)           # fresh, but rare
    scores(ctl, [r, f], now)
    victim, other = (r, f) if victim_recency else (f, r)
    evict(ctl, victim, now)
    victim.unlink()
    return victim, other


# ---- score ----

def test_worked_example_from_docstring():
    t = 20_000.0
    par = adapt_params(0.5, t, None)
    for score in (lambda idle, c, left: R.adaptive_score(0.5, idle, c, left, t),
                  lambda idle, c, left: product_score(par, idle, c,
                                                      0 if left is None else NOW + left,
                                                      NOW)[0]):
        assert score(40_000, 5, None) == pytest.approx(501.0)
        assert score(1_000, 6, None) == pytest.approx(498.025)
        assert score(2_000, 5, 5_000) == pytest.approx(501.925)


def test_scores_match_reference_and_ttl_urgency():
    ks, ctl = make(alpha=0.3)
    ctl.turnover_ms = 8_000.0
    ents = [ent(b"a", 100, 5), ent(b"b", 90_000, 30), ent(b"c", 5, 200, exp=NOW + 2_000),
            ent(b"d", 5, 200, exp=NOW + 50_000), ent(b"e", 0, 0, exp=NOW - 1)]
    got = scores(ctl, ents, NOW)
    for e, s in zip(ents, got):
        left = e.exp - NOW if e.exp > 0 else None
        want = R.adaptive_score(ctl.alpha, NOW - e.lru, e.lfu, left, 8_000.0)
        assert s == pytest.approx(want)
    assert got[2] > R.adaptive_score(ctl.alpha, 5, 200, None, 8_000.0)     # urgent
    assert got[3] == pytest.approx(R.adaptive_score(ctl.alpha, 5, 200, None, 8_000.0))


def test_scores_do_not_depend_on_the_request_rate():
    """50x the rate: idle times and the turnover both shrink 50x -> the same scores."""
    _, slow = make()
    _, fast = make()
    slow.turnover_ms, fast.turnover_ms = 50_000.0, 1_000.0
    rnd = random.Random(3)
    spec = [(50 * rnd.randrange(0, 4_000), rnd.randrange(0, 40)) for _ in range(50)]
    s1 = scores(slow, [ent(b"k", i, c) for i, c in spec], NOW)
    s2 = scores(fast, [ent(b"k", i // 50, c) for i, c in spec], NOW)
    assert s1 == pytest.approx(s2)


def test_fallback_turnover_is_the_sampled_idle_ewma():
    _, ctl = make()
    scores(ctl, [ent(b"a", 1_000, 5), ent(b"b", 3_000, 5)], NOW)
    assert ctl.idle_ewma_ms == pytest.approx(2_000)
    assert ctl.turnover_ms is None


# ---- duels ----

def test_alpha_moves_to_recency_when_frequency_victims_come_back():
    _, ctl = make(keys=20_000)
    evict(ctl, ent(b"x", 1, 5), NOW)        # first eviction sizes the ring (1,000 slots)
    assert ctl.cap == 1_000 and ctl.step == pytest.approx(A.DUEL_STEP_BUDGET / 1_000)
    a0 = ctl.alpha
    for i in range(20):
        victim, _ = duel(ctl, victim_recency=False, i=i)
        ctl.on_miss(victim.key)               # the rare fresh key was read again first
        ctl._check()
    assert ctl.alpha > a0
    assert ctl.recency_wins == 20 and ctl.frequency_wins == 0
    assert ctl.theta == pytest.approx(20 * ctl.step)


def test_alpha_moves_to_frequency_when_recency_victims_come_back():
    _, ctl = make()
    for i in range(20):
        victim, _ = duel(ctl, victim_recency=True, i=i)
        ctl.on_miss(victim.key)
        ctl._check()
    assert ctl.alpha < 0.5
    assert ctl.frequency_wins == 20


def test_kept_pick_touched_first_means_the_victim_was_right():
    _, ctl = make()
    victim, other = duel(ctl, victim_recency=True, i=0)
    other.lru += 7                            # the kept frequency pick was read first
    ctl.on_miss(victim.key)
    assert ctl.recency_wins == 1 and ctl.alpha > 0.5
    ctl._check()


def test_kept_pick_evicted_untouched_becomes_a_ghost_and_can_win():
    _, ctl = make()
    victim, other = duel(ctl, victim_recency=False, i=0)
    evict(ctl, other, NOW)                    # evicted later without being read
    other.unlink()
    assert ctl.active == 1 and ctl.ghost_entries == 2
    ctl.on_miss(other.key)                    # ...and read (a miss) before the victim
    assert ctl.frequency_wins == 1 and ctl.active == 0
    ctl._check()


def test_kept_pick_evicted_after_a_read_decides_at_once():
    _, ctl = make()
    victim, other = duel(ctl, victim_recency=False, i=0)
    other.lru += 1
    evict(ctl, other, NOW + 1)
    assert ctl.frequency_wins == 1 and ctl.active == 0
    ctl._check()


def test_no_duel_when_the_picks_agree_or_the_victim_is_neither():
    _, ctl = make()
    a, b = ent(b"a", 9_000, 5), ent(b"b", 10, 9)  # a is both picks
    scores(ctl, [a, b], NOW)
    evict(ctl, a, NOW)
    assert ctl.duels == 0
    r, f, m = ent(b"r", 9_000, 9), ent(b"f", 10, 5), ent(b"m", 500, 7)
    scores(ctl, [r, f, m], NOW)
    evict(ctl, m, NOW)
    assert ctl.duels == 0
    ctl._check()


def test_ring_reuse_settles_old_duels():
    ks, ctl = make(keys=0)
    evict(ctl, ent(b"x", 1, 5), NOW)        # first eviction sizes the ring (GHOST_MIN)
    cap = ctl.cap
    pairs = [duel(ctl, victim_recency=True, i=i) for i in range(cap)]
    pairs[0][1].lru += 1                      # only the first kept pick was read
    for i in range(cap, cap + 2):
        duel(ctl, victim_recency=True, i=i)   # reuses slots 0 and 1
    assert ctl.recency_wins == 1 and ctl.undecided == 1
    assert ctl.active == cap
    ctl._check()


def test_alpha_stays_within_bounds():
    _, ctl = make()
    for i in range(500):
        victim, _ = duel(ctl, victim_recency=False, i=i)
        ctl.on_miss(victim.key)
    assert ctl.alpha == pytest.approx(AHE_ALPHA_MAX)
    for i in range(500, 1500):
        victim, _ = duel(ctl, victim_recency=True, i=i)
        ctl.on_miss(victim.key)
    assert ctl.alpha == pytest.approx(AHE_ALPHA_MIN)
    ctl._check()


def test_alpha_init_setting_and_configure():
    _, ctl = make(alpha=0.8)
    assert ctl.alpha == pytest.approx(0.8)
    ctl.configure(AheSettings(alpha_init=0.2))
    assert ctl.alpha == pytest.approx(0.2)
    ctl.configure(AheSettings(alpha_init=0.2, step=0.3))   # spec knobs do not reset alpha
    assert ctl.alpha == pytest.approx(0.2)


# ---- turnover, memory bound ----

def test_turnover_is_keys_times_ms_per_eviction():
    ks, ctl = make(keys=3_000)
    now = NOW
    for i in range(A.EVICTIONS_PER_BLOCK):
        now += 2
        x = ent(b"z%d" % i, 0, 5, now)
        evict(ctl, x, now)
        x.unlink()
    assert ctl.ms_per_eviction == pytest.approx(2.0 * (A.EVICTIONS_PER_BLOCK - 1)
                                                / A.EVICTIONS_PER_BLOCK)
    # keys counted at the eviction, the victim still among them
    assert ctl.turnover_ms == pytest.approx(3_001 * ctl.ms_per_eviction)
    assert ctl.cap == 3_000 // A.GHOST_FRACTION


def test_volatile_scope_counts_only_keys_with_ttl():
    ks, ctl = make(keys=1_000)
    db = ks.dbs[0]
    for i in range(100):
        db.set_expire(db.find(b"fill:%d" % i), NOW + 10_000)
    ctl.set_scope(True)
    assert ctl._population() == 100
    ctl.set_scope(False)
    assert ctl._population() == 1_000


def test_ghost_memory_is_bounded_and_reported():
    ks, ctl = make(keys=0)
    ctl._population = lambda: 10 ** 9          # a huge key space: ring at GHOST_MAX
    rnd = random.Random(5)
    now = NOW
    for i in range(3 * A.GHOST_MAX):
        now += 1
        victim, _ = duel(ctl, victim_recency=rnd.random() < 0.5, i=i, now=now)
        if rnd.random() < 0.02:
            ctl.on_miss(victim.key)
        assert ctl.extra_memory_bytes() <= A.max_extra_memory_bytes()
    assert ctl.cap == A.GHOST_MAX
    assert ctl.ghost_entries == 2 * ctl.active <= 2 * A.GHOST_MAX
    assert A.max_extra_memory_bytes() < 600_000
    ctl._check()


def _real_bytes(ctl) -> int:
    objs = (ctl._vh, ctl._ah, ctl._alru, ctl._state, ctl._adb, ctl._tab, ctl._alt)
    return sum(sys.getsizeof(o) for o in objs)


@pytest.mark.parametrize("keys", [0, 1_000, 10_000, 100_000, 10 ** 7])
def test_ghost_bytes_are_the_real_bytes_and_few_per_slot(keys):
    ks, ctl = make(keys=0)
    ctl._population = lambda: keys
    evict(ctl, ent(b"x", 1, 5), NOW)        # sizes the ring
    want = min(max(keys // A.GHOST_FRACTION, A.GHOST_MIN), A.GHOST_MAX)
    assert ctl.cap == want
    # what extra_memory_bytes() charges is what CPython allocated for the ring and index
    assert ctl.extra_memory_bytes() == _real_bytes(ctl)
    # duels do not allocate: the ring is preallocated (Entries referenced are cached keys)
    for i in range(2 * ctl.cap):
        duel(ctl, victim_recency=i % 2 == 0, i=i, now=NOW + i)
    assert ctl.active == ctl.cap
    assert ctl.extra_memory_bytes() == _real_bytes(ctl)
    # per ring slot: 21 bytes of ring + 8-16 of index; at C = 1,000 (ring 50) under 1% of
    # the 269-byte keys it is charged against, where the dict ring cost 7.1%
    per_slot = (ctl.extra_memory_bytes() - A.RING_OBJ_BYTES) / ctl.cap
    assert per_slot <= A.RING_SLOT_BYTES + 2 * A.TABLE_LOAD * A.TABLE_CELL_BYTES <= 40
    if keys >= 1_000:
        assert ctl.extra_memory_bytes() / keys <= 2.6       # bytes per cached key
    if keys == 1_000:
        assert ctl.extra_memory_bytes() < 0.01 * 1_000 * 269


def test_index_survives_collisions_and_deletions():
    """The open-addressing index against a dict, with hashes crowded into few home cells."""
    _, ctl = make()
    rnd = random.Random(3)
    model = {}                                 # hash -> code
    for step in range(20_000):
        if model and (len(model) >= 2 * ctl.cap or rnd.random() < 0.45):
            h = rnd.choice(list(model))
            code = model.pop(h)
            ctl._remove(h, code)
            slot = code >> 1
            if code & 1:
                ctl._ah[slot] = 0
            else:
                ctl._vh[slot] = 0
        else:
            free = [c for c in range(2 * ctl.cap) if c not in model.values()]
            code = rnd.choice(free)
            h = rnd.randrange(4) * (ctl._mask + 1) + rnd.randrange(6) or 1 + step
            h = h if h not in model else (h + 7919 * step) & A.HASH_MASK
            if h in model:
                continue
            slot = code >> 1
            if code & 1:
                ctl._ah[slot] = h
            else:
                ctl._vh[slot] = h
            ctl._insert(h, code)
            model[h] = code
        if step % 97 == 0:
            for h, code in model.items():
                assert ctl._find(h) == code
            assert ctl.ghost_entries == len(model) == sum(1 for c in ctl._tab if c)
    for h, code in model.items():
        assert ctl._find(h) == code
    assert ctl._find(123_456_789) == -1


# ---- step scaling ----

@pytest.mark.parametrize("keys", [1_000, 10_000, 100_000])
def test_step_scales_with_the_ring_so_alpha_travel_is_size_free(keys):
    """A burst of the same relative length decides a number of duels proportional to the
    ring; the step is DUEL_STEP_BUDGET / ring, so the same share of decided duels moves
    alpha by the same amount at any cache size."""
    _, ctl = make(alpha=AHE_ALPHA_MIN)
    ctl._population = lambda: keys
    evict(ctl, ent(b"x", 1, 5), NOW)
    assert ctl.cap == keys // A.GHOST_FRACTION
    assert ctl.step * ctl.cap == pytest.approx(A.DUEL_STEP_BUDGET)
    wins = int(0.1 * ctl.cap)                 # recency wins: a tenth of a ring
    for i in range(wins):
        victim, _ = duel(ctl, victim_recency=False, i=i, now=NOW + i)
        ctl.on_miss(victim.key)
    assert ctl.theta == pytest.approx(A.THETA_MIN + wins * ctl.step, abs=0.05)
    assert ctl.alpha > 0.5                    # a tenth of a ring crosses to recency
    # the same number of mixed verdicts, 60:40 for frequency, ends on the frequency side
    rnd = random.Random(keys)
    for i in range(wins, wins + 10 * ctl.cap):
        victim, _ = duel(ctl, victim_recency=rnd.random() < 0.6, i=i, now=NOW + i)
        ctl.on_miss(victim.key)
    assert ctl.alpha < 0.5
    ctl._check()


def test_step_is_capped_for_tiny_rings():
    _, ctl = make()
    ctl._population = lambda: 100
    evict(ctl, ent(b"x", 1, 5), NOW)
    assert ctl.cap == A.GHOST_MIN
    assert ctl.step == A.STEP_MAX == min(A.DUEL_STEP_BUDGET / A.GHOST_MIN, A.STEP_MAX)


def test_info_fields_keep_the_contract():
    _, ctl = make()
    info = dict(ctl.info_fields())
    assert info["ahe_controller"] == "adaptive"
    assert 0.0 < float(info["ahe_alpha"]) < 1.0
    assert float(info["ahe_last_hit_ratio"]) == 0.0
    assert CONTROLLERS["adaptive"] is A.AdaptiveController
    assert A.AdaptiveController.counter_decay_minutes == 0


# ---- determinism and a small read-through run ----

def _random_feed(seed: int) -> list:
    rnd = random.Random(seed)
    _, ctl = make()
    now = NOW
    trace = []
    pending = []
    for i in range(3_000):
        now += rnd.randrange(1, 4)
        victim, other = duel(ctl, victim_recency=rnd.random() < 0.4, i=i, now=now)
        pending.append((victim, other))
        if rnd.random() < 0.5 and pending:
            v, o = pending.pop(rnd.randrange(len(pending)))
            if rnd.random() < 0.5:
                o.lru = now
            ctl.on_miss(v.key)
        trace.append(ctl.alpha)
    ctl._check()
    return trace + [ctl.recency_wins, ctl.frequency_wins, ctl.undecided]


def test_deterministic_for_a_seeded_feed():
    assert _random_feed(11) == _random_feed(11)
    assert _random_feed(11) != _random_feed(12)


def read_through(ctl_or_none, keys: list, capacity: int, seed: int = 1):
    """GET; on a miss evict (pool of 16, 5 samples) and SET.  Returns (hit ratio, ks)."""
    clock = ManualClock(NOW)
    ks = Keyspace(databases=1, clock=clock, rng=random.Random(seed))
    ks.lfu_on = True
    ks.lfu_touch = lfu.make_touch(10, 0, ks.rng.random)
    db = ks.dbs[0]
    pool = EvictionPool()
    ctl = ctl_or_none(ks) if ctl_or_none else None
    if ctl is not None:
        ks.miss_hook = ctl.on_miss
    for n, k in enumerate(keys):
        if n % 2 == 0:
            clock.advance(1)                  # 2 requests per ms
            ks.refresh_time()
        key = b"k%d" % k
        if db.lookup_read(key) is not None:
            continue
        if len(db) >= capacity:
            now = ks.now_ms
            victim = None
            while victim is None:
                ents = db.sample(5)
                got = ctl.scores(db, ents, now) if ctl else [now - db.lru[e] for e in ents]
                for sc, e in zip(got, ents):
                    pool.offer(sc, 0, db.keys[e])
                while victim is None and len(pool):
                    victim = db.find(pool.pop_best()[-1])   # (..., key)
            if ctl is not None:
                ctl.on_evict(db, victim, now)
            db.unlink(victim)
        db.add(key, b"v")
    return ks.hits / (ks.hits + ks.misses), ctl


def zipf_keys(n: int, universe: int, s: float, seed: int) -> list:
    rnd = random.Random(seed)
    w = [1.0 / (r + 1) ** s for r in range(universe)]
    return rnd.choices(range(universe), weights=w, k=n)


def test_read_through_stable_zipf_goes_to_frequency_and_beats_lru():
    keys = zipf_keys(60_000, 20_000, 0.9, seed=4)
    make_ctl = lambda ks: A.AdaptiveController(ks, AheSettings())   # noqa: E731
    h_ahe, ctl = read_through(make_ctl, keys, capacity=500)
    h_lru, _ = read_through(None, keys, capacity=500)
    ctl._check()
    assert ctl.alpha < 0.2
    assert ctl.duels > 1_000 and ctl.frequency_wins > ctl.recency_wins
    assert ctl.turnover_ms is not None and math.isfinite(ctl.turnover_ms)
    assert h_ahe > h_lru + 0.02


# ---- inside the server's Evictor ----

def _adaptive_choice_configured() -> bool:
    from ferrumkv_py.config import Config
    try:
        Config().set("ahe-controller", "adaptive")
    except Exception:
        return False
    return True


@pytest.mark.parametrize("probation", ["no", "yes"])
def test_evictor_runs_the_adaptive_controller(probation):
    from ferrumkv_py.config import Config
    from ferrumkv_py.server import Server
    config = Config()
    config.set("maxmemory-policy", "allkeys-ahe")
    config.set("ahe-probation", probation)
    clock = ManualClock(NOW)
    srv = Server(config, clock=clock, rng=random.Random(2))
    ev, ks = srv.evictor, srv.ks
    ev._set_controller("adaptive")            # what CONFIG SET ahe-controller adaptive does
    ctl = ev.controller
    assert isinstance(ctl, A.AdaptiveController)
    assert ks.miss_hook == ctl.on_miss
    db = ks.dbs[0]
    e = db.set(b"counted", b"v")
    db.lfu[e] = 20
    clock.advance(10 * 60_000)                # ten idle minutes: no wall-clock decay here
    ks.refresh_time()
    db.lookup_read(b"counted")
    assert db.lfu[e] >= 20 and ev.object_freq(db, e) >= 20
    for i in range(3_000):
        db.set(b"fill:%d" % i, b"x" * 20)
    srv.maxmemory = ks.used_memory + ctl.extra_memory_bytes()
    keys = zipf_keys(20_000, 60_000, 0.9, seed=8)
    for n, k in enumerate(keys):
        if n % 4 == 0:
            clock.advance(1)
            ks.refresh_time()
        key = b"k%d" % k
        if db.lookup_read(key) is None:
            db.set(key, b"x" * 20)
            assert ev.make_room()
    assert ks.evicted_keys > 8_000
    if probation == "no":
        assert ctl.duels > 1_000 and ctl.ghost is None and ks.admit_hook is None
    else:       # most victims are one-hit wonders leaving on probation, never dueled on
        assert ctl.probation_evicted > 5_000
        assert ctl.duels <= ks.evicted_keys - ctl.probation_evicted
        assert ks.admit_hook == ctl.admit
    assert ks.used_memory + ctl.extra_memory_bytes() <= srv.maxmemory
    fields = dict(ev.info_fields())
    assert fields["ahe_controller"] == "adaptive"
    assert int(fields["ahe_extra_memory"]) == ctl.extra_memory_bytes() > 0
    ks._check()
    ctl._check()


@pytest.mark.skipif(not _adaptive_choice_configured(),
                    reason="config.py does not offer ahe-controller adaptive yet")
def test_live_server_info_with_adaptive_controller(make_server):
    import redis
    s = make_server(maxmemory="300kb", maxmemory_policy="allkeys-ahe",
                    ahe_controller="adaptive")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    p = r.pipeline(transaction=False)
    for n, k in enumerate(zipf_keys(20_000, 8_000, 0.9, seed=9)):
        p.get(b"k%d" % k)
        p.set(b"k%d" % k, b"x" * 40)
        if n % 500 == 499:
            p.execute()
    p.execute()
    info = r.info("memory")
    assert info["ahe_controller"] == "adaptive"
    assert 0.05 <= float(info["ahe_alpha"]) <= 0.95
    assert 0.0 <= float(info["ahe_last_hit_ratio"]) <= 1.0
    assert info["ahe_duels"] > 0 and info["ahe_extra_memory"] > 0
    assert r.info("stats")["evicted_keys"] > 1_000
    r.close()
