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
           block_bytes: int, target: float | None = None,
           capacity_bytes: int | None = None) -> dict:
    """The advice as a dict of plain values (the server's reply and the CLI's JSON line).

    ``capacity`` is today's capacity in blocks (negative: unlimited), ``block_bytes`` what
    one block costs in memory, ``top`` a capacity at which the curve is flat.  When today's
    capacity is known in bytes (``capacity_bytes``: maxmemory, or ``--capacity 64GB``), the
    0.5x / 2x / 4x capacities are taken of the bytes, as ``litehit query`` would round them."""
    def rate(c: int) -> float:
        return hits(c) / total if total else 0.0

    out: dict = {"total_blocks": total, "block_bytes": block_bytes,
                 "max_hit_rate": rate(top)}
    if capacity >= 0:
        if capacity_bytes is None:
            capacity_bytes = capacity * block_bytes
        out["capacity_blocks"] = capacity
        out["capacity_bytes"] = capacity_bytes
        out["hit_rate"] = rate(capacity)
        for m in MULTIPLES:
            out["hit_rate_at_%gx" % m] = rate(int(capacity_bytes * m) // block_bytes)
    if target is not None:
        out["target_hit_rate"] = target
        need = capacity_for(hits, total, target, top)
        out["target_reachable"] = need is not None
        if need is not None:
            out["target_capacity_blocks"] = need
            out["target_capacity_bytes"] = need * block_bytes
    return out


def advise_facts(path: str, target: float | None = None, capacity=None,
                 instance: str | None = None) -> list[dict]:
    """``litehit advise``: the advice for each instance of a facts file (or the one named).

    Rates are token-weighted as ``litehit query``'s (hit tokens / input tokens).
    ``capacity`` is a ``projector.Capacity`` (bytes or blocks) or None.  Raises ValueError
    for an unknown instance or an instance whose rows disagree on block size.
    Complexity: O(file size) to read, then O(log depth) per instance."""
    from .factsfile import iter_facts_rows
    from .projector import AggregateCurve
    found: dict = {}                    # instance -> [curve, input tokens, bst, block bytes]
    for batch in iter_facts_rows(path):
        for i, inst in enumerate(batch.instance_id):
            if instance is not None and inst != instance:
                continue
            bst, bb = int(batch.block_size_tokens[i]), int(batch.block_bytes[i])
            entry = found.get(inst)
            if entry is None:
                entry = found[inst] = [AggregateCurve(), 0, bst, bb]
            elif (entry[2], entry[3]) != (bst, bb):
                raise ValueError("instance %r: rows disagree on block_size_tokens / "
                                 "block_bytes" % inst)
            a, b = batch.seg_offsets[i], batch.seg_offsets[i + 1]
            entry[0].add(batch.seg_start[a:b], batch.seg_run[a:b])
            entry[1] += batch.input_token_len[i]
    if instance is not None and instance not in found:
        raise ValueError("no rows of instance %r in %s" % (instance, path))
    out = []
    for inst, (curve, tokens, bst, bb) in sorted(found.items()):
        cap = -1 if capacity is None else capacity.blocks(bb)
        cap_bytes = capacity.value if capacity is not None and capacity.unit == "bytes" \
            else None
        advice = advise(lambda c, curve=curve, bst=bst: curve.hits(c) * bst, tokens,
                        curve.max_depth + 1, cap, bb, target, cap_bytes)
        advice["total_input_tokens"] = advice.pop("total_blocks")   # token-weighted rates
        out.append({"instance_id": inst, "block_size_tokens": bst, **advice})
    return out
