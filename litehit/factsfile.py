"""The facts file, ``litehit_facts.csv``: its one definition, used by every writer and reader.

One row per (request, instance) in request order, after a header line::

    trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve
    mooncake-1,mooncake,1000000,40160,512,67108864,"[]"
    mooncake-1954,mooncake,519262000000,33639,512,67108864,"[[5438,63],[24814,1]]"

``input_token_len`` counts the request's tokens, ``block_size_tokens`` the tokens of one
block, ``block_bytes`` what one block costs in the cache, and ``hit_curve`` is the request's
capacity-free hit curve in compact JSON (``litehit.facts``): ``[[5438,63],[24814,1]]`` means
63 leading blocks hit from 5,438 blocks of capacity on (block i of the run from 5,438 + i)
and one more from 24,814; ``[]`` means the first block was cold. The curve cell is always
quoted; a text cell only when it holds ``,``, ``"``, CR or LF (inner quotes doubled). A
server's ``LITEHIT SAVE`` writes the same file with one key per block: ``block_size_tokens``
1 and ``input_token_len`` = the keys read.

Writers: the offline replay (``lanes.py`` formats the row prefixes, ``offline.py`` the
curves) and the server's shadow (``ferrumkv_py/shadow.py``). Readers: ``iter_facts_rows``
(query and plot), which validates every row and streams ``FactsRows`` batches.

Complexity: writing O(row bytes); reading O(file size) time, O(batch rows) memory.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from litehit.facts import hit_curve_from_json

FACTS_FILE_NAME = "litehit_facts.csv"
FACTS_HEADER = ("trace_id", "instance_id", "timestamp_ns", "input_token_len",
                "block_size_tokens", "block_bytes", "hit_curve")
FACTS_HEADER_LINE = ",".join(FACTS_HEADER) + "\n"
READ_BATCH_ROWS = 4096


class FactsError(ValueError):
    """A malformed facts file (the message names the file and line)."""


# ---- writing ----

def csv_field(text: str) -> str:
    """Quote a text cell only when it holds , " CR or LF (inner quotes doubled).

    Complexity: O(len(text)).
    """
    if "," in text or '"' in text or "\r" in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def lane_columns(instance_id: str, block_size_tokens: int, block_bytes: int) -> tuple:
    """The cells every row of one instance shares: ``("id,", ",tokens,bytes,")``.

    Complexity: O(len(instance_id)).
    """
    return f"{csv_field(instance_id)},", f",{int(block_size_tokens)},{int(block_bytes)},"


def row_prefix(trace_id: str, lane_cols: tuple, timestamp_ns: int,
               input_token_len: int) -> str:
    """A row up to its curve cell: ``trace_id,instance_id,ts,len,tokens,bytes,``.

    Complexity: O(row length).
    """
    instance_cell, tail = lane_cols
    return f"{csv_field(trace_id)},{instance_cell}{timestamp_ns},{input_token_len}{tail}"


def row(prefix: str, curve: str) -> str:
    """A whole row: the prefix, then the curve's compact JSON, quoted, and LF."""
    return f'{prefix}"{curve}"\n'


def curve_cells(seg_offsets: np.ndarray, seg_start: np.ndarray, seg_run: np.ndarray,
                rows: Iterable[int] | None = None) -> list[str]:
    """Compact JSON curves (``[[s,r],...]``, as ``hit_curve_to_json``) of the CSR requests
    ``rows`` (all when None), built from the flat arrays without a fact per request.

    Complexity: O(segments + rows).
    """
    offsets = seg_offsets.tolist()
    nseg = offsets[-1] if offsets else 0
    segs = [f"[{s},{r}]" for s, r in zip(seg_start[:nseg].tolist(), seg_run[:nseg].tolist())]
    if rows is None:
        rows = range(len(offsets) - 1)
    return ["[" + ",".join(segs[offsets[r]:offsets[r + 1]]) + "]" for r in rows]


# ---- reading ----

@dataclass(slots=True)
class FactsRows:
    """Up to READ_BATCH_ROWS rows of a facts file: the columns, curves in CSR form."""
    trace_id: list[str]
    instance_id: list[str]
    timestamp_ns: list[int]
    input_token_len: list[int]
    block_size_tokens: np.ndarray       # int64
    block_bytes: np.ndarray             # int64
    seg_offsets: np.ndarray             # int64, rows + 1
    seg_start: np.ndarray               # int64
    seg_run: np.ndarray                 # int64

    def __len__(self) -> int:
        return len(self.trace_id)


def _int(text: str, name: str, line_no: int, minimum: int) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        raise FactsError(f"line {line_no}: {name} must be an integer >= {minimum}, "
                         f"got {text!r}")
    return int(text)


def _rows(rows: list[tuple]) -> FactsRows:
    seg_offsets = [0]
    starts: list[int] = []
    runs: list[int] = []
    for fields in rows:
        for start, run in fields[6]:
            starts.append(start)
            runs.append(run)
        seg_offsets.append(len(starts))
    return FactsRows([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                     [r[3] for r in rows], np.array([r[4] for r in rows], dtype=np.int64),
                     np.array([r[5] for r in rows], dtype=np.int64),
                     np.array(seg_offsets, dtype=np.int64), np.array(starts, dtype=np.int64),
                     np.array(runs, dtype=np.int64))


def _parse_row(fields: list[str], line_no: int) -> tuple:
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
    return (trace_id, instance_id, _int(ts, "timestamp_ns", line_no, 0),
            _int(input_len, "input_token_len", line_no, 0),
            _int(bst, "block_size_tokens", line_no, 1),
            _int(block_bytes, "block_bytes", line_no, 1), segments)


def _refuse_json_lines(path: str, f) -> None:
    """Raise FactsError when the open file ``f`` starts like a JSON-lines trace; rewinds it.

    A facts file starts with the header (``trace_id,...``); a trace line starts with ``{``.
    Complexity: O(1) (reads at most one line's first bytes)."""
    try:
        head = f.read(64).lstrip("\ufeff \t\r\n")
    except UnicodeDecodeError:
        head = ""                       # reported as not valid UTF-8 by the reader
    f.seek(0)
    if head.startswith("{"):
        kind = "a litehit trace" if '"type"' in head or '"instance_id"' in head else \
            "a JSON-lines file (a trace?)"
        raise FactsError(f"{path} is {kind}, not a facts file: replay it first "
                         "(litehit replay CONFIG --trace PATH) and give the litehit_facts.csv "
                         "that the replay writes")


def iter_facts_rows(path: str, batch_rows: int = READ_BATCH_ROWS) -> Iterator[FactsRows]:
    """Stream a facts file as validated batches; FactsError on the first malformed row.

    An empty file (0 bytes) has no rows; otherwise the first line must be the header.  A
    file whose first line is a JSON object (a litehit or Mooncake trace given where facts
    belong) is refused as such, not as bad CSV.

    Complexity: O(file size) time, O(batch_rows) memory.
    """
    with open(path, newline="", encoding="utf-8") as f:
        _refuse_json_lines(path, f)
        reader = csv.reader(f, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return
            if tuple(header) != FACTS_HEADER:
                raise FactsError(f"line 1: the header must be {','.join(FACTS_HEADER)}")
            rows: list[tuple] = []
            for fields in reader:
                rows.append(_parse_row(fields, reader.line_num))
                if len(rows) == batch_rows:
                    yield _rows(rows)
                    rows = []
            if rows:
                yield _rows(rows)
        except csv.Error as exc:
            raise FactsError(f"{path}: line {reader.line_num}: bad CSV: {exc}") from None
        except UnicodeDecodeError:
            raise FactsError(f"{path}: line {reader.line_num + 1}: not valid UTF-8") from None
        except FactsError as exc:
            raise FactsError(f"{path}: {exc}") from None
