"""pqsort: the window it promises is sorted, whatever the input; partial_sort's fast path
agrees with the port when keys are distinct.  (Its order among equal keys is checked
against redis-server in test_geo.py and test_sort.py, the *ties* tests.)"""

from __future__ import annotations

import random

from ferrumkv_py.pqsort import partial_sort, pqsort


def _cmp(x, y):
    return (x > y) - (x < y)


def test_window_is_sorted():
    rng = random.Random(1)
    for _ in range(400):
        n = rng.choice([0, 1, 5, 7, 8, 40, 41, 100, 700])
        v = [rng.randint(0, rng.choice([2, 10, 10 ** 6])) for _ in range(n)]
        lo = rng.randint(0, max(n - 1, 0))
        hi = rng.randint(lo, max(n - 1, lo))
        w = list(v)
        pqsort(w, _cmp, lo, hi)
        assert sorted(w) == sorted(v)                 # a permutation
        assert w[lo:hi + 1] == sorted(v)[lo:hi + 1]   # the window holds the sorted slice


def test_partial_sort_distinct_and_reverse():
    rng = random.Random(2)
    for _ in range(100):
        v = rng.sample(range(10 ** 6), rng.randint(1, 300))
        k = rng.randint(1, len(v))
        a, b = list(v), list(v)
        partial_sort(a, lambda x: x, 0, k - 1, reverse=True)
        pqsort(b, lambda x, y: -_cmp(x, y), 0, k - 1)
        assert a[:k] == b[:k] == sorted(v, reverse=True)[:k]


def test_adversarial_input_has_no_recursion_limit():
    v = [i % 3 for i in range(20000)] + list(range(20000, 0, -1))
    pqsort(v, _cmp, 0, len(v) - 1)
    assert v == sorted(v)
