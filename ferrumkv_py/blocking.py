"""Clients blocked in BLPOP ... BZMPOP: who waits on which key, readiness, wake-ups, timeouts.

Redis 7.0's model (blocked.c), kept here:

* A blocking command that finds nothing to pop *blocks*: the client waits on each of its
  keys (``waiting[(db, key)]``, a FIFO per key) and runs nothing else until it is served,
  times out, is unblocked by CLIENT UNBLOCK or disconnects; what it sends meanwhile is held
  in its reader and run afterwards, in order.
* A key becomes *ready* when a write leaves a list or sorted set there while someone waits
  on it.  Ready keys are queued once each, in the order they became ready, and served after
  the command (or the whole MULTI/EXEC, or the whole script) that made them ready: each
  key's waiters first blocked, first served, skipping waiters of the other type (a BLPOP
  client stays blocked when the key becomes a sorted set or a string), until the value is
  gone.  A served BLMOVE's push can make its destination ready: the loop runs until no
  key is queued.
* Inside MULTI/EXEC and scripts a blocking command acts as its non-blocking form.
* Streams (XREAD / XREADGROUP, ``vtype`` Stream) differ: their keys are queued by XADD and
  XGROUP DESTROY (:meth:`Blocking.signal_stream`, Redis's signalKeyAsReady) and, through the
  WATCH hook, when a waited key stops holding a stream (deleted, expired, replaced by
  another type: XREADGROUP waiters then get an error).  A stream waiter's ``serve`` may
  answer :data:`NOT_READY` (nothing past its ID yet): it keeps its place and stays blocked.

Readiness hook (cannot miss a key, costs nothing when nobody waits).  Every write path of
the keyspace already reports the key it changed to ``Keyspace.signal`` whenever
``ks.watched`` is non-empty: that is how WATCH (and client tracking) see *every* change,
whichever command, script, RENAME/MOVE/COPY/RESTORE/SORT STORE or lazy path made it.
While a key has waiters, ``ks.watched[(db, key)]`` also holds a :class:`_ReadyMark`, whose
``dirty_cas`` attribute is a setter: ``signal`` marking the "watchers" dirty calls
:meth:`Blocking.signal`, which queues the key when it now holds a list or a sorted set.
FLUSHDB/FLUSHALL/SWAPDB signal every watched key the same way.  No command module needs a
hook, and with no waiter there is no mark, so ``ks.watched`` stays as it was.

The dispatcher (``client.py``) tests one attribute per command, ``server.blocking_due``,
set when a key is queued or a client blocked, and then calls :meth:`Blocking.after_command`.

Timeouts: one binary heap of (deadline, seq, waiter) for all clients and one event-loop
timer armed for the earliest deadline (not one task per client); entries of clients served
earlier are skipped when popped, and the heap is rebuilt when such dead entries outnumber
the live ones.

Complexity: blocking O(keys); queueing a ready key O(1); serving O(waiters served + their
keys); a timeout O(log n); a disconnect O(keys of the client).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from itertools import islice

from . import errors
from .errors import CommandError
from .subsystem import Subsystem
from .resp import NULL_ARRAY, Raw, encode, encode_error
from .stream import Stream
from .values import RList
from .zset import ZSet

LLONG_MAX = 2 ** 63 - 1
MS_PER_S = 1000
HEAP_COMPACT_MIN = 64        # dead heap entries tolerated before the rebuild test applies
SERVE_CHUNK = 16             # waiters of one key looked at per slice of its FIFO
BLOCKED = Raw(b"")           # a handler's reply when it blocked its client (nothing sent)
NOT_READY = object()         # a stream waiter's serve(): nothing for it yet, keep waiting


def may_block(c) -> bool:
    """False inside EXEC and scripts (Redis CLIENT_DENY_BLOCKING): blocking forms then
    answer as their non-blocking forms."""
    return not c.deny_blocking


class _ReadyMark:
    """Stands in ``Keyspace.watched[(db, key)]`` while clients wait on the key: the WATCH
    signal's ``c.dirty_cas = True`` on it tells :class:`Blocking` the key changed."""

    __slots__ = ("blocking", "dbid", "key")

    def __init__(self, blocking, dbid: int, key: bytes):
        self.blocking = blocking
        self.dbid = dbid
        self.key = key

    @property
    def dirty_cas(self) -> bool:
        return False

    @dirty_cas.setter
    def dirty_cas(self, value) -> None:
        self.blocking.signal(self.dbid, self.key)


class Waiter:
    """One blocked client's request: its keys, the value type it pops, how to serve it."""

    __slots__ = ("client", "keys", "vtype", "serve", "deadline", "timeout_reply", "call")

    def __init__(self, client, keys: list, vtype, serve, deadline):
        self.client = client
        self.keys = keys            # unique (db id, key) pairs, in command order
        self.vtype = vtype          # RList, ZSet or Stream: the value class that serves it
        self.serve = serve          # serve(client, key) -> reply value; may raise CommandError
        self.deadline = deadline    # event-loop time (s), or None = forever
        self.timeout_reply = NULL_ARRAY
        # (spec, argv, ns) of the call that blocked: the slowlog sees it when it is served
        # or unblocked, with its time then (Redis updateStatsOnUnblock), not when it blocks
        self.call = None


class Blocking(Subsystem):
    """The blocked clients of one server (``server.blocking``)."""

    def __init__(self, server):
        super().__init__(server)
        self.ks = server.ks
        self.waiting: dict = {}     # (db id, key) -> {client: None}, first blocked first
        self.marks: dict = {}       # (db id, key) -> its _ReadyMark in ks.watched
        self.ready: list = []       # (db id, key) queued, in the order they became ready
        self.ready_set: set = set()
        self.streamers: dict = {}   # (db id, key) -> how many of its waiters are XREAD*s
        self.xready: set = set()    # stream keys XADD / XGROUP DESTROY marked, until served
        self._soon = False          # a _serve_soon is scheduled on the event loop
        self.blocked = 0            # INFO blocked_clients
        self.timed = 0              # INFO clients_in_timeout_table (live heap entries)
        self.heap: list = []        # (deadline, seq, Waiter)
        self._seq = 0
        self._timer = None
        self._timer_at = None

    # ---- timeouts ----

    def deadline(self, timeout_ms: int):
        """Event-loop deadline of a parsed timeout (0 = forever -> None).  Redis adds the
        wall clock in a signed 64-bit integer: a sum past LLONG_MAX wraps into the past,
        so such a client times out at once (kept)."""
        if timeout_ms == 0:
            return None
        loop_now = asyncio.get_running_loop().time()
        if timeout_ms > LLONG_MAX - self.ks.clock.now_ms():
            return loop_now
        return loop_now + timeout_ms / MS_PER_S

    def _arm(self) -> None:
        """Point the one timer at the earliest deadline.  Complexity: O(1)."""
        if not self.heap:
            return
        at = self.heap[0][0]
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        self._timer_at = at
        self._timer = loop.call_at(at, self._on_timer)

    def _on_timer(self) -> None:
        """Answer every client whose deadline passed with the timeout reply (null array)."""
        self._timer = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        heap = self.heap
        while heap and heap[0][0] <= now:
            _, _, w = heapq.heappop(heap)
            c = w.client
            if c.bstate is not w:
                continue        # served, unblocked or gone since
            self.timed -= 1
            c.push(encode(w.timeout_reply, c.proto))
            self._release(c)
        self._arm()
        self.server.flush_writes()

    # ---- blocking ----

    def block(self, c, keys: list, vtype, serve, timeout_ms: int):
        """Block ``c`` on ``keys`` (of its database) until a ``vtype`` value can serve it;
        returns :data:`BLOCKED`, the handler's reply.  Complexity: O(len(keys))."""
        dbid = c.db.id
        pairs = []
        watched = self.ks.watched
        for key in keys:
            k = (dbid, key)
            q = self.waiting.get(k)
            if q is None:
                q = self.waiting[k] = {}
                mark = self.marks[k] = _ReadyMark(self, dbid, key)
                watched.setdefault(k, set()).add(mark)
            elif c in q:
                continue        # a key named twice waits once (Redis bpop.keys is a dict)
            q[c] = None
            pairs.append(k)
            if vtype is Stream:
                self.streamers[k] = self.streamers.get(k, 0) + 1
        w = Waiter(c, pairs, vtype, serve, self.deadline(timeout_ms))
        c.bstate = w
        self.blocked += 1
        if w.deadline is not None:
            self._seq += 1
            heapq.heappush(self.heap, (w.deadline, self._seq, w))
            self.timed += 1
            if len(self.heap) > HEAP_COMPACT_MIN and len(self.heap) > 2 * self.timed:
                self.heap = [x for x in self.heap if x[2].client.bstate is x[2]]
                heapq.heapify(self.heap)
            self._arm()
        self.server.blocking_due = True
        return BLOCKED

    def _release(self, c) -> None:
        """Take ``c`` off every key it waits on and schedule its held commands."""
        w = c.bstate
        c.bstate = None
        self.blocked -= 1
        watched = self.ks.watched
        for k in w.keys:
            q = self.waiting.get(k)
            if q is None:
                continue
            if w.vtype is Stream and q.pop(c, False) is None:
                n = self.streamers[k] - 1
                if n:
                    self.streamers[k] = n
                else:
                    del self.streamers[k]
            q.pop(c, None)
            if not q:
                del self.waiting[k]
                mark = self.marks.pop(k)
                s = watched.get(k)
                if s is not None:
                    s.discard(mark)
                    if not s:
                        del watched[k]
        if not c.closing and (c.bheld is not None or c.reader.more):
            asyncio.get_running_loop().call_soon(self._resume, c)

    def _untime(self, w) -> None:
        if w.deadline is not None:
            self.timed -= 1

    def drop(self, c) -> None:
        """The client disconnected (or was killed) while blocked."""
        w = c.bstate
        if w is not None:
            self._untime(w)
            self._release(c)

    def unblock(self, c, error: bool) -> bool:
        """CLIENT UNBLOCK: answer ``c`` with the timeout reply or the UNBLOCKED error."""
        w = c.bstate
        if w is None:
            return False
        if error:
            self.server.stats.count_error("UNBLOCKED")
            c.push(encode_error(errors.UNBLOCKED_BY_CLIENT))
        else:
            c.push(encode(w.timeout_reply, c.proto))
        self._log_call(c, w, 0)
        self._untime(w)
        self._release(c)
        return True

    def _log_call(self, c, w, extra_ns: int) -> None:
        """The slowlog and latency monitor's turn for a blocked call, now it ends: its first
        run's time plus ``extra_ns`` of serving (Redis updateStatsOnUnblock)."""
        if w.call is not None:
            spec, argv, ns = w.call
            w.call = None
            ops = self.server.ops
            if ns + extra_ns >= ops.slow_ns:
                ops.after_command(c, spec, argv, ns + extra_ns)

    # ---- readiness and service ----

    def signal(self, dbid: int, key: bytes) -> None:
        """A waited-on key changed: queue it if it now holds a list or a sorted set.

        Called from inside the keyspace's write paths, so it peeks at ``Database.data``
        instead of a lookup (which could expire an entry mid-write); the type is checked
        again, with a real lookup, when the key is served.  Complexity: O(1)."""
        k = (dbid, key)
        if k in self.ready_set:
            return
        db = self.ks.dbs[dbid]
        e = db.find(key)
        cls = db.vals[e].__class__ if e is not None else None
        if cls is not RList and cls is not ZSet and k not in self.streamers:
            return
        # A key with stream waiters is queued on any change: the change may be its
        # deletion still to come (FLUSHALL signals before it empties the databases).  When
        # served, a waiter whose key still holds a stream is answered only if XADD or
        # XGROUP DESTROY marked the key (``xready``), as Redis's signalKeyAsReady.
        self._queue(k)

    def signal_stream(self, dbid: int, key: bytes) -> None:
        """XADD added entries or XGROUP DESTROY removed a group: queue the key if someone
        waits on it.  Complexity: O(1)."""
        k = (dbid, key)
        if k in self.waiting:
            self.xready.add(k)
            if k not in self.ready_set:
                self._queue(k)

    def _queue(self, k) -> None:
        self.ready_set.add(k)
        self.ready.append(k)
        self.server.blocking_due = True
        if not self._soon:
            # outside a command (active expiry, a lazy free in the cron) no dispatcher will
            # call after_command: serve on the next loop turn, as Redis's beforeSleep does
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._soon = True
            loop.call_soon(self._serve_soon)

    def _serve_soon(self) -> None:
        self._soon = False
        if self.ready:
            self.serve_ready()
            self.server.flush_writes()

    def after_command(self, c) -> bool:
        """After a top-level command: serve the ready keys; True if ``c`` itself is now
        blocked (the dispatcher then holds the rest of its read)."""
        self.server.blocking_due = False
        if self.ready:
            self.serve_ready()
        return c.bstate is not None

    def serve_ready(self) -> None:
        """Serve the queued keys in order, each key's waiters first blocked first, until
        no key is queued (a BLMOVE's push may queue more).  Complexity: O(waiters served)."""
        ks = self.ks
        while self.ready:
            batch, self.ready = self.ready, []
            for k in batch:
                self.ready_set.discard(k)
                q = self.waiting.get(k)
                if q:
                    self._serve_key(q, ks.dbs[k[0]], k[1])
                self.xready.discard(k)
        self.server.blocking_due = False

    def _serve_key(self, q: dict, db, key: bytes) -> None:
        """Serve ``key``'s waiters in order while it holds a value; a waiter of the other
        type is skipped and keeps its place.  The FIFO is read SERVE_CHUNK waiters at a
        time (serving removes them), so one push costs O(served + skipped), not O(waiters).
        """
        skipped = 0
        while q:
            chunk = list(islice(q, skipped, skipped + SERVE_CHUNK))
            if not chunk:
                return
            for c in chunk:
                w = c.bstate
                if w is not None and w.vtype is Stream:
                    if not self._serve(c, w, key):
                        skipped += 1
                    continue
                e = db.lookup_notouch(key)
                if e is None:
                    if (db.id, key) not in self.streamers:
                        return
                    skipped += 1
                    continue
                if w is None or w.vtype is not db.vals[e].__class__:
                    skipped += 1
                    continue
                self._serve(c, w, key)

    def _serve(self, c, w, key: bytes) -> bool:
        """Answer ``c`` from ``key`` and unblock it; False (still blocked) when its serve
        says NOT_READY."""
        stats = self.server.stats
        t = time.perf_counter_ns()
        try:
            reply = w.serve(c, key)
        except CommandError as e:
            stats.count_error(e.code)
            # the blocked call failed: Redis counts it in the command's failed_calls
            from .registry import lookup
            spec = lookup(c.last_cmd.encode().split(b"|")[0])
            if spec is not None:
                stats.count_failed(spec)
            frame = encode_error(e.text)
        else:
            if reply is NOT_READY:
                return False
            frame = encode(reply, c.proto)
        c.push(frame)
        self._log_call(c, w, time.perf_counter_ns() - t)
        self._untime(w)
        self._release(c)
        return True

    def _check(self) -> None:
        """Assert the invariants: every waiter is in the FIFO of each of its keys and of
        no other; each waited key has exactly one mark, in ks.watched; the counters match;
        the ready queue has no duplicates.  Complexity: O(waiters x keys + heap)."""
        clients = {c for q in self.waiting.values() for c in q}
        assert self.blocked == len(clients)
        for c in clients:
            w = c.bstate
            assert w is not None and w.client is c
            assert [k for k in w.keys if c in self.waiting.get(k, ())] == w.keys
        for k, q in self.waiting.items():
            assert q and all(k in c.bstate.keys for c in q)
            assert self.marks[k] in self.ks.watched.get(k, ())
        assert set(self.marks) == set(self.waiting)
        for k, q in self.waiting.items():
            n = sum(1 for c in q if c.bstate.vtype is Stream)
            assert self.streamers.get(k, 0) == n
        assert self.timed == sum(1 for c in clients if c.bstate.deadline is not None)
        live = {id(x[2]) for x in self.heap if x[2].client.bstate is x[2]}
        assert len(live) == self.timed
        assert len(self.ready) == len(self.ready_set) == len(set(self.ready))

    # ---- the client's held commands ----

    def hold(self, c, data: bytes) -> None:
        """Bytes from a blocked client: kept in its reader (client-query-buffer-limit
        applies) and run once it is unblocked."""
        from .resp import QueryBufferLimit
        from . import limits
        try:
            c.reader.feed(data)
            c.reader.more = True    # get_batch has something to look at once resumed
        except QueryBufferLimit as e:
            limits.close_for_query_limit(c, e.head)
            if c.transport is not None:
                c.transport.close()

    def _resume(self, c) -> None:
        """Run what an unblocked client sent while it waited (Redis processUnblockedClients)."""
        if c.closing or c.bstate is not None or c.transport is None:
            return
        if c.bheld is not None or c.reader.more:
            c.data_received(b"")

