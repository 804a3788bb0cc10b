"""Streams: the value behind XADD ... XSETID, with its consumer groups.

Entries.  A stream is an append-only log of entries, each an ID ``ms-seq`` (two unsigned
64-bit integers) and a list of field/value pairs, IDs strictly increasing.  Here an ID is
one Python int, ``ms << 64 | seq``, so comparing, bisecting and incrementing IDs is integer
arithmetic (``0-0`` is 0, ``+`` is ``MAX_ID``).

The entries live in *nodes* (``stream_node.py``), chunks of consecutive entries, in a list ordered by each
node's first ("master") ID, beside a parallel list of those master IDs for ``bisect``.
This is the shape of Redis's radix tree of listpacks, kept on purpose: Redis decides where
one node ends and the next begins (``stream-node-max-entries``, ``stream-node-max-bytes``),
approximate trimming (``MAXLEN ~``) removes whole nodes only, deleted entries stay in their
node as tombstones until the whole node goes, and RDB type 19 is one listpack per node.
Keeping the same nodes makes ``~`` trimming, XINFO's counters and DUMP byte-identical to
redis-server's.  Each node tracks the byte size its listpack would have (``lp_bytes``) from
the exact listpack entry sizes, so the byte rule splits where Redis splits::

    keys   [ 1-0 ,        5-0 ,        9-3 ]          master IDs (bisect here)
    nodes  [ 1-0 2-0 3-0 | 5-0 6-0 x 8-0 | 9-3 ... ]   x = tombstone (XDEL, exact trim)

A node holds ``ids`` (list of int), ``flags`` (bytearray: DELETED 1, SAMEFIELDS 2, as
Redis's listpack flags) and ``fvs`` (tuple per entry: f1, v1, f2, v2 ...), ``live`` and
``dead`` counts, and the master fields (those of its first entry: later entries with the
same field names are SAMEFIELDS and their field names are not stored in the listpack).

Invariants (``Stream._check``): keys[i] == nodes[i].ids[0] and keys strictly increase;
every node's ids strictly increase and exceed the previous node's; live + dead ==
len(ids) (XDEL removes a node with its last live entry; a MINID trim may leave a node
of tombstones, as Redis does); length == the sum
of live; first_id is the first live ID (0 when empty); last_id >= every ID;
max_deleted_id <= last_id; the PELs agree (below); ``mem`` == :meth:`Stream.recount`.

Consumer groups (a dict name -> :class:`Group`; Redis keeps them in a radix tree, so
replies list them sorted by name).  A group has ``last_id`` (last delivered),
``entries_read`` (its logical read counter, -1 when unknown), a PEL (pending entries list:
``SortedDict`` ID -> :class:`Nack`) and its consumers (dict name -> :class:`Consumer`).
Each NACK (delivery time, delivery count, owning consumer) is in the group's PEL and in
exactly its owner's PEL (``SortedDict`` too): both orders are needed, XPENDING / XAUTOCLAIM
scan the group's from an ID, XREADGROUP history and XPENDING with a consumer scan one
consumer's.

Lag accounting (Redis 7.0): ``entries_added`` counts every entry ever added;
``max_deleted_id`` is the largest ID removed by XDEL; a group's ``entries_read`` advances by
one per newly delivered entry while nothing ahead of it may be a tombstone, and is
otherwise re-estimated from the stream's edges (:meth:`Stream.estimate_read`); the lag is
``entries_added - entries_read`` when that is known, else null (:meth:`Stream.lag`).

Complexity: append O(1) amortized (plus O(fields) to compare with the master fields);
seek to an ID O(log n) (bisect over nodes, then within one node of <= 100 entries by
default); a range of k entries O(log n + k + tombstones passed); delete O(log n);
trimming from the head O(entries removed) plus a memmove of the node list (1/100 of the
entries); a PEL insert, delete or seek O(log p).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from sortedcontainers import SortedDict

from .stream_node import (FLAG_DELETED, FLAG_SAMEFIELDS, ID_BITS, LP_EMPTY_BYTES,  # noqa: F401
                          NODE_COST, SEQ_MASK, Node, entry_cost, lp_size, master_cost,
                          signed64)  # (re-exported: rdb_stream, the commands, the tests)

MAX_ID = (1 << (2 * ID_BITS)) - 1          # UINT64_MAX-UINT64_MAX, the ID "+"
INVALID_ENTRIES_READ = -1                  # SCG_INVALID_ENTRIES_READ
LISTPACK_MAX_SIZE = 1 << 30                # STREAM_LISTPACK_MAX_SIZE
TRIM_MAXLEN, TRIM_MINID = 1, 2

# ---- modelled memory (memory.py's value_cost reads Stream.mem) ----
STREAM_BASE = 320          # Stream object, node and key lists, counters
GROUP_COST = 400           # Group object with two dicts / SortedDict headers
CONSUMER_COST = 350        # Consumer object with its SortedDict
NACK_COST = 180            # Nack object + a slot in two SortedDicts + the ID int


def make_id(ms: int, seq: int) -> int:
    return (ms << ID_BITS) | seq


def id_text(i: int) -> bytes:
    """``ms-seq`` as Redis writes it.  Complexity: O(1)."""
    return b"%d-%d" % (i >> ID_BITS, i & SEQ_MASK)


class Nack:
    """A pending entry: delivered, not yet acknowledged (Redis streamNACK)."""

    __slots__ = ("delivery_time", "delivery_count", "consumer")

    def __init__(self, consumer, now_ms: int, count: int = 1):
        self.delivery_time = now_ms
        self.delivery_count = count
        self.consumer = consumer


class Consumer:
    __slots__ = ("name", "seen_time", "pel")

    def __init__(self, name: bytes, now_ms: int):
        self.name = name
        self.seen_time = now_ms
        self.pel = SortedDict()


class Group:
    __slots__ = ("last_id", "entries_read", "pel", "consumers")

    def __init__(self, last_id: int, entries_read: int):
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = SortedDict()
        self.consumers: dict = {}


class Stream:
    """A stream value (TYPE ``stream``); ``mem`` is its modelled size in bytes."""

    __slots__ = ("nodes", "keys", "length", "last_id", "first_id", "max_deleted_id",
                 "entries_added", "groups", "mem")

    def __init__(self):
        self.nodes: list = []
        self.keys: list = []
        self.length = 0
        self.last_id = 0
        self.first_id = 0
        self.max_deleted_id = 0
        self.entries_added = 0
        self.groups: dict = {}
        self.mem = STREAM_BASE

    def __len__(self) -> int:
        return self.length

    def __bool__(self) -> bool:       # an empty stream is still a key (unlike containers)
        return True

    # ---- adding ----

    def append(self, i: int, fv: tuple, max_bytes: int, max_entries: int,
               totlen: int = -1) -> None:
        """Add entry ``i`` (> last_id, checked by the caller) with pairs ``fv`` (``totlen``:
        the sum of their lengths, if the caller has it), opening a new node when the tail
        one is full by Redis's rule (streamAppendItem): its listpack would reach
        ``max_bytes`` (0 = the 1 GiB cap) or it holds ``max_entries`` entries, live or
        deleted (0 = no limit).  Complexity: O(len(fv))."""
        if totlen < 0:
            totlen = sum(map(len, fv))
        nodes = self.nodes
        node = nodes[-1] if nodes else None
        if node is not None:
            if max_bytes == 0 or max_bytes > LISTPACK_MAX_SIZE:
                max_bytes = LISTPACK_MAX_SIZE
            live, dead = node.live, node.dead
            lp_bytes = LP_EMPTY_BYTES + node.body + \
                (2 if live < 128 else lp_size(live)) + (2 if dead < 128 else lp_size(dead))
            if lp_bytes + totlen >= max_bytes or (max_entries and live + dead >= max_entries):
                node = None
        if node is None:
            node = Node(fv[0::2])
            nodes.append(node)
            self.keys.append(i)
            self.mem += node.cost
        before = node.cost
        node.append(i, fv, totlen)
        self.mem += node.cost - before
        self.length += 1
        self.entries_added += 1
        self.last_id = i
        if self.length == 1:
            self.first_id = i

    # ---- reading ----

    def _seek(self, i: int) -> tuple[int, int]:
        """(node index, position) of the first entry >= ``i`` (tombstones included)."""
        k = bisect_right(self.keys, i) - 1
        if k < 0:
            return 0, 0
        return k, bisect_left(self.nodes[k].ids, i)

    def range(self, start: int, end: int, rev: bool = False, count: int = 0):
        """Live entries with start <= ID <= end as (id, fv), ascending or descending,
        at most ``count`` (0 = all).  Complexity: O(log n + returned + tombstones)."""
        out = []
        if start > end or not self.nodes:
            return out
        nodes = self.nodes
        if not rev:
            k, j = self._seek(start)
            while k < len(nodes):
                node = nodes[k]
                ids, flags, fvs = node.ids, node.flags, node.fvs
                n = len(ids)
                while j < n:
                    i = ids[j]
                    if i > end:
                        return out
                    if not flags[j] & FLAG_DELETED:
                        out.append((i, fvs[j]))
                        if count and len(out) >= count:
                            return out
                    j += 1
                k += 1
                j = 0
            return out
        k = bisect_right(self.keys, end) - 1
        if k < 0:
            return out
        j = bisect_right(nodes[k].ids, end) - 1
        while k >= 0:
            node = nodes[k]
            ids, flags, fvs = node.ids, node.flags, node.fvs
            while j >= 0:
                i = ids[j]
                if i < start:
                    return out
                if not flags[j] & FLAG_DELETED:
                    out.append((i, fvs[j]))
                    if count and len(out) >= count:
                        return out
                j -= 1
            k -= 1
            if k >= 0:
                j = len(nodes[k].ids) - 1
        return out

    def get(self, i: int):
        """The pairs of live entry ``i``, or None.  Complexity: O(log n)."""
        if not self.nodes:
            return None
        k, j = self._seek(i)
        if k < len(self.nodes):
            node = self.nodes[k]
            if j < len(node.ids) and node.ids[j] == i and not node.flags[j] & FLAG_DELETED:
                return node.fvs[j]
        return None

    def first_live(self) -> int | None:
        """The first live ID (None when empty).  Complexity: O(tombstones at the head)."""
        r = self.range(0, MAX_ID, False, 1)
        return r[0][0] if r else None

    def last_live(self) -> int | None:
        """The last live ID (None when empty); Redis streamLastValidID.
        Complexity: O(1) unless the tail entries are tombstones."""
        if self.nodes:
            node = self.nodes[-1]
            if not node.flags[-1] & FLAG_DELETED:
                return node.ids[-1]
        r = self.range(0, MAX_ID, True, 1)
        return r[0][0] if r else None

    # ---- deleting ----

    def _drop_node(self, k: int) -> None:
        self.mem -= self.nodes[k].cost
        del self.nodes[k]
        del self.keys[k]

    def delete(self, i: int) -> bool:
        """XDEL of one ID: mark it a tombstone (or drop its node when it was the node's
        last live entry); True if it was live.  Does not touch first_id / max_deleted_id
        (XDEL does, after all its IDs).  Complexity: O(log n)."""
        if not self.nodes:
            return False
        k, j = self._seek(i)
        if k >= len(self.nodes):
            return False
        node = self.nodes[k]
        if j >= len(node.ids) or node.ids[j] != i or node.flags[j] & FLAG_DELETED:
            return False
        if node.live == 1:
            self._drop_node(k)
        else:
            node.flags[j] |= FLAG_DELETED
            node.live -= 1
            node.dead += 1
        self.length -= 1
        return True

    def trim(self, strategy: int, maxlen: int = 0, minid: int = 0, approx: bool = False,
             limit: int = 0) -> int:
        """Remove entries from the head (Redis streamTrim): whole nodes while they can go,
        then, unless ``approx``, tombstones inside the next node up to the bound.
        ``limit`` (0 = none) caps the entries removed, by whole nodes.  Returns how many.
        Complexity: O(entries removed + nodes removed)."""
        deleted = 0
        nodes = self.nodes
        removed_nodes = 0
        while removed_nodes < len(nodes):
            if strategy == TRIM_MAXLEN and self.length <= maxlen:
                break
            node = nodes[removed_nodes]
            entries = node.live
            if limit and deleted + entries > limit:
                break
            if strategy == TRIM_MAXLEN:
                remove = self.length - entries >= maxlen
            else:
                remove = node.ids[-1] < minid
            if remove:
                self.mem -= node.cost
                removed_nodes += 1
                self.length -= entries
                deleted += entries
                continue
            if approx:
                break
            flags = node.flags
            for j, i in enumerate(node.ids):
                if (self.length <= maxlen) if strategy == TRIM_MAXLEN else i >= minid:
                    break
                if not flags[j] & FLAG_DELETED:
                    flags[j] |= FLAG_DELETED
                    node.live -= 1
                    node.dead += 1
                    self.length -= 1
                    deleted += 1
            break
        if removed_nodes:
            del nodes[:removed_nodes]
            del self.keys[:removed_nodes]
        if self.length == 0:
            self.first_id = 0
        elif deleted:
            self.first_id = self.first_live()
        return deleted

    # ---- consumer groups and lag ----

    def has_tombstones(self, start: int, end: int = MAX_ID) -> bool:
        """Redis streamRangeHasTombstones: may [start, end] hold a deleted entry?"""
        md = self.max_deleted_id
        if not self.length or md == 0 or self.first_id > md:
            return False
        return start <= md <= end

    def estimate_read(self, i: int) -> int:
        """Redis streamEstimateDistanceFromFirstEverEntry: the read counter of ID ``i``
        (entries added up to it), or INVALID_ENTRIES_READ when it cannot be known."""
        if not self.entries_added:
            return 0
        if not self.length and i <= self.last_id:
            return self.entries_added
        if i == self.last_id:
            return self.entries_added
        if i > self.last_id:
            return INVALID_ENTRIES_READ
        md = self.max_deleted_id
        if md == 0 or md < self.first_id:
            if i < self.first_id:
                return self.entries_added - self.length
            if i == self.first_id:
                return self.entries_added - self.length + 1
        return INVALID_ENTRIES_READ

    def lag(self, g: Group):
        """Redis streamReplyWithCGLag: entries not yet delivered to ``g``, or None."""
        if not self.entries_added:
            return 0
        if g.entries_read != INVALID_ENTRIES_READ and not self.has_tombstones(g.last_id):
            return self.entries_added - g.entries_read
        read = self.estimate_read(g.last_id)
        if read != INVALID_ENTRIES_READ:
            return self.entries_added - read
        return None

    def advance(self, g: Group, i: int) -> None:
        """Group ``g`` delivers entry ``i`` > its last_id: move last_id and the read
        counter as Redis's streamReplyWithRange does."""
        if g.entries_read != INVALID_ENTRIES_READ and not self.has_tombstones(i):
            g.entries_read += 1
        elif self.entries_added:
            g.entries_read = self.estimate_read(i)
        g.last_id = i

    def add_group(self, name: bytes, last_id: int, entries_read: int) -> Group | None:
        if name in self.groups:
            return None
        g = self.groups[name] = Group(last_id, entries_read)
        self.mem += GROUP_COST + len(name)
        return g

    def drop_group(self, name: bytes) -> bool:
        g = self.groups.pop(name, None)
        if g is None:
            return False
        self.mem -= GROUP_COST + len(name) + NACK_COST * len(g.pel) + \
            sum(CONSUMER_COST + len(n) for n in g.consumers)
        return True

    def add_consumer(self, g: Group, name: bytes, now_ms: int) -> Consumer | None:
        if name in g.consumers:
            return None
        c = g.consumers[name] = Consumer(name, now_ms)
        self.mem += CONSUMER_COST + len(name)
        return c

    def drop_consumer(self, g: Group, c: Consumer) -> int:
        """Delete consumer ``c`` and its pending entries; returns how many it had."""
        n = len(c.pel)
        for i in c.pel:
            del g.pel[i]
        del g.consumers[c.name]
        self.mem -= CONSUMER_COST + len(c.name) + NACK_COST * n
        return n

    def add_nack(self, g: Group, i: int, nack: Nack) -> None:
        g.pel[i] = nack
        if nack.consumer is not None:
            nack.consumer.pel[i] = nack
        self.mem += NACK_COST

    def drop_nack(self, g: Group, i: int) -> bool:
        nack = g.pel.pop(i, None)
        if nack is None:
            return False
        if nack.consumer is not None:
            nack.consumer.pel.pop(i, None)
        self.mem -= NACK_COST
        return True

    # ---- whole-value helpers ----

    def recount(self) -> int:
        """``mem`` recomputed from the contents (``_check`` compares).  O(size)."""
        total = STREAM_BASE
        for node in self.nodes:
            total += NODE_COST + master_cost(node.mfields) + sum(
                entry_cost(fv, bool(f & FLAG_SAMEFIELDS)) for f, fv in zip(node.flags, node.fvs))
        for name, g in self.groups.items():
            total += GROUP_COST + len(name) + NACK_COST * len(g.pel)
            total += sum(CONSUMER_COST + len(n) for n in g.consumers)
        return total

    def copy(self) -> "Stream":
        """A deep copy (COPY): nodes and groups are private, entries' bytes shared."""
        s = Stream()
        for node in self.nodes:
            n = Node(node.mfields)
            n.ids, n.flags, n.fvs = list(node.ids), bytearray(node.flags), list(node.fvs)
            n.live, n.dead, n.body, n.cost = node.live, node.dead, node.body, node.cost
            s.nodes.append(n)
        s.keys = list(self.keys)
        s.length, s.last_id, s.first_id = self.length, self.last_id, self.first_id
        s.max_deleted_id, s.entries_added = self.max_deleted_id, self.entries_added
        for name, g in self.groups.items():
            ng = s.groups[name] = Group(g.last_id, g.entries_read)
            for cname, c in g.consumers.items():
                ng.consumers[cname] = Consumer(cname, c.seen_time)
            for i, nack in g.pel.items():
                owner = ng.consumers[nack.consumer.name] if nack.consumer else None
                new = Nack(owner, nack.delivery_time, nack.delivery_count)
                ng.pel[i] = new
                if owner is not None:
                    owner.pel[i] = new
        s.mem = self.mem
        return s

    def _check(self) -> None:
        """Assert every invariant of the module docstring.  Complexity: O(size)."""
        assert len(self.keys) == len(self.nodes)
        prev = -1
        length = 0
        for key, node in zip(self.keys, self.nodes):
            assert node.ids and key == node.ids[0] and key > prev
            assert all(a < b for a, b in zip(node.ids, node.ids[1:]))
            assert len(node.ids) == len(node.flags) == len(node.fvs)
            dead = sum(1 for f in node.flags if f & FLAG_DELETED)
            # (live may be 0: a MINID trim can tombstone every live entry of a node whose
            # last entry, a tombstone, is past the bound; Redis keeps such a node too)
            assert node.dead == dead and node.live == len(node.ids) - dead
            assert node.ids[0] > prev
            prev = node.ids[-1]
            length += node.live
        assert length == self.length
        assert prev <= self.last_id
        first = self.first_live()
        assert self.first_id == (first if first is not None else 0)
        for g in self.groups.values():
            for i, nack in g.pel.items():
                assert nack.consumer is not None and nack.consumer.pel.get(i) is nack
                assert g.consumers.get(nack.consumer.name) is nack.consumer
            for c in g.consumers.values():
                assert all(g.pel.get(i) is n for i, n in c.pel.items())
        assert self.mem == self.recount()
