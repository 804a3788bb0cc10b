"""What CPython's cyclic garbage collector costs the server: pauses by generation.

The collector stops everything while it walks the objects of the generation it collects; a
full (generation 2) collection walks every tracked object that is not frozen.  The slot
layout (``slots.py``) keeps the keyspace out of that walk; these counters show whether it
stays out: INFO memory reports, per generation, the collections, their total time and the
longest one, so an operator (and ``bench/full_cache.py``) sees a stall where it happens.

Freezing.  ``gc.freeze()`` moves every tracked object into a permanent generation that no
collection walks again (they are still freed by reference counting).  What is frozen is
what the process holds for good: its modules (numba and llvmlite alone are hundreds of
thousands of objects) and the keyspace's two big lists (``keys``, ``vals``).  The trap: a
reference cycle that is already garbage when frozen is never collected, so
:meth:`GcStats.freeze` collects first (one full collection, with nothing frozen yet to
skip), then freezes.  The server does this at start; when modules were loaded since the
last freeze (a lazily loaded kernel) the cron freezes them once the loading is over,
without the collection (an import's garbage is small; the collection took 25-55 ms after
numba), never per request; a flush
keeps the frozen lists (``Database.clear`` empties them in place).  Measured by
``bench/full_cache.py`` (longest full collection while 300k keys are written: 36.9 ms
before freezing, numba loaded by the pipelined-read scanner).

Counting what is frozen walks it: ``gc.get_freeze_count()`` follows the permanent
generation's linked list object by object, 12 ms for the 145k objects frozen once numba is
in (measured with research/fullcache/loop_lag.py: the cron's freeze after the import
logged the count and stalled every client for those 12 ms).  So only the freeze that
collects counts (its collection walks everything anyway); INFO reports that count and the
lazy freezes since, and nothing on a request path counts.

One ``gc.callbacks`` hook per process (the collector is per process: servers created in
one process, as the tests do, share it) times each collection: two ``perf_counter_ns``
reads, about 0.3 us per collection; generation 0 runs every ~700 net allocations of
tracked objects.

Complexity: O(1) per collection.
"""

from __future__ import annotations

import gc
import time

GENERATIONS = 3
NS_PER_MS = 1_000_000


class GcStats:
    """Collections, total and longest pause per generation since start or RESETSTAT."""

    def __init__(self):
        self._start = 0
        self.freezing = False       # the process froze once: lazy imports freeze too
        self.frozen_counted = 0     # gc.get_freeze_count() at the last collecting freeze
        self.reset()
        gc.callbacks.append(self._hook)

    def freeze(self, collect: bool = True) -> float:
        """Collect everything (unless ``collect`` is False: after a lazy import, whose
        garbage is small, see resp_scan), then freeze what survives (see above); returns
        the ms it took.  Complexity: O(tracked objects) with the collection (and the count
        of what is frozen), O(1) without."""
        t = time.perf_counter_ns()
        if collect:
            gc.collect()
        gc.freeze()
        took = (time.perf_counter_ns() - t) / NS_PER_MS
        if collect:
            self.frozen_counted = gc.get_freeze_count()    # a walk: see the module docstring
        self.freezing = True
        self.freezes += 1
        self.freeze_ms = took
        return took

    def reset(self) -> None:
        self.freezes = 0
        self.freeze_ms = 0.0
        self.count = [0] * GENERATIONS
        self.total_ns = [0] * GENERATIONS
        self.max_ns = [0] * GENERATIONS

    def _hook(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
            return
        gen = info["generation"]
        took = time.perf_counter_ns() - self._start
        self.count[gen] += 1
        self.total_ns[gen] += took
        if took > self.max_ns[gen]:
            self.max_ns[gen] = took

    def info_fields(self) -> list:
        """INFO memory: ``gc_gen<N>_collections``, ``_total_ms``, ``_max_ms``."""
        out = [("gc_frozen_objects", self.frozen_counted), ("gc_freezes", self.freezes),
               ("gc_last_freeze_ms", "%.3f" % self.freeze_ms)]
        for g in range(GENERATIONS):
            out += [("gc_gen%d_collections" % g, self.count[g]),
                    ("gc_gen%d_total_ms" % g, "%.3f" % (self.total_ns[g] / NS_PER_MS)),
                    ("gc_gen%d_max_ms" % g, "%.3f" % (self.max_ns[g] / NS_PER_MS))]
        return out


_shared = None


def shared() -> GcStats:
    """The process's GcStats, its hook installed at the first call."""
    global _shared
    if _shared is None:
        _shared = GcStats()
    return _shared
