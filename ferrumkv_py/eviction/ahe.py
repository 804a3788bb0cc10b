"""Adaptive Hybrid Eviction (AHE): one score mixing recency, rarity and TTL urgency, with a
feedback controller that moves the mix toward whatever raises the hit ratio.

Score (EPS, eviction priority score; higher = evicted first)
-----------------------------------------------------------
::

    EPS = alpha * recency + (1 - alpha) * infrequency + ttl_penalty

    recency      = min(idle_ms / RECENCY_HORIZON_MS, 1)      idle 10 min or more -> 1
    infrequency  = 1 - counter / 255                         the decayed Morris counter of
                                                             lfu.py (no extra per-key memory)
    ttl_penalty  = TTL_PENALTY (0.2) if the key has a TTL and its remaining time is
                   <= TTL_SHORT_HORIZON_MS (30 s) or already past; else 0

Worked example (alpha 0.5, now = 12:10:00)::

    key  idle    counter  TTL left   recency  infrequency  penalty  EPS
    a    300 s   5        none       0.5      0.980        0        0.740
    b    10 s    200      20 s       0.017    0.216        0.2      0.316
    c    900 s   30       none       1.0      0.882        0        0.941   <- evicted

The score's code is ``scores.eps_score`` (its constants and parameters: ``scores.py``, the
one home the kernel, the sampler and :meth:`SpecController.scores` share).
The candidates are drawn and kept exactly as for the lru/lfu policies (uniform samples fed
into the 16-entry pool, ``pool.py``); only the score differs.  (The Evictor deletes sampled
keys that are already expired as expirations before scoring, so the "already past" branch of
the penalty only matters to callers that score without that filter.)

Controller (AdaptiveHybridState)
--------------------------------
A one-dimensional search on the hit ratio: after each evicted key the controller is told
``observe(hits, misses)``; every ``window`` observations it compares the hit ratio with the
previous window's, reverses direction when the ratio dropped by more than
``REGRESSION_EPSILON``, and moves ``alpha`` one ``step`` in the current direction, clamped to
``[AHE_ALPHA_MIN, AHE_ALPHA_MAX]``::

    observe(hits, misses):
        window_count += 1
        if window_count < window: return False
        ratio = hits / (hits + misses)        (last_hit_ratio when both are 0)
        if ratio + 1e-4 < last_hit_ratio: direction = -direction
        alpha = clamp(alpha + direction * step, 0.05, 0.95)
        last_hit_ratio = ratio; window_count = 0; return True

Feedback modes (``ahe-feedback``): ``window`` (default, the design document's meaning) passes
the hits and misses counted *since the last update*, so the ratio is the window's own;
``lifetime`` passes the server's cumulative ``keyspace_hits`` / ``keyspace_misses`` as the
Rust original did (its ratio barely moves after a while, so the controller mostly just walks
one way and bounces off the clamps; kept for comparison).

Controller protocol
-------------------
The Evictor talks to the AHE controller only through this interface, so another controller
can be plugged in by adding a class to :data:`CONTROLLERS` (and its name to the
``ahe-controller`` choices in ``config.py``):

``Controller(ks, settings)``
    ``settings`` is a :class:`AheSettings` (alpha_init, step, window, feedback, decay minutes).
``alpha`` (attribute or property)
    the current recency weight, for INFO and tests.
``scores(db, slots, now_ms) -> list[float]``
    one score per slot of ``db`` (its ``lru``/``lfu``/``exp`` arrays), higher = evict first.
``on_evict(db, slot, now_ms)``
    called once per evicted key, *before* it is unlinked (the slot still holds it).
``on_miss``
    ``None``, or a callable ``on_miss(key)``.  When not None the Evictor installs it as
    ``ks.miss_hook`` while the policy is AHE; the keyspace calls it on the miss branches of
    ``Database.lookup_read`` only (a read of a missing or expired key), so controllers that do
    not need it cost nothing on the hit path and one attribute test on a miss.
``configure(settings)``
    apply changed knobs at runtime (step, window, feedback, decay; alpha_init resets alpha).
``info_fields() -> list[(name, value)]``
    appended to INFO memory (plain decimals).
``extra_memory_bytes() -> int``
    bytes of controller state beyond the data set; the Evictor counts them against maxmemory.

Optional members (the Evictor checks with ``getattr``):

``set_scope(volatile)``
    told whether the policy is volatile-ahe (candidates = keys with a TTL) or allkeys-ahe,
    at creation and on every policy change.
``extra_memory_fixed``
    True when ``extra_memory_bytes()`` never changes (the spec controller: always 0): the
    Evictor then reads it once instead of before every write (make_room's fast path).
``counter_decay_minutes``
    None (the spec controller): the Morris counter decays by ``lfu-decay-time``; an int:
    the decay period this controller needs instead while it is active (0 = no wall-clock
    decay), used by the keyspace's touch hook and OBJECT FREQ.

Controllers in other modules register by adding themselves to :data:`CONTROLLERS` at
import; the eviction package imports every ``eviction/ahe_*.py`` module.

Complexity: scoring O(1) per entry; ``observe`` O(1).
"""

from __future__ import annotations

from dataclasses import dataclass

from .lfu import MS_PER_MINUTE, decayed
from .scores import eps_params, eps_score

AHE_ALPHA_INIT = 0.5              # initial recency weight
AHE_ALPHA_MIN = 0.05              # clamp: never pure LFU
AHE_ALPHA_MAX = 0.95              # clamp: never pure LRU
AHE_STEP = 0.05                   # alpha change per update
AHE_WINDOW = 64                   # observations (evicted keys) per update
REGRESSION_EPSILON = 1e-4         # a hit-ratio drop larger than this flips the direction
FEEDBACK_WINDOW = "window"
FEEDBACK_LIFETIME = "lifetime"


@dataclass(slots=True)
class AheSettings:
    """The AHE knobs from the config table (``ahe-*``) plus the LFU decay period."""
    alpha_init: float = AHE_ALPHA_INIT
    step: float = AHE_STEP
    window: int = AHE_WINDOW
    feedback: str = FEEDBACK_WINDOW
    decay_minutes: int = 1
    probation: bool = True        # ahe-probation (the adaptive controller: probation.py)


class AdaptiveHybridState:
    """The alpha controller of the design document (see the module docstring)."""

    __slots__ = ("alpha", "step", "direction", "last_hit_ratio", "window_size",
                 "window_count", "updates", "flips")

    def __init__(self, alpha: float = AHE_ALPHA_INIT, step: float = AHE_STEP,
                 window_size: int = AHE_WINDOW):
        self.alpha = _clamp(alpha)
        self.step = step
        self.direction = 1.0
        self.last_hit_ratio = 0.0
        self.window_size = window_size
        self.window_count = 0
        self.updates = 0          # alpha updates so far (INFO, tests)
        self.flips = 0            # direction reversals so far

    def observe(self, hits: int, misses: int) -> bool:
        """Count one observation; at the end of a window update alpha.  True if it did.

        Complexity: O(1).
        """
        self.window_count += 1
        if self.window_count < self.window_size:
            return False
        total = hits + misses
        ratio = hits / total if total > 0 else self.last_hit_ratio
        if ratio + REGRESSION_EPSILON < self.last_hit_ratio:
            self.direction = -self.direction
            self.flips += 1
        self.alpha = _clamp(self.alpha + self.direction * self.step)
        self.last_hit_ratio = ratio
        self.window_count = 0
        self.updates += 1
        return True

    def _check(self) -> None:
        assert AHE_ALPHA_MIN <= self.alpha <= AHE_ALPHA_MAX
        assert self.direction in (1.0, -1.0)
        assert 0 <= self.window_count < self.window_size
        assert 0.0 <= self.last_hit_ratio <= 1.0


def _clamp(alpha: float) -> float:
    return AHE_ALPHA_MIN if alpha < AHE_ALPHA_MIN else (
        AHE_ALPHA_MAX if alpha > AHE_ALPHA_MAX else alpha)


class SpecController:
    """AHE as its design document specifies it: EPS scores, AdaptiveHybridState feedback."""

    name = "spec"
    on_miss = None                  # this controller does not need the miss stream
    counter_decay_minutes = None    # the counter decays by lfu-decay-time
    extra_memory_fixed = True       # extra_memory_bytes() is always 0

    def __init__(self, ks, settings: AheSettings):
        self.ks = ks
        self.settings = settings
        self.state = AdaptiveHybridState(settings.alpha_init, settings.step, settings.window)
        self._hits0 = ks.hits     # counters at the start of the current window
        self._misses0 = ks.misses

    @property
    def alpha(self) -> float:
        return self.state.alpha

    def configure(self, settings: AheSettings) -> None:
        """Apply changed knobs; a new ``alpha_init`` restarts alpha from it."""
        st = self.state
        if settings.alpha_init != self.settings.alpha_init:
            st.alpha = _clamp(settings.alpha_init)
        st.step = settings.step
        st.window_size = settings.window
        if st.window_count >= st.window_size:
            st.window_count = st.window_size - 1   # the next observation closes the window
        if settings.feedback != self.settings.feedback:
            self._hits0, self._misses0 = self.ks.hits, self.ks.misses
        self.settings = settings

    def scores(self, db, slots: list, now_ms: int) -> list:
        """EPS of each slot's key (``scores.eps_score``, its counter decayed).

        Complexity: O(len(slots)).
        """
        par = eps_params(self.state.alpha)
        decay = self.settings.decay_minutes
        now_min = now_ms // MS_PER_MINUTE
        lrus, lfus, exps = db.lru, db.lfu, db.exp
        return [eps_score(par, now_ms - lrus[e], decayed(lfus[e], lrus[e], now_min, decay),
                          exps[e], now_ms) for e in slots]

    def on_evict(self, db, slot: int, now_ms: int) -> None:
        """Feed the controller one observation (window or lifetime counters).

        Complexity: O(1).
        """
        ks = self.ks
        if self.settings.feedback == FEEDBACK_LIFETIME:
            self.state.observe(ks.hits, ks.misses)
            return
        h0, m0 = self._hits0, self._misses0
        if ks.hits < h0 or ks.misses < m0:      # CONFIG RESETSTAT zeroed the counters
            h0 = m0 = 0
        if self.state.observe(ks.hits - h0, ks.misses - m0):
            self._hits0, self._misses0 = ks.hits, ks.misses

    def extra_memory_bytes(self) -> int:
        return 0

    def info_fields(self) -> list:
        st = self.state
        return [
            ("ahe_controller", self.name),
            ("ahe_feedback", self.settings.feedback),
            ("ahe_alpha", "%.6f" % st.alpha),
            ("ahe_alpha_leaning", alpha_leaning(st.alpha)),
            ("ahe_last_hit_ratio", "%.6f" % st.last_hit_ratio),
            ("ahe_direction", int(st.direction)),
            ("ahe_window_fill", st.window_count),
            ("ahe_window", st.window_size),
            ("ahe_step", "%.6f" % st.step),
            ("ahe_updates", st.updates),
            ("ahe_direction_flips", st.flips),
        ]


ALPHA_BALANCED_BAND = 0.05     # |alpha - 0.5| within this reads as "balanced"


def alpha_leaning(alpha: float) -> str:
    """Which term alpha favours, for INFO ``ahe_alpha_leaning``: alpha is the weight of
    recency (1 = pure LRU-like), 1 - alpha that of frequency (0 = LFU-like)."""
    if alpha > 0.5 + ALPHA_BALANCED_BAND:
        return "recency"
    if alpha < 0.5 - ALPHA_BALANCED_BAND:
        return "frequency"
    return "balanced"


CONTROLLERS: dict = {"spec": SpecController}   # ahe-controller name -> class


def make_controller(name: str, ks, settings: AheSettings):
    """Build the controller named by ``ahe-controller``.  Complexity: O(1)."""
    try:
        cls = CONTROLLERS[name]
    except KeyError:
        raise ValueError("unknown ahe-controller '%s'" % name) from None
    return cls(ks, settings)
