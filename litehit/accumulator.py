"""HitAccumulator: cumulative integer hit counters over configured capacity slots.

A reference API for library users (``from litehit import HitAccumulator``): no command and
no server path uses it (the query and plot sum with ``litehit.query.Totals``, which takes
per-row block sizes from a facts file; the server's shadow keeps an ``AggregateCurve``).
It is kept, tested, as the smallest complete way to turn facts from ``LiteHit`` into hit
rates at fixed capacities in a program of one's own.

It keeps only integers: requests, input tokens, hit blocks and hit tokens per capacity
slot, and the same for an unbounded capacity.  Rates are derived from those integers when
asked for, ``sum(hit_tokens) / sum(input_tokens)``, never as a mean of per-request rates.

Slots are capacities in blocks, or in bytes with a ``block_bytes`` (converted by
``HitCurveProjector`` at projection time; ``litehit.projector`` is the only module where
bytes become blocks).  A negative capacity is infinite.  Per request of input length L
and block size b tokens::

    hit_blocks[k] += project(fact, capacity[k])        hit_tokens[k] += hit_blocks * b
    inf_hit_blocks += project_infinite(fact)           input_tokens  += L

Complexity: ``add`` O(S * K) for S segments and K slots; ``add_batch`` O(N_seg * K)
numpy work, no Python objects per request.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional, Union

import numpy as np

from .facts import BatchFacts, RequestFact
from .projector import HitCurveProjector

__all__ = ["HitAccumulator"]


class HitAccumulator:
    """Cumulative prefix-hit counters for a fixed list of capacity slots."""

    __slots__ = ("_capacity_blocks", "_capacity_bytes", "_block_bytes", "requests",
                 "input_tokens", "hit_blocks", "hit_tokens", "inf_hit_blocks",
                 "inf_hit_tokens")

    def __init__(self, capacity_blocks: Optional[Sequence[int]] = None, *,
                 capacity_bytes: Optional[Sequence[int]] = None,
                 block_bytes: Optional[int] = None):
        if (capacity_blocks is None) == (capacity_bytes is None):
            raise ValueError("give exactly one of capacity_blocks or capacity_bytes")
        if capacity_bytes is not None:
            if block_bytes is None or block_bytes <= 0:
                raise ValueError(f"capacity_bytes needs a positive block_bytes, got {block_bytes}")
            self._capacity_bytes = tuple(int(c) for c in capacity_bytes)
            self._block_bytes = int(block_bytes)
            self._capacity_blocks = tuple(
                HitCurveProjector.capacity_blocks_from_bytes(c, self._block_bytes)
                for c in self._capacity_bytes)
        else:
            if block_bytes is not None:
                raise ValueError("block_bytes only applies to capacity_bytes slots")
            self._capacity_bytes = None
            self._block_bytes = None
            self._capacity_blocks = tuple(int(c) for c in capacity_blocks)
        self.reset()

    def reset(self) -> None:
        """Zero every counter (slots are kept)."""
        k = len(self._capacity_blocks)
        self.requests = 0
        self.input_tokens = 0
        self.hit_blocks = [0] * k
        self.hit_tokens = [0] * k
        self.inf_hit_blocks = 0
        self.inf_hit_tokens = 0

    @property
    def slot_count(self) -> int:
        return len(self._capacity_blocks)

    @property
    def capacity_blocks(self) -> tuple:
        """Slot capacities in blocks (negative = infinite)."""
        return self._capacity_blocks

    @property
    def capacity_bytes(self) -> Optional[tuple]:
        return self._capacity_bytes

    @property
    def block_bytes(self) -> Optional[int]:
        return self._block_bytes

    # ---- adding facts ----
    def _project(self, curve, k: int) -> int:
        if self._capacity_bytes is not None:
            return HitCurveProjector.project_bytes(curve, self._capacity_bytes[k],
                                                   self._block_bytes)
        return HitCurveProjector.project_blocks(curve, self._capacity_blocks[k])

    def add(self, fact: Union[RequestFact, Sequence], input_tokens: int,
            block_size_tokens: int) -> list:
        """Count one request; returns its hit blocks per slot.

        Complexity: O(S * K).
        """
        if input_tokens < 0 or block_size_tokens <= 0:
            raise ValueError(
                f"need input_tokens >= 0 and block_size_tokens > 0, got {input_tokens}, "
                f"{block_size_tokens}")
        curve = fact.hit_curve if isinstance(fact, RequestFact) else fact
        hits = [self._project(curve, k) for k in range(len(self._capacity_blocks))]
        inf_hits = HitCurveProjector.project_infinite(curve)
        self.requests += 1
        self.input_tokens += int(input_tokens)
        for k, h in enumerate(hits):
            self.hit_blocks[k] += h
            self.hit_tokens[k] += h * block_size_tokens
        self.inf_hit_blocks += inf_hits
        self.inf_hit_tokens += inf_hits * block_size_tokens
        return hits

    def add_batch(self, facts: BatchFacts, input_tokens, block_size_tokens) -> None:
        """Count every request of a batch from its flat arrays.

        ``input_tokens`` is one total or one count per request; ``block_size_tokens``
        a scalar or one value per request.
        Complexity: O(N_seg * K) numpy work.
        """
        self.add_arrays(facts.seg_offsets, facts.seg_start, facts.seg_run,
                        input_tokens, block_size_tokens)

    def add_arrays(self, seg_offsets, seg_start, seg_run, input_tokens,
                   block_size_tokens) -> None:
        """``add_batch`` on raw CSR arrays (see ``BatchFacts``)."""
        offsets = np.asarray(seg_offsets, dtype=np.int64)
        n_req = offsets.shape[0] - 1
        tokens = np.asarray(input_tokens, dtype=np.int64)
        if np.any(tokens < 0):
            raise ValueError("input_tokens must not be negative")
        if tokens.ndim == 1 and tokens.shape[0] != n_req:
            raise ValueError(f"{tokens.shape[0]} input_tokens values for {n_req} requests")
        bs = np.asarray(block_size_tokens, dtype=np.int64)
        if np.any(bs <= 0):
            raise ValueError("block_size_tokens must be positive")
        caps = list(self._capacity_blocks)
        if bs.ndim == 0:
            block_totals = HitCurveProjector.total_hit_blocks_flat(seg_start, seg_run, caps)
            inf_blocks = int(np.sum(seg_run[: int(offsets[-1])], dtype=np.int64))
            block_list = [int(v) for v in block_totals]
            token_list = [v * int(bs) for v in block_list]
            inf_tokens = inf_blocks * int(bs)
        else:
            if bs.shape[0] != n_req:
                raise ValueError(f"{bs.shape[0]} block sizes for {n_req} requests")
            per_req = HitCurveProjector.project_blocks_flat(offsets, seg_start, seg_run, caps)
            inf_req = HitCurveProjector.project_infinite_flat(offsets, seg_run)
            block_list = [int(v) for v in per_req.sum(axis=0)]
            token_list = [int(v) for v in (per_req * bs[:, None]).sum(axis=0)]
            inf_blocks = int(inf_req.sum())
            inf_tokens = int((inf_req * bs).sum())
        self.requests += n_req
        self.input_tokens += int(tokens.sum())
        for k in range(len(caps)):
            self.hit_blocks[k] += block_list[k]
            self.hit_tokens[k] += token_list[k]
        self.inf_hit_blocks += inf_blocks
        self.inf_hit_tokens += inf_tokens

    # ---- derived rates (from integers only) ----
    def hit_rate(self, slot: int) -> float:
        """``hit_tokens[slot] / input_tokens`` (0.0 before any input)."""
        return self.hit_tokens[slot] / self.input_tokens if self.input_tokens else 0.0

    def hit_rate_inf(self) -> float:
        """Infinite-capacity token hit rate (the cold-miss-only upper bound)."""
        return self.inf_hit_tokens / self.input_tokens if self.input_tokens else 0.0

    def snapshot(self) -> dict:
        """Plain-dict copy of the counters and derived rates (JSON-serialisable)."""
        snap = {
            "requests": self.requests,
            "input_tokens": self.input_tokens,
            "capacity_blocks": list(self._capacity_blocks),
            "hit_blocks": list(self.hit_blocks),
            "hit_tokens": list(self.hit_tokens),
            "hit_rates": [self.hit_rate(k) for k in range(self.slot_count)],
            "inf_hit_blocks": self.inf_hit_blocks,
            "inf_hit_tokens": self.inf_hit_tokens,
            "hit_rate_inf": self.hit_rate_inf(),
        }
        if self._capacity_bytes is not None:
            snap["capacity_bytes"] = list(self._capacity_bytes)
            snap["block_bytes"] = self._block_bytes
        return snap

    def _check(self) -> None:
        """Assert: counters non-negative; each slot <= infinite; larger capacity never
        hits less; infinite hit tokens <= input tokens."""
        assert self.requests >= 0 and self.input_tokens >= 0
        assert len(self.hit_blocks) == len(self.hit_tokens) == self.slot_count
        assert 0 <= self.inf_hit_tokens <= self.input_tokens
        for k, cap in enumerate(self._capacity_blocks):
            assert 0 <= self.hit_blocks[k] <= self.inf_hit_blocks
            assert 0 <= self.hit_tokens[k] <= self.inf_hit_tokens
            for j, other in enumerate(self._capacity_blocks):
                bigger = other < 0 or (cap >= 0 and other >= cap)
                if bigger:
                    assert self.hit_blocks[j] >= self.hit_blocks[k]
            if cap < 0:
                assert self.hit_blocks[k] == self.inf_hit_blocks
