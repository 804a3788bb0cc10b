"""Victim choice: uniform samples into the eviction pool (lru, lfu, ttl, ahe) or one uniform
random key (random policies).

Sampling
--------
A database keeps every entry in an array (``Database.alist``, and ``vlist`` for entries with
a TTL; dead slots are skipped and compacted away, see keyspace.py), so a uniform draw is one
random index: ``lst[(r * len(lst)) >> 32]`` for a uniform 32-bit word ``r``.  The words are
drawn from ``ks.rng`` in blocks of RANDOM_BUFFER_WORDS (one ``getrandbits`` call), which costs
far less per draw than ``int(rng.random() * n)``; slots that turn out dead (up to half of a
list between compactions) are redrawn with ``Database.sample``.  Drawing with replacement
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
    ahe    controller.scores() (EPS)

A sample that does not beat the worst entry of a full pool is dropped at once.  Then the
pool's best entries are popped until one still names a live key (with a TTL under
volatile-*); if only ghosts were left, the DBs are sampled again.

This is the hot path of eviction, written for CPython: locals instead of attributes, the
common scores and the pool insertion inline, no per-sample function calls.  Counted with an
opcode tracer (allkeys-lru, 20k keys), this brought an eviction from about 1000 to about 700
interpreted bytecodes; ``bench/eviction_cost.py`` measures what it costs in a server.

Complexity: O(DBs * samples) expected per victim; O(1) for the random policies.
"""

from __future__ import annotations

import array
from bisect import bisect_left

from .lfu import LFU_COUNTER_MAX, MS_PER_MINUTE
from .pool import EvictionPool

RANDOM_BUFFER_WORDS = 4096      # random words drawn from ks.rng per refill
RANDOM_WORD_BITS = 32
RANDOM_WORD_BYTES = 4
EVICT_MAX_EMPTY_ROUNDS = 64     # sampling rounds that found only ghosts before giving up

SCORE_LRU, SCORE_TTL, SCORE_LFU, SCORE_CALL = 1, 2, 3, 0   # how a sample is scored

RETRY = object()    # a pick deleted expired keys instead of choosing: re-check memory first


def any_candidate(db, vol: bool):
    """A candidate found without sampling, for when random draws keep hitting dead slots
    (a sample list can be up to half dead between compactions).

    Complexity: O(1) for allkeys; O(len(vlist)) for volatile, only on that rare path.
    """
    if not vol:
        return db.data[next(iter(db.data))]
    for e in db.vlist:
        if e.value is not None and e.exp > 0:
            return e
    raise AssertionError("volatile count says there is a TTL key, vlist has none")


class Sampler:
    """Draws candidates and picks victims; the Evictor sets its scoring mode and knobs."""

    def __init__(self, ks):
        self.ks = ks
        self.pool = EvictionPool()
        self.samples = 5
        self.mode = SCORE_LRU
        self.scorer = None            # callable(entries, now_ms) -> scores, for SCORE_CALL
        self.decay_minutes = 1
        self.next_db = 0              # round robin of the random policies
        self._buf: list = []          # pre-drawn random words
        self._pos = 0

    # ---- pooled policies ----

    def pick_pooled(self, now: int, dbs: list, vol: bool):
        """Sample ``dbs`` into the pool and pop the best live candidate.

        Returns ``(db, entry)``, RETRY when sampling deleted expired keys, or None when no DB
        has a candidate any more.  Complexity: O(len(dbs) * samples) expected.
        """
        ks = self.ks
        all_dbs = ks.dbs
        pool = self.pool
        populate = self.populate
        for _ in range(EVICT_MAX_EMPTY_ROUNDS):
            expired0 = ks.expired_keys
            found = False
            for db in dbs:
                if db.volatile if vol else db.data:
                    found = True
                    populate(db, now, vol)
            if not found:
                return None
            if ks.expired_keys != expired0:
                return RETRY
            item = pool.pop_best()
            while item is not None:
                db = all_dbs[item[0]]
                e = db.data.get(item[1])
                if e is not None and (e.exp > 0 or not vol):
                    if 0 < e.exp < now:
                        db.unlink(e)
                        ks.expired_keys += 1
                        return RETRY
                    return db, e
                item = pool.pop_best()      # a ghost: the key went away since it was scored
        return None

    def populate(self, db, now: int, vol: bool) -> None:
        """Redis ``evictionPoolPopulate`` for one DB.  Complexity: O(samples)."""
        lst = db.vlist if vol else db.alist
        n = self.samples
        live = db.volatile if vol else len(db.data)
        if n > live:
            n = live
        size = len(lst)
        i = self._pos
        buf = self._buf
        if i + n > len(buf):
            buf = self._refill(n)
            i = 0
        self._pos = i + n
        missing = self._offer(db, [lst[(r * size) >> RANDOM_WORD_BITS] for r in buf[i:i + n]],
                              now, vol)
        if missing and (db.volatile if vol else db.data):
            self._offer(db, db.sample(missing, vol) or [any_candidate(db, vol)], now, vol)

    def _offer(self, db, ents: list, now: int, vol: bool) -> int:
        """Score entries and insert them into the pool; returns how many slots were dead.

        The insertion is ``EvictionPool.offer``'s rules, inlined (twice: in the loop that
        scores lru / ttl / lfu inline, and after the one ``scorer`` call that scores a batch
        for ahe); the pool's ``_check`` still holds, tests call it after eviction passes.
        """
        mode = self.mode
        pool = self.pool
        scores = pool.scores
        items = pool.items
        cap = pool.size
        full = len(scores) == cap
        dbid = db.id
        missing = 0
        batch = None
        for e in ents:
            if e.value is None:
                missing += 1
                continue
            exp = e.exp
            if exp > 0:
                if exp < now:
                    db.unlink(e)
                    self.ks.expired_keys += 1
                    continue
            elif vol:
                missing += 1
                continue
            if mode == SCORE_LRU:
                s = -e.lru
            elif mode == SCORE_TTL:
                s = -exp
            elif mode == SCORE_LFU:
                s = LFU_COUNTER_MAX - self._decayed(e, now)
            else:
                if batch is None:
                    batch = [e]
                else:
                    batch.append(e)
                continue
            if full:
                if s <= scores[0]:
                    continue
                k = bisect_left(scores, s) - 1
                del scores[0]
                del items[0]
            else:
                k = bisect_left(scores, s)
                full = len(scores) + 1 == cap
            scores.insert(k, s)
            items.insert(k, (dbid, e.key))
        if batch is not None:
            for s, e in zip(self.scorer(batch, now), batch):
                if full:
                    if s <= scores[0]:
                        continue
                    k = bisect_left(scores, s) - 1
                    del scores[0]
                    del items[0]
                else:
                    k = bisect_left(scores, s)
                    full = len(scores) + 1 == cap
                scores.insert(k, s)
                items.insert(k, (dbid, e.key))
        return missing

    def _decayed(self, e, now: int) -> int:
        c = e.lfu
        d = self.decay_minutes
        if d:
            periods = (now // MS_PER_MINUTE - e.lru // MS_PER_MINUTE) // d
            if periods > 0:
                c = c - periods if periods < c else 0
        return c

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
            if db.id > last and (db.volatile if vol else db.data):
                chosen = db
                break
        if chosen is None:
            for db in dbs:
                if db.volatile if vol else db.data:
                    chosen = db
                    break
            else:
                return None
        db = chosen
        self.next_db = db.id
        got = db.sample(1, vol)
        e = got[0] if got else any_candidate(db, vol)
        if 0 < e.exp < now:
            db.unlink(e)
            self.ks.expired_keys += 1
            return RETRY
        return db, e
