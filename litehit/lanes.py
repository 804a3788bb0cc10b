"""Prepare one chunk of trace lines for the lanes: the parallel half of the offline replay.

``prepare_chunk`` is a pure function of (lines, first line number, plan), run in worker
processes when ``pipeline_worker_count > 1``. It parses the lines (``litehit.trace``),
checks the rules that need no replay state (timestamp order inside the chunk, unknown
instance, length contract), routes every event to its lanes, normalizes each lane's keys
(prefix hash, re-block: ``litehit.batchprep``) and formats each row's CSV prefix. The main
process then only replays and writes.

    events   e0(read i1) e1(write i1) e2(read i2)          route by instance_id
    lanes    i1: [e0, e1*]   i2: [e2]                       * commit only (commit_writes)
    rows     (i1, e0) (i2, e2)       row_lanes [0, 1]       one row per (read, lane)

On a failure the chunk carries the error of its earliest failing line and no lane data.

Complexity: O(bytes + keys x lane variants) per chunk, O(events x lanes) for routing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from litehit.batchprep import gather_flat, normalize_flat
from litehit.config import InstanceConfig, ReplayConfig
from litehit.preprocess import normalize_request
from litehit.factsfile import lane_columns, row_prefix
from litehit.trace import READ, WRITE, TraceError, parse_events

ROUTE_BY_INSTANCE = "instance"
ROUTE_FANOUT = "fanout"
ROUTE_OVERRIDE = "override"
NO_LANE = -1


@dataclass(frozen=True, slots=True)
class ReplayPlan:
    """What a worker needs to prepare chunks (picklable, sent once per worker)."""
    trace_block_size: int
    instances: tuple[InstanceConfig, ...]
    route: str
    override_lane: int
    lane_of_id: dict
    commit_writes: bool

    @classmethod
    def from_config(cls, config: ReplayConfig) -> "ReplayPlan":
        lane_of_id = {inst.instance_id: i for i, inst in enumerate(config.instances)}
        if config.fanout_all_instances:
            route, override = ROUTE_FANOUT, NO_LANE
        elif config.override_instance_id:
            route, override = ROUTE_OVERRIDE, lane_of_id[config.override_instance_id]
        else:
            route, override = ROUTE_BY_INSTANCE, NO_LANE
        return cls(config.block_size, config.instances, route, override, lane_of_id,
                   config.commit_writes)


@dataclass(slots=True)
class LaneBatch:
    """The requests of one lane in a chunk or window, in input order (CSR keys)."""
    keys: np.ndarray                    # int64 normalized keys
    offsets: np.ndarray                 # int64, requests + 1
    now_ns: np.ndarray                  # int64 timestamp per request
    emit: np.ndarray                    # bool: True = read (row), False = commit-only write

    @property
    def n_requests(self) -> int:
        return len(self.now_ns)


EMPTY_I64 = np.zeros(0, dtype=np.int64)


def empty_lane() -> LaneBatch:
    return LaneBatch(EMPTY_I64, np.zeros(1, dtype=np.int64), EMPTY_I64,
                     np.zeros(0, dtype=bool))


def concat_lane_batches(batches: list[LaneBatch]) -> LaneBatch:
    """One lane's batches of consecutive chunks as one batch.  Complexity: O(size)."""
    batches = [b for b in batches if b.n_requests]
    if len(batches) <= 1:
        return batches[0] if batches else empty_lane()
    shifts = np.cumsum([0] + [int(b.offsets[-1]) for b in batches[:-1]])
    offsets = np.concatenate([batches[0].offsets[:1]] + [
        b.offsets[1:] + s for b, s in zip(batches, shifts)])
    return LaneBatch(np.concatenate([b.keys for b in batches]), offsets,
                     np.concatenate([b.now_ns for b in batches]),
                     np.concatenate([b.emit for b in batches]))


@dataclass(slots=True)
class PreparedChunk:
    """A chunk ready for replay: per-lane batches and the rows to write, in input order."""
    first_line: int                     # line of the first parsed event
    n_events: int
    first_ts: int
    last_ts: int
    error: TraceError | None
    lanes: list                         # LaneBatch per configured lane
    row_lanes: list                     # lane of each row, in output order
    row_prefixes: list                  # factsfile.row_prefix of each row
    n_reads: int = 0
    n_writes: int = 0
    n_committed_writes: int = 0


# ---- checks ----

def _chunk_errors(ev, plan: ReplayPlan, active: np.ndarray, lane_of: np.ndarray | None):
    """Errors found in the parsed events (each the first of its rule)."""
    errors = [ev.error] if ev.error is not None else []
    ts, line_no = ev.timestamp_ns, ev.line_no
    back = np.flatnonzero(ts[1:] < ts[:-1])
    if back.size:
        i = int(back[0]) + 1
        errors.append(TraceError(int(line_no[i]), f"timestamps out of order: {ts[i]} after "
                                                  f"{ts[i - 1]}"))
    if lane_of is not None:
        unknown = np.flatnonzero(active & (lane_of == NO_LANE))
        if unknown.size:
            i = int(unknown[0])
            errors.append(TraceError(int(line_no[i]),
                                     f"unknown instance {ev.instance_id[i]!r}"))
    n_keys = np.diff(ev.key_offsets)
    tbs = plan.trace_block_size
    expected = np.where(ev.input_len > 0, ev.input_len // tbs, n_keys)
    broken = np.flatnonzero(active & (n_keys != expected))
    if broken.size:
        i = int(broken[0])
        keys = ev.keys[ev.key_offsets[i]:ev.key_offsets[i + 1]].tolist()
        try:
            normalize_request(keys, int(ev.input_len[i]), tbs, False, tbs)
            message = "length contract violated"
        except ValueError as exc:
            message = str(exc)
        errors.append(TraceError(int(line_no[i]), message))
    return errors


# ---- routing and rows ----

def _lane_rows(plan: ReplayPlan, active_idx: np.ndarray, lane_of) -> list:
    """Event indices (ascending) each lane gets."""
    n_lanes = len(plan.instances)
    if plan.route == ROUTE_FANOUT:
        return [active_idx] * n_lanes
    rows = [EMPTY_I64] * n_lanes
    if plan.route == ROUTE_OVERRIDE:
        rows[plan.override_lane] = active_idx
        return rows
    lanes = lane_of[active_idx]
    for lane in np.unique(lanes).tolist():
        rows[lane] = active_idx[lanes == lane]
    return rows


def _row_lanes(plan: ReplayPlan, read_idx: np.ndarray, lane_of) -> list:
    n_lanes = len(plan.instances)
    if plan.route == ROUTE_FANOUT:
        return list(range(n_lanes)) * len(read_idx)
    if plan.route == ROUTE_OVERRIDE:
        return [plan.override_lane] * len(read_idx)
    return lane_of[read_idx].tolist()


def _row_prefixes(ev, plan: ReplayPlan, read_idx: np.ndarray, row_lanes: list) -> list:
    lane_cols = [lane_columns(inst.instance_id, inst.block_size_tokens, inst.block_bytes)
                 for inst in plan.instances]
    per_lane = len(row_lanes) // len(read_idx) if len(read_idx) else 0
    events = np.repeat(read_idx, per_lane).tolist() if per_lane > 1 else read_idx.tolist()
    ts = ev.timestamp_ns.tolist()
    lens = ev.input_len.tolist()
    tids = ev.trace_id
    out = []
    for e, lane in zip(events, row_lanes):
        out.append(row_prefix(tids[e], lane_cols[lane], ts[e], lens[e]))
    return out


def prepare_chunk(lines: list[bytes], first_line_no: int, plan: ReplayPlan) -> PreparedChunk:
    """Parse, check, route and normalize a chunk of trace lines (see the module docstring).

    Complexity: O(bytes + keys x lane variants).
    """
    ev = parse_events(lines, first_line_no)
    n = len(ev)
    is_read = ev.kind == READ
    is_write = ev.kind == WRITE
    active = is_read | is_write if plan.commit_writes else is_read
    lane_of = None
    if plan.route == ROUTE_BY_INSTANCE:
        get = plan.lane_of_id.get
        lane_of = np.array([get(s, NO_LANE) for s in ev.instance_id], dtype=np.int64)
    first_line = int(ev.line_no[0]) if n else first_line_no
    first_ts = int(ev.timestamp_ns[0]) if n else 0
    last_ts = int(ev.timestamp_ns[-1]) if n else 0
    errors = _chunk_errors(ev, plan, active, lane_of)
    if errors:
        error = min(errors, key=lambda e: e.line_no)
        return PreparedChunk(first_line, n, first_ts, last_ts, error, [], [], [])
    active_idx = np.flatnonzero(active)
    read_idx = np.flatnonzero(is_read)
    lanes: list[LaneBatch] = []
    shared: dict = {}                   # variant -> normalized keys of all active events
    all_active = len(active_idx) == n
    for inst, rows in zip(plan.instances, _lane_rows(plan, active_idx, lane_of)):
        if len(rows) == 0:
            lanes.append(empty_lane())
            continue
        if plan.route != ROUTE_BY_INSTANCE and inst.variant in shared:
            keys, offsets = shared[inst.variant]
        else:
            keys, offsets = ((ev.keys, ev.key_offsets) if all_active and len(rows) == n
                             else gather_flat(ev.keys, ev.key_offsets, rows))
            keys, offsets = normalize_flat(keys, offsets, inst.enable_prefix_hash,
                                           inst.reblock_factor)
            shared[inst.variant] = (keys, offsets)
        lanes.append(LaneBatch(keys, offsets, ev.timestamp_ns[rows], is_read[rows]))
    row_lanes = _row_lanes(plan, read_idx, lane_of)
    n_writes = int(is_write.sum())
    return PreparedChunk(first_line, n, first_ts, last_ts, None, lanes, row_lanes,
                         _row_prefixes(ev, plan, read_idx, row_lanes), len(read_idx),
                         n_writes, n_writes if plan.commit_writes else 0)
