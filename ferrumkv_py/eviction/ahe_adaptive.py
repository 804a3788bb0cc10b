"""AHE-adaptive (``ahe-controller adaptive``): the AHE score on scales that do not depend on
the request rate, steered by duels between recency's and frequency's choices.

It keeps the contract of the design as written (``ahe.py``: one policy, a blend of recency,
frequency and TTL urgency, ``ahe_alpha`` / ``ahe_last_hit_ratio`` in INFO, O(samples) per
eviction) and changes what the terms are measured in and what moves alpha.  The simulator
study behind every constant: ``docs/ahe-adaptive.md`` (``research/evsim_ahe/``).

Score (higher = evicted first)
------------------------------
::

    T         turnover time: candidate keys x EWMA(ms per eviction)  (ms a cache's worth of
              evictions takes; before the first measurement, EWMA of the sampled idle times)
    recency   = idle_ms / T
    rarity    = POINT_WEIGHT * (255 - counter)       counter: Morris counter, NOT decayed by
                                                     wall time (see "Counter decay")
    urgency   = 1 - ttl_left_ms / T  when a TTL ends within T, else 0
    score     = alpha * recency + (1 - alpha) * rarity + urgency * (alpha + (1-alpha) * W)

The score's code is ``scores.adaptive_score`` and its parameters ``scores.adapt_params``
(W is POINT_WEIGHT there), the one home the kernel, the sampler and :meth:`scores` share.
Both terms are in units that scale with the traffic: at 50x the request rate idle times and T
both shrink 50x, so the same stream gets the same choices.  The blend is an exchange rate:
one counter point is worth ``W * (1 - alpha) / alpha`` turnovers of idle time, i.e. the
blend is LFU whose counters age by one point per that many turnovers.  alpha 0.05 -> a point
is 76 turnovers (LFU with a recency tie-break); alpha 0.95 -> 0.21 turnover (close to LRU).

Worked example (alpha 0.5, W 4, T = 20 s)::

    key  idle  counter  TTL left  recency  rarity  urgency  score
    a    40 s  5        none      2.0      1000    0        1.0 + 500           = 501.0
    b    1 s   6        none      0.05     996     0        0.025 + 498         = 498.0
    c    2 s   5        5 s       0.1      1000    0.75     0.05 + 500 + 1.875  = 501.9 (*)

    (*) evicted; its urgency counts 0.75 * (0.5 + 0.5 * 4) = 1.875 (a quarter of T left)

Controller: recency-versus-frequency duels
------------------------------------------
At each eviction the controller looks at the candidates it scored last (plus the victim) and
asks which key recency alone would evict (largest idle, ties: smaller counter) and which
frequency alone would (smallest counter, ties: larger idle).  When they differ and the victim
is one of them, a *duel* starts: the victim becomes a ghost (its key hash is remembered), the
other pick stays cached and its last-access time is noted.  Whichever of the two keys is
referenced first was the wrong one to evict (Belady's rule on that pair)::

    victim's key read again (a miss, ``on_miss``) while the other was not touched
        -> the victim's term was wrong
    the other key touched first (its ``lru`` changed; seen at the victim's return, at the
        other key's own eviction, or when the duel's ring slot is reused)
        -> the victim's term was right
    neither within the ring's horizon -> no information

The winning term pulls ``logit(alpha)`` by ``step`` toward itself, clamped to
[logit 0.05, logit 0.95].  Every update is driven by evictions and reads, never by wall time.

Step size: ``step = DUEL_STEP_BUDGET / ring slots`` (at most STEP_MAX).  A burst, scan or
phase of a given length *relative to the cache* decides a number of duels proportional to
the ring (which is proportional to the cache), so with this step alpha travels the same
distance in it at any cache size: 0.04 per duel at 20k keys, 0.8 at 1,000 keys.  (A fixed
step of 0.06 let alpha cross the range in a burst at C = 10k but not at C = 1,000.)

Ghost memory: a ring of ``keys // GHOST_FRACTION`` duels (GHOST_MIN..GHOST_MAX), preallocated
as array columns -- victim hash, kept pick's hash and its access time (32-bit each: a hash
collision can at worst mis-score one duel, and the time is only compared for equality), a
state byte, the kept pick's database id byte and a list pointer to its key (a cached key,
counted already) --
plus an open-addressing index from hash to slot (linear probing in an ``array('H')`` of at
least TABLE_LOAD cells per slot, so load <= 1/2, backward-shift deletion).  About 29-37
bytes per slot (1.5-1.9 per cached key) plus 456 bytes of object headers; it does not grow
with duels.  ``extra_memory_bytes()`` returns exactly what CPython allocated for it (the
tests compare it with ``sys.getsizeof``), counted against maxmemory.  The former dict of
Python ints cost 40 bytes per slot plus ~260 per live duel (7.1 % of a 1,000-key cache).
No per-key memory is added.  Counter decay: the Morris counter must not decay by wall time
here (the blend ages it, in turnovers): ``counter_decay_minutes = 0`` asks the Evictor for a
touch hook without decay (``lfu-decay-time`` stays with the lfu policies).

Probation (``ahe-probation yes``, the default)
----------------------------------------------
New keys are on probation until their first access; a probationary key idle for more than
PROBATION_IDLE_TURNOVERS of a turnover is evicted before any other, and every victim is
remembered in a ghost (two rotating Bloom filters) so that, if it comes back soon, it
starts off probation with a few counter points more than a new key.  The flag is a counter value (PROBATION_COUNTER, one below LFU_INIT_VAL) that
scores read as LFU_INIT_VAL; ``probation.py`` has the rule, its memory and the numbers.

Complexity: ``scores`` O(len(entries)) (it also finds the two picks);
``on_evict`` and ``on_miss`` O(1) on average (index probes at load <= 1/2); memory
O(ring), at most ``max_extra_memory_bytes()`` (under 600 KB).
"""

from __future__ import annotations

import math
from array import array
from itertools import islice

from .. import memory
from ..lazy import LazyModule
from .ahe import AHE_ALPHA_MAX, AHE_ALPHA_MIN, CONTROLLERS, AheSettings, alpha_leaning
from .kernel_abi import N_PICK_COLS, NO_PICK_COUNT
from .probation import (GHOST_RETURN_BOOST, PROBATION_COUNTER, PROBATION_IDLE_TURNOVERS,
                        PROBATION_LOOSE, PROBATION_VICTIM, RHO_KEEP, RHO_MIN_BACK, RHO_OFF,
                        RHO_ON, RHO_WARMUP, ProbationGhost)
from .scores import (MIN_TURNOVER_MS, AdaptParams, adapt_params, adaptive_score,
                     frequency_pick, recency_pick)
from ..values import LFU_INIT_VAL

DUEL_STEP_BUDGET = 40.0           # logit(alpha) step per decided duel = this / ring slots
STEP_MAX = 1.0                    # ... at most (rings under 40 slots: caches under 800 keys)
GHOST_FRACTION = 20               # duel ring slots = candidate keys // this
GHOST_MIN = 16                    # ring slots, lower bound (binds under 320 keys)
GHOST_MAX = 16_384                # ring slots, upper bound (< 600 KB of ghosts)
GHOST_RESIZE_FACTOR = 1.25        # resize the ring only when the wanted size moved this much
EVICTIONS_PER_BLOCK = 1024        # evictions per turnover / hit-ratio measurement
RATE_EWMA_WEIGHT = 0.25           # weight of the newest block in the ms-per-eviction EWMA
IDLE_EWMA_WEIGHT = 1.0 / 64       # weight per scored batch in the fallback idle EWMA
HASH_MASK = 0xFFFF_FFFF           # ghosts keep 32-bit key hashes and 32-bit access times
TABLE_LOAD = 4                    # index cells >= TABLE_LOAD x ring slots (load <= 1/2)
# Bytes, counted exactly as CPython lays them out (tests check them against sys.getsizeof):
# per ring slot three array('I') cells (victim hash, kept pick's hash, its access time), an
# array('b') state byte, an array('B') database id and a list pointer (the kept pick's key:
# a cached key, already counted); per index cell an array('H') cell; per array / list
# object its header.
RING_SLOT_BYTES = 3 * 4 + 1 + 1 + memory.LIST_SLOT
TABLE_CELL_BYTES = 2
ARRAY_OBJ = 80                    # sys.getsizeof(array.array('I')) on CPython 3.11
LIST_OBJ = 56                     # sys.getsizeof([])
RING_OBJ_BYTES = 6 * ARRAY_OBJ + LIST_OBJ     # _vh, _ah, _alru, _state, _adb, _tab; _alt

_NO_PICK = (-1, NO_PICK_COUNT, -1, NO_PICK_COUNT)   # idle, counter, idle, counter

_K = LazyModule("ferrumkv_py.eviction.kernel")   # numba: loaded when a policy evicts

THETA_MIN = math.log(AHE_ALPHA_MIN / (1.0 - AHE_ALPHA_MIN))
THETA_MAX = math.log(AHE_ALPHA_MAX / (1.0 - AHE_ALPHA_MAX))


def _logit(alpha: float) -> float:
    alpha = min(max(alpha, AHE_ALPHA_MIN), AHE_ALPHA_MAX)
    return math.log(alpha / (1.0 - alpha))


class AdaptiveController:
    """AHE with rate-free terms and a duel controller (see the module docstring)."""

    name = "adaptive"
    counter_decay_minutes = 0     # the keyspace's Morris counter must not decay by wall time

    def __init__(self, ks, settings: AheSettings):
        self.ks = ks
        self.settings = settings
        self.volatile = False            # candidates are the keys with a TTL (volatile-ahe)
        self.theta = _logit(settings.alpha_init)
        self.alpha = 1.0 / (1.0 + math.exp(-self.theta))
        self.direction = 1               # sign of alpha's last move (+1 = toward recency)
        self.turnover_ms = None          # T once measured
        self.idle_ewma_ms = None         # fallback for T
        self.ms_per_eviction = None
        self.last_hit_ratio = 0.0
        self._blk_start_ms = None
        self._blk_n = 0
        self._blk_hits = ks.hits
        self._blk_misses = ks.misses
        # recency's and frequency's picks among the entries scored since the last eviction
        self._rk = self._fk = None
        self._ridle, self._rcnt, self._fidle, self._fcnt = _NO_PICK
        # duel ring (see "Ghost memory"): _state 0 free / 1 the victim was recency's pick /
        # 2 frequency's; _vh, _ah the victim's and the kept pick's 32-bit key hashes; _alt the
        # kept pick's Entry (None once it became a ghost too); _alru its 32-bit lru at the
        # start; _tab the open-addressing index hash -> slot * 2 + side + 1 (0 = empty)
        self.cap = 0
        self.step = 0.0
        # probation (probation.py): the ghost of evicted keys, or None = off
        self.ghost = None
        self.probation_evicted = 0       # victims evicted while on probation
        self.ghost_returns = 0           # new keys found in the ghost (no probation)
        # probation-first on (PROBATION_IDLE_TURNOVERS) or off (PROBATION_LOOSE), switched
        # by how often each kind of victim comes back (probation.py, "The switch"); the
        # counts shrink by RHO_KEEP at every decision (one per turnover)
        self.p_turnovers = PROBATION_IDLE_TURNOVERS
        self.probation_switches = 0
        self.probation_decisions = 0     # switch decisions, and how many left it off
        self.probation_off_decisions = 0
        self._ev_blend = self._ev_prob = 0.0     # victims of each kind
        self._back_blend = self._back_prob = 0.0  # ... found in the ghost when re-inserted
        self._switch_blocks = 0                   # blocks since the last decision
        self._switch_decisions = 0                # decisions since the ghost started
        self._resize(GHOST_MIN)
        self.active = 0
        self.duels = 0
        self.recency_wins = 0
        self.frequency_wins = 0
        self.undecided = 0
        self._set_probation(settings.probation)

    # ---- protocol: configuration ----

    def configure(self, settings: AheSettings) -> None:
        """A new ``ahe-alpha-init`` restarts alpha; the spec's step/window/feedback and the
        LFU decay do not apply here.  Complexity: O(1)."""
        if settings.alpha_init != self.settings.alpha_init:
            self._set_theta(_logit(settings.alpha_init))
        self.settings = settings
        self._set_probation(settings.probation)

    def _set_probation(self, on: bool) -> None:
        if on and self.ghost is None:
            self.ghost = ProbationGhost(self._population())
            self.p_turnovers = PROBATION_IDLE_TURNOVERS
            self._ev_blend = self._ev_prob = self._back_blend = self._back_prob = 0.0
            self._switch_blocks = 0
            self._switch_decisions = 0
        elif not on:
            self.ghost = None
        self._size_bytes()

    def admit(self, key: bytes) -> int:
        """The Morris counter a new key starts with (``ks.admit_hook`` while probation is
        on): PROBATION_COUNTER, or LFU_INIT_VAL + GHOST_RETURN_BOOST when its id is in the
        ghost (it came back soon after an eviction).  Complexity: O(1)."""
        kind = self.ghost.lookup(hash(key))
        if kind:
            self.ghost_returns += 1
            if kind == PROBATION_VICTIM:
                self._back_prob += 1
            else:
                self._back_blend += 1
            return LFU_INIT_VAL + GHOST_RETURN_BOOST
        return PROBATION_COUNTER

    def set_scope(self, volatile: bool) -> None:
        """volatile-ahe: the turnover counts keys with a TTL only.  Complexity: O(1)."""
        self.volatile = volatile

    # ---- protocol: scoring ----

    def scores(self, db, slots: list, now_ms: int) -> list:
        """Score of each slot's key of ``db`` (``scores.adaptive_score``).

        On the way it remembers recency's pick (largest idle, ties: smaller counter) and
        frequency's pick (smallest counter, ties: larger idle) among the entries scored
        since the last eviction, for the duel ``on_evict`` may start.
        Picks are ``(db, slot)`` pairs.  Complexity: O(len(slots)).
        """
        if not slots:
            return []
        lrus, lfus, exps = db.lru, db.lfu, db.exp
        t = self.turnover_ms
        if t is None:
            mean_idle = sum(now_ms - lrus[e] for e in slots) / len(slots)
            ew = self.idle_ewma_ms
            ew = mean_idle if ew is None else ew + IDLE_EWMA_WEIGHT * (mean_idle - ew)
            self.idle_ewma_ms = ew
            t = ew
        par = self.params(t)
        rk, ri, rc = self._rk, self._ridle, self._rcnt
        fk, fi, fc = self._fk, self._fidle, self._fcnt
        out = []
        for e in slots:
            idle = now_ms - lrus[e]
            s, c = adaptive_score(par, idle, lfus[e], exps[e], now_ms)
            out.append(s)
            if recency_pick(idle, c, ri, rc):
                rk, ri, rc = (db, e), idle, c
            if frequency_pick(idle, c, fi, fc):
                fk, fi, fc = (db, e), idle, c
        self._rk, self._ridle, self._rcnt = rk, ri, rc
        self._fk, self._fidle, self._fcnt = fk, fi, fc
        return out

    def params(self, turnover_ms: float) -> AdaptParams:
        """The score's parameters at the current alpha, turnover ``turnover_ms`` and
        probation threshold (``scores.adapt_params``).  Complexity: O(1)."""
        return adapt_params(self.alpha, turnover_ms,
                            self.p_turnovers if self.ghost is not None else None)

    # ---- protocol: feedback ----

    def on_evict(self, db, e: int, now_ms: int) -> None:
        """The Evictor is about to unlink slot ``e`` of ``db``: measure, settle, maybe start
        a duel, with the picks :meth:`scores` found (``(db, slot)`` pairs).

        Complexity: O(1) (the picks were found while scoring; index probes are O(1) on
        average at load <= 1/2).
        """
        rk, fk = self._rk, self._fk
        self._rk = self._fk = None
        ri, rc, fi, fc = self._ridle, self._rcnt, self._fidle, self._fcnt
        self._ridle, self._rcnt, self._fidle, self._fcnt = _NO_PICK
        if rk is None:
            self.evicted(db, e, now_ms, None, -1, ri, rc, None, -1, fi, fc)
        else:
            self.evicted(db, e, now_ms, rk[0], rk[1], ri, rc, fk[0], fk[1], fi, fc)

    def evicted(self, db, e: int, now_ms: int, rdb, rs: int, ri: int, rc: int, fdb, fs: int,
                fi: int, fc: int) -> None:
        """:meth:`on_evict` with the picks as arguments: recency's pick ``rs`` of ``rdb``
        (idle ``ri``, counter ``rc``) and frequency's ``fs`` of ``fdb``; ``rdb`` None = no
        picks.  The compiled path calls this directly (no pair per pick).  O(1)."""
        self._blk_n += 1
        if self._blk_n >= EVICTIONS_PER_BLOCK or self._blk_start_ms is None:
            self._block(now_ms)
        key = db.keys[e]
        last = db.lru[e]
        c = db.lfu[e]
        hk = hash(key)
        on_probation = False
        if self.ghost is not None:
            if c == PROBATION_COUNTER:                 # every victim: probation.py
                self.ghost.add(hk, 1)
                self.probation_evicted += 1
                self._ev_prob += 1
                on_probation = self.p_turnovers != PROBATION_LOOSE
            else:
                self.ghost.add(hk, 0)
                self._ev_blend += 1
        h = hk & HASH_MASK
        if self._tab[h & self._mask] and self._duel_key_evicted(db, key, h, last):
            return
        if rdb is None or on_probation:
            # probation, not the blend, chose a probationary victim: a duel on it would
            # credit frequency with every one-hit wonder and drag alpha down (while
            # probation-first is off the blend chose it: the duel starts)
            return
        idle = now_ms - last
        is_r = (rs == e and rdb is db) or recency_pick(idle, c, ri, rc)
        is_f = (fs == e and fdb is db) or frequency_pick(idle, c, fi, fc)
        if is_r == is_f:
            return                                     # the picks agree, or neither
        odb, os_ = (fdb, fs) if is_r else (rdb, rs)
        okey = odb.keys[os_]
        if okey is None:
            return
        oh = hash(okey) & HASH_MASK
        if oh == h or (self._tab[oh & self._mask] and self._find(oh) >= 0):
            return
        # start the duel in the ring slot at the cursor (settling the duel it held)
        slot = self._cursor
        if self._state[slot]:
            self._expire(slot)
        self._vh[slot] = h
        self._ah[slot] = oh
        self._alt[slot] = okey
        self._adb[slot] = odb.id
        self._alru[slot] = odb.lru[os_] & HASH_MASK
        self._state[slot] = 1 if is_r else 2
        self._insert(h, slot << 1)
        self._insert(oh, (slot << 1) | 1)
        self.active += 1
        self.duels += 1
        slot += 1
        self._cursor = slot if slot < self.cap else 0

    def _duel_key_evicted(self, db, key: bytes, h: int, last: int) -> bool:
        """The victim ``key`` (32-bit hash ``h``, access time ``last``) may be in a duel
        already: as a kept pick, its duel is decided (it was read since: the duel's victim
        was right) or it becomes a ghost too.  True when no new duel may start on it.
        O(1) on average."""
        w = self._find(h)
        if w < 0:
            return False
        slot = w >> 1
        if not (w & 1 and self._adb[slot] == db.id and self._alt[slot] == key):
            return True                                # a ghost's key (another db)
        if last & HASH_MASK == self._alru[slot]:
            self._alt[slot] = None                     # the kept pick becomes a ghost too
            return True
        self._decide(slot, right=True)                 # the kept pick was read before
        return False

    def evicted_batch(self, db, victims, n: int, picks, now_ms: int) -> None:
        """:meth:`evicted` for the first ``n`` victims of a compiled batch, before any is
        unlinked (``picks``: the kernel's rows of N_PICK_COLS per victim).  A victim that
        probation chose (the common case with ``ahe-probation``) needs only the block
        count, the ghost (tag 1) and the check that it is not in a duel: runs of them go
        through one compiled call (``kernel.probation_run``, the same rule); the others
        stop the run and go through :meth:`evicted`, or, a duel's key, through
        :meth:`_duel_key_evicted`.  The victims' hashes come from C (``map``), not from
        a bytecode loop: 52 -> ~9 bytecodes per evicted key (allkeys-ahe).
        Complexity: O(n)."""
        ghost = self.ghost
        evicted = self.evicted
        if ghost is None or self._blk_start_ms is None or \
                self.p_turnovers == PROBATION_LOOSE:
            for i in range(n):
                row = i * N_PICK_COLS
                rs = picks[row]
                evicted(db, victims[i], now_ms, db if rs >= 0 else None, rs, picks[row + 1],
                        picks[row + 2], db, picks[row + 3], picks[row + 4], picks[row + 5])
            return
        keys, lfu, lru = db.keys, db.lfu, db.lru
        hashes = array("q", map(hash, map(keys.__getitem__, islice(victims, n))))
        run = _K.probation_run
        i = 0
        while True:
            room = EVICTIONS_PER_BLOCK - 1 - self._blk_n   # probation victims before a block
            j = run(lfu, victims, i, n, hashes, room, ghost._w, ghost.words, self._tab,
                    self._mask, self._vh, self._ah)
            if j > i:
                ghost.added += j - i
                self.probation_evicted += j - i
                self._ev_prob += j - i
                self._blk_n += j - i
            if j >= n:
                return
            s = victims[j]
            if lfu[s] != PROBATION_COUNTER or room <= j - i:
                row = j * N_PICK_COLS
                rs = picks[row]
                evicted(db, s, now_ms, db if rs >= 0 else None, rs, picks[row + 1],
                        picks[row + 2], db, picks[row + 3], picks[row + 4], picks[row + 5])
            else:                               # a probation victim that is a duel's key
                self._blk_n += 1
                hk = hashes[j]
                ghost.add(hk, 1)
                self.probation_evicted += 1
                self._ev_prob += 1
                self._duel_key_evicted(db, keys[s], hk & HASH_MASK, lru[s])
            i = j + 1

    def on_miss(self, key: bytes) -> None:
        """A read missed ``key``: if it is a duel's ghost, that duel is decided.

        Complexity: O(1) on average (one hash, one index probe).
        """
        if not self.active:
            return
        h = hash(key) & HASH_MASK
        if not self._tab[h & self._mask]:
            return      # the home cell is empty (load <= 1/2): no ghost, and no _find call
        w = self._find(h)
        if w < 0:
            return
        slot = w >> 1
        if w & 1:
            self._decide(slot, right=True)         # the kept pick came back first
        else:
            self._decide(slot, right=self._alt_was_read(slot))

    # ---- duels ----

    def _alt_was_read(self, slot: int) -> bool:
        """The kept pick of a duel is still cached and was accessed since the duel began."""
        key = self._alt[slot]
        if key is None:
            return False
        db = self.ks.dbs[self._adb[slot]]
        s = db.find(key)
        return s is not None and db.lru[s] & HASH_MASK != self._alru[slot]

    def _expire(self, slot: int) -> None:
        if self._alt_was_read(slot):
            self._decide(slot, right=True)
        else:
            self.undecided += 1
            self._free(slot)

    def _decide(self, slot: int, right: bool) -> None:
        """right: evicting the victim rather than the other pick was correct."""
        if (self._state[slot] == 1) == right:
            self.recency_wins += 1
            self._set_theta(self.theta + self.step)
        else:
            self.frequency_wins += 1
            self._set_theta(self.theta - self.step)
        self._free(slot)

    def _free(self, slot: int) -> None:
        self._remove(self._vh[slot], slot << 1)
        self._remove(self._ah[slot], (slot << 1) | 1)
        self._state[slot] = 0
        self._alt[slot] = None
        self.active -= 1

    # ---- the index: linear probing in an array('H'), backward-shift deletion ----

    def _stored(self, code: int) -> int:
        slot = code >> 1
        return self._ah[slot] if code & 1 else self._vh[slot]

    def _find(self, h: int) -> int:
        """slot * 2 + side of the duel key with hash ``h``, or -1.  O(1) on average."""
        tab, mask = self._tab, self._mask
        i = h & mask
        cell = tab[i]
        while cell:
            code = cell - 1
            slot = code >> 1
            if (self._ah[slot] if code & 1 else self._vh[slot]) == h:
                return code
            i = (i + 1) & mask
            cell = tab[i]
        return -1

    def _insert(self, h: int, code: int) -> None:
        tab, mask = self._tab, self._mask
        i = h & mask
        while tab[i]:
            i = (i + 1) & mask
        tab[i] = code + 1
        self.ghost_entries += 1

    def _remove(self, h: int, code: int) -> None:
        tab, mask = self._tab, self._mask
        i = h & mask
        cell = tab[i]
        while cell != code + 1:
            if not cell:
                return                             # not there (cannot happen; harmless)
            i = (i + 1) & mask
            cell = tab[i]
        self.ghost_entries -= 1
        # backward shift: move up every later cell of the run whose home is not in (i, j]
        j = i
        while True:
            j = (j + 1) & mask
            cell = tab[j]
            if not cell:
                break
            home = self._stored(cell - 1) & mask
            if (home <= i < j) or (i < j < home) or (j < home <= i):
                tab[i] = cell
                i = j
        tab[i] = 0

    def _set_theta(self, theta: float) -> None:
        theta = THETA_MIN if theta < THETA_MIN else (THETA_MAX if theta > THETA_MAX else theta)
        if theta != self.theta:     # +1: last move toward recency (LRU), -1: toward frequency
            self.direction = 1 if theta > self.theta else -1
        self.theta = theta
        self.alpha = 1.0 / (1.0 + math.exp(-theta))

    # ---- turnover, hit ratio, ring size: once per EVICTIONS_PER_BLOCK evictions ----

    def _block(self, now_ms: int) -> None:
        if self._blk_start_ms is None:            # first eviction: size the ring now
            self._blk_start_ms = now_ms
            keys = self._population()
            want = min(max(keys // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
            if want != self.cap:
                self._resize(want)
            self._size_ghost(keys)
            return
        ms = max(now_ms - self._blk_start_ms, 0) / EVICTIONS_PER_BLOCK
        m = self.ms_per_eviction
        self.ms_per_eviction = ms if m is None else m + RATE_EWMA_WEIGHT * (ms - m)
        ks = self.ks
        keys = self._population()
        self.turnover_ms = max(keys * self.ms_per_eviction, MIN_TURNOVER_MS)
        dh, dm = ks.hits - self._blk_hits, ks.misses - self._blk_misses
        if dh >= 0 and dm >= 0 and dh + dm > 0:       # (RESETSTAT makes them negative)
            self.last_hit_ratio = dh / (dh + dm)
        self._blk_hits, self._blk_misses = ks.hits, ks.misses
        self._switch_blocks += 1
        if self.ghost is not None and self._switch_blocks * EVICTIONS_PER_BLOCK >= keys:
            self._switch_blocks = 0
            self._switch()
        self._blk_start_ms = now_ms
        self._blk_n = 0
        want = min(max(keys // GHOST_FRACTION, GHOST_MIN), GHOST_MAX)
        if want * GHOST_RESIZE_FACTOR < self.cap or want > self.cap * GHOST_RESIZE_FACTOR:
            self._resize(want)
        self._size_ghost(keys)

    def _switch(self) -> None:
        """Probation-first off while probation's victims come back RHO_OFF times as often
        per eviction as the blend's (it is evicting what the workload wants: new hot keys
        of a moving hot set), on again below RHO_ON, once RHO_MIN_BACK victims of each
        kind came back and after RHO_WARMUP decisions (a cold cache evicts new keys only:
        the first turnovers' rho says nothing); then every count shrinks by RHO_KEEP (a
        memory of ~20 turnovers).
        Complexity: O(1), once per turnover (at most once per block)."""
        eb, ep, bb, bp = self._ev_blend, self._ev_prob, self._back_blend, self._back_prob
        self._switch_decisions += 1
        if eb > 0 and ep > 0 and bb >= RHO_MIN_BACK and bp >= RHO_MIN_BACK and \
                self._switch_decisions > RHO_WARMUP:
            rho = (bp / ep) / (bb / eb)
            p = self.p_turnovers
            if rho > RHO_OFF:
                p = PROBATION_LOOSE
            elif rho < RHO_ON:
                p = PROBATION_IDLE_TURNOVERS
            if p != self.p_turnovers:
                self.p_turnovers = p
                self.probation_switches += 1
        self.probation_decisions += 1
        if self.p_turnovers == PROBATION_LOOSE:
            self.probation_off_decisions += 1
        self._ev_blend, self._ev_prob = eb * RHO_KEEP, ep * RHO_KEEP
        self._back_blend, self._back_prob = bb * RHO_KEEP, bp * RHO_KEEP

    def _size_ghost(self, keys: int) -> None:
        """Resize the probation ghost when the population moved by GHOST_RESIZE_FACTOR."""
        g = self.ghost
        if g is None:
            return
        want = g.wanted(keys)
        if want * GHOST_RESIZE_FACTOR < g.lanes or want > g.lanes * GHOST_RESIZE_FACTOR:
            g.resize(keys)
            self._size_bytes()

    def _population(self) -> int:
        dbs = self.ks.dbs
        if self.volatile:
            return sum(db.volatile for db in dbs)
        return sum(len(db) for db in dbs)

    def _resize(self, cap: int) -> None:
        """New ring size (and step); pending duels are settled as if their slots were reused.

        Complexity: O(old + new size), at most once per block.
        """
        for slot in range(self.cap):
            if self._state[slot]:
                self._expire(slot)
        self.cap = cap
        self.step = min(DUEL_STEP_BUDGET / cap, STEP_MAX)
        self._vh = array("I", [0]) * cap
        self._ah = array("I", [0]) * cap
        self._alru = array("I", [0]) * cap
        self._state = array("b", [0]) * cap
        self._alt = [None] * cap
        self._adb = array("B", [0]) * cap
        cells = 1 << (TABLE_LOAD * cap - 1).bit_length()
        self._tab = array("H", [0]) * cells
        self._mask = cells - 1
        self._cursor = 0
        self.active = 0
        self.ghost_entries = 0
        self._ring_bytes = cap * RING_SLOT_BYTES + cells * TABLE_CELL_BYTES + RING_OBJ_BYTES
        self._size_bytes()

    def _size_bytes(self) -> None:
        ghost = self.ghost
        self._bytes = self._ring_bytes + (ghost.memory_bytes() if ghost is not None else 0)

    # ---- protocol: observability ----

    def extra_memory_bytes(self) -> int:
        """Duel ring and its index, plus the probation ghost, in bytes (counted against
        maxmemory); preallocated, so it depends only on their sizes.  Complexity: O(1)."""
        return self._bytes

    def info_fields(self) -> list:
        t = self.turnover_ms if self.turnover_ms is not None else self.idle_ewma_ms
        return [
            ("ahe_controller", self.name),
            ("ahe_alpha", "%.6f" % self.alpha),
            ("ahe_alpha_leaning", alpha_leaning(self.alpha)),
            ("ahe_last_hit_ratio", "%.6f" % self.last_hit_ratio),
            ("ahe_direction", self.direction),
            ("ahe_window_fill", self.active),       # duels still waiting for a verdict
            ("ahe_turnover_ms", "%.1f" % (t or 0.0)),
            ("ahe_duels", self.duels),
            ("ahe_duels_recency_won", self.recency_wins),
            ("ahe_duels_frequency_won", self.frequency_wins),
            ("ahe_duels_undecided", self.undecided),
            ("ahe_ghost_entries", self.ghost_entries),
            ("ahe_ghost_capacity", self.cap),
            ("ahe_probation", "yes" if self.ghost is not None else "no"),
            ("ahe_probation_evicted", self.probation_evicted),
            ("ahe_probation_ghost_returns", self.ghost_returns),
            ("ahe_probation_ghost_ids", self.ghost.lanes if self.ghost is not None else 0),
            ("ahe_probation_first",
             "yes" if self.ghost is not None and self.p_turnovers != PROBATION_LOOSE
             else "no"),
            ("ahe_probation_switches", self.probation_switches),
            ("ahe_probation_off_share", "%.3f" % (self.probation_off_decisions
                                                  / (self.probation_decisions or 1))),
        ]

    def _check(self) -> None:
        """Assert every invariant (tests call this after each step)."""
        assert AHE_ALPHA_MIN - 1e-12 <= self.alpha <= AHE_ALPHA_MAX + 1e-12
        assert THETA_MIN <= self.theta <= THETA_MAX
        assert (self._rk is None) == (self._fk is None)
        live = [s for s in range(self.cap) if self._state[s]]
        assert len(live) == self.active <= self.cap
        cells = [c for c in self._tab if c]
        assert len(cells) == self.ghost_entries == 2 * self.active
        assert len(self._tab) >= TABLE_LOAD * self.cap
        for slot in live:
            assert self._find(self._vh[slot]) == slot << 1
            assert self._find(self._ah[slot]) == (slot << 1) | 1
        for slot in range(self.cap):
            if not self._state[slot]:
                assert self._alt[slot] is None
        assert self.duels == (self.recency_wins + self.frequency_wins + self.undecided
                              + self.active)
        assert self.step == min(DUEL_STEP_BUDGET / self.cap, STEP_MAX)
        assert self._ring_bytes <= max_extra_memory_bytes()
        ghost = self.ghost.memory_bytes() if self.ghost is not None else 0
        assert self.extra_memory_bytes() == self._ring_bytes + ghost


def max_extra_memory_bytes() -> int:
    """The duel ring's bytes at GHOST_MAX slots (the bound tests check; the probation
    ghost, 8 bytes per key, comes on top)."""
    cells = 1 << (TABLE_LOAD * GHOST_MAX - 1).bit_length()
    return GHOST_MAX * RING_SLOT_BYTES + cells * TABLE_CELL_BYTES + RING_OBJ_BYTES


CONTROLLERS.setdefault(AdaptiveController.name, AdaptiveController)   # ahe-controller adaptive
