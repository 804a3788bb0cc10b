"""Probation for AHE-adaptive (eviction/probation.py): the fingerprint ghost, the counter
that marks probation, the controller's admit / evict rules, and the live server's config,
INFO and hit rate on a stream of one-hit wonders."""

from __future__ import annotations

import hashlib
import random
import sys

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.eviction import probation as P
from ferrumkv_py.eviction.ahe import AheSettings
from ferrumkv_py.eviction.ahe_adaptive import AdaptiveController
from ferrumkv_py.eviction.scores import PROBATION_FIRST
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.values import LFU_INIT_VAL

from .score_reference import adaptive_score

NOW = 1_700_000_000_000


def keys(n, seed, tag=b"k"):
    rnd = random.Random(seed)
    return [tag + rnd.randbytes(12) for _ in range(n)]


def fixed_hash(key: bytes) -> int:
    """A 64-bit signed hash that does not change with PYTHONHASHSEED, so the ghost's
    bucket fill (and what a full bucket drops) is the same in every run."""
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little",
                          signed=True)


# ---- the ghost ----

def test_ghost_remembers_what_it_was_given_and_few_others():
    g = P.ProbationGhost(1_000)                  # 3,000 lanes in 750 buckets of four
    assert g.lanes == P.GHOST_LANES_PER_KEY * 1_000 and g.words == 750
    given, others = keys(600, 1), keys(20_000, 2, b"o")
    for k in given:                              # few enough that no bucket overflows
        g.add(fixed_hash(k))
    kept = sum(fixed_hash(k) in g for k in given) / len(given)
    assert kept > 0.99                           # a bucket drops only its fifth-last id
    fp = sum(fixed_hash(k) in g for k in others) / len(others)
    assert fp < 0.002                            # 15-bit fingerprints: ~ 4 / 32768 per probe


def test_ghost_bucket_is_a_fifo_of_four_with_tags():
    g = P.ProbationGhost(1)                      # GHOST_MIN_IDS lanes
    w = g.words
    # hashes in the same bucket (low 32 bits 0) with distinct fingerprints
    hs = [(fp << 32) for fp in (1, 2, 3, 4, 5)]
    for n, h in enumerate(hs):
        g.add(h, n % 2)
    assert g.lookup(hs[0]) == 0                  # pushed out by four newer ids
    assert [g.lookup(h) for h in hs[1:]] == [P.PROBATION_VICTIM, P.BLEND_VICTIM,
                                             P.PROBATION_VICTIM, P.BLEND_VICTIM]
    g.add(hs[2], 1)                              # the newest lane's tag wins
    assert g.lookup(hs[2]) == P.PROBATION_VICTIM
    assert g.lookup(hs[1]) == 0
    # a fingerprint of 0 is stored as 1 (0 marks an empty lane): it matches that one only
    z = P.ProbationGhost(1)
    assert z.lookup(0) == 0 and z.lookup(1 << 32) == 0
    z.add(0)
    assert z.lookup(0) == P.BLEND_VICTIM and z.lookup(1 << 32) == P.BLEND_VICTIM
    assert z.lookup(2 << 32) == 0
    assert g.words == w
    g.resize(1)
    assert not any(h in g for h in hs)          # a resize forgets everything


def test_ghost_lookup_matches_a_lane_by_lane_reference():
    rnd = random.Random(5)
    g = P.ProbationGhost(16)
    ref = [[] for _ in range(g.words)]           # newest first, (fingerprint, tag)
    for _ in range(3_000):
        h = rnd.getrandbits(64) - (1 << 63)
        if rnd.random() < 0.3:                   # collide on purpose: a known fingerprint
            h = (h & ~0xFFFF_FFFF) | rnd.getrandbits(32)
        if rnd.random() < 0.5:
            t = rnd.getrandbits(1)
            g.add(h, t)
            w = ((h & 0xFFFF_FFFF) * g.words) >> 32
            ref[w] = [(((h >> 32) & 0x7FFF) or 1, t)] + ref[w][:3]
        w = ((h & 0xFFFF_FFFF) * g.words) >> 32
        fp = ((h >> 32) & 0x7FFF) or 1
        want = next((P.PROBATION_VICTIM if t else P.BLEND_VICTIM
                     for f, t in ref[w] if f == fp), 0)
        assert g.lookup(h) == want


def test_ghost_memory_is_what_cpython_allocated_and_bounded():
    for pop in (0, 10, 1_000, 123_457):
        g = P.ProbationGhost(pop)
        assert g.memory_bytes() == sys.getsizeof(g._w)
        # GHOST_LANES_PER_KEY 16-bit lanes: 6 bytes per candidate key (+ header)
        assert g.memory_bytes() <= 2 * P.GHOST_LANES_PER_KEY * max(pop, P.GHOST_MIN_IDS) \
            + 8 + 100
    huge = P.ProbationGhost(10 ** 9)             # only the size is computed: no 4 GB
    assert huge.lanes == P.GHOST_MAX_IDS


def test_ghost_takes_negative_and_large_hashes():
    g = P.ProbationGhost(50)
    for h in (-1, -(2 ** 63), 2 ** 63 - 1, 0, 12345):
        g.add(h)
        assert h in g


# ---- scoring ----

def test_probation_score_reads_the_counter_as_init_and_leads_once_idle():
    t = 10_000.0
    base = adaptive_score(0.5, 500, LFU_INIT_VAL, None, t)
    # within the idle threshold a probationary key scores as a new key at LFU_INIT_VAL
    assert adaptive_score(0.5, 500, P.PROBATION_COUNTER, None, t, probation=True) == base
    # past it, it outscores any key not on probation, the longest idle first
    late = adaptive_score(0.5, 2_000, P.PROBATION_COUNTER, None, t, probation=True)
    later = adaptive_score(0.5, 9_000, P.PROBATION_COUNTER, None, t, probation=True)
    coldest = adaptive_score(0.5, 10 ** 9, 0, 1, t)
    assert coldest < late < later
    # probation off: a counter of 4 is just a counter
    assert adaptive_score(0.5, 2_000, P.PROBATION_COUNTER, None, t) < late


# ---- the controller ----

def make(probation=True, n=0):
    ks = Keyspace(databases=1, clock=ManualClock(NOW), rng=random.Random(7))
    ctl = AdaptiveController(ks, AheSettings(probation=probation))
    if probation:
        ks.admit_hook = ctl.admit                # what the Evictor installs
    db = ks.dbs[0]
    for i in range(n):
        db.add(b"fill:%d" % i, b"v")
    return ks, db, ctl


def test_new_keys_start_on_probation_and_a_touch_ends_it():
    from ferrumkv_py.eviction import lfu
    ks, db, ctl = make()
    ks.lfu_on = True
    # as the Evictor builds it with probation on: the first access jumps to PROBATION_END
    ks.lfu_touch = lfu.make_touch(10, 0, ks.rng.random, {P.PROBATION_COUNTER: P.PROBATION_END})
    s = db.add(b"new", b"v")
    assert db.lfu[s] == P.PROBATION_COUNTER
    assert db.lookup_read(b"new") == s
    assert db.lfu[s] == P.PROBATION_END          # p = 1 at or below LFU_INIT_VAL
    assert db.lookup_read(b"new") == s
    assert db.lfu[s] in (P.PROBATION_END, P.PROBATION_END + 1)   # Morris from there on


def test_victims_go_to_the_ghost_and_return_off_probation_with_a_boost():
    ks, db, ctl = make(n=100)
    s = db.find(b"fill:7")
    assert db.lfu[s] == P.PROBATION_COUNTER
    ctl.on_evict(db, s, NOW)
    db.unlink(s)
    assert ctl.probation_evicted == 1 and hash(b"fill:7") in ctl.ghost
    s = db.add(b"fill:7", b"v")                  # it came back: it skips probation
    assert db.lfu[s] == LFU_INIT_VAL + P.GHOST_RETURN_BOOST and ctl.ghost_returns == 1
    # a key evicted off probation enters the ghost too (but is not counted as probation's)
    t = db.find(b"fill:8")
    db.lfu[t] = 9
    ctl.on_evict(db, t, NOW)
    db.unlink(t)
    assert ctl.probation_evicted == 1 and hash(b"fill:8") in ctl.ghost
    assert db.lfu[db.add(b"fill:8", b"v")] == LFU_INIT_VAL + P.GHOST_RETURN_BOOST
    assert db.lfu[db.add(b"never-seen", b"v")] == P.PROBATION_COUNTER
    ctl._check()


def test_returns_are_counted_by_the_kind_of_victim():
    ks, db, ctl = make(n=100)
    s = db.find(b"fill:1")                       # a probation victim
    ctl.on_evict(db, s, NOW)
    db.unlink(s)
    t = db.find(b"fill:2")                       # a blend victim (off probation)
    db.lfu[t] = 9
    ctl.on_evict(db, t, NOW)
    db.unlink(t)
    assert (ctl._ev_prob, ctl._ev_blend) == (1, 1)
    db.add(b"fill:1", b"v")
    assert (ctl._back_prob, ctl._back_blend) == (1, 0)
    db.add(b"fill:2", b"v")
    assert (ctl._back_prob, ctl._back_blend) == (1, 1)


def test_the_switch_turns_probation_first_off_and_on_with_hysteresis():
    ks, db, ctl = make(n=10)
    t = 10_000.0
    ctl.turnover_ms = t
    s = db.find(b"fill:3")
    db.lru[s] = NOW - 2_000                      # on probation, idle 0.2 turnover
    strict = ctl.scores(db, [s], NOW)[0]
    assert strict > PROBATION_FIRST
    # probation victims come back 4 times as often per eviction as blend victims: off,
    # but not in the first RHO_WARMUP decisions (a cold cache's rho says nothing)
    for _ in range(P.RHO_WARMUP):
        ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend = \
            1000.0, 400.0, 400.0, 40.0
        ctl._switch()
        assert ctl.p_turnovers == P.PROBATION_IDLE_TURNOVERS
    ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend = 1000.0, 400.0, 400.0, 40.0
    ctl._switch()
    assert ctl.p_turnovers == P.PROBATION_LOOSE and ctl.probation_switches == 1
    k = P.RHO_KEEP
    assert (ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend) == \
        (1000.0 * k, 400.0 * k, 400.0 * k, 40.0 * k)     # the counts shrink
    loose = ctl.scores(db, [s], NOW)[0]
    assert loose < PROBATION_FIRST             # the blend alone scores it now
    assert loose == adaptive_score(ctl.alpha, 2_000, P.PROBATION_COUNTER, None, t,
                                   probation=True, idle_turnovers=P.PROBATION_LOOSE)
    # between RHO_ON and RHO_OFF nothing moves (hysteresis) ...
    ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend = 1000.0, 150.0, 400.0, 40.0
    ctl._switch()
    assert ctl.p_turnovers == P.PROBATION_LOOSE
    # ... below RHO_ON probation-first is back
    ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend = 1000.0, 50.0, 400.0, 40.0
    ctl._switch()
    assert ctl.p_turnovers == P.PROBATION_IDLE_TURNOVERS and ctl.probation_switches == 2
    # too little evidence (fewer than RHO_MIN_BACK returns of a kind): no move
    for bb, bp in ((0.0, 900.0), (P.RHO_MIN_BACK - 1, 900.0), (400.0, P.RHO_MIN_BACK - 1)):
        ctl._ev_prob, ctl._back_prob, ctl._ev_blend, ctl._back_blend = 1000.0, bp, 4000.0, bb
        ctl._switch()
        assert ctl.p_turnovers == P.PROBATION_IDLE_TURNOVERS
    assert ctl.probation_decisions == 6 + P.RHO_WARMUP and ctl.probation_off_decisions == 2
    ctl._check()


def test_loose_probation_victims_start_duels():
    """While probation-first is off the blend chose a probationary victim: its duel starts
    (while on, it starts none)."""
    started = {}
    for loose in (False, True):
        ks, db, ctl = make(n=50)
        ctl.turnover_ms = 10_000.0
        if loose:
            ctl.p_turnovers = P.PROBATION_LOOSE
        slots = [db.find(b"fill:%d" % i) for i in range(5)]
        for i, s in enumerate(slots):
            db.lru[s] = NOW - 1_000 * (i + 1)
        for s in slots[:4]:                      # frequency's pick differs from recency's
            db.lfu[s] = 2
        v = slots[4]                             # the idlest, on probation: recency's pick
        ctl.scores(db, slots, NOW)
        ctl.on_evict(db, v, NOW)
        started[loose] = ctl.duels
        ctl._check()
    assert started == {False: 0, True: 1}


def test_probation_off_leaves_counters_and_ghost_alone():
    ks, db, ctl = make(probation=False, n=10)
    assert ctl.ghost is None and ks.admit_hook is None
    assert all(db.lfu[db.find(b"fill:%d" % i)] == LFU_INIT_VAL for i in range(10))
    ring = ctl.extra_memory_bytes()
    ctl.configure(AheSettings(probation=True))
    assert ctl.ghost is not None
    assert ctl.extra_memory_bytes() == ring + ctl.ghost.memory_bytes()
    ctl._check()


# ---- the live server ----

def test_config_info_and_object_freq(make_server):
    import redis
    s = make_server(maxmemory="2mb", maxmemory_policy="allkeys-ahe")
    r = redis.Redis(port=s.port)
    try:
        assert r.config_get("ahe-probation") == {"ahe-probation": "yes"}
        r.set("fresh", "v")
        assert r.object("freq", "fresh") == P.PROBATION_COUNTER
        r.get("fresh")          # the first access ends probation a point above a new key
        assert r.object("freq", "fresh") == P.PROBATION_END == LFU_INIT_VAL + 1
        mem = r.info("memory")
        assert mem["ahe_probation"] == "yes"
        assert mem["ahe_probation_ghost_ids"] >= P.GHOST_MIN_IDS
        assert mem["ahe_probation_first"] == "yes"
        r.config_set("ahe-probation", "no")
        r.set("other", "v")
        assert r.object("freq", "other") == LFU_INIT_VAL
        r.get("other")          # the same counter as a key read once with probation on
        assert r.object("freq", "other") == P.PROBATION_END
        r.config_set("ahe-probation", "yes")
        r.set("third", "v")
        r.get("third")
        assert r.object("freq", "third") == P.PROBATION_END
        r.config_set("maxmemory-policy", "allkeys-lfu")   # Redis's increment: 4 -> 5
        r.execute_command("RESTORE", "cold", 0, r.dump("third"), "FREQ", P.PROBATION_COUNTER)
        r.get("cold")
        assert r.object("freq", "cold") == LFU_INIT_VAL
        r.config_set("maxmemory-policy", "allkeys-ahe")
        r.config_set("ahe-probation", "no")
        mem = r.info("memory")
        assert mem["ahe_probation"] == "no" and mem["ahe_probation_ghost_ids"] == 0
        with pytest.raises(redis.ResponseError, match="argument must be 'yes' or 'no'"):
            r.config_set("ahe-probation", "maybe")
        assert r.config_get("ahe-probation") == {"ahe-probation": "no"}
    finally:
        r.close()


def _hit_rate(make_server, probation: str) -> tuple[float, float, dict]:
    """A hot set of 1,500 keys (30 % of the reads) read again and again (the cache holds
    about 2,000 keys),
    interleaved with a stream of keys read once: the one-hit wonders should leave first.
    Returns the hit rate, the share of one-hit keys among the keys held at the end, and
    INFO memory."""
    import redis
    s = make_server(maxmemory="600kb", maxmemory_policy="allkeys-ahe",
                    ahe_probation=probation)
    r = redis.Redis(port=s.port)
    rnd = random.Random(11)
    hits = total = 0
    value = b"x" * 200
    try:
        for step in range(120):
            p = r.pipeline(transaction=False)
            batch = []
            for _ in range(100):
                key = ("hot:%d" % rnd.randrange(1_500) if rnd.random() < 0.3
                       else "once:%d:%d" % (step, rnd.randrange(10 ** 9)))
                batch.append(key)
                p.get(key)
            got = p.execute()
            p = r.pipeline(transaction=False)
            for key, v in zip(batch, got):
                total += 1
                if v is None:
                    p.set(key, value)
                else:
                    hits += 1
            p.execute()
        held = list(r.scan_iter(count=1_000))
        once = sum(k.startswith(b"once:") for k in held) / len(held)
        return hits / total, once, r.info("memory")
    finally:
        r.close()


def test_one_hit_wonders_leave_first_on_the_live_server(make_server):
    on, once_on, mem_on = _hit_rate(make_server, "yes")
    off, once_off, _ = _hit_rate(make_server, "no")
    print("hit rate on %.4f off %.4f; one-hit keys held on %.3f off %.3f"
          % (on, off, once_on, once_off))
    assert mem_on["ahe_probation_evicted"] > 1_000
    assert on > off + 0.01, (on, off)            # measured: 0.118 against 0.100
    assert once_on < once_off - 0.05, (once_on, once_off)    # measured: 0.40 against 0.51


def test_probation_run_sets_the_same_lanes_as_add():
    """The compiled ghost add (kernel.probation_run, runs of probation victims) and
    ProbationGhost.add leave the same words, batch boundaries and extreme hashes included;
    an add with tag 0 reads back as a blend victim."""
    from array import array
    from ferrumkv_py.eviction.kernel import probation_run
    one, many = P.ProbationGhost(40), P.ProbationGhost(40)
    rnd = random.Random(3)
    hashes = [hash(rnd.randbytes(9)) for _ in range(500)] + [0, -1, 1 << 32, -(1 << 63)]
    for h in hashes:
        one.add(h, 1)
    lfu = array("B", [P.PROBATION_COUNTER])
    no_duels = array("H", [0])
    i = 0
    for size in (1, 7, 79, 80, 81, 200, 56):
        got = probation_run(lfu, array("q", [0] * size), 0, size, array("q", hashes[i:i + size]),
                            size, many._w, many.words, no_duels, 0, array("I", [0]),
                            array("I", [0]))
        assert got == size
        i += size
    assert i == len(hashes)
    assert one._w == many._w
    zero = P.ProbationGhost(40)
    for h in hashes[:3]:
        zero.add(h, 0)
    assert all(zero.lookup(h) == P.BLEND_VICTIM for h in hashes[:3])


def _twin(seed):
    """A keyspace of 300 keys, a third on probation, with an adaptive controller whose
    turnover is measured and that has duels going."""
    ks, db, ctl = make(n=0)
    rnd = random.Random(seed)
    for i in range(300):
        s = db.add(b"k%d" % i, b"v")
        db.set_access(s, NOW - rnd.randrange(1, 50_000),
                      P.PROBATION_COUNTER if i % 3 == 0 else rnd.randrange(5, 40))
    ctl.turnover_ms = 20_000.0
    ctl._block(NOW)                               # sizes the ring and the ghost
    return ks, db, ctl


@pytest.mark.parametrize("block_left, later_picks", [(None, False), (40, False), (None, True),
                                                     (3, True)])
def test_evicted_batch_leaves_the_controller_as_evicted_one_by_one(block_left, later_picks):
    """The batch (runs of probation victims compiled, kernel.probation_run) against
    evicted() per victim.  ``block_left``: evictions left in the turnover block, so that
    the block ends inside the batch; ``later_picks``: every victim's picks are later
    victims, so that duels start on keys the batch then evicts (probation victims that
    are duel keys stop the compiled run)."""
    from array import array
    from ferrumkv_py.eviction.ahe_adaptive import EVICTIONS_PER_BLOCK
    from ferrumkv_py.eviction.kernel_abi import N_PICK_COLS
    rnd = random.Random(9)
    slots = rnd.sample(range(300), 120)
    picks = array("q", [0] * (120 * N_PICK_COLS))
    for i in range(120):                          # picks: another key each, or none
        if later_picks and i < 110:
            r, f = rnd.sample(slots[i + 1:], 2)
        else:
            r, f = rnd.sample(range(300), 2)
        row = i * N_PICK_COLS
        if rnd.random() < 0.8:
            picks[row:row + N_PICK_COLS] = array("q", [r, 40_000, 9, f, 10, 5])
        else:
            picks[row:row + N_PICK_COLS] = array("q", [-1, -1, 256, -1, -1, 256])
    ks1, db1, one = _twin(4)
    ks2, db2, batch = _twin(4)
    if block_left is not None:
        one._blk_n = batch._blk_n = EVICTIONS_PER_BLOCK - block_left
    duel_keys = []
    real = batch._duel_key_evicted
    batch._duel_key_evicted = lambda db, key, h, last: duel_keys.append(key) or \
        real(db, key, h, last)
    on_probation = sum(db1.lfu[s] == P.PROBATION_COUNTER for s in slots)
    for i, s in enumerate(slots):
        row = i * N_PICK_COLS
        rs = picks[row]
        one.evicted(db1, s, NOW, db1 if rs >= 0 else None, rs, picks[row + 1],
                    picks[row + 2], db1, picks[row + 3], picks[row + 4], picks[row + 5])
    batch.evicted_batch(db2, array("q", slots), len(slots), picks, NOW)
    for name in ("probation_evicted", "duels", "active", "theta", "_blk_n", "turnover_ms",
                 "recency_wins", "frequency_wins", "undecided", "ghost_entries"):
        assert getattr(one, name) == getattr(batch, name), name
    assert one.probation_evicted == on_probation > 20 and one.duels > 10
    assert one.ghost._w == batch.ghost._w and one.ghost.added == batch.ghost.added
    assert list(one._vh) == list(batch._vh) and list(one._state) == list(batch._state)
    if later_picks:       # probation victims met as duel keys, in Python
        assert sum(db2.lfu[db2.find(k)] == P.PROBATION_COUNTER for k in duel_keys) >= 3
    one._check()
    batch._check()
