"""Facts query (spec §9 "Facts query"): project a published facts CSV onto capacities in GB.

Input: ``litehit_facts.csv`` and capacities in binary GB (order kept, duplicates and 0
allowed, negative = infinite). Output: JSONL, one line per request::

    {"trace_id":"r1","instance_id":"i1","timestamp_ns":1000,"input_token_len":13,"hit_blocks":[0,2],"hit_rates":[0,0.615385]}

then one summary per instance_id in byte-lexicographic order, then one overall summary
(the same fields without ``instance_id``)::

    {"summary":true,"instance_id":"i1","requests":5,"total_input_tokens":54,"capacity_gb":[...],"total_hit_blocks":[...],"total_hit_tokens":[...],"hit_rates":[...]}

A request's rate is ``hit_blocks * block_size_tokens / input_token_len`` (0 when the input is
0); a summary's is ``total_hit_tokens / total_input_tokens`` over integer sums, never a mean
of rates. Floats print as C's ``%g`` (``format_g``).

How: rows are streamed with the csv module in batches of ``QUERY_BATCH_ROWS``; each batch's
curves go into CSR arrays and ``HitCurveProjector.project_blocks_flat`` projects them (once
per distinct ``block_bytes`` in the batch). Only per-instance integer totals are kept:
memory is O(instances x capacities) plus one batch. Any malformed row fails the query, and
the output is published atomically (``OUT.tmp``, then rename).
"""
from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from litehit.facts import hit_curve_from_json
from litehit.projector import INFINITE_CAPACITY, HitCurveProjector
from litehit.publish import published

FACTS_HEADER = ["trace_id", "instance_id", "timestamp_ns", "input_token_len",
                "block_size_tokens", "block_bytes", "hit_curve"]
QUERY_BATCH_ROWS = 4096


class FactsError(ValueError):
    """A malformed facts CSV (the message names the line)."""


def format_g(value: float) -> str:
    """Format a float exactly as C's ``printf("%g")`` (6 significant digits).

    Python's ``%``-formatting with ``g`` follows C99 (trailing zeros stripped, exponent of
    at least two digits): ``25``, ``-1``, ``0``, ``0.0987668``, ``1.52588e-05``. The tests
    compare it with libc's ``snprintf`` on random doubles.

    Complexity: O(1).
    """
    return "%g" % value


def parse_capacity_gb(text: str) -> float:
    """A capacity argument in GB: a finite number; negative means infinite.

    Complexity: O(len(text)).
    """
    try:
        value = float(text)
    except ValueError:
        raise FactsError(f"capacity {text!r} is not a number") from None
    if not math.isfinite(value):
        raise FactsError(f"capacity {text!r} must be finite (use a negative value for "
                         "infinite)")
    return value


# ---- reading facts ----

@dataclass(slots=True)
class FactBatch:
    """Up to QUERY_BATCH_ROWS facts rows: columns plus the curves in CSR form."""
    trace_id: list[str]
    instance_id: list[str]
    timestamp_ns: list[int]
    input_token_len: list[int]
    block_size_tokens: np.ndarray       # int64
    block_bytes: np.ndarray             # int64
    seg_offsets: np.ndarray             # int64, rows + 1
    seg_start: np.ndarray               # int64
    seg_run: np.ndarray                 # int64


def _int(text: str, name: str, line_no: int, minimum: int) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        raise FactsError(f"line {line_no}: {name} must be an integer >= {minimum}, "
                         f"got {text!r}")
    return int(text)


def _batch(rows: list[tuple]) -> FactBatch:
    seg_offsets = [0]
    starts: list[int] = []
    runs: list[int] = []
    for row in rows:
        for start, run in row[6]:
            starts.append(start)
            runs.append(run)
        seg_offsets.append(len(starts))
    return FactBatch([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                     [r[3] for r in rows], np.array([r[4] for r in rows], dtype=np.int64),
                     np.array([r[5] for r in rows], dtype=np.int64),
                     np.array(seg_offsets, dtype=np.int64), np.array(starts, dtype=np.int64),
                     np.array(runs, dtype=np.int64))


def iter_fact_batches(path: str, batch_rows: int = QUERY_BATCH_ROWS) -> Iterator[FactBatch]:
    """Stream a facts CSV as validated batches; FactsError on the first malformed row.

    Complexity: O(file size) time, O(batch_rows) memory.
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if header != FACTS_HEADER:
                raise FactsError(f"line 1: the header must be {','.join(FACTS_HEADER)}")
            rows: list[tuple] = []
            for fields in reader:
                line_no = reader.line_num
                if len(fields) != len(FACTS_HEADER):
                    raise FactsError(f"line {line_no}: expected {len(FACTS_HEADER)} fields, "
                                     f"got {len(fields)}")
                trace_id, instance_id, ts, input_len, bst, block_bytes, curve = fields
                if not instance_id:
                    raise FactsError(f"line {line_no}: instance_id must not be empty")
                try:
                    segments = hit_curve_from_json(curve)
                except ValueError as exc:
                    raise FactsError(f"line {line_no}: {exc}") from None
                rows.append((trace_id, instance_id, _int(ts, "timestamp_ns", line_no, 0),
                             _int(input_len, "input_token_len", line_no, 0),
                             _int(bst, "block_size_tokens", line_no, 1),
                             _int(block_bytes, "block_bytes", line_no, 1), segments))
                if len(rows) == batch_rows:
                    yield _batch(rows)
                    rows = []
            if rows:
                yield _batch(rows)
        except csv.Error as exc:
            raise FactsError(f"{path}: line {reader.line_num}: bad CSV: {exc}") from None
        except UnicodeDecodeError:
            raise FactsError(f"{path}: line {reader.line_num + 1}: not valid UTF-8") from None
        except FactsError as exc:
            raise FactsError(f"{path}: {exc}") from None


def project_batch(batch: FactBatch, capacity_bytes: list[int]) -> np.ndarray:
    """Hit blocks of every row at every byte capacity (negative = infinite): (rows, K).

    Rows are grouped by ``block_bytes`` so that each group is one projector call.

    Complexity: O((segments + rows) x K) per distinct block_bytes.
    """
    proj = HitCurveProjector
    rows = len(batch.trace_id)
    out = np.zeros((rows, len(capacity_bytes)), dtype=np.int64)
    for block_bytes in np.unique(batch.block_bytes).tolist():
        caps = [proj.capacity_blocks_from_bytes(c, block_bytes) for c in capacity_bytes]
        idx = np.flatnonzero(batch.block_bytes == block_bytes)
        off = batch.seg_offsets
        if len(idx) == rows:
            out[:] = proj.project_blocks_flat(off, batch.seg_start, batch.seg_run, caps)
            continue
        lengths = off[idx + 1] - off[idx]
        sub_off = np.concatenate(([0], np.cumsum(lengths)))
        gather = np.repeat(off[idx] - sub_off[:-1], lengths) + np.arange(sub_off[-1])
        out[idx] = proj.project_blocks_flat(sub_off, batch.seg_start[gather],
                                            batch.seg_run[gather], caps)
    return out


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


def accumulate(totals: dict[str, Totals], batch: FactBatch, hits: np.ndarray) -> None:
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


def summary_line(totals: Totals, capacities_gb: list[float], instance_id: str | None) -> str:
    """One summary JSONL line (with ``instance_id`` unless it is the overall one).

    Complexity: O(K).
    """
    who = "" if instance_id is None else f',"instance_id":{_json_str(instance_id)}'
    return (f'{{"summary":true{who},"requests":{totals.requests},'
            f'"total_input_tokens":{totals.total_input_tokens},'
            f'"capacity_gb":[{_floats(capacities_gb)}],'
            f'"total_hit_blocks":[{_ints(totals.hit_blocks)}],'
            f'"total_hit_tokens":[{_ints(totals.hit_tokens)}],'
            f'"hit_rates":[{_floats(totals.rates())}]}}\n')


def _json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _request_lines(batch: FactBatch, hits: np.ndarray) -> str:
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


def run_query(facts_path: str, out_path: str, capacities_gb: list[float]) -> dict[str, Totals]:
    """Write the query JSONL for ``capacities_gb``; returns the totals (key "" = overall).

    Fails with FactsError / OSError on any malformed row or I/O problem, leaving neither
    OUT nor ``OUT.tmp``.

    Complexity: O(rows x K + segments x K) time, O(instances x K) memory beyond one batch.
    """
    capacity_bytes = [HitCurveProjector.capacity_bytes_from_gb(gb) for gb in capacities_gb]
    assert all(c >= 0 or c == INFINITE_CAPACITY for c in capacity_bytes)
    totals: dict[str, Totals] = {}
    with published(out_path, "w", encoding="utf-8", newline="\n") as out:
        for batch in iter_fact_batches(facts_path):
            hits = project_batch(batch, capacity_bytes)
            accumulate(totals, batch, hits)
            out.write(_request_lines(batch, hits))
        overall = Totals.zero(len(capacities_gb))
        for instance_id in sorted(totals, key=lambda s: s.encode("utf-8")):
            out.write(summary_line(totals[instance_id], capacities_gb, instance_id))
            overall.add(totals[instance_id])
        out.write(summary_line(overall, capacities_gb, None))
    totals[""] = overall
    return totals
