"""The slot table of a database: per-key arrays, uniform draws, SCAN cursors, compaction.

:class:`SlotTable` is a base class of :class:`~ferrumkv_py.keyspace.Database`; the
database's writes fill the tables (``keyspace.py``), this module reads and compacts them.
No sockets, no RESP.

Why slots
---------
A cache spends its life full, evicting on nearly every write, so what matters is the cost
of one eviction and what a full keyspace costs the process.  Three things decide it:

* **Nothing per key is a GC-tracked object.**  The index (SHARDS dicts chosen by the key's
  hash, ``keyspace.py``) maps key bytes to a small int (CPython leaves dicts of bytes and
  ints untracked), keys and values sit in two lists,
  and the metadata in ``array`` columns (``lru``, ``lfu``, ``exp``, ``vpos``).  With one
  ``Entry`` object per key, each full collection walked every key (446 ms at 3M keys on a
  quiet machine, ``research/fullcache/``); now it walks the two lists, and only when the
  collector's own rule asks for a full collection, which per-key objects no longer feed.
* **The eviction kernel reads flat arrays.**  ``lru``, ``lfu`` and ``exp`` are plain
  machine arrays: a compiled function (``eviction/kernel.py``) samples and scores them
  without one Python object per candidate.
* **A touch writes one array element** (``Database.touch``).

Layout, one database::

    slot      0       1      2       3      4
    keys      b"a"    None   b"c"    b"d"   None      None = free slot (a "hole")
    vals      b"1"    None   RList   b"x"   None
    lru       1700..  -1     1700..  1700.. -1        -1 = free (FREE_SLOT)
    lfu       5       0      9       5      0
    exp       0       0      17000.. 0      0         0 = no TTL
    vpos      -1      -1     0       -1     -1        position in vslots
    vslots    [2]                                     the keys with a TTL
    free      [4, 1]                                  holes to reuse (a stack)

A new key always takes a hole from ``free``, so under eviction churn (one key in, one out
per write) the tables keep their size.  When no hole is left, :meth:`SlotTable.new_slot`
hands out the next slot of the *fresh tail* ``[fresh, len(keys))``, slots never used since
the table last grew, and when that is used up it grows every column at once by a chunk of
1/GROW_FRACTION of the table (at least GROW_MIN_SLOTS, at most GROW_MAX_SLOTS), as holes:
one C-level ``extend`` per column instead of six appends per new key
(``bench/eviction_cost.py --inproc --opcodes``); at most one slot in nine is then an unused
hole, which draws skip.

A growth must not stall the clients (the worst single add while 3M keys are added
in-process: 45.7 ms at first).  The tail is not pushed onto ``free`` (pushing a 350k-slot
chunk through ``array.extend(range(...))`` took 18 ms at 2.8M keys); the ``lfu`` column
grows by ``frombytes`` (``extend`` from a ``bytes`` object went element by element: 14 ms);
the columns' large blocks are mmapped, so ``realloc`` grows them by ``mremap`` without
copying (``malloc_tuning.py``: 17.5 -> 11.9 ms); and a chunk is at most GROW_MAX_SLOTS, so
what is left is writing the new chunk: its first touch faults its pages in, ~1,000 minor
faults for a chunk of 65,536 slots, 2 ms on a quiet machine but 10-13 ms of CPU on a
loaded one (``research/fullcache/loop_lag.py``), hence chunks of 8,192 (~130 faults;
no growth among the longest reads since).  ``tests/ferrumkv/test_keyspace.py`` checks the
tail; ``bench/full_cache.py``'s PING watcher measures the stalls.  ``free`` may
hold stale entries (slots a compaction truncated): a pop checks the slot is still a hole
(:meth:`SlotTable.fresh_slot` skips the stale ones), so ``free`` never needs a search;
``holes`` is the exact count (free stack and fresh tail both).

Uniform draws
-------------
A draw is one random index ``(r * len) >> 32`` for a uniform 32-bit ``r``; a hole is
drawn again.  Compaction keeps holes at most half the table (when the cron keeps up), so a
draw costs at most 2 tries on average.  The volatile draws use ``vslots``, which has no
holes: a key losing its TTL is swapped out in O(1) (the last slot takes its place).

SCAN cursors and compaction
---------------------------
SCAN walks the slots from the end towards 0; a cursor is the position below which slots
remain (0: start / done).  Compaction, run by the cron between commands when holes are more
than half the table, moves the key in the highest slot into a hole, then drops the free
slots at the top, a bounded number of moves per tick.  A key only ever moves *down*, so a
key not yet returned (below the cursor) stays below it, and a key already returned may be
returned again (SCAN allows duplicates); keys added meanwhile may or may not be met, as
Redis promises.  A cursor beyond the table's end after a compaction starts at the end.
No history is kept: the guarantee "every key present for the whole scan is returned at
least once" holds by the direction of the moves alone.

Complexity: ``sample(n)`` O(n) expected; ``scan(count)`` O(count) amortised, at most
``count * SCAN_SLOTS_PER_KEY`` slots per call; compaction O(1) per move, amortised O(1)
per deletion.
"""

from __future__ import annotations

from array import array

FREE_SLOT = -1              # lru value of a free slot
COMPACT_MIN_HOLES = 64      # never compact a table for fewer holes than this
GROW_MIN_SLOTS = 16         # a table grows by at least this many slots ...
GROW_FRACTION = 8           # ... or by 1/GROW_FRACTION of its size ...
GROW_MAX_SLOTS = 1 << 13    # ... but at most this many (one growth: ~130 page faults)
SAMPLE_MAX_TRIES = 64       # draws per wanted sample before giving up (table mostly holes)
SCAN_SLOTS_PER_KEY = 10     # slots a scan call may visit per key wanted (Redis: count*10)


class SlotTable:
    """Sampling, RANDOMKEY, SCAN and compaction over a database's slots (see above)."""

    __slots__ = ()

    def sample(self, n: int, volatile: bool = False) -> list:
        """Up to ``n`` live slots drawn uniformly at random (with replacement).

        Keys past their deadline may be returned (callers decide: the expire cycle wants
        them, eviction scores them).  Complexity: O(n) expected.
        """
        out = []
        rand = self.ks.rng.random
        if volatile:
            vs = self.vslots
            size = len(vs)
            if size:
                out = [vs[int(rand() * size)] for _ in range(n)]
            return out
        if not self.nkeys:
            return out
        keys = self.keys
        size = len(keys)
        tries = n * SAMPLE_MAX_TRIES
        while len(out) < n and tries > 0:
            tries -= 1
            s = int(rand() * size)
            if keys[s] is not None:
                out.append(s)
        return out

    def any_slot(self) -> int:
        """A live slot without drawing (for when draws keep hitting holes).  O(shards)."""
        for shard in self.shards:
            if shard:
                return next(iter(shard.values()))
        raise KeyError("no keys")

    def random_key(self):
        """RANDOMKEY: a live key, deleting expired ones met on the way (as Redis does).

        Each round either returns or deletes one expired key, so it ends.
        Complexity: O(1) expected while most keys are live.
        """
        while self.nkeys:
            got = self.sample(1)
            s = got[0] if got else self.any_slot()
            x = self.exp[s]
            if x and x < self.ks.now_ms:
                self._expire_slot(s)
                continue
            return self.keys[s]
        return None

    def scan(self, cursor: int, count: int) -> tuple:
        """One SCAN step: ``(next_cursor, slots)`` with about ``count`` live slots.

        Keys may be logically expired (the caller filters them).  ``next_cursor`` is 0
        when the walk is complete.  See "SCAN cursors" in the module docstring.
        Complexity: O(count) amortised, at most ``count * SCAN_SLOTS_PER_KEY`` slots.
        """
        keys = self.keys
        n = len(keys)
        pos = n if cursor == 0 or cursor > n else cursor
        stop = max(0, pos - count * SCAN_SLOTS_PER_KEY)
        out = []
        while pos > stop and len(out) < count:
            lo = max(stop, pos - (count - len(out)))
            out += [s for s in range(lo, pos) if keys[s] is not None]
            pos = lo
        return (pos if pos > 0 else 0), out

    def fresh_slot(self) -> int:
        """A hole for a new key, past stale entries of ``free``.  O(stale entries)."""
        keys, free = self.keys, self.free
        while free:
            s = free.pop()
            if s < len(keys) and keys[s] is None:
                return s
        return self.new_slot()

    def new_slot(self) -> int:
        """A hole for a new key when ``free`` is empty: the next slot of the fresh tail,
        or (tail used up, or truncated by a compaction) the first slot of a new chunk.
        ``Database.add`` holds these lines inline (a call fewer per new key).
        Complexity: O(1), or O(table) memcpy when the table grows (amortised O(1))."""
        s = self.fresh
        keys = self.keys
        if s < len(keys) and keys[s] is None:
            self.fresh = s + 1
            return s
        return self.grow_table()

    def grow_table(self) -> int:
        """Add a chunk of free slots at the top of every column, the fresh tail, and hand
        out its lowest.  Complexity: O(chunk) plus each column's copy, amortised O(1) per
        key added."""
        n = len(self.keys)
        k = min(max(GROW_MIN_SLOTS, n // GROW_FRACTION), GROW_MAX_SLOTS)
        none = [None] * k
        self.keys.extend(none)
        self.vals.extend(none)
        self.lru.extend(array("q", [FREE_SLOT]) * k)
        self.lfu.frombytes(bytes(k))            # not extend(bytes): element by element
        self.exp.extend(array("q", [0]) * k)
        self.vpos.extend(array("q", [-1]) * k)
        self.fresh = n + 1
        self.holes += k
        return n

    def needs_compaction(self) -> bool:
        h = self.holes
        return h > COMPACT_MIN_HOLES and h * 2 > len(self.keys) + GROW_MIN_SLOTS

    def compact_some(self, budget: int) -> int:
        """Move up to ``budget`` keys from the top of the table into holes, dropping free
        slots at the top; stops when holes are at most a quarter of the table.  Returns
        the keys moved.  Complexity: O(budget + free slots dropped)."""
        keys, vals, lru, lfu, exp, vpos = (self.keys, self.vals, self.lru, self.lfu,
                                           self.exp, self.vpos)
        free, vslots = self.free, self.vslots
        shards, nshards = self.shards, len(self.shards)
        moved = 0
        while True:
            while keys and keys[-1] is None:       # free slots at the top: drop them
                keys.pop()
                vals.pop()
                lru.pop()
                lfu.pop()
                exp.pop()
                vpos.pop()
                self.holes -= 1
            n = len(keys)
            if moved >= budget or self.holes * 4 <= n:
                break
            h = -1
            while free:
                h = free.pop()
                if h < n - 1 and keys[h] is None:
                    break
                h = -1
            if h < 0:
                break
            top = n - 1                              # live: the loop above dropped holes
            key = keys[top]
            keys[h], vals[h], lru[h], lfu[h] = key, vals[top], lru[top], lfu[top]
            x = exp[top]
            exp[h] = x
            if x:
                i = vpos[top]
                vpos[h] = i
                vslots[i] = h
            shards[hash(key) % nshards][key] = h
            keys[top] = None
            vals[top] = None
            lru[top] = FREE_SLOT
            exp[top] = 0
            vpos[top] = -1
            moved += 1          # hole h filled, slot top freed: holes unchanged until the
                                # loop above drops the top
        if not self.holes:
            del free[:]
        return moved
