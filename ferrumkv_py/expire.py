"""Active expiry: Redis 7's adaptive cycle, on uniform random samples.

Lazy expiry (``keyspace.lookup_*``) removes a key when someone touches it; keys nobody touches
again are found here.  Each cron tick, for every database with keys that have a TTL::

    repeat:
        draw KEYS_PER_LOOP (20 + 5*(effort-1)) entries at random from the volatile list
        delete those whose deadline has passed
    while more than ACCEPTABLE_STALE (10 - (effort-1)) % of the draw was stale
      and the tick's time budget (25% of a tick at effort 1) is not spent

The sample is uniform (``Database.sample``), unlike the original's first-N-keys sweep that
never reached keys beyond the first few.  ``expired_stale_perc`` is the running average
``0.05 * current + 0.95 * previous`` Redis reports.

Complexity: O(KEYS_PER_LOOP) per loop; bounded by the time budget per tick.
"""

from __future__ import annotations

import time

ACTIVE_EXPIRE_KEYS_PER_LOOP = 20       # keys per draw at effort 1
ACTIVE_EXPIRE_ACCEPTABLE_STALE = 10    # % stale at which a database is considered clean
CHECK_TIME_EVERY_LOOPS = 16            # read the clock only every 16 loops, as Redis


def active_expire_cycle(ks, budget_us: int, effort: int = 1) -> int:
    """Run one slow cycle over every database; returns how many keys it expired."""
    e = effort - 1
    per_loop = ACTIVE_EXPIRE_KEYS_PER_LOOP + 5 * e
    acceptable = ACTIVE_EXPIRE_ACCEPTABLE_STALE - e
    start = time.perf_counter()
    deadline = start + budget_us / 1_000_000
    now = ks.now_ms
    total_expired = total_sampled = 0
    loops = 0
    timed_out = False
    for db in ks.dbs:
        if timed_out:
            break
        while db.volatile:
            sampled = expired = 0
            for ent in db.sample(per_loop, volatile=True):
                if ent.value is None:
                    continue  # drawn twice in this sample and already deleted
                sampled += 1
                if 0 < ent.exp < now:
                    db.unlink(ent)
                    ks.expired_keys += 1
                    expired += 1
            total_expired += expired
            total_sampled += sampled
            loops += 1
            if loops % CHECK_TIME_EVERY_LOOPS == 0 and time.perf_counter() > deadline:
                timed_out = True
                ks.expired_time_cap_reached_count += 1
                break
            if sampled == 0 or expired * 100 <= sampled * acceptable:
                break
    current = (total_expired / total_sampled) if total_sampled else 0.0
    ks.expired_stale_perc = current * 0.05 + ks.expired_stale_perc * 0.95
    return total_expired
