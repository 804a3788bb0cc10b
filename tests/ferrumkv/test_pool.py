"""The eviction pool (eviction/pool.py) against a literal port of Redis's array algorithm."""

from __future__ import annotations

import random

import pytest

from ferrumkv_py.eviction.pool import EVPOOL_SIZE, EvictionPool


class RedisPool:
    """evict.c evictionPoolPopulate's insertion, on a fixed array with None slots."""

    def __init__(self, size=EVPOOL_SIZE):
        self.size = size
        self.slots = [None] * size          # (score, db, key) or None

    def insert(self, score, db, key):
        pool = self.slots
        k = 0
        while k < self.size and pool[k] is not None and pool[k][0] < score:
            k += 1
        if k == 0 and pool[self.size - 1] is not None:
            return
        if k < self.size and pool[k] is None:
            pass
        elif pool[self.size - 1] is None:
            pool[k + 1:] = pool[k:-1]       # shift right from k
        else:
            k -= 1
            pool[:k] = pool[1:k + 1]        # shift left, dropping element 0
        pool[k] = (score, db, key)

    def pop_best(self):
        for k in range(self.size - 1, -1, -1):
            if self.slots[k] is not None:
                item, self.slots[k] = self.slots[k], None
                return item[1:]
        return None

    def content(self):
        return [s for s in self.slots if s is not None]


def content(pool: EvictionPool):
    return [(s, d, k) for s, (d, k) in zip(pool.scores, pool.items)]


def test_fills_ascending_and_pops_best_first():
    pool = EvictionPool()
    for i, score in enumerate([5, 1, 9, 3]):
        assert pool.offer(score, 0, b"k%d" % i)
        pool._check()
    assert pool.scores == [1, 3, 5, 9]
    assert pool.pop_best() == (0, b"k2")
    assert pool.pop_best() == (0, b"k0")
    pool._check()
    assert len(pool) == 2


def test_full_pool_drops_worse_sample_and_evicts_worst_entry():
    pool = EvictionPool(size=4)
    for score in (10, 20, 30, 40):
        pool.offer(score, 0, b"%d" % score)
    assert not pool.offer(5, 0, b"5")            # worse than everything kept
    assert not pool.offer(10, 0, b"10b")         # equal to the worst: k == 0, dropped
    assert pool.offer(25, 0, b"25")              # drops 10, shifts left
    assert pool.scores == [20, 25, 30, 40]
    assert pool.offer(99, 1, b"99")
    assert pool.scores == [25, 30, 40, 99]
    assert pool.items[-1] == (1, b"99")
    pool._check()


def test_new_sample_goes_left_of_equal_scores():
    pool = EvictionPool()
    pool.offer(7, 0, b"old")
    pool.offer(7, 0, b"new")
    assert pool.items == [(0, b"new"), (0, b"old")]
    assert pool.pop_best() == (0, b"old")


def test_pop_empty_and_clear():
    pool = EvictionPool()
    assert pool.pop_best() is None
    pool.offer(1, 0, b"a")
    pool.clear()
    assert len(pool) == 0 and pool.pop_best() is None


@pytest.mark.parametrize("seed", range(5))
def test_matches_redis_algorithm_under_random_operations(seed):
    rng = random.Random(seed)
    ours, ref = EvictionPool(), RedisPool()
    for step in range(3000):
        if rng.random() < 0.2:
            assert ours.pop_best() == ref.pop_best()
        else:
            score = rng.randrange(50)            # many ties on purpose
            key = b"k%d" % step
            db = rng.randrange(3)
            ours.offer(score, db, key)
            ref.insert(score, db, key)
        ours._check()
        assert content(ours) == ref.content(), step
