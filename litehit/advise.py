"""Capacity planning from an exact LRU hit curve: how much memory reaches a target hit rate,
and what half, twice or four times today's memory would give.

The input is a hit function ``hits(c)``: the exact LRU hits of the window at a capacity of
``c`` blocks (keys, in the server).  An exact LRU has the inclusion property (a cache of
c + 1 blocks holds everything one of c blocks holds), so ``hits`` never decreases with c and
the smallest capacity reaching a target is found by bisection.

    hits(c) / total:  0.0 .. 0.31 .. 0.52 .. 0.60 (c = 0, 1k, 4k, 16k, flat beyond)
    target 0.5  -> smallest c with hits(c) >= 0.5 * total, e.g. 3,700 blocks

Complexity: O(log(top)) calls of ``hits`` for the target, one call per multiple.
"""

from __future__ import annotations

from typing import Callable

MULTIPLES = (0.5, 2.0, 4.0)       # of today's capacity, as the advice reports them


def capacity_for(hits: Callable[[int], int], total: int, target: float, top: int) -> int | None:
    """The smallest capacity c in [0, top] with hits(c) >= target * total, or None when even
    ``top`` (where the curve is flat: every reuse hits) falls short.  Complexity:
    O(log top) calls of ``hits``."""
    if total <= 0 or not 0.0 <= target <= 1.0:
        return None
    need = target * total
    if hits(top) < need:
        return None
    lo, hi = 0, top                     # hits(hi) >= need; find the first such c
    while lo < hi:
        mid = (lo + hi) // 2
        if hits(mid) >= need:
            hi = mid
        else:
            lo = mid + 1
    return lo


def advise(hits: Callable[[int], int], total: int, top: int, capacity: int,
           block_bytes: int, target: float | None = None) -> dict:
    """The advice as a dict of plain values (the server's reply and the CLI's JSON line).

    ``capacity`` is today's capacity in blocks (negative: unlimited), ``block_bytes`` what
    one block costs in memory, ``top`` a capacity at which the curve is flat."""
    def rate(c: int) -> float:
        return hits(c) / total if total else 0.0

    out: dict = {"total_blocks": total, "block_bytes": block_bytes,
                 "max_hit_rate": rate(top)}
    if capacity >= 0:
        out["capacity_blocks"] = capacity
        out["capacity_bytes"] = capacity * block_bytes
        out["hit_rate"] = rate(capacity)
        for m in MULTIPLES:
            c = int(capacity * m)
            out["hit_rate_at_%gx" % m] = rate(c)
    if target is not None:
        out["target_hit_rate"] = target
        need = capacity_for(hits, total, target, top)
        out["target_reachable"] = need is not None
        if need is not None:
            out["target_capacity_blocks"] = need
            out["target_capacity_bytes"] = need * block_bytes
    return out
