"""The sample lists of a database: uniform random draws and SCAN cursors, both in O(1).

:class:`SampleLists` is a base class of :class:`~ferrumkv_py.keyspace.Database`: it holds
the methods that read and compact the ``alist`` / ``vlist`` arrays the database keeps beside
its dict (the database's writes fill them, see ``keyspace.py``).  No sockets, no RESP.

Sampling in O(1)
----------------
Eviction, active expiry and RANDOMKEY need keys drawn uniformly at random; a Python dict has
no random access and iterating it from the start is insertion order (a literal port of the
Rust original's "first N keys" would be FIFO).  So every database keeps two arrays of entries:

    alist  every entry ever added since the last compaction
    vlist  every entry that got a TTL since the last compaction

A deleted entry is not removed from them (that would be O(n): an entry does not know its
slot); it is marked dead (``value = None``) and skipped when drawn.  A draw that lands on a
dead slot replaces the entry there with the shared ``TOMBSTONE`` and pushes the slot on the
list's free stack (``afree`` / ``vfree``); the next entry added to that list takes a free slot
instead of growing the list.  Under eviction churn (one key added, one evicted per write) the
draws find dead slots as fast as evictions make them once about 1/6 of the slots are dead
(5 draws per eviction: 5d/(1-d) = 1), so the list stops growing there instead of
reaching half dead between compactions: 6.0 rather than 7.7 draws per evicted key, and each
draw is a cache miss or two on a large data set (``bench/server_bench.py --parts
eviction``; the free stack never holds a slot twice, as only a dead entry that is not yet
the tombstone is pushed).  When dead slots still outnumber live ones the array is compacted
in one O(n) pass, so a draw costs O(1) expected (at most 2 tries on average) and compaction
is amortised O(1) per deletion.  An entry whose TTL is removed keeps its vlist slot with
``exp = EXP_PERSISTED``, and is not appended twice if it gets a TTL again; it is not a
tombstone candidate (it may come back).

SCAN cursors over alist
-----------------------
``No entry ever moves within ``alist`` except by compaction, which keeps the survivors in
order; SCAN walks it from the end towards the start.  Keys added during a scan land at the
end or in a free slot (they were not there for the whole scan, so whether the walk meets them
does not matter) and a scan of n slots ends after about n / count calls whatever the write
rate.  A cursor is the position below which slots remain
to be walked, tagged with the compaction generation it was made in::

    cursor = position << SCAN_GEN_BITS | (generation & SCAN_GEN_MASK)      (0 = start / done)

A compaction moves every survivor down by the number of dead slots before it, so it records
checkpoints of that map: ``ckpt[j]`` = survivors before old position ``j * step``.  A cursor
from an older generation is carried through each recorded compaction with
``p -> ckpt[ceil(p / step)]``, which is never less than the number of survivors before p:
every survivor not yet returned stays below the new position, and at most ``step`` already
returned ones come again.  Example, step 2, the walk has returned d and c::

    old alist   a  x  b  x  x  c  d       (x = dead)     p = 5: a, b remain
    ckpt        [0, 1, 2, 3, 4]           (survivors before old positions 0, 2, 4, 6, 8)
    new alist   a  b  c  d                p -> ckpt[ceil(5 / 2)] = 3: a, b (and c again)

So every key present for the whole scan is returned at least once, whatever is added or
deleted meanwhile.  Only a cursor older than SCAN_REMAP_HISTORY compactions restarts from the
end (duplicates, never misses).  A compaction keeps at most about SCAN_REMAP_POINTS
checkpoints, so the history costs O(1) memory.

Complexity: ``sample(n)`` O(n) expected; ``scan(count)`` O(count) amortised (plus
O(compactions since the cursor was made)); compaction amortised O(1) per deletion.
"""

from __future__ import annotations

from array import array
from itertools import accumulate, compress

from .values import TOMBSTONE

COMPACT_MIN_DEAD = 64       # never compact sample lists for fewer dead slots than this
SAMPLE_MAX_TRIES = 64       # draws per wanted sample before giving up (lists mostly dead)
SCAN_GEN_BITS = 16          # low cursor bits holding the alist compaction generation
SCAN_GEN_MASK = (1 << SCAN_GEN_BITS) - 1
SCAN_REMAP_POINTS = 1024    # checkpoints kept per compaction (bounds history memory)
SCAN_REMAP_MIN_STEP = 16    # alist slots per checkpoint, at least
SCAN_REMAP_HISTORY = 64     # compactions a SCAN cursor survives before restarting at 0
SCAN_SLOTS_PER_KEY = 10     # slots a scan call may visit per key wanted (Redis: count*10)
_CLEARED_REMAP = (1 << 62, array("q", [0]), 0)   # every old position -> 0


class SampleLists:
    """Sampling, RANDOMKEY and SCAN over a database's ``alist`` / ``vlist`` (see above).

    Uses the database's slots (``data``, ``alist``, ``adead``, ``afree``, ``vlist``,
    ``vdead``, ``vfree``, ``volatile``, ``expires_cursor``, ``agen``, ``aremap``, ``ks``)
    and its ``_expire_entry``.
    """

    __slots__ = ()

    def sample(self, n: int, volatile: bool = False) -> list:
        """Up to ``n`` live entries drawn uniformly at random (with replacement).

        Entries whose TTL has passed may be returned (callers decide: the expire cycle
        wants them, eviction scores them).  Complexity: O(n) expected.
        """
        lst = self.vlist if volatile else self.alist
        live = self.volatile if volatile else len(self.data)
        out = []
        if live == 0 or not lst:
            return out
        free = self.vfree if volatile else self.afree
        rand = self.ks.rng.random
        size = len(lst)
        tries = n * SAMPLE_MAX_TRIES
        while len(out) < n and tries > 0:
            tries -= 1
            i = int(rand() * size)
            e = lst[i]
            if e.value is None:
                if e is not TOMBSTONE:
                    lst[i] = TOMBSTONE
                    free.append(i)
            elif not volatile or e.exp > 0:
                out.append(e)
        return out

    def random_key(self):
        """RANDOMKEY: a live key, deleting expired ones met on the way (as Redis does).

        Each round either returns or deletes one expired key, so it ends.
        Complexity: O(1) expected while most keys are live.
        """
        while self.data:
            got = self.sample(1)
            if got:
                e = got[0]
            else:  # the draws kept hitting dead slots: take any key, in dict order
                e = self.data[next(iter(self.data))]
            if 0 < e.exp < self.ks.now_ms:
                self._expire_entry(e)
                continue
            return e.key
        return None

    def scan(self, cursor: int, count: int) -> tuple:
        """One SCAN step: ``(next_cursor, entries)`` with about ``count`` live entries.

        Entries may be logically expired (the caller filters them).  ``next_cursor`` is 0
        when the walk is complete.  See "SCAN cursors" in the module docstring.
        Complexity: O(count) amortised, at most ``count * SCAN_SLOTS_PER_KEY`` slots.
        """
        pos = self._scan_position(cursor)
        alist = self.alist
        stop = max(0, pos - count * SCAN_SLOTS_PER_KEY)
        out = []
        while pos > stop and len(out) < count:
            lo = max(stop, pos - (count - len(out)))
            out += [e for e in alist[lo:pos] if e.value is not None]
            pos = lo
        if pos <= 0:
            return 0, out
        return (pos << SCAN_GEN_BITS) | (self.agen & SCAN_GEN_MASK), out

    def _scan_position(self, cursor: int) -> int:
        """The alist position a cursor stands for now, carried over compactions."""
        n = len(self.alist)
        if cursor == 0:
            return n
        pos = cursor >> SCAN_GEN_BITS
        remaps = self.aremap
        behind = (self.agen - cursor) & SCAN_GEN_MASK
        if behind > len(remaps):
            return n  # older than the recorded history (or foreign): restart, skip nothing
        for j in range(len(remaps) - behind, len(remaps)):
            step, ckpt, new_len = remaps[j]
            i = -(-pos // step)
            pos = ckpt[i] if i < len(ckpt) else new_len
        return min(pos, n)

    def _compact_alist(self) -> None:
        """Drop dead slots, recording the position checkpoints SCAN cursors need."""
        old = self.alist
        alive = [e.value is not None for e in old]
        self.alist = list(compress(old, alive))
        self.adead = 0
        self.afree = []     # a new list: a sampler still holding the old one cannot reach it
        n = len(old)
        step = max(SCAN_REMAP_MIN_STEP, -(-n // SCAN_REMAP_POINTS))
        ckpt = array("q", accumulate((sum(alive[i:i + step]) for i in range(0, n, step)),
                                     initial=0))
        self._new_generation((step, ckpt, len(self.alist)))

    def _new_generation(self, remap: tuple) -> None:
        self.aremap.append(remap)
        self.agen += 1

    def _compact_vlist(self) -> None:
        keep = []
        for e in self.vlist:
            if e.value is None:
                continue
            if e.exp > 0:
                keep.append(e)
            else:
                e.exp = 0  # no longer listed
        self.vlist = keep
        self.vdead = 0
        self.vfree = []
        self.expires_cursor = 0
