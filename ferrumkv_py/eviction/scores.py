"""Eviction scores: the one home of every pooled policy's score (higher = evicted first).

Each score is a small function over one key's numbers, written in the subset of Python that
numba compiles.  ``kernel.py`` compiles these very functions into ``pick_victims`` (inlined,
the compiled path); the Python sampler (``sampler.py``, the path for several databases) and
the controllers' ``scores()`` call them as plain Python.  So changing a score is one edit
here, and the kernel recompiles by itself: its cache stamp covers this file
(``kernel.SOURCE_STAMP``).  The research simulator (``research/evsim_ahe/adaptive.py``)
compiles the duel's picks and takes PROBATION_FIRST from here; its blend keeps its own
variants (recency on a log scale, sketch counters), so it is not this file's score.

The scores::

    lru        -last access ms          time-invariant, so scores kept in the pool stay
                                        comparable with fresh ones as the clock moves
    ttl        -deadline ms             the soonest expiry first
    lfu        255 - decayed counter    (lfu.decayed: a point per lfu-decay-time minutes)
    eps        the AHE spec score (ahe.py's essay):
               alpha * min(idle / RECENCY_HORIZON_MS, 1) + (1 - alpha) * (1 - c / 255)
               + TTL_PENALTY when a deadline is within TTL_SHORT_HORIZON_MS
    adaptive   the adaptive AHE score (ahe_adaptive.py's essay), T the turnover time:
               alpha * idle / T + (1 - alpha) * POINT_WEIGHT * (255 - c)
               + urgency * TTL_URGENCY_WEIGHT * (alpha + (1 - alpha) * POINT_WEIGHT)
               + PROBATION_FIRST + idle / T for a probationary key idle past its threshold

Parameters: a score's per-pass numbers (alpha and what is derived from it) are one named
tuple, built by one function (:func:`eps_params`, :func:`adapt_params`) once per pass, not
per key.  The kernel receives them as the fields of that tuple in order in a float buffer
(``fp``, kernel_abi.N_FPARAMS) and reads them back by name (:func:`eps_params_of`,
:func:`adapt_params_of`).  The arithmetic is written so that the scores are the same floats
whichever side computes them (``test_eviction_pinned`` pins the victims they choose).
Every function here is a leaf (it calls no other plain function): kernel.py compiles each
one by itself, and numba cannot call a plain Python function from compiled code.

The duel's two picks (the adaptive controller): among the candidates scored since the last
victim, recency's pick is the largest idle time (ties: the smaller counter) and frequency's
the smallest counter (ties: the larger idle), as :func:`recency_pick` / :func:`frequency_pick`
decide.

Complexity: every function here is O(1).
"""

from __future__ import annotations

from typing import NamedTuple

from .lfu import LFU_COUNTER_MAX
from .probation import PROBATION_COUNTER
from ..values import LFU_INIT_VAL

# ---- the spec score (EPS) ----
RECENCY_HORIZON_MS = 600_000      # idle time at which recency saturates at 1.0 (600 s)
TTL_SHORT_HORIZON_MS = 30_000     # remaining TTL at or under which the penalty applies (30 s)
TTL_PENALTY = 0.2                 # added to EPS for keys about to expire
# ---- the adaptive score ----
POINT_WEIGHT = 4.0                # W: turnovers of idle worth one counter point at alpha 0.5
TTL_URGENCY_WEIGHT = 1.0          # urgency at its maximum, in blended units
TTL_URGENCY_HORIZON = 1.0         # turnovers of remaining TTL below which urgency starts
MIN_TURNOVER_MS = 1.0             # floor of T (a mass eviction within one ms)
PROBATION_FIRST = 1.0e6           # added for a probationary key idle past its threshold
                                  # (above any blend score: probation.py)
PROBATION_OFF = -1.0              # AdaptParams.p_idle while ahe-probation is off


def lru_score(last_ms):
    """Least recently used first.  Complexity: O(1)."""
    return -last_ms


def ttl_score(deadline_ms):
    """Soonest deadline first.  Complexity: O(1)."""
    return -deadline_ms


def lfu_score(counter):
    """Rarest first: 255 less the counter (decayed: ``lfu.decayed``).  Complexity: O(1)."""
    return LFU_COUNTER_MAX - counter


class EpsParams(NamedTuple):
    """The spec score's weights for one pass (see :func:`eps_params`)."""
    alpha: float        # the recency weight; also the saturated recency term
    wr: float           # alpha per idle ms, up to the horizon
    wf: float           # (1 - alpha) per counter point
    base: float         # (1 - alpha) * infrequency at counter 0


def eps_params(alpha: float) -> EpsParams:
    """The spec score's parameters at recency weight ``alpha``.  Complexity: O(1)."""
    return EpsParams(alpha, alpha / RECENCY_HORIZON_MS, (1.0 - alpha) / LFU_COUNTER_MAX,
                     1.0 - alpha)


def eps_params_of(fp):
    """:class:`EpsParams` from the kernel's float buffer (its fields in order)."""
    return EpsParams(fp[0], fp[1], fp[2], fp[3])


def eps_score(p, idle_ms, counter, deadline_ms, now_ms):
    """The AHE spec score of one key (``counter`` already decayed; ``deadline_ms`` 0 =
    no TTL).  Complexity: O(1)."""
    alpha, wr, wf, base = p
    s = (wr * idle_ms if idle_ms < RECENCY_HORIZON_MS else alpha) + base - wf * counter
    if deadline_ms > 0 and deadline_ms - now_ms <= TTL_SHORT_HORIZON_MS:
        s += TTL_PENALTY
    return s


class AdaptParams(NamedTuple):
    """The adaptive score's terms for one pass (see :func:`adapt_params`)."""
    per_ms: float       # alpha per idle ms: alpha / T
    w: float            # (1 - alpha) * POINT_WEIGHT per counter point
    horizon: float      # remaining TTL (ms) below which urgency starts
    urgent: float       # the urgency term at its maximum
    p_idle: float       # idle ms past which a probationary key leaves first (PROBATION_OFF)
    inv_t: float        # 1 / T


def adapt_params(alpha: float, turnover_ms: float, probation_turnovers) -> AdaptParams:
    """The adaptive score's parameters at ``alpha`` and turnover time ``turnover_ms``;
    ``probation_turnovers``: probation's idle threshold in turnovers, None while probation
    is off.  Complexity: O(1)."""
    t = turnover_ms if turnover_ms >= MIN_TURNOVER_MS else MIN_TURNOVER_MS
    w = (1.0 - alpha) * POINT_WEIGHT
    return AdaptParams(alpha / t, w, TTL_URGENCY_HORIZON * t, TTL_URGENCY_WEIGHT * (alpha + w),
                       probation_turnovers * t if probation_turnovers is not None
                       else PROBATION_OFF, 1.0 / t)


def adapt_params_of(fp):
    """:class:`AdaptParams` from the kernel's float buffer (its fields in order)."""
    return AdaptParams(fp[0], fp[1], fp[2], fp[3], fp[4], fp[5])


def adaptive_score(p, idle_ms, counter, deadline_ms, now_ms):
    """The adaptive AHE score of one key (``counter`` as stored; ``deadline_ms`` 0 = no
    TTL), and the counter the blend read: a probationary key's (PROBATION_COUNTER, while
    probation is on) reads as a new key's, for the score and for the duel's picks.
    Complexity: O(1)."""
    per_ms, w, horizon, urgent, p_idle, inv_t = p
    on_probation = counter == PROBATION_COUNTER and p_idle >= 0
    if on_probation:
        counter = LFU_INIT_VAL
    s = idle_ms * per_ms + w * (LFU_COUNTER_MAX - counter)
    if deadline_ms > 0:
        left = deadline_ms - now_ms
        if left < horizon:
            s += urgent * (1.0 - (left if left > 0 else 0) / horizon)
    if on_probation and idle_ms > p_idle:
        s += PROBATION_FIRST + idle_ms * inv_t
    return s, counter


def recency_pick(idle_ms, counter, pick_idle, pick_counter):
    """True when a candidate takes recency's pick from the one so far: idler, or as idle
    and rarer.  Complexity: O(1)."""
    return idle_ms > pick_idle or (idle_ms == pick_idle and counter < pick_counter)


def frequency_pick(idle_ms, counter, pick_idle, pick_counter):
    """True when a candidate takes frequency's pick: rarer, or as rare and idler.
    Complexity: O(1)."""
    return counter < pick_counter or (counter == pick_counter and idle_ms > pick_idle)
