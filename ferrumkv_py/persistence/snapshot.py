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

A walk is bound to the *table objects* a database had at the cut (its ``keys``, ``vals``,
``exp``, ``lru``, ``lfu`` columns), not to the Database: a hook finds its walk by the
identity of ``db.keys``.  So SWAPDB (which exchanges the tables of two databases) needs
nothing, and FLUSHDB / FLUSHALL (sync or ASYNC) give their old tables to the walk
(:meth:`Snapshot.adopt`: the database starts from new ones, the walk reads the old ones at
its pace and hands them to lazy free when it is done with them).

``emit`` receives bytes in file order (database sections in order 0..n-1, each opened by
its header).  ``record(tables, slot)`` builds a key's record (``rdbfile.key_record``) from
an object with the five columns (a walk, or a Database).
Complexity: the cut O(databases); the walk O(slots below the cut's ends) in all; a hook O(1),
or O(size of the value) the first time it meets an unwalked key.
"""

from __future__ import annotations

import time

from .rdbfile import db_header

SLICE_KEYS_PER_CLOCK = 64         # keys serialized between two clock reads


class _DbWalk:
    __slots__ = ("db_id", "keys", "vals", "exp", "lru", "lfu", "end", "cursor", "done",
                 "early", "nkeys", "nexpires", "started", "adopted")

    def __init__(self, db):
        self.db_id = db.id
        self.keys, self.vals, self.exp, self.lru, self.lfu = (db.keys, db.vals, db.exp,
                                                              db.lru, db.lfu)
        self.adopted = None           # (shards, live keys) of a flushed database's tables
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
        self.by_keys = {id(w.keys): w for w in self.walks}   # table -> the walk bound to it
        self.adopted_bytes = 0        # modelled memory of flushed tables the walk holds
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
        w = self.by_keys.get(id(db.keys))
        if w is None or s < w.cursor or s >= w.end or s in w.done:
            return
        w.done.add(s)
        if w.keys[s] is None:           # a hole at the cut: nothing to write
            return
        rec = self.record(w, s)
        self.keys_processed += 1
        if w.started and w.db_id == self.current:
            self.emit(rec)
        else:
            w.early.append(rec)
            self.early_bytes += len(rec)
            self._note_extra()

    def wants(self, db) -> bool:
        """The walk still needs ``db``'s tables.  O(1)."""
        w = self.by_keys.get(id(db.keys))
        return w is not None and w.cursor < w.end

    def adopt(self, db, held_bytes: int = 0) -> bool:
        """A FLUSHDB / FLUSHALL (sync or ASYNC) of ``db``, its memory already subtracted:
        if the walk still needs its tables, keep them (True: the caller gives the database
        new tables and must not touch the old ones); lazy free gets them, uncharged, when
        the walk is done with them (``held_bytes``: their modelled size, counted as the
        snapshot's extra memory meanwhile).  Complexity: O(1)."""
        if not self.wants(db):
            return False
        w = self.by_keys[id(db.keys)]
        del self.by_keys[id(w.keys)]    # no hook reaches them any more: nothing changes them
        w.adopted = (db.shards, db.nkeys, held_bytes)
        self.adopted_bytes += held_bytes
        self._note_extra()
        return True

    def _note_extra(self) -> None:
        extra = self.early_bytes + self.adopted_bytes
        if extra > self.peak_extra_bytes:
            self.peak_extra_bytes = extra

    def _release(self, w) -> None:
        """The walk is done with ``w``'s tables: unbind them; adopted ones go to lazy
        free (released by slices, as FLUSHALL ASYNC's)."""
        self.by_keys.pop(id(w.keys), None)
        if w.adopted is not None:
            shards, n, held = w.adopted
            self.adopted_bytes -= held
            lazyfree = self.ks.lazyfree
            lazyfree.add_index(shards)
            lazyfree.add_db(w.keys, w.vals, w.exp, n, False)
            w.adopted = None
        w.keys = w.vals = w.exp = w.lru = w.lfu = None

    # ---- the walk ----

    def step(self, budget_ns: int) -> bool:
        """Walk for about ``budget_ns``; True when the snapshot is complete (and no longer
        installed).  Complexity: O(slots walked)."""
        deadline = self.clock_ns() + budget_ns
        walks = self.walks
        emit, record = self.emit, self.record
        while self.current < len(walks):
            i = self.current
            w = walks[i]
            if not w.started:
                w.started = True
                if w.nkeys:
                    emit(db_header(i, w.nkeys, w.nexpires))
                for rec in w.early:
                    emit(rec)
                    self.early_bytes -= len(rec)
                w.early = []
            keys, done, end = w.keys, w.done, w.end
            s = w.cursor
            while s < end:
                stop = min(end, s + SLICE_KEYS_PER_CLOCK)
                while s < stop:
                    if keys[s] is not None and s not in done:
                        emit(record(w, s))
                        self.keys_processed += 1
                    s += 1
                w.cursor = s
                if s < end and self.clock_ns() >= deadline:
                    return False
            w.done = set()
            self._release(w)
            self.current = i + 1
            if self.clock_ns() >= deadline and self.current < len(walks):
                return False
        self.stop()
        return True

    def stop(self) -> None:
        """Uninstall (the walk is complete, or the save is abandoned).  O(1)."""
        self.finished = True
        for w in self.walks:
            if w.keys is not None:
                self._release(w)
        if self.ks.snapshot is self:
            self.ks.snapshot = None

    def run_all(self) -> None:
        """The whole walk at once (SAVE, SHUTDOWN, tests).

        Complexity: O(slots below the cut's ends)."""
        while not self.step(1 << 62):
            pass
