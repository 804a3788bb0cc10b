"""The active expire cycle (expire.py) on a ManualClock: what it deletes, when it stops,
what it leaves alone, and the INFO statistics it keeps."""

from __future__ import annotations

import random

import pytest

from ferrumkv_py.clock import ManualClock
from ferrumkv_py.expire import (ACTIVE_EXPIRE_KEYS_PER_EFFORT, ACTIVE_EXPIRE_KEYS_PER_LOOP,
                                CHECK_TIME_EVERY_LOOPS, active_expire_cycle)
from ferrumkv_py.keyspace import Database, Keyspace

BUDGET_US = 25_000   # hz 10, 25% of a tick


class SteppingClock(ManualClock):
    """Monotonic time moves one second each time it is read (forces the time cap)."""

    def monotonic(self) -> float:
        self.mono += 1.0
        return self.mono


def make_ks(clock=None, databases=4, seed=42):
    return Keyspace(databases=databases, clock=clock or ManualClock(), rng=random.Random(seed))


def fill(ks, db_id=0, stale=0, live_ttl=0, persistent=0, prefix=b""):
    """Keys whose deadline is already past, keys with a future deadline, keys without TTL."""
    db = ks.dbs[db_id]
    now = ks.now_ms
    for i in range(stale):
        db.set_expire(db.add(prefix + b"stale:%d" % i, b"v"), now + 1)
    for i in range(live_ttl):
        db.set_expire(db.add(prefix + b"live:%d" % i, b"v"), now + 3_600_000)
    for i in range(persistent):
        db.add(prefix + b"plain:%d" % i, b"v")
    ks.clock.advance(2)
    ks.refresh_time()
    return db


def test_expires_all_stale_keys_and_keeps_the_rest():
    ks = make_ks()
    db = fill(ks, stale=1000, live_ttl=100, persistent=300)
    n = active_expire_cycle(ks, BUDGET_US)
    ks._check()
    stale_left = sum(1 for key, _ in db.items() if key.startswith(b"stale"))
    assert n == ks.expired_keys == 1000 - stale_left
    # it stops at the first draw of 20 with at most 2 stale: most stale keys are gone
    assert stale_left <= 100      # (a draw of 20 with <= 2 stale while half are stale: p 2e-4)
    assert sum(1 for key, _ in db.items() if key.startswith(b"live")) == 100
    assert sum(1 for key, _ in db.items() if key.startswith(b"plain")) == 300


def test_stops_after_one_draw_when_under_ten_percent_stale():
    ks = make_ks()
    db = fill(ks, stale=30, live_ttl=970)
    n = active_expire_cycle(ks, BUDGET_US)
    ks._check()
    assert n <= ACTIVE_EXPIRE_KEYS_PER_LOOP * 10 // 100 + 2   # one draw of 20: a few at most
    assert sum(1 for key, _ in db.items() if key.startswith(b"stale")) >= 30 - n
    assert db.volatile == 1000 - n


def test_nothing_to_do_without_volatile_keys():
    ks = make_ks()
    fill(ks, persistent=50)
    assert active_expire_cycle(ks, BUDGET_US) == 0
    assert ks.expired_stale_perc == 0.0 and ks.expired_time_cap_reached_count == 0


def test_every_database_is_visited():
    ks = make_ks()
    for db_id in range(4):
        fill(ks, db_id=db_id, stale=100, prefix=b"%d:" % db_id)
    active_expire_cycle(ks, BUDGET_US)
    ks._check()
    assert all(len(db) <= 3 for db in ks.dbs)


def test_stale_perc_running_average():
    ks = make_ks()
    fill(ks, stale=200)
    active_expire_cycle(ks, BUDGET_US)
    first = ks.expired_stale_perc
    assert first == pytest.approx(0.05 * 1.0)         # every sampled key was stale
    active_expire_cycle(ks, BUDGET_US)                 # nothing sampled: current = 0
    assert ks.expired_stale_perc == pytest.approx(0.95 * first)


def test_time_cap_counts_and_resumes_at_next_database():
    ks = make_ks(clock=SteppingClock())
    for db_id in range(2):
        fill(ks, db_id=db_id, stale=2000, prefix=b"%d:" % db_id)
    n = active_expire_cycle(ks, BUDGET_US)
    ks._check()
    assert ks.expired_time_cap_reached_count == 1
    assert n <= CHECK_TIME_EVERY_LOOPS * ACTIVE_EXPIRE_KEYS_PER_LOOP
    assert len(ks.dbs[1]) == 2000                 # the cap hit inside db 0
    assert ks.expire_next_db == 1
    active_expire_cycle(ks, BUDGET_US)                 # the next tick starts at db 1
    assert len(ks.dbs[1]) < 2000


@pytest.mark.parametrize("effort,per_loop", [(1, 20), (3, 30), (10, 65)])
def test_effort_draws_more_keys_per_loop(monkeypatch, effort, per_loop):
    asked = []
    real = Database.sample

    def spy(self, n, volatile=False):
        asked.append(n)
        return real(self, n, volatile)

    monkeypatch.setattr(Database, "sample", spy)
    ks = make_ks()
    fill(ks, live_ttl=500)
    active_expire_cycle(ks, BUDGET_US, effort=effort)
    assert asked == [per_loop]
    assert per_loop == ACTIVE_EXPIRE_KEYS_PER_LOOP + (effort - 1) * ACTIVE_EXPIRE_KEYS_PER_EFFORT


def test_cycle_uses_cached_time_not_the_clock():
    """A key is stale only when its deadline is before the batch's cached now_ms."""
    ks = make_ks()
    db = ks.dbs[0]
    db.set_expire(db.add(b"k", b"v"), ks.now_ms + 10)
    ks.clock.advance(100)                 # the clock moved, the cache did not
    assert active_expire_cycle(ks, BUDGET_US) == 0
    ks.refresh_time()
    assert active_expire_cycle(ks, BUDGET_US) == 1
    assert not db.nkeys and ks.expired_keys == 1
