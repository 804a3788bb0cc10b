"""Facts query: project a facts file (``litehit_facts.csv``) onto capacities.

Input: a facts file (``litehit.factsfile``) and capacities (``litehit.projector.Capacity``:
bytes, binary GB as written, or blocks; order kept, duplicates and 0 allowed, negative =
infinite). Output: JSONL, one line per request::

    {"trace_id":"r1","instance_id":"i1","timestamp_ns":1000,"input_token_len":13,"hit_blocks":[0,2],"hit_rates":[0,0.615385]}

then one summary per instance_id in byte-lexicographic order, then one overall summary
(the same fields without ``instance_id``)::

    {"summary":true,"instance_id":"i1","requests":5,"total_input_tokens":54,"capacity_gb":[...],"total_hit_blocks":[...],"total_hit_tokens":[...],"hit_rates":[...]}

``capacity_gb`` is null for a capacity given in blocks; when there is one, a
``capacity_blocks`` list follows (null for a capacity given in bytes, -1 for infinite).

A request's rate is ``hit_blocks * block_size_tokens / input_token_len`` (0 when the input is
0); a summary's is ``total_hit_tokens / total_input_tokens`` over integer sums, never a mean
of rates. Floats print as C's ``%g`` (``format_g``).

How: rows are streamed in batches (``iter_facts_rows``); each batch's curves are projected by
``HitCurveProjector.project_capacities_flat``, and ``Totals`` only sums what it returns:
memory is O(instances x capacities) plus one batch. Any malformed row fails the query, and
an output file is published atomically (``OUT.tmp``, then rename).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO, Union

import numpy as np

from litehit.factsfile import FactsRows, iter_facts_rows
from litehit.projector import BYTES, Capacity, HitCurveProjector
from litehit.publish import published

CapacityLike = Union[Capacity, float]


def format_g(value: float) -> str:
    """Format a float exactly as C's ``printf("%g")`` (6 significant digits).

    Python's ``%``-formatting with ``g`` follows C99 (trailing zeros stripped, exponent of
    at least two digits): ``25``, ``-1``, ``0``, ``0.0987668``, ``1.52588e-05``. The tests
    compare it with libc's ``snprintf`` on random doubles.

    Complexity: O(1).
    """
    return "%g" % value


def as_capacity(capacity: CapacityLike) -> Capacity:
    """A Capacity as is; a bare number is binary GB (negative = infinite)."""
    if isinstance(capacity, Capacity):
        return capacity
    gb = float(capacity)
    return Capacity(BYTES, HitCurveProjector.capacity_bytes_from_gb(gb), gb, repr(capacity))


# ---- totals ----

@dataclass(slots=True)
class Totals:
    """Integer sums for one instance (or all): what a summary line reports."""
    requests: int
    total_input_tokens: int
    hit_blocks: list[int]
    hit_tokens: list[int]

    @classmethod
    def zero(cls, slots: int) -> "Totals":
        return cls(0, 0, [0] * slots, [0] * slots)

    def add(self, other: "Totals") -> None:
        self.requests += other.requests
        self.total_input_tokens += other.total_input_tokens
        self.hit_blocks = [a + b for a, b in zip(self.hit_blocks, other.hit_blocks)]
        self.hit_tokens = [a + b for a, b in zip(self.hit_tokens, other.hit_tokens)]

    def rates(self) -> list[float]:
        """``total_hit_tokens / total_input_tokens`` per slot (0 when there is no input)."""
        total = self.total_input_tokens
        return [t / total if total else 0.0 for t in self.hit_tokens]


def accumulate(totals: dict[str, Totals], batch: FactsRows, hits: np.ndarray) -> None:
    """Add a batch's rows into per-instance totals.

    Complexity: O(rows x K) in numpy, O(distinct instances in the batch) in Python.
    """
    hit_tokens = hits * batch.block_size_tokens[:, None]
    instances = np.array(batch.instance_id, dtype=object)
    input_lens = np.array(batch.input_token_len, dtype=object)
    for instance_id in set(batch.instance_id):
        mask = instances == instance_id
        part = Totals(int(mask.sum()), int(input_lens[mask].sum()),
                      hits[mask].sum(axis=0).tolist(), hit_tokens[mask].sum(axis=0).tolist())
        slots = hits.shape[1]
        totals.setdefault(instance_id, Totals.zero(slots)).add(part)


def _floats(values) -> str:
    return ",".join(format_g(v) for v in values)


def _ints(values) -> str:
    return ",".join(map(str, values))


def _gb(capacity: Capacity) -> str:
    return "null" if capacity.gb is None else format_g(capacity.gb)


def _blocks(capacity: Capacity) -> str:
    return "null" if capacity.gb is not None else str(capacity.value)


def summary_line(totals: Totals, capacities: Sequence[Capacity], instance_id: str | None) -> str:
    """One summary JSONL line (with ``instance_id`` unless it is the overall one).

    Complexity: O(K).
    """
    who = "" if instance_id is None else f',"instance_id":{_json_str(instance_id)}'
    blocks = ""
    if any(c.gb is None for c in capacities):
        blocks = f',"capacity_blocks":[{",".join(map(_blocks, capacities))}]'
    return (f'{{"summary":true{who},"requests":{totals.requests},'
            f'"total_input_tokens":{totals.total_input_tokens},'
            f'"capacity_gb":[{",".join(map(_gb, capacities))}]{blocks},'
            f'"total_hit_blocks":[{_ints(totals.hit_blocks)}],'
            f'"total_hit_tokens":[{_ints(totals.hit_tokens)}],'
            f'"hit_rates":[{_floats(totals.rates())}]}}\n')


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _request_lines(batch: FactsRows, hits: np.ndarray) -> str:
    lines = []
    rows_hits = hits.tolist()
    bst = batch.block_size_tokens.tolist()
    for r, row_hits in enumerate(rows_hits):
        input_len = batch.input_token_len[r]
        scale = bst[r]
        rates = (_floats([h * scale / input_len for h in row_hits]) if input_len
                 else ",".join(["0"] * len(row_hits)))
        lines.append(f'{{"trace_id":{_json_str(batch.trace_id[r])},'
                     f'"instance_id":{_json_str(batch.instance_id[r])},'
                     f'"timestamp_ns":{batch.timestamp_ns[r]},"input_token_len":{input_len},'
                     f'"hit_blocks":[{_ints(row_hits)}],"hit_rates":[{rates}]}}\n')
    return "".join(lines)


def project_rows(batch: FactsRows, capacities: Sequence[Capacity]) -> np.ndarray:
    """Hit blocks of every row of a batch at every capacity: int64 ``(rows, K)``.

    Complexity: O((segments + rows) x K) per distinct block_bytes.
    """
    return HitCurveProjector.project_capacities_flat(
        batch.seg_offsets, batch.seg_start, batch.seg_run, batch.block_bytes, capacities)


def run_query(facts_path: str, out: Union[str, TextIO],
              capacities: Sequence[CapacityLike]) -> dict[str, Totals]:
    """Write the query JSONL for ``capacities`` to ``out`` (a path, published atomically,
    or an open text stream); returns the totals (key "" = overall).

    Fails with FactsError / OSError on any malformed row or I/O problem, leaving neither
    OUT nor ``OUT.tmp`` (a stream may have received the lines before the bad row).

    Complexity: O(rows x K + segments x K) time, O(instances x K) memory beyond one batch.
    """
    caps = [as_capacity(c) for c in capacities]
    if isinstance(out, str):
        with published(out, "w", encoding="utf-8", newline="\n") as stream:
            return _write_query(facts_path, stream, caps)
    return _write_query(facts_path, out, caps)


def _write_query(facts_path: str, out: TextIO, caps: list[Capacity]) -> dict[str, Totals]:
    totals: dict[str, Totals] = {}
    for batch in iter_facts_rows(facts_path):
        hits = project_rows(batch, caps)
        accumulate(totals, batch, hits)
        out.write(_request_lines(batch, hits))
    overall = Totals.zero(len(caps))
    for instance_id in sorted(totals, key=lambda s: s.encode("utf-8")):
        out.write(summary_line(totals[instance_id], caps, instance_id))
        overall.add(totals[instance_id])
    out.write(summary_line(overall, caps, None))
    totals[""] = overall
    return totals
