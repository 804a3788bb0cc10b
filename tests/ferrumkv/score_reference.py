"""Reference scorers: each eviction score written out as its essay states it, one key at a
time, for the tests to hold ``ferrumkv_py/eviction/scores.py`` (the one home the kernel,
the sampler and the controllers share) against.  They read the constants from scores.py
but none of its arithmetic: a mistake there is not repeated here.

Complexity: O(1) per key.
"""

from __future__ import annotations

from ferrumkv_py.eviction.lfu import LFU_COUNTER_MAX, MS_PER_MINUTE
from ferrumkv_py.eviction.probation import PROBATION_COUNTER, PROBATION_IDLE_TURNOVERS
from ferrumkv_py.eviction.scores import (MIN_TURNOVER_MS, POINT_WEIGHT, PROBATION_FIRST,
                                         RECENCY_HORIZON_MS, TTL_PENALTY,
                                         TTL_SHORT_HORIZON_MS, TTL_URGENCY_HORIZON,
                                         TTL_URGENCY_WEIGHT)
from ferrumkv_py.values import LFU_INIT_VAL


def lru_scores(db, slots: list, now_ms: int) -> list:
    """Minus each key's last-access time: orders keys as their idle time does."""
    return [-db.lru[s] for s in slots]


def ttl_scores(db, slots: list, now_ms: int) -> list:
    """Minus the deadline: the key expiring soonest has the largest score."""
    return [-db.exp[s] for s in slots]


def lfu_scores(db, slots: list, now_ms: int, decay_minutes: int) -> list:
    """``255 - decayed counter`` (rarest = largest): one point lost per ``decay_minutes``
    minute boundaries crossed since the last access."""
    out = []
    for s in slots:
        c = db.lfu[s]
        if decay_minutes:
            periods = (now_ms // MS_PER_MINUTE - db.lru[s] // MS_PER_MINUTE) // decay_minutes
            c = max(c - max(periods, 0), 0)
        out.append(LFU_COUNTER_MAX - c)
    return out


def eps_score(alpha: float, idle_ms: int, counter: int, ttl_left_ms) -> float:
    """The AHE spec score of one key (ahe.py's essay); ``ttl_left_ms`` None = no TTL."""
    recency = min(idle_ms / RECENCY_HORIZON_MS, 1.0)
    infrequency = 1.0 - counter / LFU_COUNTER_MAX
    score = alpha * recency + (1.0 - alpha) * infrequency
    if ttl_left_ms is not None and ttl_left_ms <= TTL_SHORT_HORIZON_MS:
        score += TTL_PENALTY
    return score


def adaptive_score(alpha: float, idle_ms: int, counter: int, ttl_left_ms, turnover_ms: float,
                   weight: float = POINT_WEIGHT, probation: bool = False,
                   idle_turnovers: float = PROBATION_IDLE_TURNOVERS) -> float:
    """The adaptive AHE score of one key (ahe_adaptive.py's essay); ``ttl_left_ms`` None =
    no TTL; ``probation``: ahe-probation is on (a counter of PROBATION_COUNTER then marks a
    key on probation); ``idle_turnovers``: probation's idle threshold."""
    t = max(turnover_ms, MIN_TURNOVER_MS)
    on_probation = probation and counter == PROBATION_COUNTER
    if on_probation:
        counter = LFU_INIT_VAL
    s = alpha * idle_ms / t + (1.0 - alpha) * weight * (LFU_COUNTER_MAX - counter)
    if ttl_left_ms is not None:
        horizon = TTL_URGENCY_HORIZON * t
        if ttl_left_ms < horizon:
            urgency = 1.0 - max(ttl_left_ms, 0) / horizon
            s += TTL_URGENCY_WEIGHT * urgency * (alpha + (1.0 - alpha) * weight)
    if on_probation and idle_ms > idle_turnovers * t:
        s += PROBATION_FIRST + idle_ms / t
    return s
