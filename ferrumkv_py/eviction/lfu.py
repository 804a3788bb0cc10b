"""Morris LFU counters, as Redis 7.0 keeps them (evict.c ``LFULogIncr`` / ``LFUDecrAndReturn``).

Every key has an 8-bit logarithmic access counter ``Database.lfu[slot]`` (0..255) and the time
of its last access ``Database.lru[slot]`` (epoch ms, which is also when the counter's decay period
started).  A new key starts at ``LFU_INIT_VAL`` (5) so that it is not the first thing evicted.

Increment (probabilistic, "Morris counter")
-------------------------------------------
On an access the counter grows by one with probability::

    p(c) = 1 / ((c - LFU_INIT_VAL) * lfu_log_factor + 1)      for c > LFU_INIT_VAL
    p(c) = 1                                                   for c <= LFU_INIT_VAL
    p(255) = 0                                                 (saturated)

so reaching counter ``c`` takes about ``factor * (c - 5)^2 / 2`` hits.  redis.conf's table,
counter after N hits (the first "hit" creates the key)::

    factor      100 hits   1K     100K    1M     10M
    0           104        255    255     255    255
    1           18         49     255     255    255
    10          10         18     142     255    255
    100         8          11     49      143    255

The probabilities for every ``c`` are precomputed in a 256-entry table (rebuilt when
``lfu-log-factor`` changes), so an increment is one ``random()`` and one comparison.

Decay
-----
The counter loses one per ``lfu-decay-time`` minutes since the last access, counted on the
minute clock as Redis does (``now_ms // 60000 - last_ms // 60000`` minute boundaries crossed),
floored at 0.  ``lfu-decay-time 0`` means *never* decay (redis.conf's comment says otherwise;
the code does not decay).  Decay is applied both when a key is read (then written back with
the increment) and when it is scored for eviction or shown by ``OBJECT FREQ`` (not written
back)::

    counter 20, last access 12:00:59, decay-time 1, now 12:03:00
    -> minutes crossed = 3 -> decayed counter 17

Complexity: every function here is O(1).
"""

from __future__ import annotations

from ..keyspace import LFU_INIT_VAL

LFU_COUNTER_MAX = 255        # 8-bit counter ceiling
MS_PER_MINUTE = 60_000       # the decay clock's unit


def incr_probabilities(log_factor: int) -> tuple:
    """The 256 increment probabilities ``p(c)`` for one ``lfu-log-factor``.

    Complexity: O(256), run only when the factor changes.
    """
    table = []
    for c in range(LFU_COUNTER_MAX + 1):
        base = c - LFU_INIT_VAL
        if c >= LFU_COUNTER_MAX:
            table.append(0.0)
        elif base <= 0:
            table.append(1.0)
        else:
            table.append(1.0 / (base * log_factor + 1))
    return tuple(table)


def log_incr(counter: int, log_factor: int, r: float) -> int:
    """Redis ``LFULogIncr``: one access with uniform draw ``r`` in [0, 1).

    Complexity: O(1).
    """
    if counter >= LFU_COUNTER_MAX:
        return LFU_COUNTER_MAX
    base = counter - LFU_INIT_VAL
    if base < 0:
        base = 0
    if r < 1.0 / (base * log_factor + 1):
        return counter + 1
    return counter


def decayed(counter, last_ms, now_min, decay_minutes):
    """The counter after decay, counted on the minute clock ``now_min`` (``now_ms //
    MS_PER_MINUTE``, which a caller scoring many keys computes once).  Plain Python in
    numba's subset: the eviction kernel compiles this same function (scores.py).

    Complexity: O(1).
    """
    if decay_minutes > 0:
        periods = (now_min - last_ms // MS_PER_MINUTE) // decay_minutes
        if periods > 0:
            counter = counter - periods if periods < counter else 0
    return counter


def decr(counter: int, last_ms: int, now_ms: int, decay_minutes: int) -> int:
    """Redis ``LFUDecrAndReturn``: the counter after decay, not written back.

    Complexity: O(1).
    """
    return decayed(counter, last_ms, now_ms // MS_PER_MINUTE, decay_minutes)


def make_touch(log_factor: int, decay_minutes: int, rand, jumps: dict | None = None):
    """Build the access hook ``touch(counter, last_ms, now_ms) -> counter`` for the keyspace.

    ``jumps``: counters whose increment goes further than one, ``{from: to}`` (AHE's
    probation: a probationary key's first access, probation.py).  Only with
    ``decay_minutes`` 0 (the AHE-adaptive controller never decays by wall time).

    The keyspace calls it on every read and write lookup while ``ks.lfu_on`` is set; it decays
    the counter, then increments it (Redis ``updateLFU``).  Settings are bound into the closure
    so the per-access cost is a table lookup and one ``rand()``; the Evictor rebuilds it when
    a knob changes.  ``rand`` is ``ks.rng.random``.

    Decay without division, mostly: the closure remembers the minute the clock was last in,
    as ``[start, end)`` ms.  A key last touched in that minute and touched again in it has
    crossed no minute boundary, so two comparisons replace the two ``//`` of ~1.7e12 ms
    timestamps (two-digit ints to CPython, ~45 ns each).  Same counters as :func:`decr`
    then :func:`log_incr`: a test drives one closure through a clock that moves both ways.
    ``timeit``, one entry, lfu-decay-time 1: 176 -> 130 ns per touch.
    Complexity: O(1) per call.
    """
    probs = incr_probabilities(log_factor)
    if jumps:
        if decay_minutes:
            raise ValueError("counter jumps need lfu decay off")
        nexts = [min(c + 1, LFU_COUNTER_MAX) for c in range(LFU_COUNTER_MAX + 1)]
        for c, to in jumps.items():
            nexts[c] = to
        nexts = tuple(nexts)

        def touch_jump(counter, last_ms, now_ms, _p=probs, _r=rand, _n=nexts):
            return _n[counter] if _r() < _p[counter] else counter
        return touch_jump
    if not decay_minutes:
        def touch(counter, last_ms, now_ms, _p=probs, _r=rand):
            return counter + 1 if _r() < _p[counter] else counter
        return touch

    start, end, minute = 1, 0, 0    # the clock's last minute: [start, end) ms (empty at first)

    def touch_decay(counter, last_ms, now_ms, _p=probs, _r=rand, _d=decay_minutes,
                    _m=MS_PER_MINUTE):
        nonlocal start, end, minute
        # last_ms >= start > now_ms: a clock gone back, no boundary crossed, no decay
        if last_ms < start or now_ms >= end:
            if now_ms < start or now_ms >= end:
                minute = now_ms // _m
                start = minute * _m
                end = start + _m
            if last_ms < start:
                periods = (minute - last_ms // _m) // _d
                if periods > 0:
                    counter = counter - periods if periods < counter else 0
        return counter + 1 if _r() < _p[counter] else counter
    return touch_decay

