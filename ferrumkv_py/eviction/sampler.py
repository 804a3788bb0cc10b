"""Victim choice: uniform samples into the eviction pool (lru, lfu, ttl, ahe) or one uniform
random key (random policies).

Sampling
--------
A database keeps every key in a slot of its tables (``slots.py``), and the slots of keys with
a TTL in ``vslots``, so a uniform draw is one random index ``(r * size) >> 32`` for a uniform
32-bit word ``r``.  The words are drawn from ``ks.rng`` in blocks of RANDOM_BUFFER_WORDS (one
``getrandbits`` call), which costs far less per draw than ``int(rng.random() * n)``; a draw
that lands on a free slot (at most half the table while the cron compacts) is drawn again.  Drawing with replacement
from the whole array is what makes it uniform *and* O(samples) whatever the key count; the
Rust original took the first N keys in iteration order, which for an insertion-ordered dict
would be FIFO eviction.

Worked example (samples 5, pool of 4 for brevity, lru scores = -last access)::

    pool [-900 -700 -400 -100]             (the entry last used at t=100 is the best)
    draw k1 (last used t=800) k2 (t=50) k3 (t=950) k4 (t=600) k5 (t=300)
      -800 <= -900? no: beats the worst -> pool [-800 -700 -400 -100]
      -50  -> [-700 -400 -100 -50];   -950: worse than -700, dropped
      -600 -> [-600 -400 -100 -50];   -300 -> [-400 -300 -100 -50]
    pop the best: k2 (t=50), still live -> the victim

Pool population (Redis ``evictionPoolPopulate``)
------------------------------------------------
For each DB with candidates: draw ``maxmemory-samples`` entries (at most the DB's candidate
count), delete the ones whose TTL already passed (as expired, not evicted), score the others
and offer them to the pool::

    lru    -last_access_ms     (oldest access = largest; time-invariant, so scores kept in
                                the pool do not go stale as the clock moves, unlike idle ms)
    ttl    -deadline_ms        (soonest expiry = largest)
    lfu    255 - decayed counter
    ahe    EPS (spec) or the adaptive score, as the controllers' scores() compute them

A sample that does not beat the worst entry of a full pool is dropped at once.  Then the
pool's best entries are popped until one still names a live key (with a TTL under
volatile-*); if only ghosts were left, the DBs are sampled again.

This is eviction's path when the candidates span several databases (one database takes
the compiled kernel, ``compiled.py``), written for CPython: locals instead of attributes,
the pool insertion inline, one function per DB and victim.  Each sample is scored by
``scores.py``'s function for the mode, the same source the kernel compiles, so a score has
one home; that costs a call per sample (and, under the adaptive controller, its two pick
tests): ``bench/eviction_cost.py --inproc --opcodes --python-sampler`` bytecodes per
evicted key, inline scores -> calls: allkeys-lru 763 -> 788, allkeys-lfu 903 -> 968,
volatile-ttl 832 -> 857, allkeys-ahe (adaptive) 1450 -> 1672.  The same run without
``--python-sampler`` counts the compiled path (allkeys-lru ~118 per evicted key).

Complexity: O(DBs * samples) expected per victim; O(1) for the random policies.
"""

from __future__ import annotations

import array
from bisect import bisect_left

from ..keyspace import SAMPLE_MAX_TRIES
from .kernel_abi import EVICT_MAX_EMPTY_ROUNDS
from .lfu import MS_PER_MINUTE, decayed
from .pool import EvictionPool
from .scores import (adaptive_score, eps_params, eps_score, frequency_pick,
                     lfu_score, lru_score, recency_pick, ttl_score)

RANDOM_BUFFER_WORDS = 4096      # random words drawn from ks.rng per refill
RANDOM_WORD_BITS = 32
RANDOM_WORD_BYTES = 4

SCORE_LRU, SCORE_TTL, SCORE_LFU, SCORE_CALL, SCORE_EPS, SCORE_ADAPT = 1, 2, 3, 0, 4, 5
# how a sample is scored: by scores.py's functions in the loop (SCORE_EPS: the AHE spec
# controller's score; SCORE_ADAPT: the adaptive controller's, picks included), or by a
# controller's own scores() over the batch (SCORE_CALL)

RETRY = object()    # a pick deleted expired keys instead of choosing: re-check memory first


def any_candidate(db, vol: bool) -> int:
    """A candidate slot found without sampling, for when random draws keep hitting free
    slots.  Complexity: O(1)."""
    return db.vslots[0] if vol else db.any_slot()


class Sampler:
    """Draws candidates and picks victims; the Evictor sets its scoring mode and knobs."""

    def __init__(self, ks):
        self.ks = ks
        self.pool = EvictionPool()
        self.samples = 5
        self.mode = SCORE_LRU
        self.scorer = None            # callable(db, slots, now_ms) -> scores, for SCORE_CALL
        self.eps = None               # the SpecController whose EPS SCORE_EPS computes
        self.adapt = None             # the AdaptiveController SCORE_ADAPT scores for
        self.decay_minutes = 1
        self.next_db = 0              # round robin of the random policies
        self._buf: list = []          # pre-drawn random words
        self._pos = 0

    # ---- pooled policies ----

    def pick_pooled(self, now: int, dbs: list, vol: bool):
        """Sample ``dbs`` into the pool and pop the best live candidate.

        Returns ``(db, slot)``, RETRY when sampling deleted expired keys, or None when no DB
        has a candidate any more.  Complexity: O(len(dbs) * samples) expected.
        """
        ks = self.ks
        all_dbs = ks.dbs
        scores = self.pool.scores
        items = self.pool.items
        populate = self.populate
        for _ in range(EVICT_MAX_EMPTY_ROUNDS):
            expired0 = ks.expired_keys
            found = False
            for db in dbs:
                if db.vslots if vol else db.nkeys:
                    found = True
                    populate(db, now, vol)
            if not found:
                return None
            if ks.expired_keys != expired0:
                return RETRY
            while items:                    # pool.pop_best(), inlined
                scores.pop()
                dbid, key = items.pop()
                db = all_dbs[dbid]
                e = db.find(key)
                if e is not None:
                    x = db.exp[e]
                    if x or not vol:
                        if x and x < now:
                            db._expire_slot(e)   # unlink, expired_keys, "expired" event
                            return RETRY
                        return db, e
                # a ghost: the key went away since it was scored
        return None

    def populate(self, db, now: int, vol: bool) -> None:
        """Redis ``evictionPoolPopulate`` for one DB: draw, score and offer
        ``maxmemory-samples`` live candidates.  Complexity: O(samples) expected.

        One function does the draws, the liveness test, the scoring and the pool insertion
        (``EvictionPool.offer``'s rules, inlined; the pool's ``_check`` still holds, tests call
        it after eviction passes).  A dead slot is redrawn from the same word buffer, so a
        DB's draws stay uniform over its live candidates; at most ``samples *
        SAMPLE_MAX_TRIES`` draws are made (then ``any_candidate``).

        Why one loop: ``bench/eviction_cost.py --inproc --profile`` (allkeys-lru, 200k keys,
        100k evictions) showed the former split -- a list comprehension of draws, an
        ``_offer`` call to score them, and a second ``_offer`` plus a ``Database.sample``
        call whenever a draw hit a dead slot (60% of populates did) -- as the top three
        entries.  Folded together, ``--inproc --opcodes`` counts 737 -> 667 interpreted
        bytecodes per evicted key (allkeys-lru; lfu 897 -> 791, volatile-lru 782 -> 710).
        """
        if vol:
            lst = db.vslots
            live = len(lst)
        else:
            lst = None
            live = db.nkeys
        use_list = vol                          # draw from vslots, else from the slot range
        keys = db.keys
        lrus = db.lru
        lfus = db.lfu
        exps = db.exp
        n = self.samples
        if n > live:
            n = live
        size = len(lst) if vol else len(keys)
        buf = self._buf
        i = self._pos
        end = len(buf)
        mode = self.mode
        scores = self.pool.scores
        items = self.pool.items
        cap = self.pool.size
        full = len(scores) == cap
        dbid = db.id
        batch = None
        if mode == SCORE_LFU:
            decay = self.decay_minutes
            now_min = now // MS_PER_MINUTE
        elif mode == SCORE_EPS:
            eps = self.eps
            par = eps_params(eps.state.alpha)
            decay = eps.settings.decay_minutes
            now_min = now // MS_PER_MINUTE
        elif mode == SCORE_ADAPT:
            # Before the controller has measured its turnover it scores through its own
            # method (the fallback averages the whole batch's idle times first).
            ctl = self.adapt
            t = ctl.turnover_ms
            if t is None:
                mode = SCORE_CALL
                batch = []
            else:
                par = ctl.params(t)
                rk, ri, rc = ctl._rk, ctl._ridle, ctl._rcnt
                fk, fi, fc = ctl._fk, ctl._fidle, ctl._fcnt
        elif mode == SCORE_CALL:
            batch = []
        need = n                                # draws still owed
        tries = n * SAMPLE_MAX_TRIES
        while need:
            if tries < need:
                if need < n or not (db.vslots if vol else db.nkeys):
                    break
                # the draws kept hitting free slots: one candidate found without drawing
                lst = [any_candidate(db, vol)]
                use_list = True     # (draw from that one-slot list)
                size = 1
                words = (0,)
            else:
                tries -= need
                if i + need > end:
                    buf = self._refill(need)
                    i = 0
                    end = len(buf)
                words = buf[i:i + need]         # a for loop over a slice: no per-draw i += 1
                i += need
            need = 0
            for r in words:
                j = (r * size) >> RANDOM_WORD_BITS
                if use_list:
                    e = lst[j]
                else:
                    e = j
                    if keys[e] is None:
                        need += 1               # a free slot: draw again
                        continue
                exp = exps[e]
                if exp:
                    if exp < now:               # already expired: delete, counts as drawn
                        db._expire_slot(e)    # unlink, expired_keys, "expired" event
                        if vol:
                            size = len(lst)     # vslots lost that slot
                            if not size:
                                break
                        continue
                if mode == SCORE_LRU:
                    s = lru_score(lrus[e])
                elif mode == SCORE_EPS:
                    last = lrus[e]
                    s = eps_score(par, now - last, decayed(lfus[e], last, now_min, decay),
                                  exp, now)
                elif mode == SCORE_ADAPT:
                    idle = now - lrus[e]
                    s, c = adaptive_score(par, idle, lfus[e], exp, now)
                    if recency_pick(idle, c, ri, rc):
                        rk, ri, rc = (db, e), idle, c
                    if frequency_pick(idle, c, fi, fc):
                        fk, fi, fc = (db, e), idle, c
                elif mode == SCORE_TTL:
                    s = ttl_score(exp)
                elif mode == SCORE_LFU:
                    s = lfu_score(decayed(lfus[e], lrus[e], now_min, decay))
                else:
                    batch.append(e)
                    continue
                if full:                        # the common case: most samples lose here
                    if s <= scores[0]:
                        continue
                    k = bisect_left(scores, s) - 1
                    del scores[0]
                    del items[0]
                else:
                    k = bisect_left(scores, s)
                    full = len(scores) + 1 == cap
                scores.insert(k, s)
                items.insert(k, (dbid, keys[e]))
        self._pos = i
        if mode == SCORE_ADAPT:
            ctl._rk, ctl._ridle, ctl._rcnt = rk, ri, rc
            ctl._fk, ctl._fidle, ctl._fcnt = fk, fi, fc
        if batch:   # a controller's own scores(): not inline, so no need to inline the offer
            offer = self.pool.offer
            for s, e in zip(self.scorer(db, batch, now), batch):
                offer(s, dbid, keys[e])

    def _refill(self, n: int) -> list:
        """Refill the buffer of uniform random 32-bit words from ``ks.rng``.

        Complexity: O(RANDOM_BUFFER_WORDS), once per that many sampled keys.
        """
        k = max(RANDOM_BUFFER_WORDS, n)
        raw = self.ks.rng.getrandbits(RANDOM_WORD_BITS * k).to_bytes(
            k * RANDOM_WORD_BYTES, "little")
        self._buf = array.array("I", raw).tolist()
        return self._buf

    # ---- random policies ----

    def pick_random(self, now: int, dbs: list, vol: bool):
        """One uniformly random key of the next DB with candidates (round robin by DB id,
        as Redis's static ``next_db``).  ``dbs`` had candidates when the pass started.

        Complexity: O(len(dbs)) worst case, O(1) expected.
        """
        last = self.next_db
        chosen = None
        for db in dbs:                    # first candidate DB after the last one used
            if db.id > last and (db.vslots if vol else db.nkeys):
                chosen = db
                break
        if chosen is None:
            for db in dbs:
                if db.vslots if vol else db.nkeys:
                    chosen = db
                    break
            else:
                return None
        db = chosen
        self.next_db = db.id
        got = db.sample(1, vol)
        e = got[0] if got else any_candidate(db, vol)
        x = db.exp[e]
        if x and x < now:
            db._expire_slot(e)   # unlink, expired_keys, "expired" event
            return RETRY
        return db, e
