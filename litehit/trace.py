"""The litehit trace: JSONL events parsed into flat numpy arrays.

One event per line, blank lines skipped::

    {"type":"request","instance_id":"i1","trace_id":"r1","timestamp_ns":1000,"keys":[1,2,3],"input_len":13}

``parse_events`` turns a chunk of raw lines into an ``EventChunk``: per-event columns plus
all keys of the chunk in one int64 array with CSR offsets (event e owns
``keys[key_offsets[e]:key_offsets[e + 1]]``). Parsing stops at the first bad line; the events
before it are kept and the error is returned as a value (``chunk.error``), so that a caller
checking several rules can report the earliest failing line of the file.

Speed (bench/litehit_replay_bench.py): the C scanner behind ``json.loads`` is called directly
on each line, skipping ``loads``' per-call wrapper (about 1.5x faster per line), and the keys
of the whole chunk go through one ``array('q', ...)`` conversion, which also rejects
non-integers and out-of-range values; only a chunk that fails it is re-checked per event.
"""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field

import numpy as np

READ = 0
WRITE = 1
EVENT_KINDS = {"get": READ, "request": READ, "write": WRITE}
INT64_MAX = (1 << 63) - 1
INT64_MIN = -(1 << 63)
UINT64_LIMIT = 1 << 64                  # keys in [2^63, 2^64) wrap to negative int64

MOONCAKE_FIELDS = {"hash_ids", "input_length"}     # a raw Mooncake record has these
MOONCAKE_HINT = ("this looks like a Mooncake trace (hash_ids, input_length, no type): run "
                 "`litehit convert mooncake IN.jsonl OUT.jsonl --instance-id NAME` first and "
                 "replay OUT.jsonl")

_SCAN_OBJECT = json.JSONDecoder().scan_once
_JSON_BOOL_MARKERS = (b"true", b"false")


@dataclass(frozen=True, slots=True)
class TraceError(ValueError):
    """A bad trace line: 1-based ``line_no`` and the rule it breaks."""
    line_no: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line_no}: {self.message}"


@dataclass(slots=True)
class EventChunk:
    """Parsed events of a run of consecutive lines (columns, keys in CSR form)."""
    line_no: np.ndarray                 # int64, 1-based line of each event
    kind: np.ndarray                    # int8, READ or WRITE
    instance_id: list[str]
    trace_id: list[str]                 # default trace_<instance_id>_<timestamp_ns> applied
    timestamp_ns: np.ndarray            # int64
    input_len: np.ndarray               # int64 (0 only for writes that omit it)
    keys: np.ndarray                    # int64, raw trace keys of all events
    key_offsets: np.ndarray             # int64, len(events) + 1
    error: TraceError | None = field(default=None)

    def __len__(self) -> int:
        return len(self.instance_id)


# ---- one line ----

def _decode_line(raw: bytes, line_no: int) -> dict | None:
    """Decode one JSONL line to its object; None for a blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceError(line_no, "bad JSON: not valid UTF-8") from None
    if text[:1] == "{":
        try:
            obj, end = _SCAN_OBJECT(text, 0)
            if end == len(text) or text[end:].isspace():
                return obj
        except (StopIteration, ValueError):
            pass
    elif not text or text.isspace():
        return None
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise TraceError(line_no, f"bad JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise TraceError(line_no, "bad JSON: an event must be a JSON object")
    return obj


def _int_field(obj: dict, name: str, line_no: int, minimum: int) -> int:
    value = obj.get(name)
    if type(value) is not int:
        raise TraceError(line_no, f"bad field: '{name}' must be an integer, got {value!r}")
    if value < minimum or value > INT64_MAX:
        raise TraceError(line_no, f"bad field: '{name}' must be in [{minimum}, 2^63-1], "
                                  f"got {value}")
    return value


def wrap_key(value: object, line_no: int) -> int:
    """Validate one trace key and wrap values in [2^63, 2^64) to negative int64.

    Complexity: O(1).
    """
    if type(value) is not int or not INT64_MIN <= value < UINT64_LIMIT:
        raise TraceError(line_no, f"bad field: 'keys' must hold integers in "
                                  f"[-2^63, 2^64-1], got {value!r}")
    return value - UINT64_LIMIT if value > INT64_MAX else value


# ---- a chunk of lines ----

def _keys_array(flat: list, key_offsets: list[int], line_nos: list[int],
                check_each: bool) -> np.ndarray:
    """All keys as int64; raises TraceError at the first event holding a bad key.

    ``check_each`` forces the per-event check (needed when a line may hold true/false,
    which decode to bool, an int subclass that ``array('q')`` accepts).
    """
    if not check_each:
        try:
            return np.frombuffer(array("q", flat), dtype=np.int64)
        except (TypeError, OverflowError):
            pass
    for e, line_no in enumerate(line_nos):   # slow path: wrap big values, find the bad line
        lo, hi = key_offsets[e], key_offsets[e + 1]
        flat[lo:hi] = [wrap_key(v, line_no) for v in flat[lo:hi]]
    return np.frombuffer(array("q", flat), dtype=np.int64)


def parse_events(lines: list[bytes], first_line_no: int) -> EventChunk:
    """Parse raw JSONL lines (``first_line_no`` is the 1-based number of ``lines[0]``).

    Validates every field rule that concerns one line on its own; cross-line
    rules (timestamp order, routing, length contract) are the caller's.

    Complexity: O(total bytes), one Python step per event plus C-speed work per key.
    """
    line_nos: list[int] = []
    kinds: list[int] = []
    instance_ids: list[str] = []
    trace_ids: list[str] = []
    timestamps: list[int] = []
    input_lens: list[int] = []
    flat: list = []
    key_offsets = [0]
    maybe_bool = False
    error: TraceError | None = None
    line_no = first_line_no - 1
    for raw in lines:
        line_no += 1
        try:
            obj = _decode_line(raw, line_no)
            if obj is None:
                continue
            kind = EVENT_KINDS.get(obj.get("type")) if type(obj.get("type")) is str else None
            if kind is None:
                if "type" not in obj and MOONCAKE_FIELDS <= obj.keys():
                    raise TraceError(line_no, MOONCAKE_HINT)
                raise TraceError(line_no, f"bad field: 'type' must be get, request or write, "
                                          f"got {obj.get('type')!r}")
            instance_id = obj.get("instance_id")
            if type(instance_id) is not str or not instance_id:
                raise TraceError(line_no, "bad field: 'instance_id' must be a non-empty string")
            ts = _int_field(obj, "timestamp_ns", line_no, 1)
            keys = obj.get("keys")
            if type(keys) is not list:
                raise TraceError(line_no, "bad field: 'keys' must be an array of integers")
            if kind == READ or "input_len" in obj:
                input_len = _int_field(obj, "input_len", line_no, 1 if kind == READ else 0)
            else:
                input_len = 0
            trace_id = obj.get("trace_id")
            if trace_id is None:
                trace_id = f"trace_{instance_id}_{ts}"
            elif type(trace_id) is not str:
                raise TraceError(line_no, "bad field: 'trace_id' must be a string")
        except TraceError as exc:
            error = exc
            break
        if _JSON_BOOL_MARKERS[0] in raw or _JSON_BOOL_MARKERS[1] in raw:
            maybe_bool = True
        line_nos.append(line_no)
        kinds.append(kind)
        instance_ids.append(instance_id)
        trace_ids.append(trace_id)
        timestamps.append(ts)
        input_lens.append(input_len)
        flat.extend(keys)
        key_offsets.append(len(flat))
    try:
        keys_arr = _keys_array(flat, key_offsets, line_nos, maybe_bool)
    except TraceError as exc:           # earlier than any parse error: drop the later events
        error = exc
        keep = line_nos.index(exc.line_no)
        del line_nos[keep:], kinds[keep:], instance_ids[keep:], trace_ids[keep:]
        del timestamps[keep:], input_lens[keep:], key_offsets[keep + 1:]
        keys_arr = _keys_array(flat[:key_offsets[-1]], key_offsets, line_nos, False)
    return EventChunk(np.array(line_nos, dtype=np.int64), np.array(kinds, dtype=np.int8),
                      instance_ids, trace_ids, np.array(timestamps, dtype=np.int64),
                      np.array(input_lens, dtype=np.int64), keys_arr,
                      np.array(key_offsets, dtype=np.int64), error)
