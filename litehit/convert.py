"""Convert public Mooncake request traces to the litehit trace (``litehit.trace``).

A Mooncake record (one JSON object per line)::

    {"timestamp": 0, "input_length": 40160, "output_length": 6, "hash_ids": [0, 1, ..., 78]}

holds ``ceil(input_length / block)`` ids, the last one possibly for a partial block. The
litehit event keeps the first ``floor(input_length / block)`` ids as keys (only complete
blocks are cacheable; the partial tail's tokens stay in ``input_len``)::

    {"type":"request","instance_id":"NAME","trace_id":"NAME-1","timestamp_ns":1000000,"keys":[0,1,...,77],"input_len":40160}

Timestamps: Mooncake's are milliseconds from the trace start and the first rows are 0, but the
litehit trace wants strictly positive nanoseconds, so ``timestamp_ns = (timestamp_ms + 1) *
1_000_000``: a constant 1 ms shift that keeps every gap and the order. Trace ids are
``<instance>-<line number>`` (1-based line of the record in the input file), stable across
runs. Output lines are compact JSON without spaces and are published atomically
(``OUT.tmp`` then rename). Any bad record fails the whole conversion and publishes nothing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from .publish import published

MOONCAKE_BLOCK_SIZE_TOKENS = 512
NS_PER_MS = 1_000_000
TIMESTAMP_SHIFT_MS = 1                  # makes the first (0 ms) rows strictly positive


class ConvertError(ValueError):
    """A Mooncake record that cannot be converted (the message names the line)."""


@dataclass(frozen=True, slots=True)
class ConvertStats:
    """What a conversion wrote."""
    requests: int
    block_accesses: int
    total_input_tokens: int


def _int(obj: dict, name: str, line_no: int) -> int:
    value = obj.get(name)
    if type(value) is not int or value < 0:
        raise ConvertError(f"line {line_no}: '{name}' must be a non-negative integer, "
                           f"got {value!r}")
    return value


def mooncake_event(obj: object, line_no: int, instance_id: str, block_size: int) -> tuple:
    """One Mooncake record -> (litehit trace line, timestamp_ms, number of keys).

    Complexity: O(number of hash ids).
    """
    if not isinstance(obj, dict):
        raise ConvertError(f"line {line_no}: a record must be a JSON object")
    ts_ms = _int(obj, "timestamp", line_no)
    input_len = _int(obj, "input_length", line_no)
    if input_len == 0:
        raise ConvertError(f"line {line_no}: 'input_length' must be positive")
    ids = obj.get("hash_ids")
    n_keys = input_len // block_size
    if type(ids) is not list or len(ids) < n_keys:
        raise ConvertError(f"line {line_no}: 'hash_ids' must be a list of at least "
                           f"floor(input_length / {block_size}) = {n_keys} integers")
    keys = ids[:n_keys]
    if not all(type(k) is int for k in keys):
        raise ConvertError(f"line {line_no}: 'hash_ids' must hold integers")
    line = ('{"type":"request","instance_id":%s,"trace_id":%s,"timestamp_ns":%d,'
            '"keys":[%s],"input_len":%d}\n') % (
        json.dumps(instance_id, ensure_ascii=False),
        json.dumps(f"{instance_id}-{line_no}", ensure_ascii=False),
        (ts_ms + TIMESTAMP_SHIFT_MS) * NS_PER_MS, ",".join(map(str, keys)), input_len)
    return line, ts_ms, n_keys


def convert_mooncake(in_path: str, out_path: str, instance_id: str,
                     block_size: int = MOONCAKE_BLOCK_SIZE_TOKENS) -> ConvertStats:
    """Convert a Mooncake JSONL trace to a litehit trace file, atomically.

    Fails (ConvertError / OSError, nothing published, no ``.tmp`` left) on bad JSON, missing
    or negative fields, too few hash ids, or timestamps that go backwards; the message names
    the input file and its line.

    Complexity: O(input size) time, O(one line) memory.
    """
    if not instance_id:
        raise ConvertError("the instance id must not be empty")
    if block_size <= 0:
        raise ConvertError(f"the block size must be positive, got {block_size}")
    requests = accesses = tokens = 0
    last_ms = 0
    with open(in_path, "rb") as src, published(out_path, "w", encoding="utf-8") as dst:
        for line_no, raw in enumerate(src, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except ValueError as exc:
                raise ConvertError(f"{in_path}: line {line_no}: bad JSON: {exc}") from None
            try:
                line, ts_ms, n_keys = mooncake_event(obj, line_no, instance_id, block_size)
            except ConvertError as exc:
                raise ConvertError(f"{in_path}: {exc}") from None
            if ts_ms < last_ms:
                raise ConvertError(f"{in_path}: line {line_no}: timestamp {ts_ms} ms goes "
                                   f"backwards (previous {last_ms} ms)")
            last_ms = ts_ms
            dst.write(line)
            requests += 1
            accesses += n_keys
            tokens += obj["input_length"]
    return ConvertStats(requests, accesses, tokens)
