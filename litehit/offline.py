"""Offline replay: a litehit trace to ``litehit_facts.csv`` (``litehit.factsfile``).

Pipeline, one batch window of ``pipeline_worker_count * 256`` events at a time::

    trace.jsonl --read 256-line chunks--> prepare_chunk (parallel: worker processes)
                     parse, check fields, route to lanes, check the length contract,
                     prefix-hash and re-block per lane variant, format row prefixes
                --> per lane, in input order: ONE LiteHit.process_batch over the window
                --> rows written in input order to litehit_facts.csv.tmp
    all events done, at least one read --> os.replace(tmp, litehit_facts.csv)

Lanes: one per configured instance, each with its own LiteHit (TTL of its group). Routing:
fanout sends every read to every lane (rows in config order), an override sends it to that
lane, otherwise the event's own ``instance_id`` picks the lane. ``write`` events are ignored,
unless ``commit_writes`` is set: then their keys are committed to the lane's LRU order (and
refresh TTL) exactly as a read would commit them, without a row.

Determinism: chunks are always 256 lines, so parsing, error detection and the order of
everything are the same for any worker count; the facts file is byte-identical.

Fail fast (nothing published, no ``.tmp`` left): the earliest failing line in the file is
reported, whatever the rule (bad JSON or fields, timestamps out of order, unknown instance,
length contract), and a trace with zero reads fails at the end.

Complexity: O(N log U) for N block accesses over U distinct keys (the core), plus O(bytes)
parsing; memory O(U) per lane plus a few windows of events.
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import islice

import numpy as np

from litehit.config import EVENTS_PER_WORKER_WINDOW, ReplayConfig
from litehit.core import LiteHit
from litehit.factsfile import FACTS_FILE_NAME, FACTS_HEADER_LINE, curve_cells, row
from litehit.lanes import LaneBatch, PreparedChunk, ReplayPlan, concat_lane_batches, \
    prepare_chunk
from litehit.publish import published
from litehit.trace import TraceError

CHUNK_LINES = EVENTS_PER_WORKER_WINDOW  # lines per prepare_chunk task
INFLIGHT_WINDOWS = 2                    # windows submitted ahead of the one replayed


class ReplayError(ValueError):
    """A replay that must fail: the message says why (and where in the trace)."""


@dataclass(slots=True)
class ReplayStats:
    """What a replay did, and where its time went (seconds)."""
    requests: int = 0                   # read events
    rows: int = 0                       # facts rows (requests x lanes they went to)
    block_accesses: int = 0             # keys replayed for rows (after re-blocking)
    write_events: int = 0
    committed_writes: int = 0           # write events committed (commit_writes)
    instances: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    prepare_seconds: float = 0.0        # parse + normalize (waiting time with workers)
    replay_seconds: float = 0.0
    write_seconds: float = 0.0
    lane_accesses: dict = field(default_factory=dict)   # instance_id -> block accesses

    @property
    def accesses_per_second(self) -> float:
        return self.block_accesses / self.seconds if self.seconds > 0 else 0.0


ProgressFn = Callable[[ReplayStats, int], None]         # (stats so far, total bytes)


# ---- reading ----

def _line_chunks(f, stats: ReplayStats) -> Iterator[tuple[list[bytes], int]]:
    first = 1
    while True:
        lines = list(islice(f, CHUNK_LINES))
        if not lines:
            return
        stats.bytes_read += sum(map(len, lines))
        yield lines, first
        first += len(lines)


_WORKER_PLAN: ReplayPlan | None = None


def _init_worker(plan: ReplayPlan) -> None:
    global _WORKER_PLAN
    _WORKER_PLAN = plan


def _prepare_in_worker(lines: list[bytes], first_line_no: int) -> PreparedChunk:
    assert _WORKER_PLAN is not None
    return prepare_chunk(lines, first_line_no, _WORKER_PLAN)


def _prepared_chunks(chunks, plan: ReplayPlan, workers: int) -> Iterator[PreparedChunk]:
    """prepare_chunk over the chunks, in order; in worker processes when workers > 1."""
    if workers == 1:
        for lines, first in chunks:
            yield prepare_chunk(lines, first, plan)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker,
                               initargs=(plan,))
    try:
        pending: deque = deque()
        limit = workers * (INFLIGHT_WINDOWS + 1)
        for lines, first in chunks:
            pending.append(pool.submit(_prepare_in_worker, lines, first))
            if len(pending) >= limit:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _windows(chunks: Iterator[PreparedChunk], per_window: int) -> Iterator[list]:
    window: list[PreparedChunk] = []
    for chunk in chunks:
        window.append(chunk)
        if len(window) == per_window or chunk.error is not None:
            yield window
            window = []
    if window:
        yield window


# ---- checks across chunks ----

class _OrderCheck:
    """Timestamps must not decrease across chunk boundaries (inside: prepare_chunk)."""
    __slots__ = ("last_ts",)

    def __init__(self) -> None:
        self.last_ts = 0

    def check(self, chunk: PreparedChunk) -> None:
        if chunk.n_events and chunk.first_ts < self.last_ts:
            raise ReplayError(str(TraceError(
                chunk.first_line, f"timestamps out of order: {chunk.first_ts} after "
                                  f"{self.last_ts}")))
        if chunk.error is not None:
            raise ReplayError(str(chunk.error))
        if chunk.n_events:
            self.last_ts = chunk.last_ts


# ---- replay and rows ----

def _replay_window(cores: list, window: list[PreparedChunk], stats: ReplayStats,
                   lane_ids: list[str]) -> list[str]:
    """Replay one window lane by lane (one core call each); its facts rows in input order."""
    curves: list[list[str]] = []
    for lane, core in enumerate(cores):
        batch: LaneBatch = concat_lane_batches([c.lanes[lane] for c in window])
        if batch.n_requests == 0:
            curves.append([])
            continue
        facts = core.process_batch(batch.keys, batch.offsets, batch.now_ns)
        emit = batch.emit
        curves.append(curve_cells(facts.seg_offsets, facts.seg_start, facts.seg_run,
                                  None if emit.all() else np.flatnonzero(emit).tolist()))
        accesses = int(np.diff(batch.offsets)[batch.emit].sum())
        stats.block_accesses += accesses
        stats.lane_accesses[lane_ids[lane]] += accesses
    rows: list[str] = []
    if len(cores) == 1:
        prefixes = [p for chunk in window for p in chunk.row_prefixes]
        rows = [row(p, c) for p, c in zip(prefixes, curves[0])]
    else:
        iters = [iter(c) for c in curves]
        for chunk in window:
            rows.extend(row(p, next(iters[lane]))
                        for p, lane in zip(chunk.row_prefixes, chunk.row_lanes))
    for chunk in window:
        stats.requests += chunk.n_reads
        stats.rows += len(chunk.row_lanes)
        stats.write_events += chunk.n_writes
        stats.committed_writes += chunk.n_committed_writes
    return rows


def run_replay(config: ReplayConfig, progress: ProgressFn | None = None,
               clock: Callable[[], float] = time.perf_counter) -> ReplayStats:
    """Replay ``config.trace_file_path`` and publish ``litehit_facts.csv`` atomically.

    Raises ReplayError (or OSError) on any failure; then nothing is published and the
    ``.tmp`` file is removed. ``progress(stats, total_bytes)`` is called after every window.

    Complexity: O(N log U) for N block accesses (see the module docstring).
    """
    start = clock()
    plan = ReplayPlan.from_config(config)
    cores = [LiteHit(ttl_ns=inst.ttl_ns) for inst in config.instances]
    lane_ids = [inst.instance_id for inst in config.instances]
    stats = ReplayStats(instances=len(cores), lane_accesses=dict.fromkeys(lane_ids, 0))
    os.makedirs(config.output_result_path, exist_ok=True)
    final_path = os.path.join(config.output_result_path, FACTS_FILE_NAME)
    chunks = windows = None
    try:
        total_bytes = os.path.getsize(config.trace_file_path)
        with open(config.trace_file_path, "rb") as trace, \
                published(final_path, "w", encoding="utf-8", newline="") as out:
            out.write(FACTS_HEADER_LINE)
            order = _OrderCheck()
            chunks = _prepared_chunks(_line_chunks(trace, stats), plan,
                                      config.pipeline_worker_count)
            windows = _windows(chunks, config.pipeline_worker_count)
            t_wait = clock()
            for window in windows:
                t_ready = clock()
                stats.prepare_seconds += t_ready - t_wait
                for chunk in window:
                    order.check(chunk)
                rows = _replay_window(cores, window, stats, lane_ids)
                t_replayed = clock()
                stats.replay_seconds += t_replayed - t_ready
                out.write("".join(rows))
                t_wait = clock()
                stats.write_seconds += t_wait - t_replayed
                if progress is not None:
                    stats.seconds = t_wait - start
                    progress(stats, total_bytes)
            if stats.requests == 0:
                raise ReplayError("zero readable requests (no get or request events)")
    except ReplayError as exc:
        raise ReplayError(f"{config.trace_file_path}: {exc}") from None
    finally:
        for gen in (windows, chunks):   # stops worker processes now, even on errors
            if gen is not None:
                gen.close()
    stats.seconds = clock() - start
    return stats
