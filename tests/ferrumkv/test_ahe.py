"""AHE (eviction/ahe.py): the EPS score, the alpha controller on synthetic feeds, the
pluggable controller interface, and alpha moving in a live server under eviction."""

from __future__ import annotations

import random

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.config import Config
from ferrumkv_py.eviction import ahe
from ferrumkv_py.eviction.lfu import decr
from ferrumkv_py.eviction.ahe import (AHE_ALPHA_MAX, AHE_ALPHA_MIN, AdaptiveHybridState,
                                      AheSettings, SpecController)
from ferrumkv_py.eviction import scores as S
from ferrumkv_py.server import Server

from . import score_reference as R


def inproc(policy="allkeys-ahe", seed=1, **cfg):
    config = Config()
    config.set("maxmemory-policy", policy)
    config.set("ahe-controller", "spec")       # these tests are about the design as written
    for k, v in cfg.items():
        config.set(k.replace("_", "-"), str(v))
    clock = ManualClock()
    return Server(config, clock=clock, rng=random.Random(seed)), clock


# ---- EPS ----

EPS_NOW = 1_700_000_000_000


def _product_eps(alpha, idle_ms, counter, ttl_left_ms):
    """scores.eps_score (the kernel's and the sampler's) with the reference's arguments."""
    deadline = 0 if ttl_left_ms is None else EPS_NOW + ttl_left_ms
    return S.eps_score(S.eps_params(alpha), idle_ms, counter, deadline, EPS_NOW)


both_eps = pytest.mark.parametrize("eps_score", [R.eps_score, _product_eps],
                                   ids=["reference", "scores.py"])


@both_eps
def test_eps_worked_example_from_docstring(eps_score):
    assert eps_score(0.5, 300_000, 5, None) == pytest.approx(0.5 * 0.5 + 0.5 * (1 - 5 / 255))
    assert eps_score(0.5, 10_000, 200, 20_000) == pytest.approx(
        0.5 * (10 / 600) + 0.5 * (1 - 200 / 255) + 0.2)
    assert eps_score(0.5, 900_000, 30, None) == pytest.approx(0.5 + 0.5 * (1 - 30 / 255))


@both_eps
def test_eps_terms_and_penalty_edges(eps_score):
    assert eps_score(1.0, 10 ** 9, 0, None) == 1.0              # recency saturates
    assert eps_score(0.0, 0, 255, None) == 0.0                  # hottest, freshest
    assert eps_score(0.0, 0, 255, 30_000) == pytest.approx(0.2)  # exactly 30 s left
    assert eps_score(0.0, 0, 255, 30_001) == 0.0
    assert eps_score(0.0, 0, 255, -5) == pytest.approx(0.2)     # already expired


def test_controller_scores_match_reference_with_decay_and_ttl():
    srv, clock = inproc(lfu_log_factor=0)
    ks = srv.ks
    db = ks.dbs[0]
    for i in range(20):
        e = db.set(b"k%d" % i, b"v")
        for _ in range(i * 3):
            db.lookup_read(b"k%d" % i)
        if i % 3 == 0:
            db.set_expire(e, ks.now_ms + 1000 * (i * 7))
        clock.advance(37_000)
        ks.refresh_time()
    clock.advance(5 * 60_000)
    now = clock.now_ms()
    ents = list((s for _, s in db.items()))
    got = srv.evictor.controller.scores(db, ents, now)
    for e, s in zip(ents, got):
        counter = decr(db.lfu[e], db.lru[e], now, 1)
        left = (db.exp[e] - now) if db.exp[e] > 0 else None
        assert s == pytest.approx(R.eps_score(0.5, now - db.lru[e], counter, left))


# ---- AdaptiveHybridState on synthetic feeds ----

def feed(state, ratios, window):
    """One window per ratio: window-1 ignored observations, then the closing one."""
    for r in ratios:
        for _ in range(window - 1):
            assert not state.observe(0, 0)
        hits = round(r * 10 ** 6)
        assert state.observe(hits, 10 ** 6 - hits)
        state._check()


def test_defaults_and_first_window_raises_alpha():
    st = AdaptiveHybridState()
    assert (st.alpha, st.step, st.direction, st.last_hit_ratio, st.window_size,
            st.window_count) == (0.5, 0.05, 1.0, 0.0, 64, 0)
    feed(st, [0.8], 64)
    assert st.alpha == pytest.approx(0.55) and st.last_hit_ratio == pytest.approx(0.8)
    assert st.updates == 1 and st.window_count == 0


def test_direction_flips_on_regression_only():
    st = AdaptiveHybridState(window_size=4)
    feed(st, [0.5, 0.6, 0.6], 4)                 # improving / flat: keep going up
    assert st.direction == 1.0 and st.alpha == pytest.approx(0.65)
    feed(st, [0.55], 4)                          # drop of 0.05: flip, move down
    assert st.direction == -1.0 and st.alpha == pytest.approx(0.60) and st.flips == 1
    feed(st, [0.55 - 0.00005], 4)                # drop below 1e-4: no flip
    assert st.direction == -1.0 and st.alpha == pytest.approx(0.55)
    feed(st, [0.4], 4)                           # drop again: flip back up
    assert st.direction == 1.0 and st.alpha == pytest.approx(0.60) and st.flips == 2


def test_clamps_at_both_bounds():
    st = AdaptiveHybridState(step=0.2, window_size=1)
    feed(st, [0.5] * 10, 1)
    assert st.alpha == AHE_ALPHA_MAX
    feed(st, [0.1], 1)                           # regression: flips and walks down
    feed(st, [0.1] * 10, 1)
    assert st.alpha == pytest.approx(AHE_ALPHA_MIN)
    assert AdaptiveHybridState(alpha=2.0).alpha == AHE_ALPHA_MAX


def test_empty_window_keeps_last_ratio():
    st = AdaptiveHybridState(window_size=2)
    feed(st, [0.7], 2)
    st.observe(0, 0)
    assert st.observe(0, 0)                      # no traffic: ratio stays 0.7, no flip
    assert st.last_hit_ratio == pytest.approx(0.7) and st.direction == 1.0


def test_window_mode_uses_hits_since_last_update():
    srv, _ = inproc(ahe_window=4)
    ks, ctl = srv.ks, srv.evictor.controller
    ks.hits, ks.misses = 9000, 1000              # history: 90% lifetime
    ctl.configure(AheSettings(window=4, feedback="lifetime"))
    ctl.configure(AheSettings(window=4, feedback="window"))   # re-anchors the window
    ks.hits += 30
    ks.misses += 70                              # this window: 30%
    for _ in range(4):
        ctl.on_evict(None, 0, 0)
    assert ctl.state.last_hit_ratio == pytest.approx(0.3)
    ks.hits += 60
    ks.misses += 40                              # next window: 60%
    for _ in range(4):
        ctl.on_evict(None, 0, 0)
    assert ctl.state.last_hit_ratio == pytest.approx(0.6)


def test_lifetime_mode_uses_cumulative_counters():
    srv, _ = inproc(ahe_window=4, ahe_feedback="lifetime")
    ks, ctl = srv.ks, srv.evictor.controller
    ks.hits, ks.misses = 9000, 1000
    ks.hits += 30
    ks.misses += 70
    for _ in range(4):
        ctl.on_evict(None, 0, 0)
    assert ctl.state.last_hit_ratio == pytest.approx(9030 / 10100)


def test_resetstat_does_not_produce_negative_window():
    srv, _ = inproc(ahe_window=2)
    ks, ctl = srv.ks, srv.evictor.controller
    ks.hits, ks.misses = 500, 500
    ctl.on_evict(None, 0, 0)
    ks.hits, ks.misses = 3, 1                    # CONFIG RESETSTAT, then traffic
    ctl.on_evict(None, 0, 0)
    assert ctl.state.last_hit_ratio == pytest.approx(0.75)
    ctl.state._check()


def test_config_knobs_reach_the_controller():
    srv, _ = inproc()
    cfg, ev = srv.config, srv.evictor
    cfg.set("ahe-step", "0.1")
    cfg.set("ahe-window", "8")
    assert ev.controller.state.step == 0.1 and ev.controller.state.window_size == 8
    cfg.set("ahe-alpha-init", "0.9")
    assert ev.controller.alpha == pytest.approx(0.9)
    ev.controller.state.alpha = 0.3
    cfg.set("ahe-controller", "spec")            # re-creating resets the state
    assert ev.controller.alpha == pytest.approx(0.9) and ev.controller.state.step == 0.1
    fields = dict(ev.info_fields())
    for name in ("ahe_alpha", "ahe_last_hit_ratio", "ahe_direction", "ahe_window_fill",
                 "ahe_controller", "ahe_feedback"):
        assert name in fields
    float(fields["ahe_alpha"])


def test_controller_registry_is_pluggable():
    calls = []

    class Fixed(SpecController):
        name = "fixed-test"

        def scores(self, db, slots, now_ms):
            return [len(db.keys[e]) for e in slots]  # evict the longest key names first

        def on_miss(self, key):
            calls.append(key)

    ahe.CONTROLLERS["fixed-test"] = Fixed
    try:
        srv, _ = inproc()
        ev = srv.evictor
        ev._set_controller("fixed-test")
        db = srv.ks.dbs[0]
        db.lookup_read(b"missing")
        assert calls == [b"missing"]              # installed as ks.miss_hook under AHE
        for i in range(200):
            db.set(b"k" * (1 + i % 20) + b"%d" % i, b"v")
        srv.maxmemory = srv.ks.used_memory - 1
        assert ev.make_room()
        assert srv.evictor.pool is not None
        srv.config.set("maxmemory-policy", "allkeys-lru")
        assert srv.ks.miss_hook is None
    finally:
        del ahe.CONTROLLERS["fixed-test"]


def test_optional_protocol_members_scope_and_counter_decay():
    seen = []

    class Scoped(SpecController):
        name = "scoped-test"
        counter_decay_minutes = 0               # no wall-clock decay under this one

        def set_scope(self, volatile):
            seen.append(volatile)

    ahe.CONTROLLERS["scoped-test"] = Scoped
    try:
        srv, clock = inproc("volatile-ahe", lfu_log_factor=0)
        ev = srv.evictor
        ev._set_controller("scoped-test")
        srv.config.set("maxmemory-policy", "allkeys-ahe")
        assert seen == [True, False]
        db = srv.ks.dbs[0]
        e = db.set(b"k", b"v")
        for _ in range(10):
            db.lookup_read(b"k")
        clock.advance(30 * 60_000)
        srv.ks.refresh_time()
        assert ev.object_freq(db, e) == 15          # decay 0 under this controller
        db.lookup_read(b"k")
        assert db.lfu[e] == 16
        srv.config.set("maxmemory-policy", "allkeys-lfu")  # back to lfu-decay-time 1
        assert ev.object_freq(db, e) == 16
        clock.advance(5 * 60_000)
        srv.ks.refresh_time()
        assert ev.object_freq(db, e) == 11
    finally:
        del ahe.CONTROLLERS["scoped-test"]


# ---- live server ----

def test_alpha_moves_in_live_server_under_eviction(make_server):
    import redis
    s = make_server(maxmemory="200kb", maxmemory_policy="allkeys-ahe", ahe_window=8,
                    ahe_controller="spec")
    r = redis.Redis(port=s.port, protocol=2, socket_timeout=10)
    rng = random.Random(5)
    hot = [b"hot:%d" % i for i in range(50)]
    p = r.pipeline(transaction=False)
    for i in range(6000):
        p.set(b"cold:%d" % i, b"x" * 50)
        p.get(rng.choice(hot))
        if i % 3 == 0:
            p.set(rng.choice(hot), b"y" * 50)
        if i % 500 == 499:
            p.execute()
    p.execute()
    info = r.info("memory")
    stats = r.info("stats")
    assert stats["evicted_keys"] > 1000
    assert info["ahe_updates"] > 10
    assert float(info["ahe_alpha"]) != 0.5 or info["ahe_direction_flips"] > 0
    assert 0.05 <= float(info["ahe_alpha"]) <= 0.95
    assert 0.0 <= float(info["ahe_last_hit_ratio"]) <= 1.0
    assert info["ahe_controller"] == "spec"
    r.close()


def test_info_shows_ahe_state_only_under_an_ahe_policy(make_server):
    import redis
    s = make_server(maxmemory_policy="allkeys-lru")
    r = redis.Redis(port=s.port, protocol=2)
    assert "ahe_alpha" not in r.info("memory")
    r.config_set("maxmemory-policy", "volatile-ahe")
    mem = r.info("memory")
    assert "ahe_alpha" in mem and "ahe_extra_memory" in mem
    r.config_set("maxmemory-policy", "noeviction")
    assert not any(k.startswith("ahe_") for k in r.info("memory"))
