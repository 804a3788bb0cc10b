"""The Evictor's compiled path: victims chosen in batches by ``kernel.py``, unlinked here.

When every key that may be evicted lives in one database (the usual case: most caches use
db 0) and the policy's score is one the kernel computes (lru, lfu, ttl, both AHE
controllers once the adaptive one has measured its turnover), an eviction pass is::

    while used > target (maxmemory less the pass's headroom):
        want = (used - target) // average key cost + 1        (at most BATCH_MAX)
        kernel: up to ``want`` victims (and the expired keys met on the way)
        Python: delete the expired ones as expiries, then for each victim: the AHE
                controller's on_evict (with the kernel's picks), unlink, count, notify

so the interpreted cost per evicted key is the unlink and the bookkeeping Redis also does,
and the kernel call is shared by the batch.  Otherwise (keys in several databases, the
random policies, another controller) the Evictor takes the Python sampler.  Both score
with scores.py's functions; test_eviction_kernel holds the kernel against the reference
scorers of tests/ferrumkv/score_reference.py and the Python pool.

The kernel's pool holds slots of one database; it is emptied when the database, its tables
(FLUSHDB, SWAPDB) or the slot numbering (compaction, ``Keyspace.slot_moves``) changes, and
when the policy changes.

Complexity: O(victims * samples) per pass, plus O(1) Python work per victim.
"""

from __future__ import annotations

from array import array

from ..lazy import LazyModule
from ..notify import NOTIFY_EVICTED
from .kernel_abi import (BATCH_MAX, EXPIRED_ROOM, I_DECAY, I_EXPIRED, I_LIVE, I_NOW, I_POOL_N,
                         I_SAMPLES, I_VICTIMS, I_VOL, I_WANT, MODE_ADAPT, MODE_EPS, MODE_LFU,
                         MODE_LRU, MODE_TTL, N_FPARAMS, N_IPARAMS, N_PICK_COLS)
from .pool import EVPOOL_SIZE
from .sampler import SCORE_ADAPT, SCORE_EPS, SCORE_LFU, SCORE_LRU, SCORE_TTL
from .scores import adapt_params, eps_params

K = LazyModule("ferrumkv_py.eviction.kernel")   # numba: loaded when a policy evicts


class CompiledSampler:
    """Buffers, pool and random state of the kernel path; see the module docstring."""

    def __init__(self, ks):
        self.ks = ks
        self.ip = array("q", [0] * N_IPARAMS)
        self.fp = array("d", [0.0] * N_FPARAMS)
        self.pool_score = array("d", [0.0] * EVPOOL_SIZE)
        self.pool_slot = array("q", [0] * EVPOOL_SIZE)
        self.pool_stamp = array("q", [0] * EVPOOL_SIZE)
        self.pool_n = 0
        self._pool_of = None        # (db, its lru table, slot_moves) the pool's slots are of
        self.rng = array("Q", [ks.rng.getrandbits(64) | 1])
        self.victims = array("q", [0] * BATCH_MAX)
        self.stamps = array("q", [0] * BATCH_MAX)
        self.expired = array("q", [0] * EXPIRED_ROOM)
        self.xstamps = array("q", [0] * EXPIRED_ROOM)
        self.picks = array("q", [0] * (BATCH_MAX * N_PICK_COLS))
        self.calls = 0              # kernel calls (INFO eviction_kernel_calls)

    def clear(self) -> None:
        self.pool_n = 0

    @staticmethod
    def warm() -> None:
        """Load numba and compile the kernel now (policy or maxmemory just made eviction
        possible), not in the middle of the first write that needs room."""
        K.warm()

    def mode_of(self, sampler) -> int:
        """The kernel mode for the sampler's current scoring, or 0 for the Python path."""
        m = sampler.mode
        if m == SCORE_LRU:
            return MODE_LRU
        if m == SCORE_TTL:
            return MODE_TTL
        if m == SCORE_LFU:
            return MODE_LFU
        if m == SCORE_EPS:
            return MODE_EPS
        if m == SCORE_ADAPT and sampler.adapt.turnover_ms is not None:
            return MODE_ADAPT
        return 0

    def evict(self, ev, db, mode: int, vol: bool, limit: int, target: int):
        """One eviction pass on ``db`` (the only database with candidates) by batches.
        Returns what ``Evictor._evict_pass`` returns, or None when the time budget ran out
        (the caller records the lag).  Complexity: O(victims * samples)."""
        ks = self.ks
        sampler = ev.sampler
        now = ks.now_ms
        ctl = ev._ctl
        ctl_mem = ev.ctl_mem
        key_of = (db, db.lru, ks.slot_moves)
        if self._pool_of != key_of:
            self._pool_of = key_of
            self.pool_n = 0
        ip, fp = self.ip, self.fp
        ip[I_NOW] = now
        ip[I_SAMPLES] = sampler.samples
        ip[I_VOL] = 1 if vol else 0
        ip[I_DECAY] = sampler.decay_minutes
        adapt = None
        if mode == MODE_EPS:
            eps = sampler.eps
            par = eps_params(eps.state.alpha)
            fp[:len(par)] = array("d", par)
            ip[I_DECAY] = eps.settings.decay_minutes
        victims, stamps, expired, xstamps, picks = (self.victims, self.stamps, self.expired,
                                                    self.xstamps, self.picks)
        lazy = ks.lazy_eviction
        lru = db.lru
        keys = db.keys
        unlink = db.unlink
        kernel = K.pick_victims
        start = ks.clock.monotonic()
        while True:
            used = ks.used_memory if ctl_mem is None else ks.used_memory + ctl_mem()
            if used <= target:
                ev.lagging = False
                return True
            live = db.volatile if vol else len(db)
            if not live:
                return used <= limit
            if mode == MODE_ADAPT:          # alpha may have moved in the last batch
                adapt = sampler.adapt
                par = adapt.params(adapt.turnover_ms)
                fp[:len(par)] = array("d", par)
            avg = ks.used_memory // (ks.total_keys() or 1) or 1
            want = (used - target) // avg + 1
            ip[I_WANT] = want if want < BATCH_MAX else BATCH_MAX
            ip[I_LIVE] = live
            ip[I_POOL_N] = self.pool_n
            kernel(mode, ip, fp, lru, db.lfu, db.exp, db.vslots, self.pool_score,
                   self.pool_slot, self.pool_stamp, self.rng, victims, stamps, expired,
                   xstamps, picks)
            self.calls += 1
            self.pool_n = ip[I_POOL_N]
            ne = ip[I_EXPIRED]
            nv = ip[I_VICTIMS]
            for i in range(ne):
                s = expired[i]
                lru[s] = xstamps[i]
                db._expire_slot(s)         # unlink, expired_keys, "expired" event
            notify = ks.notify_flags
            if adapt is not None:           # the adaptive controller: its batch, then unlink
                for i in range(nv):
                    lru[victims[i]] = stamps[i]
                adapt.evicted_batch(db, victims, nv, picks, now)
                if not notify:
                    db.unlink_many(victims, nv, lazy)
                else:
                    for i in range(nv):
                        s = victims[i]
                        key = keys[s]
                        unlink(s, lazy)
                        ks.notify(db, NOTIFY_EVICTED, b"evicted", key)
            elif ctl is None and not notify:
                db.unlink_many(victims, nv, lazy)     # the common case: one loop
            else:
                for i in range(nv):
                    s = victims[i]
                    lru[s] = stamps[i]
                    if ctl is not None:
                        ctl.on_evict(db, s, now)
                    key = keys[s]
                    unlink(s, lazy)
                    if notify:
                        ks.notify(db, NOTIFY_EVICTED, b"evicted", key)
            ks.evicted_keys += nv
            if not nv and not ne:
                used = ks.used_memory if ctl_mem is None else ks.used_memory + ctl_mem()
                return used <= limit
            if ev.over_budget(start):
                return None
