"""Morris LFU counters (eviction/lfu.py): Redis's growth table, decay on a ManualClock.

Tolerance for redis.conf's table (counter after N hits, the first hit creating the key): the
median over many independent counters must be within max(2, 10%) of the published value.
The published values are themselves single runs, and the spread of one Morris counter is a
few units (standard deviation about 7 at counter 142), so a median is the fair comparison.
"""

from __future__ import annotations

import math
import random
import statistics

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.config import Config
from ferrumkv_py.eviction import lfu
from ferrumkv_py.eviction.lfu import (LFU_COUNTER_MAX, LFU_INIT_VAL, MS_PER_MINUTE, decr,
                                      incr_probabilities, log_incr, make_touch)
from ferrumkv_py.eviction.scores import lfu_score
from ferrumkv_py.server import Server

from .score_reference import lfu_scores

# redis.conf: counter after 100 / 1K / 100K / 1M / 10M hits
REDIS_TABLE = {
    0: (104, 255, 255, 255, 255),
    1: (18, 49, 255, 255, 255),
    10: (10, 18, 142, 255, 255),
    100: (8, 11, 49, 143, 255),
}
HITS = (100, 1_000, 100_000, 1_000_000, 10_000_000)


def within_tolerance(got: float, want: int) -> bool:
    return abs(got - want) <= max(2, 0.10 * want)


def inproc(policy="allkeys-lfu", seed=1, **cfg):
    config = Config()
    config.set("maxmemory-policy", policy)
    for k, v in cfg.items():
        config.set(k.replace("_", "-"), str(v))
    clock = ManualClock()
    srv = Server(config, clock=clock, rng=random.Random(seed))
    return srv, clock


def counter_after(factor: int, hits: int, rng: random.Random) -> int:
    """Counter after ``hits`` hits, skipping failed increments geometrically.

    Uses the same probability table as the keyspace's touch function; equivalent in
    distribution to calling it ``hits - 1`` times, in O(255) instead of O(hits).
    """
    probs = incr_probabilities(factor)
    c, left = LFU_INIT_VAL, hits - 1
    while left > 0 and c < LFU_COUNTER_MAX:
        p = probs[c]
        trials = 1 if p >= 1.0 else int(math.log(1.0 - rng.random()) / math.log1p(-p)) + 1
        if trials > left:
            break
        left -= trials
        c += 1
    return c


@pytest.mark.parametrize("factor", sorted(REDIS_TABLE))
def test_growth_matches_redis_table(factor):
    rng = random.Random(factor)
    for hits, want in zip(HITS, REDIS_TABLE[factor]):
        med = statistics.median(counter_after(factor, hits, rng) for _ in range(101))
        assert within_tolerance(med, want), (factor, hits, med, want)


@pytest.mark.parametrize("factor,hits,runs", [(0, 100, 3), (1, 1000, 41), (10, 1000, 41),
                                              (100, 1000, 41), (10, 100_000, 3)])
def test_touch_function_matches_table_directly(factor, hits, runs):
    """The real per-access function, called hits-1 times (no decay)."""
    idx = HITS.index(hits)
    rng = random.Random(7)
    results = []
    for _ in range(runs):
        touch = make_touch(factor, 0, rng.random)
        c = LFU_INIT_VAL
        for _ in range(hits - 1):
            c = touch(c, 0, 0)
        results.append(c)
    assert within_tolerance(statistics.median(results), REDIS_TABLE[factor][idx])


def test_log_incr_rules():
    assert log_incr(255, 10, 0.0) == 255                  # saturated
    assert log_incr(0, 10, 0.999) == 1                    # below LFU_INIT_VAL: always
    assert log_incr(5, 10, 0.999) == 6                    # base 0: p = 1
    assert log_incr(6, 10, 1 / 11 - 1e-9) == 7            # p = 1 / (1*10 + 1)
    assert log_incr(6, 10, 1 / 11 + 1e-9) == 6
    assert log_incr(100, 0, 0.999) == 101                 # factor 0: always
    probs = incr_probabilities(10)
    assert probs[5] == 1.0 and probs[255] == 0.0 and probs[6] == pytest.approx(1 / 11)
    rng = random.Random(3)
    for c in range(256):
        r = rng.random()
        assert log_incr(c, 10, r) == (c + 1 if r < probs[c] else c)


def test_decr_counts_minute_boundaries():
    t0 = 10 * MS_PER_MINUTE
    assert decr(20, t0, t0 + 3 * MS_PER_MINUTE, 1) == 17
    assert decr(20, t0 + 59_900, t0 + 60_100, 1) == 19     # one boundary crossed
    assert decr(20, t0, t0 + 59_999, 1) == 20
    assert decr(20, t0, t0 + 5 * MS_PER_MINUTE, 2) == 18   # 5 minutes / 2 per step
    assert decr(20, t0, t0 + 500 * MS_PER_MINUTE, 1) == 0  # floored
    assert decr(20, t0, t0 + 500 * MS_PER_MINUTE, 0) == 20  # decay-time 0: never


def test_keyspace_reads_increment_and_decay_on_manual_clock():
    srv, clock = inproc("allkeys-lfu", lfu_log_factor=0)
    ks, ev = srv.ks, srv.evictor
    db = ks.dbs[0]
    db.set(b"k", b"v")
    for _ in range(99):
        assert db.lookup_read(b"k") is not None
    e = db.find(b"k")
    assert db.lfu[e] == 104                        # redis.conf: factor 0, 100 hits
    clock.advance(3 * MS_PER_MINUTE)
    ks.refresh_time()
    assert ev.object_freq(db, e) == 101            # decayed for display, not written back
    assert db.lfu[e] == 104
    db.lookup_read(b"k")                       # decay written back, then +1 (factor 0)
    assert db.lfu[e] == 102
    srv.config.set("lfu-decay-time", "0")
    clock.advance(60 * MS_PER_MINUTE)
    ks.refresh_time()
    assert ev.object_freq(db, e) == 102
    ks._check()


def test_knobs_apply_at_runtime():
    srv, clock = inproc("allkeys-lfu", lfu_log_factor=1000)
    db = srv.ks.dbs[0]
    db.set(b"k", b"v")
    for _ in range(20):
        db.lookup_read(b"k")
    slow = db.lfu[db.find(b"k")]
    assert slow < 15                           # factor 1000: ~1 increment past 5
    srv.config.set("lfu-log-factor", "0")
    for _ in range(20):
        db.lookup_read(b"k")
    assert db.lfu[db.find(b"k")] == slow + 20


def test_counter_maintained_only_under_lfu_and_ahe():
    for policy, on in (("allkeys-lru", False), ("noeviction", False), ("allkeys-lfu", True),
                       ("volatile-lfu", True), ("allkeys-ahe", True), ("volatile-ahe", True)):
        srv, _ = inproc(policy, lfu_log_factor=0)
        db = srv.ks.dbs[0]
        db.set(b"k", b"v")
        # the AHE policies (ahe-probation yes) start a new key on probation, one below
        # LFU_INIT_VAL; its first read ends probation at LFU_INIT_VAL + 1, where a key of
        # the lfu policies gets with its first read too (eviction/probation.py)
        start = LFU_INIT_VAL - 1 if policy.endswith("-ahe") else LFU_INIT_VAL
        assert db.lfu[db.find(b"k")] == start, policy
        db.lookup_read(b"k")
        assert srv.ks.lfu_on is on
        assert db.lfu[db.find(b"k")] == (LFU_INIT_VAL + 1 if on else start), policy
        assert srv.evictor.freq_tracked is on
        assert srv.evictor.idle_tracked is (not policy.endswith("-lfu"))


def test_lfu_scores_rank_rare_keys_first():
    srv, clock = inproc("allkeys-lfu", lfu_log_factor=0)
    db = srv.ks.dbs[0]
    for key, reads in ((b"hot", 50), (b"warm", 10), (b"cold", 0)):
        db.set(key, b"v")
        for _ in range(reads):
            db.lookup_read(key)
    ents = [db.find(k) for k in (b"hot", b"warm", b"cold")]
    def scores(now_ms):         # scores.lfu_score, the kernel's and the sampler's
        return [lfu_score(lfu.decayed(db.lfu[s], db.lru[s], now_ms // MS_PER_MINUTE, 1))
                for s in ents]
    assert scores(srv.ks.now_ms) == [255 - 55, 255 - 15, 255 - 5]
    assert scores(srv.ks.now_ms) == lfu_scores(db, ents, srv.ks.now_ms, 1)
    clock.advance(10 * MS_PER_MINUTE)
    assert scores(clock.now_ms()) == [255 - 45, 255 - 5, 255]
    assert scores(clock.now_ms()) == lfu_scores(db, ents, clock.now_ms(), 1)


@pytest.mark.parametrize("decay", [0, 1, 2, 7])
def test_touch_is_decay_then_log_incr(decay):
    rng = random.Random(decay)
    for _ in range(2000):
        factor = rng.choice((0, 1, 10, 100))
        c = rng.randrange(256)
        last = rng.randrange(10 ** 12, 10 ** 12 + 10 ** 8)
        now = last + rng.randrange(0, 30 * MS_PER_MINUTE)
        r = rng.random()
        touch = make_touch(factor, decay, lambda: r)
        assert touch(c, last, now) == log_incr(decr(c, last, now, decay), factor, r)


@pytest.mark.parametrize("decay", [0, 1, 3])
def test_one_touch_over_a_moving_clock(decay):
    """The closure's remembered minute never changes a counter: one touch over a clock that
    steps forward, stays inside a minute, crosses boundaries and goes back."""
    rng = random.Random(7 + decay)
    draws = []
    touch = make_touch(10, decay, lambda: draws[-1])
    edge = 10 ** 12 // MS_PER_MINUTE * MS_PER_MINUTE      # a minute boundary
    near = [edge + d for d in (-MS_PER_MINUTE - 1, -MS_PER_MINUTE, -1, 0, 1,
                               MS_PER_MINUTE - 1, MS_PER_MINUTE, 3 * MS_PER_MINUTE)]
    now = edge
    for step in range(6000):
        if step % 2:        # around the boundaries, where an off-by-one would show
            now, last = rng.choice(near), rng.choice(near)
        else:
            now += rng.choice((0, 1, 7, 9_000, 60_000, 200_000, -50, -70_000))
            last = now - rng.choice((0, 5, 30_000, 61_000, 10 * MS_PER_MINUTE, -10))
        c = rng.randrange(256)
        draws.append(rng.random())
        assert touch(c, last, now) == log_incr(decr(c, last, now, decay), 10, draws[-1])


def test_touch_with_jumps_is_the_plain_touch_but_for_the_jump():
    """make_touch(..., jumps): the same draws as the plain touch, except that a counter in
    ``jumps`` goes where it says when it increments (AHE probation: 4 -> 6)."""
    for counter in range(256):
        for draw in (0.0, 0.5, 0.999999):
            plain = make_touch(10, 0, lambda: draw)(counter, 0, 0)
            jumped = make_touch(10, 0, lambda: draw, {4: 6})(counter, 0, 0)
            assert jumped == (6 if counter == 4 else plain), (counter, draw)
    with pytest.raises(ValueError):
        make_touch(10, 1, random.random, {4: 6})
