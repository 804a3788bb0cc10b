"""Redis's partial quicksort (``pqsort.c``), step for step, for the order of equal elements.

Redis sorts only the requested window of a result when GEOSEARCH / GEORADIUS has a COUNT
smaller than the matches, and when SORT has BY and a LIMIT.  Its ``pqsort`` is NetBSD's
Bentley-McIlroy quicksort (median of three, ninther above 40 elements, three-way
partitioning, insertion sort below 7) that skips the partitions lying wholly outside the
window ``[lo, hi]``.  Elements that compare equal end up in an order that depends on these
exact steps, so a client can see it; :func:`pqsort` reproduces them on a Python list.

When no two keys are equal the window's contents and order are fully determined, and
:func:`partial_sort` takes Python's sort instead (same result, C speed).

Complexity: O(n log n) comparisons worst-typical, O(n + k log k) on average for a window
of k; the pending partitions are kept on an explicit stack (no recursion limit).
"""

from __future__ import annotations

INSERTION_MAX = 7       # partitions shorter than this are insertion-sorted
NINTHER_MIN = 41        # from this size the pivot is a median of three medians


def _med3(v: list, a: int, b: int, c: int, cmp) -> int:
    if cmp(v[a], v[b]) < 0:
        if cmp(v[b], v[c]) < 0:
            return b
        return c if cmp(v[a], v[c]) < 0 else a
    if cmp(v[b], v[c]) > 0:
        return b
    return a if cmp(v[a], v[c]) < 0 else c


def _vecswap(v: list, a: int, b: int, n: int) -> None:
    for k in range(n):
        v[a + k], v[b + k] = v[b + k], v[a + k]


def pqsort(v: list, cmp, lo: int, hi: int) -> None:
    """Sort ``v`` in place so that positions ``lo..hi`` hold what a full sort puts there,
    exactly as Redis's ``pqsort(v, len(v), ..., cmp, lo, hi)`` leaves them.

    ``cmp(x, y)`` returns <0, 0 or >0.  Complexity: see the module docstring.
    """
    stack = [(0, len(v))]
    while stack:
        a, n = stack.pop()
        while True:
            if n < INSERTION_MAX:
                for m in range(a + 1, a + n):
                    p = m
                    while p > a and cmp(v[p - 1], v[p]) > 0:
                        v[p], v[p - 1] = v[p - 1], v[p]
                        p -= 1
                break
            pm = a + n // 2
            if n > INSERTION_MAX:
                pl, pn = a, a + n - 1
                if n >= NINTHER_MIN:
                    d = n // 8
                    pl = _med3(v, pl, pl + d, pl + 2 * d, cmp)
                    pm = _med3(v, pm - d, pm, pm + d, cmp)
                    pn = _med3(v, pn - 2 * d, pn - d, pn, cmp)
                pm = _med3(v, pl, pm, pn, cmp)
            v[a], v[pm] = v[pm], v[a]
            pa = pb = a + 1
            pc = pd = a + n - 1
            pivot = v[a]
            while True:
                while pb <= pc:
                    r = cmp(v[pb], pivot)
                    if r > 0:
                        break
                    if r == 0:
                        v[pa], v[pb] = v[pb], v[pa]
                        pa += 1
                    pb += 1
                while pb <= pc:
                    r = cmp(v[pc], pivot)
                    if r < 0:
                        break
                    if r == 0:
                        v[pc], v[pd] = v[pd], v[pc]
                        pd -= 1
                    pc -= 1
                if pb > pc:
                    break
                v[pb], v[pc] = v[pc], v[pb]
                pb += 1
                pc -= 1
            pn = a + n
            r = min(pa - a, pb - pa)
            _vecswap(v, a, pb - r, r)
            r = min(pd - pc, pn - pd - 1)
            _vecswap(v, pb, pn - r, r)
            r = pb - pa
            if r > 1 and not ((lo < a and hi < a) or (lo > a + r - 1 and hi > a + r - 1)):
                stack.append((a, r))
            r = pd - pc
            if r > 1:
                a, n = pn - r, r
                if not ((lo < a and hi < a) or (lo > a + r - 1 and hi > a + r - 1)):
                    continue
            break


def partial_sort(v: list, key, lo: int, hi: int, reverse: bool = False) -> None:
    """Redis's ``pqsort`` by ``key`` (descending if ``reverse``, as a negated comparator):
    Python's sort when all keys differ, the step-for-step port otherwise.
    Complexity: O(n log n)."""
    keys = [key(x) for x in v]
    if len(set(keys)) == len(keys):
        v.sort(key=key, reverse=reverse)
        return
    sign = -1 if reverse else 1

    def cmp(x, y):
        # Redis's comparators: 1 if greater, 0 if equal, else -1 (so NaN is "less")
        kx, ky = key(x), key(y)
        return sign * (1 if kx > ky else 0 if kx == ky else -1)
    pqsort(v, cmp, lo, hi)
