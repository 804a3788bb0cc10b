"""LiteHit: the capacity-independent replay core.

``LiteHit`` owns the replay state (an open-addressing key -> latest-position table and a
Fenwick tree over positions, all numpy arrays) and hands it to the compiled kernels in
``litehit.kernel``.  It never sees a capacity: each request yields a ``RequestFact``
whose hit curve ``HitCurveProjector`` later projects onto any capacity.

    keys of one request ---> process_request ---> RequestFact (hit curve)
    keys + offsets      ---> process_batch   ---> BatchFacts  (flat arrays, lazy facts)

Time and TTL: with ``ttl_ns > 0`` a block is alive while ``now - last_access < ttl_ns``
(age exactly ttl is dead); expired blocks are cold at every capacity and stop the prefix;
every access refreshes.  The clock never goes backwards: a timestamp older than the
latest one seen is treated as the latest one (so ``now_ns=0`` means "current time").
Because ages then rise monotonically along the LRU order, expired blocks sit below every
live one and one replay stays exact for a fixed TTL at every capacity.

Complexity: ``process_request`` O(m log P) for m blocks (P positions <= 4 * live keys +
2 * slack); memory O(live keys): 4 bytes per position (12 with a TTL) plus 12 per table
slot, about 27-35 bytes per distinct block on the traces of bench/litehit_bench.py (the
numbers are in ``litehit.kernel``'s docstring).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

import numpy as np

from . import kernel
from .facts import BatchFacts, HitCurveSegment, RequestFact

__all__ = ["LiteHit"]

TimeArg = Union[None, int, np.integer, Sequence, np.ndarray]
EXPIRED_PURGE_RATIO = 2   # advance_time purges when expired keys exceed 1/2 of the live keys


def _as_int64_array(values, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers, got dtype {arr.dtype}")
    if arr.dtype == np.uint64:
        arr = arr.view(np.int64)      # wrap values above 2^63 - 1 to negative int64
    return np.ascontiguousarray(arr, dtype=np.int64)


class LiteHit:
    """Exact LRU replay producing one capacity-independent hit curve per request.

    ``ttl_ns`` = 0 disables expiry; ``slack_positions`` is the SLACK of the compaction
    rule (small values force frequent compactions, useful in tests).  Positions are
    stored as int32, which bounds an instance to about 2^30 distinct live keys.
    """

    __slots__ = ("_ttl_ns", "_slack", "_ht_keys", "_ht_vals", "_tree", "_pos_ts", "_meta",
                 "_one_offsets", "_one_time")

    def __init__(self, ttl_ns: int = 0, *, slack_positions: int = kernel.SLACK_POSITIONS):
        if ttl_ns < 0:
            raise ValueError(f"ttl_ns must not be negative, got {ttl_ns}")
        if slack_positions < 1:
            raise ValueError(f"slack_positions must be positive, got {slack_positions}")
        self._ttl_ns = int(ttl_ns)
        self._slack = int(slack_positions)
        self._one_offsets = np.zeros(2, dtype=np.int64)   # reused by process_request
        self._one_time = np.zeros(1, dtype=np.int64)
        self.reset()

    # ---- lifecycle ----
    def reset(self) -> None:
        """Forget every key and the clock (back to a fresh instance)."""
        (self._ht_keys, self._ht_vals, self._tree, self._pos_ts,
         self._meta) = kernel.new_state(self._ttl_ns, self._slack)

    @property
    def ttl_ns(self) -> int:
        return self._ttl_ns

    @property
    def now_ns(self) -> int:
        """Latest time seen (the clock never goes backwards)."""
        return int(self._meta[kernel.M_NOW])

    @property
    def compactions(self) -> int:
        return int(self._meta[kernel.M_COMPACTIONS])

    @property
    def total_accesses(self) -> int:
        """Block accesses processed since the last reset."""
        return int(self._meta[kernel.M_ACCESSES])

    def advance_time(self, now_ns: int) -> None:
        """Move the clock forward to ``now_ns`` (ignored if older).

        Under a TTL, when more than half of the held keys have expired (and they exceed
        the slack) the state is compacted to release them.
        Complexity: O(log P), or O(P) when it compacts.
        """
        meta = self._meta
        if now_ns > meta[kernel.M_NOW]:
            meta[kernel.M_NOW] = now_ns
        if self._ttl_ns > 0:
            live = int(meta[kernel.M_LIVE])
            expired = live - self.current_unique_blocks()
            if expired > self._slack and EXPIRED_PURGE_RATIO * expired > live:
                self._compact(0)

    def _compact(self, room: int) -> None:
        (self._ht_keys, self._ht_vals, self._tree, self._pos_ts) = kernel.compact(
            self._ht_keys, self._ht_vals, self._tree, self._pos_ts, self._meta, room)

    # ---- replay ----
    def process_request(self, keys, now_ns: int = 0) -> RequestFact:
        """Replay one request's block keys at ``now_ns``; return its hit curve.

        Complexity: O(m log P) for m blocks.
        """
        if isinstance(keys, np.ndarray):
            keys_arr = _as_int64_array(keys, "keys")
        else:
            keys_arr = np.array(keys, dtype=np.int64)
            if keys_arr.ndim != 1:
                raise ValueError(f"keys must be one-dimensional, got shape {keys_arr.shape}")
        self._one_offsets[1] = keys_arr.shape[0]
        self._one_time[0] = now_ns
        (_offsets, seg_start, seg_run, self._ht_keys, self._ht_vals, self._tree,
         self._pos_ts) = kernel.process_batch(
            keys_arr, self._one_offsets, self._one_time, self._ht_keys, self._ht_vals,
            self._tree, self._pos_ts, self._meta)
        make = HitCurveSegment._make
        return RequestFact(tuple([make(p) for p in zip(seg_start.tolist(), seg_run.tolist())]))

    def process_batch(self, keys, offsets, now_ns: TimeArg = None) -> BatchFacts:
        """Replay many requests in one kernel call; facts come back in request order.

        Request r is ``keys[offsets[r]:offsets[r+1]]``.  ``now_ns`` is None (current
        clock), a scalar for all requests, or one int64 timestamp per request.  The
        result is a ``Sequence[RequestFact]`` (built lazily) that also exposes the flat
        ``seg_offsets`` / ``seg_start`` / ``seg_run`` arrays.  Identical to calling
        ``process_request`` on each request in turn.
        Complexity: O(N log P) for N block accesses.
        """
        keys_arr, offsets_arr, times = self._batch_args(keys, offsets, now_ns)
        return self._run(keys_arr, offsets_arr, times)

    def _batch_args(self, keys, offsets, now_ns: TimeArg):
        keys_arr = _as_int64_array(keys, "keys")
        offsets_arr = _as_int64_array(offsets, "offsets")
        if offsets_arr.shape[0] < 1:
            raise ValueError("offsets must hold at least one entry (offsets[0])")
        if offsets_arr[0] < 0 or offsets_arr[-1] > keys_arr.shape[0]:
            raise ValueError(
                f"offsets must lie within [0, len(keys)={keys_arr.shape[0]}], got "
                f"[{offsets_arr[0]}, {offsets_arr[-1]}]")
        if np.any(offsets_arr[1:] < offsets_arr[:-1]):
            raise ValueError("offsets must be non-decreasing")
        n_req = offsets_arr.shape[0] - 1
        if now_ns is None:
            times = np.full(n_req, self._meta[kernel.M_NOW], dtype=np.int64)
        elif np.ndim(now_ns) == 0:
            times = np.full(n_req, int(now_ns), dtype=np.int64)
        else:
            times = _as_int64_array(now_ns, "now_ns")
            if times.shape[0] != n_req:
                raise ValueError(f"now_ns has {times.shape[0]} timestamps for {n_req} requests")
        return keys_arr, offsets_arr, times

    def _run(self, keys_arr, offsets_arr, times) -> BatchFacts:
        (seg_offsets, seg_start, seg_run, self._ht_keys, self._ht_vals, self._tree,
         self._pos_ts) = kernel.process_batch(
            keys_arr, offsets_arr, times, self._ht_keys, self._ht_vals, self._tree,
            self._pos_ts, self._meta)
        return BatchFacts(seg_offsets, seg_start, seg_run)

    # ---- observability ----
    def current_unique_blocks(self) -> int:
        """Distinct keys held and not expired at the current clock.
        Complexity: O(log P).
        """
        return int(kernel.unexpired_keys(self._tree, self._pos_ts, self._meta))

    def depth(self, key: int) -> Optional[int]:
        """Current LRU depth of ``key`` (1 = most recent), None if absent or expired.

        Complexity: O(log P).
        """
        d = int(kernel.depth_of(np.int64(key), self._ht_keys, self._ht_vals, self._tree,
                                self._pos_ts, self._meta))
        return d or None

    def memory_usage_bytes(self) -> int:
        """Bytes held by the state arrays (table, positions, tree, timestamps, meta).

        Complexity: O(1).
        """
        return int(self._ht_keys.nbytes + self._ht_vals.nbytes + self._tree.nbytes
                   + self._pos_ts.nbytes + self._meta.nbytes)

    def stats(self) -> dict:
        """Counters for INFO-style reporting."""
        meta = self._meta
        return {
            "ttl_ns": self._ttl_ns,
            "now_ns": int(meta[kernel.M_NOW]),
            "live_keys": int(meta[kernel.M_LIVE]),
            "unique_blocks": self.current_unique_blocks(),
            "positions_used": int(meta[kernel.M_SIZE]),
            "positions_capacity": int(self._tree.shape[0] - 1),
            "table_slots": int(self._ht_keys.shape[0]),
            "compactions": int(meta[kernel.M_COMPACTIONS]),
            "accesses": int(meta[kernel.M_ACCESSES]),
            "memory_bytes": self.memory_usage_bytes(),
        }

    # ---- invariants ----
    def _check(self) -> None:
        """Assert every invariant of the state (test helper; O(P + slots) numpy work).

        - the table holds distinct keys, each findable from its home slot, with
          distinct positions in 1..size;
        - the tree's point values are 1 exactly at those latest positions, and each
          node equals the naive sum of the range it covers;
        - live = tree total = table count + (special key present);
        - load factor within bounds; timestamps non-decreasing up to the clock (TTL).
        """
        meta, keys, vals = self._meta, self._ht_keys, self._ht_vals
        tree = self._tree
        n = tree.shape[0] - 1
        size, live = int(meta[kernel.M_SIZE]), int(meta[kernel.M_LIVE])
        assert 0 <= size <= n
        if self._ttl_ns > 0:
            assert self._pos_ts.shape[0] == n + 1
        occupied = keys != kernel.EMPTY_KEY
        count = int(occupied.sum())
        assert count == meta[kernel.M_TABLE_COUNT]
        assert count * kernel.TABLE_MAX_LOAD_DEN <= keys.shape[0] * kernel.TABLE_MAX_LOAD_NUM
        assert keys.shape[0] & (keys.shape[0] - 1) == 0, "table size must be a power of two"
        held_keys, held_pos = keys[occupied], vals[occupied].astype(np.int64)
        assert np.unique(held_keys).shape[0] == count, "duplicate keys in the table"
        assert kernel.misplaced_keys(keys) == 0, "key not reachable by probing"
        special = int(meta[kernel.M_SPECIAL_POS])
        latest = np.concatenate([held_pos, [special] if special else []]).astype(np.int64)
        assert np.all((latest >= 1) & (latest <= size)), "position out of range"
        assert np.unique(latest).shape[0] == latest.shape[0], "two keys share a position"
        values = np.zeros(n + 1, dtype=np.int64)
        values[latest] = 1
        assert live == latest.shape[0] == int(values.sum())
        prefix = np.cumsum(values)
        idx = np.arange(1, size + 1)            # nodes above size are not maintained
        low = idx - (idx & -idx)
        assert np.array_equal(tree[1:size + 1].astype(np.int64), prefix[idx] - prefix[low]), \
            "Fenwick node differs from the naive range sum"
        if self._ttl_ns > 0:
            ts = self._pos_ts[1:size + 1]
            assert np.all(ts[1:] >= ts[:-1]), "timestamps must rise with position"
            assert size == 0 or ts[-1] <= meta[kernel.M_NOW]
