"""The compiled victim selection (eviction/kernel.py) against a reference written with the
reference scorers (score_reference.py, the AHE controllers' scores()) and the Python
EvictionPool: the same seeded draws must give the same victims, expired keys and pool; and
the Evictor's compiled path (eviction/compiled.py) keeps maxmemory and every invariant."""

from __future__ import annotations

import random
from array import array

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.eviction import kernel as K
from ferrumkv_py.eviction import scores as S
from ferrumkv_py.eviction.ahe import AheSettings, SpecController
from ferrumkv_py.eviction.pool import EVPOOL_SIZE, EvictionPool
from ferrumkv_py.keyspace import Keyspace
from ferrumkv_py.memory import EXPIRE_COST, entry_cost
from ferrumkv_py.slots import SAMPLE_MAX_TRIES

from .score_reference import lfu_scores, lru_scores, ttl_scores

NOW = 1_700_000_000_000
MASK64 = (1 << 64) - 1


def xs_draw(state: list, n: int) -> int:
    """kernel._draw in Python: xorshift64*, the high 32 bits scaled to [0, n)."""
    x = state[0]
    x ^= x >> 12
    x ^= (x << 25) & MASK64
    x ^= x >> 27
    state[0] = x
    r = ((x * 0x2545F4914F6CDD1D) & MASK64) >> 32
    return (r * n) >> 32


def reference(db, score, samples, vol, live, want, now, state, pool, taken):
    """The kernel's loop with the reference scorers and pool.py's EvictionPool, whose items
    are (slot, access time when scored)."""
    victims, expired = [], []
    keys, lru, exp = db.keys, db.lru, db.exp
    size = len(db.vslots) if vol else len(keys)

    def usable(s):
        return keys[s] is not None and s not in taken

    while len(victims) < want and live > 0:
        found = None
        for _round in range(K.EVICT_MAX_EMPTY_ROUNDS):
            n = min(samples, live)
            tries = n * SAMPLE_MAX_TRIES
            while n > 0 and tries > 0 and live > 0:
                tries -= 1
                j = xs_draw(state, size)
                s = db.vslots[j] if vol else j
                if not usable(s):
                    continue
                n -= 1
                if 0 < exp[s] < now:
                    expired.append(s)
                    taken.add(s)
                    live -= 1
                    continue
                pool.offer(score(db, [s], now)[0], s, lru[s])
            while len(pool):
                s, stamp = pool.pop_best()
                if not usable(s) or lru[s] != stamp or (vol and not exp[s]):
                    continue
                if 0 < exp[s] < now:
                    expired.append(s)
                    taken.add(s)
                    live -= 1
                    continue
                found = s
                break
            if found is not None or live <= 0:
                break
        if found is None:
            break
        victims.append(found)
        taken.add(found)
        live -= 1
    return victims, expired


def make_db(seed: int, n: int = 3000, vol_share: float = 0.5):
    rng = random.Random(seed)
    ks = Keyspace(databases=1, clock=ManualClock(NOW), rng=random.Random(seed))
    db = ks.dbs[0]
    for i in range(n):
        s = db.add(b"k%d" % i, b"v" * rng.randrange(1, 30))
        db.set_access(s, NOW - rng.randrange(0, 3_600_000), rng.randrange(0, 256))
        if rng.random() < vol_share:
            # a few already past their deadline, some within AHE's 30 s horizon
            db.set_expire(s, NOW + rng.choice((-5, 1, 20_000, 3_600_000)) +
                          rng.randrange(1, 9))
    for i in range(0, n, 7):                 # holes
        db.delete(b"k%d" % i)
    return ks, db


SCORERS = {
    K.MODE_LRU: lambda ctl: lru_scores,
    K.MODE_TTL: lambda ctl: ttl_scores,
    K.MODE_LFU: lambda ctl: (lambda db, slots, now: lfu_scores(db, slots, now, 1)),
    K.MODE_EPS: lambda ctl: ctl.scores,
}


@pytest.mark.parametrize("mode", sorted(SCORERS))
@pytest.mark.parametrize("vol", [False, True])
@pytest.mark.parametrize("seed", [1, 2])
def test_kernel_victims_match_the_reference(mode, vol, seed):
    if mode == K.MODE_TTL and not vol:
        pytest.skip("volatile-ttl only")
    ks, db = make_db(seed)
    now = NOW
    ctl = SpecController(ks, AheSettings())
    fp = array("d", [0.0] * K.N_FPARAMS)
    fp[:4] = array("d", S.eps_params(ctl.state.alpha))
    state0 = random.Random(seed).getrandbits(64) | 1
    rng = array("Q", [state0])
    ref_state = [state0]
    pool = (array("d", [0.0] * EVPOOL_SIZE), array("q", [0] * EVPOOL_SIZE),
            array("q", [0] * EVPOOL_SIZE))
    ref_pool = EvictionPool()
    taken: set = set()
    out = [array("q", [0] * 64) for _ in range(4)]
    picks = array("q", [0] * (64 * K.N_PICK_COLS))
    live = db.volatile if vol else len(db)
    pool_n = 0
    for want in (1, 7, 30):
        ip = array("q", [0] * K.N_IPARAMS)
        ip[K.I_NOW], ip[K.I_SAMPLES], ip[K.I_VOL], ip[K.I_LIVE] = now, 5, int(vol), live
        ip[K.I_WANT], ip[K.I_DECAY], ip[K.I_POOL_N] = want, 1, pool_n
        K.pick_victims(mode, ip, fp, db.lru, db.lfu, db.exp, db.vslots, *pool, rng,
                       *out, picks)
        nv, ne, pool_n = ip[K.I_VICTIMS], ip[K.I_EXPIRED], ip[K.I_POOL_N]
        got_v, got_x = list(out[0][:nv]), list(out[2][:ne])
        # Python undoes the marks (as compiled.py does before unlinking): keep the keys,
        # so both sides go on from the same tables
        for i in range(nv):
            db.lru[got_v[i]] = out[1][i]
        for i in range(ne):
            db.lru[got_x[i]] = out[3][i]
        want_v, want_x = reference(db, SCORERS[mode](ctl), 5, vol, live, want, now,
                                   ref_state, ref_pool, taken)
        assert (got_v, got_x) == (want_v, want_x)
        assert rng[0] == ref_state[0]
        assert list(pool[0][:pool_n]) == ref_pool.scores
        assert [(s, t) for s, t in zip(pool[1][:pool_n], pool[2][:pool_n])] == ref_pool.items
        assert nv == want                    # plenty of candidates
        # the victims are taken: mark them as the kernel did so the next call skips them
        for s in got_v + got_x:
            db.lru[s] = -2 - db.lru[s]
        live -= nv + ne
    # lru-like policies choose old keys: the victims are far older than the average key
    if mode == K.MODE_LRU:
        ages = [now - (-2 - db.lru[s]) for s in taken if db.lru[s] < -1]
        mean_age = sum(now - db.lru[s] for _, s in db.items() if db.lru[s] >= 0) / len(db)
        assert sum(ages) / len(ages) > 1.3 * mean_age


@pytest.mark.parametrize("probation", [False, True, "loose"])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_adaptive_picks_are_the_controllers_own(probation, seed):
    """MODE_ADAPT: the scores and the two picks handed to on_evict equal what the adaptive
    controller's scores() finds among the same candidates, with probation (a third of the
    keys at PROBATION_COUNTER) and without."""
    from ferrumkv_py.eviction.ahe_adaptive import AdaptiveController
    from .score_reference import adaptive_score
    from ferrumkv_py.eviction.probation import PROBATION_COUNTER, PROBATION_IDLE_TURNOVERS
    ks, db = make_db(seed, vol_share=0.0)
    if probation:
        for s in range(0, len(db.keys), 3):
            if db.keys[s] is not None:
                db.lfu[s] = PROBATION_COUNTER
    ctl = AdaptiveController(ks, AheSettings(probation=bool(probation)))
    ctl.turnover_ms = 50_000.0
    idle_turnovers = PROBATION_IDLE_TURNOVERS
    if probation == "loose":                 # probation-first switched off (probation.py)
        from ferrumkv_py.eviction.probation import PROBATION_LOOSE
        ctl.p_turnovers = idle_turnovers = PROBATION_LOOSE
    t, a = ctl.turnover_ms, ctl.alpha
    fp = array("d", ctl.params(t))
    state0 = 99
    ip = array("q", [0] * K.N_IPARAMS)
    ip[K.I_NOW], ip[K.I_SAMPLES], ip[K.I_LIVE], ip[K.I_WANT] = NOW, 5, len(db), 1
    pool = (array("d", [0.0] * EVPOOL_SIZE), array("q", [0] * EVPOOL_SIZE),
            array("q", [0] * EVPOOL_SIZE))
    out = [array("q", [0] * 8) for _ in range(4)]
    picks = array("q", [0] * (8 * K.N_PICK_COLS))
    K.pick_victims(K.MODE_ADAPT, ip, fp, db.lru, db.lfu, db.exp, db.vslots, *pool,
                   array("Q", [state0]), *out, picks)
    victim = out[0][0]
    db.lru[victim] = out[1][0]
    # the same draws through the controller's own scores()
    st = [state0]
    slots = []
    while len(slots) < 5:
        s = xs_draw(st, len(db.keys))
        if db.keys[s] is not None:
            slots.append(s)
    scores = ctl.scores(db, slots, NOW)
    assert list(pool[0][:ip[K.I_POOL_N]]) == sorted(scores)[:-1]
    assert victim == slots[scores.index(max(scores))]
    (rdb, rs), (fdb, fs) = ctl._rk, ctl._fk
    assert list(picks[:K.N_PICK_COLS]) == [rs, ctl._ridle, ctl._rcnt, fs, ctl._fidle,
                                          ctl._fcnt]
    if probation:
        # the reference scorer (ahe_adaptive.adaptive_score) gives the same scores
        ref = [adaptive_score(a, NOW - db.lru[x], db.lfu[x], None, t, probation=True,
                              idle_turnovers=idle_turnovers) for x in slots]
        assert ref == pytest.approx(scores, rel=1e-12)
    if probation:       # the sampled keys on probation and idle past the threshold lead
        late = [x for x in slots if db.lfu[x] == PROBATION_COUNTER
                and NOW - db.lru[x] > idle_turnovers * t]
        if late:
            assert db.lfu[victim] == PROBATION_COUNTER
            assert victim == max(late, key=lambda x: NOW - db.lru[x])


def _server(policy, kernel=True):
    from ferrumkv_py.config import Config
    from ferrumkv_py.server import Server
    config = Config()
    config.set("maxmemory-policy", policy)
    clock = ManualClock(NOW)
    srv = Server(config, clock=clock, rng=random.Random(3))
    srv.evictor.use_kernel = kernel
    return srv, clock


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "volatile-ttl",
                                    "allkeys-ahe", "volatile-lru"])
def test_compiled_path_holds_maxmemory_and_hits_like_the_python_sampler(policy):
    """The same read-through run under the compiled path and the Python sampler: maxmemory
    held after every write, invariants intact, hit ratios within a point of each other."""
    ratios = []
    for kernel in (True, False):
        srv, clock = _server(policy, kernel)
        ks, ev, db = srv.ks, srv.evictor, srv.ks.dbs[0]
        rng = random.Random(11)
        for i in range(2000):
            s = db.set(b"k%d" % i, b"x" * 40)
            db.set_expire(s, NOW + 10 ** 9 + i)
        srv.config.set("maxmemory", str(ks.used_memory))
        assert (ev.compiled is not None) == kernel
        hits = 0
        for n in range(30_000):
            if n % 8 == 0:
                clock.advance(1)
                ks.refresh_time()
            k = b"k%d" % (rng.randrange(2500) if rng.random() < 0.7 else rng.randrange(40_000))
            if db.lookup_read(k) is not None:
                hits += 1
                continue
            if ks.used_memory > srv.room_limit:
                assert ev.make_room()
            s = db.set(k, b"x" * 40)
            db.set_expire(s, ks.now_ms + 10 ** 9)
            # only this write can overshoot
            assert ks.used_memory <= srv.maxmemory + entry_cost(k, b"x" * 40) + EXPIRE_COST
        ks._check()
        assert ks.evicted_keys > 3000
        if kernel:
            assert ev.compiled.calls > 0
            assert dict(ev.info_fields())["eviction_kernel_calls"] == ev.compiled.calls
        ratios.append(hits / 30_000)
    assert abs(ratios[0] - ratios[1]) < 0.01, ratios


def test_pool_is_emptied_when_slots_move_or_tables_change():
    srv, clock = _server("allkeys-lru")
    ks, ev, db = srv.ks, srv.evictor, srv.ks.dbs[0]
    for i in range(3000):
        db.set(b"k%d" % i, b"x" * 40)
    srv.config.set("maxmemory", str(ks.used_memory))
    db.set(b"new", b"x" * 400)
    assert ev.make_room() and ev.compiled.pool_n > 0
    for i in range(0, 3000, 3):
        db.delete(b"k%d" % i)
    for i in range(1, 3000, 3):
        db.delete(b"k%d" % i)
    assert ks.maintain(10_000) > 0            # slots moved: the pool's slots are stale
    srv.maxmemory = ks.used_memory - 500
    assert ev.make_room()
    ks._check()
    assert ks.used_memory <= srv.maxmemory


def test_kernel_stamp_covers_every_module_it_freezes():
    """numba's cache watches kernel.py alone: the stamp that flushes a stale kernel must
    hash every module the kernels read functions or constants from (kernel.py's imports
    from this package), and the kernels loaded now were built from these sources."""
    import ast
    import importlib
    tree = ast.parse(open(K.__file__).read())
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = "ferrumkv_py" if node.level == 2 else "ferrumkv_py.eviction"
            if node.module:
                imported.add(base + "." + node.module)
            else:
                imported.update(base + "." + a.name for a in node.names)
    frozen = {m.__name__ for m in K.FROZEN_MODULES}
    assert imported and imported <= frozen, imported - frozen
    for name in frozen:
        assert importlib.import_module(name).__file__
    assert K._built_stamp() == K.SOURCE_STAMP
    # the functions compiled from other modules are all covered: scores.py whole, and
    # lfu.decayed (the one function taken from elsewhere)
    outside = {f.py_func.__module__ + "." + f.py_func.__name__ for f in vars(K).values()
               if hasattr(f, "py_func") and f.py_func.__module__ != K.__name__
               and f.py_func.__module__ != S.__name__}
    assert outside == {"ferrumkv_py.eviction.lfu.decayed"}
    # a constant of a frozen module moves the stamp
    old = K.kernel_abi.EVICT_MAX_EMPTY_ROUNDS
    try:
        K.kernel_abi.EVICT_MAX_EMPTY_ROUNDS = old + 1
        assert K._source_stamp() != K.SOURCE_STAMP
    finally:
        K.kernel_abi.EVICT_MAX_EMPTY_ROUNDS = old
    assert K._source_stamp() == K.SOURCE_STAMP


def test_scores_are_leaves_the_kernel_can_compile():
    """Each function of scores.py calls no other plain function (numba compiles them one
    by one and cannot call an uncompiled one); kernel.py compiles every score."""
    import inspect
    funcs = {n for n, f in vars(S).items()
             if inspect.isfunction(f) and f.__module__ == S.__name__}
    for name in funcs:
        called = set(getattr(S, name).__code__.co_names) & funcs
        assert not called, (name, called)
    compiled = {getattr(f, "py_func", None) for f in vars(K).values()}
    kernel_side = {"lru_score", "ttl_score", "lfu_score", "eps_params_of", "eps_score",
                   "adapt_params_of", "adaptive_score", "recency_pick",
                   "frequency_pick"}
    assert {getattr(S, n) for n in kernel_side} <= compiled
    assert funcs - kernel_side == {"eps_params", "adapt_params"}     # built in Python
