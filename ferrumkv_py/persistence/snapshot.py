"""A point-in-time snapshot of the keyspace without fork: the cut, the walk, the hook.

``docs/persistence.md`` section 2 has the design and its proof; in short:

* :meth:`Snapshot.__init__` is the cut: per database, ``end`` = the table's length,
  ``cursor`` = 0, ``done`` = {} and the key / TTL counts, then it installs itself as
  ``Keyspace.snapshot``.  O(databases).
* :meth:`Snapshot.step` walks the slots ``cursor .. end-1`` of one database after the
  other, skipping holes and slots in ``done``, for a bounded time, and hands each key's
  record to ``emit``.
* :meth:`Snapshot.before_change` is the hook every slot-changing ``Database`` method calls
  first: a slot the walk has not reached and no hook has handled is serialized now (its
  state as of the cut) and marked done.  A record of a database the walk has not started
  waits in that database's *early* buffer, written after its SELECTDB / RESIZEDB.

Invariant (I1): for every database, a slot ``s`` with ``cursor <= s < end`` and ``s`` not in
``done`` holds its state of the cut.  So whatever the walk or a hook serializes is the cut's
state, and each slot is serialized at most once.

``emit`` receives bytes in file order (database sections in order 0..n-1, each opened by
its header).  ``record(db, slot)`` builds a key's record (``rdbfile.key_record``).
Complexity: the cut O(databases); the walk O(slots below the cut's ends) in all; a hook O(1),
or O(size of the value) the first time it meets an unwalked key.
"""

from __future__ import annotations

import time

from .rdbfile import db_header

SLICE_KEYS_PER_CLOCK = 64         # keys serialized between two clock reads


class _DbWalk:
    __slots__ = ("end", "cursor", "done", "early", "nkeys", "nexpires", "started")

    def __init__(self, db):
        self.end = len(db.keys)
        self.cursor = 0
        self.done: set = set()
        self.early: list = []
        self.nkeys = db.nkeys
        self.nexpires = len(db.vslots)
        self.started = False


class Snapshot:
    """One snapshot in progress over ``ks`` (see the module docstring)."""

    def __init__(self, ks, record, emit, clock_ns=time.perf_counter_ns):
        assert ks.snapshot is None
        self.ks = ks
        self.record = record
        self.emit = emit
        self.clock_ns = clock_ns
        self.walks = [_DbWalk(db) for db in ks.dbs]
        self.keys_total = sum(w.nkeys for w in self.walks)
        self.keys_processed = 0
        self.current = 0              # the database being walked
        self.early_bytes = 0          # held in early buffers now
        self.peak_extra_bytes = 0     # the most held at once (rdb_last_cow_size)
        self.finished = False
        ks.snapshot = self

    # ---- the hook ----

    def before_change(self, db, s: int) -> None:
        """A ``Database`` method is about to change slot ``s``: serialize its cut state
        first if the walk still needs it.  Complexity: O(1), or O(value) once per key."""
        w = self.walks[db.id]
        if s < w.cursor or s >= w.end or s in w.done:
            return
        w.done.add(s)
        if db.keys[s] is None:          # a hole at the cut: nothing to write
            return
        rec = self.record(db, s)
        self.keys_processed += 1
        if w.started and db.id == self.current:
            self.emit(rec)
        else:
            w.early.append(rec)
            self.early_bytes += len(rec)
            if self.early_bytes > self.peak_extra_bytes:
                self.peak_extra_bytes = self.early_bytes

    def finish_db(self, db) -> None:
        """Serialize every key of ``db`` the walk still needs, now (FLUSHDB, FLUSHALL,
        SWAPDB are about to move its tables; docs/persistence.md section 4).
        Complexity: O(slots left in ``db``'s walk)."""
        w = self.walks[db.id]
        keys = db.keys
        for s in range(w.cursor, w.end):
            if keys[s] is not None:
                self.before_change(db, s)
        w.cursor = w.end

    # ---- the walk ----

    def step(self, budget_ns: int) -> bool:
        """Walk for about ``budget_ns``; True when the snapshot is complete (and no longer
        installed).  Complexity: O(slots walked)."""
        deadline = self.clock_ns() + budget_ns
        walks, dbs = self.walks, self.ks.dbs
        emit, record = self.emit, self.record
        while self.current < len(walks):
            i = self.current
            w, db = walks[i], dbs[i]
            if not w.started:
                w.started = True
                if w.nkeys:
                    emit(db_header(i, w.nkeys, w.nexpires))
                for rec in w.early:
                    emit(rec)
                    self.early_bytes -= len(rec)
                w.early = []
            keys, done, end = db.keys, w.done, w.end
            s = w.cursor
            while s < end:
                stop = min(end, s + SLICE_KEYS_PER_CLOCK)
                while s < stop:
                    if keys[s] is not None and s not in done:
                        emit(record(db, s))
                        self.keys_processed += 1
                    s += 1
                w.cursor = s
                if s < end and self.clock_ns() >= deadline:
                    return False
            w.done = set()
            self.current = i + 1
            if self.clock_ns() >= deadline and self.current < len(walks):
                return False
        self.stop()
        return True

    def stop(self) -> None:
        """Uninstall (the walk is complete, or the save is abandoned).  O(1)."""
        self.finished = True
        if self.ks.snapshot is self:
            self.ks.snapshot = None

    def run_all(self) -> None:
        """The whole walk at once (SAVE, SHUTDOWN, tests).  O(keys)."""
        while not self.step(1 << 62):
            pass
