"""Capacities to hits: the one module that turns a capacity into hit blocks.

A fact (hit curve) is a list of segments ``(start, run)``; block i of a segment
(0-based) hits at capacity ``C >= start + i``.  Starts rise across segments, so a scan
can stop at the first segment that starts above C::

    curve [[1,2],[4,1]]        C=0 -> 0   C=2 -> 2   C=3 -> 2   C=4 -> 3   inf -> 3

    hits(C) = sum over segments with start <= C of min(run, C - start + 1)

Capacities are in blocks.  Byte capacities are converted here, once, by floor division
by ``block_bytes`` (``Capacity.blocks``; ``parse_capacity`` reads what users write, and
``capacity_bytes_from_gb`` does the binary GB -> bytes step).  A negative capacity means
infinite: only cold misses remain, so hits = sum of runs.

Two forms, for two questions (docs/litehit.md, "Two projections"):

- ``HitCurveProjector``: hits of *each* request at K given capacities (the query's lines,
  the plot).  The ``*_flat`` functions do the sum over the CSR arrays of
  ``BatchFacts`` with numpy, never building Python objects per segment: since starts rise
  within a request, ``clip(C - start + 1, 0, run)`` is exactly the scan's contribution of
  each segment (segments past the break contribute 0).
- ``AggregateCurve``: hits of *all* requests so far at *any* capacity, asked later (the
  server's shadow: INFO, LITEHIT CURVE, whatever maxmemory is now).  It keeps the sum of
  the curves as a difference array over thresholds instead of K totals.

Complexity: ``project_blocks`` O(S) for S segments, independent of C; the flat
versions O(N_seg * K) for K capacities; ``AggregateCurve.add`` O(N_seg), ``hits`` O(1)
after an O(max depth) prefix sum.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple, Optional, Union

import numpy as np

from .facts import RequestFact

__all__ = ["HitCurveProjector", "AggregateCurve", "INFINITE_CAPACITY", "BYTES_PER_GB",
           "Capacity", "parse_capacity", "format_bytes"]

AGGREGATE_INITIAL_DEPTH = 1024          # thresholds an AggregateCurve holds before growing
INFINITE_CAPACITY = -1          # any negative capacity (blocks or bytes) means infinite
BYTES_PER_GB = 1024 ** 3        # capacities in GB are binary
BYTES = "bytes"
BLOCKS = "blocks"
# Units a capacity may carry (case-insensitive), as Redis reads memory sizes: "kb", "mb",
# "gb" are binary (1gb = 2^30 bytes, the meaning of a plain number in GB), "k", "m", "g"
# decimal; KiB / MiB / GiB / TiB binary too.
CAPACITY_UNITS = {
    "b": (BYTES, 1), "byte": (BYTES, 1), "bytes": (BYTES, 1),
    "k": (BYTES, 10 ** 3), "kb": (BYTES, 2 ** 10), "kib": (BYTES, 2 ** 10),
    "m": (BYTES, 10 ** 6), "mb": (BYTES, 2 ** 20), "mib": (BYTES, 2 ** 20),
    "g": (BYTES, 10 ** 9), "gb": (BYTES, 2 ** 30), "gib": (BYTES, 2 ** 30),
    "t": (BYTES, 10 ** 12), "tb": (BYTES, 2 ** 40), "tib": (BYTES, 2 ** 40),
    "block": (BLOCKS, 1), "blocks": (BLOCKS, 1), "key": (BLOCKS, 1), "keys": (BLOCKS, 1),
}
BINARY_BYTE_UNITS = (("bytes", 1), ("KiB", 2 ** 10), ("MiB", 2 ** 20), ("GiB", 2 ** 30),
                     ("TiB", 2 ** 40), ("PiB", 2 ** 50))   # how sizes are shown
PLAIN_UNITS = {"gb": "gb", "blocks": "blocks"}     # what a number without a unit means
INFINITE_WORDS = ("inf", "infinite", "unlimited")  # say infinite in words (as -1 does)

CurveLike = Union[RequestFact, Sequence]


def _curve_of(fact_or_curve: CurveLike):
    if isinstance(fact_or_curve, RequestFact):
        return fact_or_curve.hit_curve
    return fact_or_curve


def format_bytes(n: float) -> str:
    """A size for people: the largest binary unit it reaches, 4 significant digits
    (``format_bytes(209518018560) == '195.1 GiB'``, ``format_bytes(512) == '512 bytes'``).
    Complexity: O(1)."""
    name, scale = BINARY_BYTE_UNITS[0]
    for unit in BINARY_BYTE_UNITS:
        if abs(n) >= unit[1]:
            name, scale = unit
    return f"{n / scale:.4g} {name}" if scale > 1 else f"{int(n)} {name}"


class Capacity(NamedTuple):
    """A capacity as the user gave it: ``unit`` is BYTES or BLOCKS, ``value`` a whole
    number of them (INFINITE_CAPACITY when infinite), ``gb`` the size in binary GB as
    written (the query's ``capacity_gb``; None for blocks), ``text`` the argument."""
    unit: str
    value: int
    gb: Optional[float]
    text: str

    @property
    def infinite(self) -> bool:
        return self.value < 0

    def blocks(self, block_bytes: int) -> int:
        """This capacity in blocks of ``block_bytes`` (floor); infinite stays infinite."""
        if self.unit == BLOCKS:
            return self.value
        return HitCurveProjector.capacity_blocks_from_bytes(self.value, block_bytes)


def parse_capacity(text: str, plain: str = "gb") -> Capacity:
    """Parse a capacity argument: a number with an optional unit (``64GB``, ``512MiB``,
    ``1.5tb``, ``4096blocks``, ``100keys``; see CAPACITY_UNITS); without one the number
    is in ``plain`` (``"gb"``: binary GB, or ``"blocks"``). A negative number is infinite,
    as the spec's ``capacity_gb`` -1 (the CLI warns about any other negative number), and
    so are the words in INFINITE_WORDS. Raises ValueError naming the argument.

    Complexity: O(len(text)).
    """
    body = text.strip()
    if body.lower() in INFINITE_WORDS:
        if plain == "blocks":
            return Capacity(BLOCKS, INFINITE_CAPACITY, None, text)
        return Capacity(BYTES, INFINITE_CAPACITY, float(INFINITE_CAPACITY), text)
    cut = len(body)
    while cut and body[cut - 1].isalpha():
        cut -= 1
    number, unit = body[:cut].strip(), body[cut:].lower()
    if not number:
        raise ValueError(f"capacity {text!r} is not a number (give e.g. 64GB, 512MiB, "
                         "4096blocks; a negative number means infinite)")
    if unit and unit not in CAPACITY_UNITS:
        raise ValueError(f"capacity {text!r}: unknown unit {body[cut:]!r} (use a number of "
                         "GB, or units such as 64GB, 512MiB, 4096blocks)")
    kind, scale = CAPACITY_UNITS[unit or PLAIN_UNITS[plain]]
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(f"capacity {text!r} is not a number") from None
    if not math.isfinite(amount):
        raise ValueError(f"capacity {text!r} must be finite (a negative number means "
                         "infinite)")
    if kind == BLOCKS:
        if amount >= 0 and amount != int(amount):
            raise ValueError(f"capacity {text!r}: a number of blocks must be whole")
        return Capacity(BLOCKS, INFINITE_CAPACITY if amount < 0 else int(amount), None, text)
    gb = amount if scale == BYTES_PER_GB else amount * scale / BYTES_PER_GB
    value = INFINITE_CAPACITY if amount < 0 else math.floor(amount * scale)
    return Capacity(BYTES, value, gb, text)


class HitCurveProjector:
    """Stateless projection of hit curves onto capacities (all static methods)."""

    __slots__ = ()

    # ---- conversions (the only bytes -> blocks code) ----
    @staticmethod
    def capacity_bytes_from_gb(capacity_gb: float) -> int:
        """Binary GB to bytes, floored; a negative GB gives ``INFINITE_CAPACITY``."""
        if capacity_gb < 0:
            return INFINITE_CAPACITY
        return math.floor(capacity_gb * BYTES_PER_GB)

    @staticmethod
    def capacity_blocks_from_bytes(capacity_bytes: int, block_bytes: int) -> int:
        """``capacity_bytes // block_bytes``; a negative byte capacity stays infinite."""
        if block_bytes <= 0:
            raise ValueError(f"block_bytes must be positive, got {block_bytes}")
        if capacity_bytes < 0:
            return INFINITE_CAPACITY
        return int(capacity_bytes) // int(block_bytes)

    # ---- one fact ----
    @staticmethod
    def project_blocks(fact_or_curve: CurveLike, capacity_blocks: int) -> int:
        """Prefix-hit blocks of one request at ``capacity_blocks`` (negative = infinite).

        Complexity: O(S) for S segments.
        """
        curve = _curve_of(fact_or_curve)
        if capacity_blocks < 0:
            return HitCurveProjector.project_infinite(curve)
        hits = 0
        for start, run in curve:
            if start > capacity_blocks:
                break
            room = capacity_blocks - start + 1
            hits += run if run < room else room
        return hits

    @staticmethod
    def project_bytes(fact_or_curve: CurveLike, capacity_bytes: int, block_bytes: int) -> int:
        """Prefix-hit blocks at a byte capacity: ``project_blocks(fact, bytes // block_bytes)``.

        Complexity: O(S).
        """
        blocks = HitCurveProjector.capacity_blocks_from_bytes(capacity_bytes, block_bytes)
        return HitCurveProjector.project_blocks(fact_or_curve, blocks)

    @staticmethod
    def project_infinite(fact_or_curve: CurveLike) -> int:
        """Hit blocks with unbounded capacity (only cold misses): the sum of the runs.

        Complexity: O(S).
        """
        return sum(run for _start, run in _curve_of(fact_or_curve))

    # ---- many facts at once (CSR arrays of BatchFacts) ----
    @staticmethod
    def segment_hits_flat(seg_start: np.ndarray, seg_run: np.ndarray,
                          capacity_blocks: int) -> np.ndarray:
        """Per-segment contribution at one capacity: ``clip(C - start + 1, 0, run)``.

        Complexity: O(N_seg).
        """
        if capacity_blocks < 0:
            return np.asarray(seg_run, dtype=np.int64)
        room = np.int64(capacity_blocks) + 1 - np.asarray(seg_start, dtype=np.int64)
        return np.clip(room, 0, np.asarray(seg_run, dtype=np.int64))

    @staticmethod
    def project_blocks_flat(seg_offsets: np.ndarray, seg_start: np.ndarray,
                            seg_run: np.ndarray, capacities_blocks) -> np.ndarray:
        """Hit blocks per request and capacity: int64 array of shape ``(R, K)``.

        Complexity: O((N_seg + R) * K).
        """
        offsets = np.asarray(seg_offsets, dtype=np.int64)
        caps = [int(c) for c in np.atleast_1d(capacities_blocks)]
        out = np.zeros((len(offsets) - 1, len(caps)), dtype=np.int64)
        nseg = int(offsets[-1])
        for k, cap in enumerate(caps):
            contrib = HitCurveProjector.segment_hits_flat(seg_start[:nseg], seg_run[:nseg], cap)
            cumulative = np.concatenate(([0], np.cumsum(contrib, dtype=np.int64)))
            out[:, k] = cumulative[offsets[1:]] - cumulative[offsets[:-1]]
        return out

    @staticmethod
    def project_capacities_flat(seg_offsets: np.ndarray, seg_start: np.ndarray,
                                seg_run: np.ndarray, block_bytes: np.ndarray,
                                capacities: Sequence[Capacity]) -> np.ndarray:
        """Hit blocks per request and capacity, ``(R, K)``, where request r's blocks cost
        ``block_bytes[r]`` bytes: requests are grouped by block_bytes and each group is
        one ``project_blocks_flat`` call at its own capacities in blocks.

        Complexity: O((N_seg + R) * K) per distinct block_bytes.
        """
        off = np.asarray(seg_offsets, dtype=np.int64)
        rows = len(off) - 1
        out = np.zeros((rows, len(capacities)), dtype=np.int64)
        for size in np.unique(block_bytes).tolist():
            caps = [c.blocks(size) for c in capacities]
            idx = np.flatnonzero(block_bytes == size)
            if len(idx) == rows:
                out[:] = HitCurveProjector.project_blocks_flat(off, seg_start, seg_run, caps)
                continue
            lengths = off[idx + 1] - off[idx]
            sub_off = np.concatenate(([0], np.cumsum(lengths)))
            gather = np.repeat(off[idx] - sub_off[:-1], lengths) + np.arange(sub_off[-1])
            out[idx] = HitCurveProjector.project_blocks_flat(sub_off, seg_start[gather],
                                                             seg_run[gather], caps)
        return out

    @staticmethod
    def project_infinite_flat(seg_offsets: np.ndarray, seg_run: np.ndarray) -> np.ndarray:
        """Infinite-capacity hit blocks per request: int64 array of shape ``(R,)``.

        Complexity: O(N_seg + R).
        """
        offsets = np.asarray(seg_offsets, dtype=np.int64)
        nseg = int(offsets[-1])
        cumulative = np.concatenate(([0], np.cumsum(seg_run[:nseg], dtype=np.int64)))
        return cumulative[offsets[1:]] - cumulative[offsets[:-1]]

    @staticmethod
    def total_hit_blocks_flat(seg_start: np.ndarray, seg_run: np.ndarray,
                              capacities_blocks) -> np.ndarray:
        """Hit blocks summed over all segments, one total per capacity: shape ``(K,)``.

        Complexity: O(N_seg * K).
        """
        caps = [int(c) for c in np.atleast_1d(capacities_blocks)]
        return np.array(
            [int(HitCurveProjector.segment_hits_flat(seg_start, seg_run, c).sum()) for c in caps],
            dtype=np.int64,
        )


class AggregateCurve:
    """The sum of many requests' hit curves: total hit blocks at any capacity.

    Every segment ``(s, r)`` puts one block at each threshold ``s .. s + r - 1``.  A
    difference array records that in O(1) per segment (``+1`` at s, ``-1`` at s + r); its
    running sum is the number of blocks per threshold, and the running sum of *that* is
    the number of blocks with threshold <= C, i.e. ``hits(C)``::

        segments (1,2) (1,2) (4,1)     diff  [0, 2, 0, -2, 1, -1]
        blocks per threshold           [0, 2, 2, 0, 1, 0]
        hits(C)                        [0, 2, 4, 4, 5, 5]      hits(inf) = 5

    The prefix sums are cached until the next ``add``.

    Complexity: ``add`` O(N_seg) (amortised growth), ``hits`` O(max depth) after an add,
    O(1) otherwise; memory 8 bytes per threshold up to the deepest one seen.
    """

    __slots__ = ("_diff", "_cum", "max_depth", "infinite_hits")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Forget every curve."""
        self._diff = np.zeros(AGGREGATE_INITIAL_DEPTH, dtype=np.int64)
        self._cum = None
        self.max_depth = 0              # the deepest threshold of any block added
        self.infinite_hits = 0

    @property
    def nbytes(self) -> int:
        return self._diff.nbytes

    def add(self, seg_start: np.ndarray, seg_run: np.ndarray) -> None:
        """Add segments (of any requests; the order does not matter)."""
        if not len(seg_start):
            return
        end = seg_start + seg_run                   # one past each segment's last threshold
        top = int(end.max())
        if top >= len(self._diff):
            grown = np.zeros(max(top + 1, 2 * len(self._diff)), dtype=np.int64)
            grown[:len(self._diff)] = self._diff
            self._diff = grown
        np.add.at(self._diff, seg_start, 1)
        np.add.at(self._diff, end, -1)
        self._cum = None
        self.max_depth = max(self.max_depth, top - 1)
        self.infinite_hits += int(seg_run.sum())

    def hits(self, capacity_blocks: int) -> int:
        """Hit blocks of every request added, at ``capacity_blocks`` (negative = infinite)."""
        if capacity_blocks < 0:
            return self.infinite_hits
        if self._cum is None:
            self._cum = np.cumsum(np.cumsum(self._diff))
        return int(self._cum[min(capacity_blocks, len(self._cum) - 1)])
