"""Active expiry: Redis 7's adaptive cycle, on uniform random samples.

Lazy expiry (``keyspace.lookup_*``) removes a key when someone touches it; keys nobody touches
again are found here.  Each cron tick visits the databases round-robin, starting where the
previous tick stopped, and for every database with keys that have a TTL::

    repeat:
        draw KEYS_PER_LOOP (20 + 5*(effort-1)) entries at random from the volatile list
        delete those whose deadline has passed (deadline < now, strictly, as lookups do)
    while expired*100 // sampled > ACCEPTABLE_STALE (10 - (effort-1)) percent
      and the tick's time budget (25% of a tick at effort 1) is not spent

The time is read only every CHECK_TIME_EVERY_LOOPS draws, from the keyspace's clock (so a
ManualClock makes the cycle deterministic).  When the budget runs out the cycle stops,
counts ``expired_time_cap_reached_count`` and the next tick resumes at the next database.

The draw is uniform (``Database.sample``), unlike a first-N-keys sweep that would never reach
keys beyond the first few.  ``expired_stale_perc`` is the running average
``0.05 * current + 0.95 * previous`` Redis reports, current = expired / sampled of this cycle.

Worked example (effort 1): 100 volatile keys, 60 of them past their deadline.  A draw of 20
finds ~12 stale (60% > 10%), deletes them, draws again... until a draw finds at most 2 stale
in 20; the survivors are left to lazy expiry or to later ticks.

Complexity: O(KEYS_PER_LOOP) per draw; bounded by the time budget per tick.
"""

from __future__ import annotations

ACTIVE_EXPIRE_KEYS_PER_LOOP = 20       # keys per draw at effort 1
ACTIVE_EXPIRE_KEYS_PER_EFFORT = 5      # extra keys per draw per effort step above 1
ACTIVE_EXPIRE_ACCEPTABLE_STALE = 10    # % stale at which a database is considered clean
CHECK_TIME_EVERY_LOOPS = 16            # read the clock only every 16 draws, as Redis
STALE_PERC_WEIGHT = 0.05               # weight of this cycle in expired_stale_perc
US_PER_S = 1_000_000


def active_expire_cycle(ks, budget_us: int, effort: int = 1) -> int:
    """Run one slow cycle over the databases; returns how many keys it expired.

    Complexity: O(keys expired + draws), bounded by ``budget_us`` of ``ks.clock`` time.
    """
    e = effort - 1
    per_loop = ACTIVE_EXPIRE_KEYS_PER_LOOP + ACTIVE_EXPIRE_KEYS_PER_EFFORT * e
    acceptable = ACTIVE_EXPIRE_ACCEPTABLE_STALE - e
    clock = ks.clock
    deadline_s = clock.monotonic() + budget_us / US_PER_S
    now = ks.now_ms
    dbs = ks.dbs
    ndbs = len(dbs)
    total_expired = total_sampled = 0
    loops = 0
    timed_out = False
    start = ks.expire_next_db % ndbs
    for k in range(ndbs):
        db = dbs[(start + k) % ndbs]
        while db.volatile:
            sampled = expired = 0
            keys, exp = db.keys, db.exp
            for s in db.sample(per_loop, volatile=True):
                x = exp[s]
                if not x or keys[s] is None:
                    continue  # drawn twice in this sample and already deleted
                sampled += 1
                if x < now:
                    db._expire_slot(s)   # unlink, expired_keys, "expired" event
                    expired += 1
            total_expired += expired
            total_sampled += sampled
            loops += 1
            if loops % CHECK_TIME_EVERY_LOOPS == 0 and clock.monotonic() > deadline_s:
                timed_out = True
                break
            if sampled == 0 or expired * 100 // sampled <= acceptable:
                break
        if timed_out:
            ks.expired_time_cap_reached_count += 1
            ks.expire_next_db = (start + k + 1) % ndbs
            break
    else:
        ks.expire_next_db = start
    current = (total_expired / total_sampled) if total_sampled else 0.0
    ks.expired_stale_perc = (current * STALE_PERC_WEIGHT
                             + ks.expired_stale_perc * (1 - STALE_PERC_WEIGHT))
    return total_expired
