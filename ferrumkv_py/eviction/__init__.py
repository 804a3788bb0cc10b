"""Eviction: keep the data set under ``maxmemory`` by the configured policy.

Who calls :meth:`Evictor.make_room`
-----------------------------------
* the dispatcher, before every ``denyoom`` command while ``maxmemory`` is set (a False answer
  becomes ``-OOM command not allowed when used memory > 'maxmemory'.`` and the command does
  not run; reads are never refused);
* the cron, every tick while memory is over the limit;
* ``CONFIG SET maxmemory`` to a value below the current usage.

Under the limit (the common case) it costs two attribute loads and a comparison.

The eviction loop (Redis ``performEvictions``)
----------------------------------------------
::

    target = maxmemory - headroom          headroom = min(maxmemory / 1024, 32 KiB)
    repeat:
        pick a victim (sampler.py):
            pool policies (lru, lfu, ttl, ahe): every DB with candidates gets
            maxmemory-samples uniform draws (its volatile list under volatile-*), scored
            into the 16-entry pool; the best pool entry that still names a live key wins
            random policies: one uniform key of the next DB with candidates (round robin)
        none left (noeviction, or volatile-* without TTL keys): FAIL unless under the limit
        tell the AHE controller, unlink the victim, evicted_keys += 1
    until used_memory (+ controller memory) <= target
    (every 16 loops: past the time budget -> stop; "lagging" if still over the limit)

Our ``used_memory`` is an exact model (memory.py), so unlike Redis there is no "bytes to free"
estimate: the loop re-reads it.  Sampled keys whose TTL has already passed are deleted as
*expired* (``expired_keys``, as a read would have done) rather than evicted: removing a dead
key is expiry, and counting it as an eviction would overstate memory pressure.  If that alone
brings memory under the limit, nothing is evicted.

Headroom (a deliberate difference from Redis, which stops as soon as it is under the limit):
a pass frees a little more than needed, so the next writes find room without evicting and
victims are chosen in small batches.  In a running server one victim chosen alone costs
about 19 µs of CPU and one chosen in a batch about 14 µs, because between two lone
evictions a whole command's work has gone through the CPU caches (measured with allkeys-lru,
150k keys, 100k evictions).  The data set then sits at most 0.1% below ``maxmemory``; and a
write smaller than the headroom no longer takes it over the limit even before the next
command's check.

Time budget (``maxmemory-eviction-tenacity`` t, as Redis): ``50*t`` µs for t <= 10 (500 µs by
default), ``500 * 1.15^(t-10)`` µs up to 99, unlimited at 100.  When a pass runs out of time
over the limit, the command is *not* refused (Redis's EVICT_RUNNING); the Evictor stays
"lagging", and while lagging each call (the cron's, CONFIG SET's and the next writes') gets
the larger ``EVICTION_CATCHUP_BUDGET_US`` slice, a quarter of a cron tick at the default hz,
like the slow expire cycle.  That is our stand-in for Redis's 0 ms eviction timer: lowering
maxmemory below a large data set is worked off within a few ticks without a write.  The
budget's clock is ``ks.clock.monotonic()``, so tests on a ManualClock never run out of time.

Interfaces other modules use: ``make_room()``, ``info_fields()``, ``policy_kind``,
``object_freq(db, slot)``, ``freq_tracked`` / ``idle_tracked`` (OBJECT FREQ / IDLETIME), and
``controller`` (the AHE controller, protocol in ``ahe.py``).

Complexity: O(1) when under the limit; O(DBs with keys * samples) per evicted key.
"""

from __future__ import annotations

import importlib
import pkgutil
from operator import attrgetter

from . import lfu
from ..notify import NOTIFY_EVICTED
from .ahe import AheSettings, SpecController, make_controller
from .ahe_adaptive import AdaptiveController
from ..policies import KIND_AHE, KIND_LFU, KIND_NONE, KIND_RANDOM, KIND_TTL, POLICIES, parse
from .compiled import CompiledSampler
from ..first_use import start_thread
from .probation import PROBATION_COUNTER, PROBATION_END
from .sampler import (RETRY, SCORE_ADAPT, SCORE_CALL, SCORE_EPS, SCORE_LFU, SCORE_LRU,
                      SCORE_TTL, Sampler)

EVICT_CHECK_TIME_EVERY = 16            # loops between clock reads, as Redis
TENACITY_US_PER_STEP = 50              # µs of budget per tenacity step up to 10
TENACITY_LINEAR_MAX = 10
TENACITY_BASE_US = 500                 # µs at tenacity 10, grown 15% per step above
TENACITY_GROWTH = 1.15
TENACITY_UNLIMITED = 100
EVICTION_CATCHUP_BUDGET_US = 25_000    # µs per call while lagging behind the limit
EVICTION_HEADROOM_SHIFT = 10           # a pass frees down to maxmemory - maxmemory/1024 ...
EVICTION_HEADROOM_MAX_BYTES = 32 * 1024  # ... but at most 32 KiB below the limit
US_PER_S = 1_000_000

# Other AHE controllers live in eviction/ahe_*.py and register themselves in
# ahe.CONTROLLERS when imported (the same plug-in pattern as commands/).
for _mod in pkgutil.iter_modules(__path__):
    if _mod.name.startswith("ahe_"):
        importlib.import_module(__name__ + "." + _mod.name)

_has_keys = attrgetter("nkeys")        # filter() tests in C: DBs with keys ...
_has_volatile = attrgetter("vslots")    # ... or with TTL keys


def tenacity_budget_us(tenacity: int):
    """Redis ``evictionTimeLimitUs``: µs one pass may take; None = unlimited.

    Complexity: O(1).
    """
    if tenacity <= TENACITY_LINEAR_MAX:
        return TENACITY_US_PER_STEP * tenacity
    if tenacity < TENACITY_UNLIMITED:
        return int(TENACITY_BASE_US * TENACITY_GROWTH ** (tenacity - TENACITY_LINEAR_MAX))
    return None


ROOM_UNLIMITED = 1 << 62           # server.room_limit without maxmemory

class Evictor:
    """Frees memory by the configured policy; answers whether a write may proceed."""

    def __init__(self, server):
        self.server = server
        self.ks = server.ks
        self.sampler = Sampler(self.ks)
        self.pool = self.sampler.pool
        self.policy = POLICIES["noeviction"]
        self.policy_kind = KIND_NONE
        self.budget_us = tenacity_budget_us(10)
        self.log_factor = 10
        self.decay_minutes = 1
        self.ahe = AheSettings()
        self.controller = None
        self.ctl_mem = None           # controller.extra_memory_bytes while AHE is active
        self.lagging = False          # a pass ran out of time while over the limit
        self.exceeded_count = 0       # passes stopped by the time budget
        self._pass_start = 0.0        # clock of a long pass's first budget check
        self._pick = None             # sampler.pick_* of the policy; None = noeviction
        self._ctl = None              # the AHE controller while the policy is AHE
        # the compiled path (compiled.py): built, and the kernel compiled, when a policy
        # that evicts meets a maxmemory; use_kernel False keeps the Python sampler
        self.compiled = None
        self.use_kernel = True
        self._compiling = False       # the kernel compiles on a thread (first_use.py)
        cfg = server.config
        on = cfg.on_change
        on("lfu-log-factor", self._set_log_factor)
        on("lfu-decay-time", self._set_decay)
        on("maxmemory-samples", self._set_samples)
        on("maxmemory-eviction-tenacity", self._set_tenacity)
        on("ahe-alpha-init", lambda v: self._set_ahe(alpha_init=float(v)))
        on("ahe-step", lambda v: self._set_ahe(step=float(v)))
        on("ahe-window", lambda v: self._set_ahe(window=int(v)))
        on("ahe-feedback", lambda v: self._set_ahe(feedback=v))
        on("ahe-probation", lambda v: self._set_ahe(probation=bool(v)))
        on("ahe-controller", self._set_controller)
        on("maxmemory-policy", self._set_policy)

    # ---- the hot path ----

    def make_room(self) -> bool:
        """True when memory is within maxmemory, after evicting if the policy may.

        Complexity: O(1) under the limit; see the module docstring otherwise.
        """
        mm = self.server.maxmemory
        if not mm:
            return True
        used = self.ks.used_memory
        if self.ctl_mem is not None:
            used += self.ctl_mem()
        if used <= mm:
            return True
        return self._perform(mm)

    def refresh_room_limit(self) -> None:
        """Set ``server.room_limit``, the ``used_memory`` above which the dispatcher must call
        :meth:`make_room` before a denyoom command: ``maxmemory`` less the controller's own
        memory.  The controller's memory (AHE ghosts) changes only inside an eviction pass or
        when the policy, controller or maxmemory changes, and each of those calls this, so
        the dispatcher's one comparison decides exactly what make_room's fast path would,
        without the call (SET -P 16 under a maxmemory, most writes: no eviction due).
        Complexity: O(1).
        """
        mm = self.server.maxmemory
        self.server.room_limit = (mm - (self.ctl_mem() if self.ctl_mem is not None else 0)
                                  if mm else ROOM_UNLIMITED)

    def _perform(self, limit: int) -> bool:
        """One eviction pass (:meth:`_evict_pass`), then the room limit it may have moved."""
        ok = self._evict_pass(limit)
        self.refresh_room_limit()
        return ok

    def _evict_pass(self, limit: int) -> bool:
        """The eviction loop of the module docstring.  Complexity: O(victims * samples).

        It evicts down to ``limit - headroom`` (see EVICTION_HEADROOM_*), and reads the
        clock first after EVICT_CHECK_TIME_EVERY loops, counting the budget from there.
        """
        pick = self._pick
        if pick is None:                    # noeviction
            return False
        ks = self.ks
        now = ks.now_ms
        vol = self.policy.volatile
        target = limit - min(limit >> EVICTION_HEADROOM_SHIFT, EVICTION_HEADROOM_MAX_BYTES)
        # DBs can only lose keys while this pass runs (no command runs in between).
        dbs = list(filter(_has_volatile if vol else _has_keys, ks.dbs))
        comp = self.compiled
        if comp is not None and len(dbs) == 1 and pick is not self.sampler.pick_random:
            mode = comp.mode_of(self.sampler)
            if mode:
                got = comp.evict(self, dbs[0], mode, vol, limit, target)
                if got is None:                 # out of time
                    used = ks.used_memory if self.ctl_mem is None else \
                        ks.used_memory + self.ctl_mem()
                    if used > limit:
                        self.lagging = True
                        self.exceeded_count += 1
                    return True
                return got
        ctl = self._ctl
        ctl_mem = self.ctl_mem
        loops = 0
        while True:
            got = pick(now, dbs, vol)
            if got is None:                 # no candidate left
                used = ks.used_memory if ctl_mem is None else ks.used_memory + ctl_mem()
                return used <= limit
            if got is not RETRY:
                db, e = got
                if ctl is not None:
                    ctl.on_evict(db, e, now)
                key = db.keys[e]
                db.unlink(e, ks.lazy_eviction)
                ks.evicted_keys += 1
                if ks.notify_flags:
                    ks.notify(db, NOTIFY_EVICTED, b"evicted", key)
            used = ks.used_memory if ctl_mem is None else ks.used_memory + ctl_mem()
            if used <= target:
                self.lagging = False
                return True
            loops += 1
            if loops % EVICT_CHECK_TIME_EVERY == 0 and self._out_of_time(loops):
                if used > limit:
                    self.lagging = True
                    self.exceeded_count += 1
                return True

    def over_budget(self, start: float) -> bool:
        """The compiled path's budget check after each batch (``start``: the pass's first
        clock reading)."""
        budget = self.budget_us
        if budget is None:
            return False
        if self.lagging:
            budget = max(budget, EVICTION_CATCHUP_BUDGET_US)
        return (self.ks.clock.monotonic() - start) * US_PER_S > budget

    def _out_of_time(self, loops: int) -> bool:
        """The budget check of a long pass (every EVICT_CHECK_TIME_EVERY loops)."""
        budget = self.budget_us
        if budget is None:
            return False
        if self.lagging:
            budget = max(budget, EVICTION_CATCHUP_BUDGET_US)
        t = self.ks.clock.monotonic()
        if loops == EVICT_CHECK_TIME_EVERY:
            self._pass_start = t
            return False
        return (t - self._pass_start) * US_PER_S > budget

    def pool_fill(self) -> int:
        """Candidates kept for the next eviction: the Python pool's and the kernel's."""
        comp = self.compiled
        return len(self.pool) + (comp.pool_n if comp is not None else 0)

    # ---- OBJECT FREQ / IDLETIME support ----

    @property
    def freq_tracked(self) -> bool:
        """OBJECT FREQ answers (lfu and ahe policies maintain the counter)."""
        return self.policy.uses_lfu_counter

    @property
    def idle_tracked(self) -> bool:
        """OBJECT IDLETIME answers: every policy but lfu (Redis's rule; ahe keeps access times)."""
        return self.policy_kind != KIND_LFU

    def object_freq(self, db, s: int) -> int:
        """The decayed Morris counter of slot ``s``'s key, not written back.  O(1)."""
        return lfu.decr(db.lfu[s], db.lru[s], self.ks.now_ms, self._counter_decay())

    def _counter_decay(self) -> int:
        """Minutes per counter decrement: ``lfu-decay-time``, unless the active AHE
        controller fixes its own (``counter_decay_minutes``, ahe.py's protocol)."""
        if self.policy_kind == KIND_AHE and self.controller is not None:
            own = getattr(self.controller, "counter_decay_minutes", None)
            if own is not None:
                return own
        return self.decay_minutes

    # ---- configuration ----

    def _set_policy(self, name: str) -> None:
        pol = parse(name)
        self.policy = pol
        self.policy_kind = pol.kind
        self.pool.clear()
        if self.compiled is not None:
            self.compiled.clear()
        self._maybe_compile(self.server.maxmemory)
        self._tell_scope()
        self._refresh_scorer()
        self._install_hooks()

    def _tell_scope(self) -> None:
        set_scope = getattr(self.controller, "set_scope", None)
        if set_scope is not None:
            set_scope(self.policy.volatile)

    def _refresh_scorer(self) -> None:
        """Tell the sampler how to score a sample under the current policy."""
        sampler = self.sampler
        kind = self.policy_kind
        self._pick = None if kind == KIND_NONE else (
            sampler.pick_random if kind == KIND_RANDOM else sampler.pick_pooled)
        self._ctl = self.controller if kind == KIND_AHE else None
        sampler.decay_minutes = self.decay_minutes
        sampler.scorer = None
        sampler.eps = None
        sampler.adapt = None
        if kind == KIND_LFU:
            sampler.mode = SCORE_LFU
        elif kind == KIND_TTL:
            sampler.mode = SCORE_TTL
        elif kind == KIND_AHE and type(self.controller) is SpecController:
            sampler.mode = SCORE_EPS          # its EPS per sample (scores.eps_score)
            sampler.eps = self.controller
        elif kind == KIND_AHE and type(self.controller) is AdaptiveController:
            sampler.mode = SCORE_ADAPT        # its score per sample (scores.adaptive_score)
            sampler.adapt = self.controller
            sampler.scorer = self.controller.scores   # before its turnover is measured
        elif kind == KIND_AHE and self.controller is not None:
            sampler.mode = SCORE_CALL
            sampler.scorer = self.controller.scores
        else:
            sampler.mode = SCORE_LRU

    def _install_hooks(self) -> None:
        """Point the keyspace's access and miss hooks at the active policy."""
        ks = self.ks
        ahe_on = self.policy_kind == KIND_AHE and self.controller is not None
        probation = ahe_on and getattr(self.controller, "ghost", None) is not None
        if self.policy.uses_lfu_counter:
            # with probation, a probationary key's first access ends it one point above a
            # new key (probation.py: PROBATION_END)
            ks.lfu_touch = lfu.make_touch(self.log_factor, self._counter_decay(),
                                          ks.rng.random,
                                          {PROBATION_COUNTER: PROBATION_END} if probation
                                          else None)
            ks.lfu_on = True
        else:
            ks.lfu_on = False
        ks.miss_hook = self.controller.on_miss if ahe_on else None
        ks.admit_hook = self.controller.admit if probation else None
        self.ctl_mem = None
        if ahe_on:
            ctl = self.controller
            if not getattr(ctl, "extra_memory_fixed", False):
                self.ctl_mem = ctl.extra_memory_bytes        # read before every write
            elif ctl.extra_memory_bytes():
                fixed = ctl.extra_memory_bytes()
                self.ctl_mem = lambda: fixed
        self.refresh_room_limit()

    def _set_log_factor(self, value: int) -> None:
        self.log_factor = value
        self._install_hooks()

    def _set_decay(self, value: int) -> None:
        self.decay_minutes = value
        self._refresh_scorer()
        self._install_hooks()
        self._set_ahe(decay_minutes=value)

    def _set_samples(self, value: int) -> None:
        self.sampler.samples = value

    def _set_tenacity(self, value: int) -> None:
        self.budget_us = tenacity_budget_us(value)

    def _set_ahe(self, **changes) -> None:
        fields = {name: getattr(self.ahe, name) for name in AheSettings.__slots__}
        fields.update(changes)
        self.ahe = AheSettings(**fields)
        if self.controller is not None:
            self.controller.configure(self.ahe)
            self._install_hooks()       # ahe-probation moves the admit hook

    def _set_controller(self, name: str) -> None:
        """(Re)build the AHE controller: its state starts afresh."""
        self.controller = make_controller(name, self.ks, self.ahe)
        self.pool.clear()
        if self.compiled is not None:
            self.compiled.clear()
        self._tell_scope()
        self._refresh_scorer()
        self._install_hooks()

    def _maybe_compile(self, maxmemory: int) -> None:
        """Build the compiled path (and compile its kernel) the first time a policy that
        evicts meets a maxmemory: numba loads then, not inside a write.  While the server
        runs (CONFIG SET), on a thread (first_use.py): the Python sampler, the kernel's
        reference, evicts until the kernel is ready; nobody waits.  Before it listens
        (start-up), here."""
        if (self.compiled is None and self.use_kernel and maxmemory
                and self.policy_kind not in (KIND_NONE, KIND_RANDOM)):
            comp = CompiledSampler(self.ks)
            loop = self.server.loop
            if loop is None or not loop.is_running():
                comp.warm()
                self.compiled = comp
            elif not self._compiling:
                self._compiling = True

                def warm_then_use() -> None:
                    try:
                        comp.warm()
                    finally:
                        loop.call_soon_threadsafe(self._use_compiled, comp)
                start_thread("eviction", warm_then_use)

    def _use_compiled(self, comp) -> None:
        """On the loop, the kernel compiled: the compiled path takes over (if still wanted:
        ``use_kernel`` may have been turned off meanwhile)."""
        self._compiling = False
        if self.compiled is None and self.use_kernel:
            self.compiled = comp

    # ---- INFO ----

    def info_fields(self) -> list:
        """Extra ``INFO memory`` fields of the policy layer (plain decimals)."""
        comp = self.compiled
        fields = [
            ("eviction_pool_fill", self.pool_fill()),
            ("eviction_kernel_calls", comp.calls if comp else 0),
            ("eviction_lagging", int(self.lagging)),
            ("eviction_time_exceeded_count", self.exceeded_count),
        ]
        # the AHE controller's state only while an AHE policy runs it (under other
        # policies it is idle, and its alpha would read as if it meant something)
        if self.controller is not None and self.policy_kind == KIND_AHE:
            fields += self.controller.info_fields()
            fields.append(("ahe_extra_memory", self.controller.extra_memory_bytes()))
        return fields

    # ---- the dispatcher's room check ----

    def room_for_write(self) -> bool:
        """May a ``denyoom`` command run now?  True when ``used_memory`` is within
        ``server.room_limit`` (set by :meth:`refresh_room_limit`), else :meth:`make_room`'s
        answer, after evicting if the policy may.  With ``maxmemory`` 0 the room limit is
        ROOM_UNLIMITED, so this is True at the cost of one comparison.

        The dispatcher's inline path (``client.py``) spells the same test out with the
        attributes of ``server.ROOM_CHECK_ATTRS`` (a call there costs more than the test:
        see that tuple's comment); its other callers use this method.
        Complexity: O(1) under the limit; :meth:`make_room`'s otherwise.
        """
        if self.ks.used_memory <= self.server.room_limit:
            return True
        return self.make_room()

    def prepare_limit(self, maxmemory: int) -> None:
        """Step 1 of a new ``maxmemory``, which ``Server._set_maxmemory`` runs in its stated
        order: build the compiled path if a policy that evicts now meets a limit, and mark
        the backlog (``lagging``) when memory is already over the new limit, so the pass the
        server runs next, and the cron's after it, get the catch-up budget.  The Evictor has
        no ``maxmemory`` listener of its own: this is its only step.
        Complexity: O(1) (the first compilation of the kernel aside).
        """
        self._maybe_compile(maxmemory)
        if maxmemory and self.ks.used_memory > maxmemory:
            self.lagging = True
