"""Capacity-independent facts: the hit curve of one request, and batches of them.

A request's *hit curve* answers "how many leading blocks hit?" for every LRU capacity
at once.  For block j (1-based) let ``required[j]`` be its snapshot depth (the smallest
capacity at which it is resident before the request) and
``prefix_required[j] = max(required[1..j])``.  Then

    hit_blocks(C) = #{ j : prefix_required[j] <= C }

The curve stops at the first cold block (absent or expired): nothing after it can be a
prefix hit at any capacity.

Run-length encoding as arithmetic runs
--------------------------------------
Under the prefix-key contract with tail-first commit, the blocks of a chain sit at
consecutive LRU depths, so the thresholds grow by exactly one per block except where a
sibling branch was interleaved.  Each maximal ``+1`` run is one segment
``(start_required_blocks, run_length)``: its i-th block (0-based) hits at capacity
``>= start + i``.  Encoding walks the blocks with a *monotone guard*::

    threshold = max(prefix_required[j], last_threshold + 1)

which never changes contract input (thresholds there rise strictly) and can only raise a
threshold on non-contract input (duplicate keys), so projections stay a lower bound.

    required          [1, 2, 4]           (a sibling slipped in before block 3)
    thresholds        [1, 2, 4]
    segments          (1, 2), (4, 1)      -> "[[1,2],[4,1]]"

Two neighbouring segments always leave a gap (``next.start > prev.start + prev.run``),
so an encoding is unique.  An empty curve means the head block was cold.

Complexity: encoding O(m) for an m-block request; a curve holds S = 1 + (number of
interleavings) segments, independent of m.

``BatchFacts`` keeps the curves of many requests as three flat int64 arrays (CSR layout)
and builds ``RequestFact`` objects only when asked for one.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Optional, Union, overload

import numpy as np

__all__ = [
    "HitCurveSegment",
    "RequestFact",
    "BatchFacts",
    "encode_hit_curve",
    "hit_curve_to_json",
    "hit_curve_from_json",
]


class HitCurveSegment(NamedTuple):
    """One arithmetic run: block i of the run (0-based) hits at capacity >= start + i."""

    start_required_blocks: int
    run_length: int




def _as_segments(pairs: Iterable[Sequence[int]]) -> tuple:
    return tuple(HitCurveSegment(int(s), int(n)) for s, n in pairs)


@dataclass(frozen=True, slots=True)
class RequestFact:
    """The capacity-independent result of replaying one request.

    ``hit_curve`` is a tuple of ``HitCurveSegment`` (``(start_required_blocks,
    run_length)`` pairs, comparing equal to plain tuples).  Capacities never appear here;
    ``HitCurveProjector`` turns a fact plus a capacity into hit blocks.
    """

    hit_curve: tuple = ()

    @classmethod
    def from_pairs(cls, pairs: Iterable[Sequence[int]]) -> "RequestFact":
        """Build a fact from ``[[start, run], ...]`` pairs (validated)."""
        fact = cls(_as_segments(pairs))
        fact._check()
        return fact

    @classmethod
    def from_json(cls, text: str) -> "RequestFact":
        """Parse the compact JSON form used in facts CSV files (``"[[1,2],[4,1]]"``)."""
        return cls(hit_curve_from_json(text))

    def to_json(self) -> str:
        """Compact JSON without spaces, e.g. ``[[1,2],[4,1]]`` or ``[]``."""
        return hit_curve_to_json(self.hit_curve)

    @property
    def segment_count(self) -> int:
        return len(self.hit_curve)

    def _check(self) -> None:
        """Assert the encoding invariants: start >= 1, run >= 1, gaps between segments."""
        _check_curve(self.hit_curve)


def _check_curve(curve: Sequence[Sequence[int]]) -> None:
    end = 0  # one past the last threshold of the previous segment
    for start, run in curve:
        assert start >= 1, f"segment start must be >= 1, got {start}"
        assert run >= 1, f"segment run must be >= 1, got {run}"
        assert start > end, f"segments overlap or are mergeable at start={start} (end={end})"
        end = start + run


def encode_hit_curve(required: Iterable[Optional[int]]) -> tuple:
    """Reference RLE encoder: snapshot depths in request order -> hit curve.

    ``required`` holds each block's snapshot depth (a positive int) in request order;
    ``None`` (or a value < 1) marks a cold block and ends the curve.  The compiled
    kernel (``litehit.kernel``) inlines exactly this loop; tests compare the two.

    Complexity: O(m) time, O(S) output for m blocks and S segments.
    """
    segments: list = []
    prefix_max = 0
    last = 0
    for depth in required:
        if depth is None or depth < 1:
            break
        if depth > prefix_max:
            prefix_max = depth
        threshold = prefix_max if prefix_max > last else last + 1
        last = threshold
        if segments and segments[-1][0] + segments[-1][1] == threshold:
            segments[-1][1] += 1
        else:
            segments.append([threshold, 1])
    return _as_segments(segments)


def hit_curve_to_json(curve: Iterable[Sequence[int]]) -> str:
    """Compact JSON for a curve: ``[[1,2],[4,1]]``; ``[]`` when empty."""
    return "[" + ",".join(f"[{int(s)},{int(n)}]" for s, n in curve) + "]"


def hit_curve_from_json(text: str) -> tuple:
    """Parse and validate a JSON curve; raises ValueError on malformed input."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"hit_curve is not valid JSON: {text!r}") from exc
    if not isinstance(data, list):
        raise ValueError(f"hit_curve must be a JSON array: {text!r}")
    pairs = []
    for item in data:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            raise ValueError(f"hit_curve item must be [start, run] integers: {item!r}")
        pairs.append(item)
    curve = _as_segments(pairs)
    try:
        _check_curve(curve)
    except AssertionError as exc:
        raise ValueError(f"hit_curve violates the encoding: {exc}") from exc
    return curve


class BatchFacts(Sequence):
    """Facts of many requests held as flat arrays (CSR layout), facts built lazily.

    Request r owns segments ``seg_offsets[r] : seg_offsets[r + 1]`` of ``seg_start`` and
    ``seg_run`` (all int64).  Indexing returns a ``RequestFact``; the arrays can be
    handed straight to ``HitCurveProjector.project_blocks_flat`` without building
    Python objects per segment.

        seg_offsets  [0, 0, 1, 3]          3 requests
        seg_start    [1, 1, 4]             request 0: []          (cold head)
        seg_run      [2, 2, 1]             request 1: [[1,2]]
                                           request 2: [[1,2],[4,1]]
    """

    __slots__ = ("seg_offsets", "seg_start", "seg_run", "_lists")

    def __init__(self, seg_offsets: np.ndarray, seg_start: np.ndarray, seg_run: np.ndarray):
        self.seg_offsets = seg_offsets
        self.seg_start = seg_start
        self.seg_run = seg_run
        self._lists = None

    def __len__(self) -> int:
        return len(self.seg_offsets) - 1

    @property
    def segment_count(self) -> int:
        return int(self.seg_offsets[-1] - self.seg_offsets[0]) if len(self.seg_offsets) else 0

    def _as_lists(self):
        if self._lists is None:
            self._lists = (
                self.seg_offsets.tolist(),
                self.seg_start.tolist(),
                self.seg_run.tolist(),
            )
        return self._lists

    def _fact(self, r: int) -> RequestFact:
        offsets, starts, runs = self._as_lists()
        a, b = offsets[r], offsets[r + 1]
        make = HitCurveSegment._make
        return RequestFact(tuple([make(p) for p in zip(starts[a:b], runs[a:b])]))

    @overload
    def __getitem__(self, index: int) -> RequestFact: ...
    @overload
    def __getitem__(self, index: slice) -> list: ...

    def __getitem__(self, index: Union[int, slice]):
        n = len(self)
        if isinstance(index, slice):
            return [self._fact(r) for r in range(*index.indices(n))]
        r = int(index)
        if r < 0:
            r += n
        if not 0 <= r < n:
            raise IndexError(f"request index {index} out of range for {n} requests")
        return self._fact(r)

    def __iter__(self) -> Iterator[RequestFact]:
        for r in range(len(self)):
            yield self._fact(r)

    def _check(self) -> None:
        """Assert CSR shape and the per-request encoding invariants (vectorised)."""
        off, start, run = self.seg_offsets, self.seg_start, self.seg_run
        assert off.dtype == np.int64 and start.dtype == np.int64 and run.dtype == np.int64
        assert off.ndim == 1 and len(off) >= 1 and off[0] == 0
        assert np.all(np.diff(off) >= 0), "seg_offsets must be non-decreasing"
        nseg = int(off[-1])
        assert len(start) >= nseg and len(run) >= nseg
        start, run = start[:nseg], run[:nseg]
        assert np.all(start >= 1) and np.all(run >= 1)
        if nseg > 1:
            # Inside one request, each segment must start beyond the previous one's end.
            first_of_request = np.zeros(nseg, dtype=bool)
            first_of_request[off[:-1][off[:-1] < nseg]] = True
            gap_ok = start[1:] > start[:-1] + run[:-1]
            assert np.all(gap_ok | first_of_request[1:]), "mergeable or overlapping segments"
