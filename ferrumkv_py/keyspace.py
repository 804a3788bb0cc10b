"""The data: databases of keys, lazy expiry, access metadata, sampling, memory accounting.

No sockets, no RESP, no asyncio here: commands call these methods, the cron calls the
expire and eviction cycles and :meth:`Keyspace.maintain`, tests drive it all with a
:class:`~ferrumkv_py.clock.ManualClock`.

The slot layout
---------------
A key lives in a *slot*: a small integer, the same index into every per-key array of its
database (``slots.py`` explains the layout and why; in short, nothing per key is a
GC-tracked Python object, the eviction kernel reads the metadata as flat arrays, and a
touch writes one array element)::

    shards[hash(key) % SHARDS][key] -> slot
                                dicts: the only hash lookup (sharded, see below)
    keys[slot], vals[slot]      lists: the key bytes and the value (None: a free slot)
    lru[slot]                   array q: last access, epoch ms (-1: a free slot)
    lfu[slot]                   array B: Morris counter 0..255 (decay period starts at lru)
    exp[slot]                   array q: 0 = no TTL, else the deadline in epoch ms
    vpos[slot]                  array q: position in ``vslots`` (-1: no TTL)

The index is SHARDS dicts chosen by the key's hash, not one: CPython grows a dict by
rebuilding it whole, which at 3M keys stalls every client for ~100-400 ms (Redis rehashes
incrementally); a shard holds 1/257 of the keys, so its rebuild takes about 1/257 of that
(``bench/full_cache.py`` measures the worst PING while 3M keys are written).  The price is
a ``hash()`` call and a list subscript per lookup (the key's hash is cached in the bytes
object, so the shard's own lookup does not compute it again); the hot methods bind
``hash`` and SHARDS as default arguments, which CPython reads as locals.

SHARDS is a prime and the shard is ``hash % SHARDS``, not the hash's low bits: a dict's
first probe is the hash's low bits too, so with ``hash & 255`` every key of a shard would
share its first probe's low 8 bits, and a lookup would walk on to a second probe (one more
cache miss) most of the time.  Measured with 3M keys in 256 / 257 dicts (timeit-style loop,
one million lookups, this machine): a miss 0.53-0.59 -> 0.40-0.41 s, a hit 0.84-0.97 ->
0.78-0.87 s, the 3M inserts 1.48-1.56 -> 1.26-1.36 s.

Commands hold a slot only within one command: the cron may move keys to other slots
between commands (compaction, ``slots.py``), never during one.

Every access of a key goes through :meth:`Database.touch` (the LRU clock, then the LFU
counter when a policy keeps it): the lookups call it, and so do the per-command fast paths,
so the touch rule has one home.  The two read lookups (:meth:`Database.lookup_read`, and
:meth:`Database.lookup_value`, which GET and MGET use: the value in the same call) hold its
lines inline, marked, a Python call fewer per read hit (``tests/ferrumkv/test_read_paths.py``
drives the three alike).  A hit reads ``exp[]`` only while some key of the database has a
TTL (``vslots`` not empty): one cache miss fewer per GET in a cache without TTLs.

Complexity: lookups, writes, deletes O(1); ``sample(n)`` O(n) expected; ``scan(count)``
O(count) amortised.
"""

from __future__ import annotations

import random as _random
from array import array

from . import memory
from .lazyfree import LAZYFREE_THRESHOLD, LazyFree, effort as _free_effort
from .memory import entry_cost as _entry_cost, value_cost as _value_cost
from .slots import COMPACT_MIN_HOLES, FREE_SLOT, SAMPLE_MAX_TRIES, SlotTable  # noqa: F401
from .notify import NOTIFY_EXPIRED, NOTIFY_KEY_MISS, NOTIFY_NEW
from .values import LFU_INIT_VAL, RHash, RList, RSet  # noqa: F401

SHARDS = 257    # the index is SHARDS dicts, a key's is hash(key) % SHARDS (module docstring)

_STRING_ENTRY_COST = memory.KEY_OVERHEAD + memory.STRING_OVERHEAD  # + len(key) + len(value)


class Database(SlotTable):
    """One logical database (SELECT n)."""

    __slots__ = ("id", "ks", "shards", "keys", "vals", "lru", "lfu", "exp", "vpos",
                 "vslots", "free", "fresh", "holes", "expires_cursor")

    def __init__(self, db_id: int, ks: "Keyspace"):
        self.id = db_id
        self.ks = ks
        self._new_tables()

    def _new_tables(self, keep_lists: bool = False) -> None:
        if not keep_lists:
            self.shards: list = [{} for _ in range(SHARDS)]   # key -> slot, by hash
            self.keys: list = []
            self.vals: list = []
        self.lru = array("q")
        self.lfu = array("B")
        self.exp = array("q")
        self.vpos = array("q")
        self.vslots = array("q")    # the slots of keys with a TTL, in no order
        self.free = array("q")      # free slots to reuse (may hold stale ones, see slots.py)
        self.fresh = 0              # start of the fresh tail: [fresh, len(keys)) never used
        self.holes = 0              # free slots below len(keys), exactly
        self.expires_cursor = 0

    def __len__(self) -> int:
        return len(self.keys) - self.holes

    @property
    def nkeys(self) -> int:
        """Live keys: the table's slots less its holes (no counter to keep)."""
        return len(self.keys) - self.holes

    def find(self, key: bytes, _hash=hash, _n=SHARDS):
        """The slot of ``key`` or None, with no side effects (no expiry, touch or stats):
        the raw index lookup the fast paths and the eviction layer use.  O(1)."""
        return self.shards[_hash(key) % _n].get(key)

    def items(self):
        """Every (key, slot), shard by shard.  O(n)."""
        for shard in self.shards:
            yield from shard.items()

    @property
    def volatile(self) -> int:
        """Live keys with a TTL."""
        return len(self.vslots)

    # ---- lookups ----

    def touch(self, s: int) -> None:
        """An access of the key in slot ``s``: the LFU counter (decayed, then incremented,
        when a policy keeps it) and the LRU clock.  The one home of the touch rule: the
        read lookups (:meth:`lookup_read`, :meth:`lookup_value`) hold the same lines inline,
        a call fewer per read hit, each marked ``touch(), inline``; a test drives all three
        alike.  O(1)."""
        ks = self.ks
        if ks.snapshot is not None:     # persistence: the value as of the cut, first
            ks.snapshot.before_change(self, s)
        if ks.lfu_on:
            c = self.lfu[s]
            n = ks.lfu_touch(c, self.lru[s], ks.now_ms)
            if n != c:          # mostly unchanged (Morris): an array store saved, ~20 ns
                self.lfu[s] = n
        self.lru[s] = ks.now_ms

    def lookup_read(self, key: bytes, _hash=hash, _n=SHARDS):
        """Read lookup: lazy expiry, keyspace hit/miss stats, touch.  The slot or None.  O(1)."""
        ks = self.ks
        s = self.shards[_hash(key) % _n].get(key)
        if s is not None:
            now = ks.now_ms
            # no key with a TTL: exp[] is not read (one cache miss fewer per hit)
            if not self.vslots or not (x := self.exp[s]) or x >= now:
                ks.hits += 1
                if ks.lfu_on:   # touch(), inline (a call fewer per read hit): keep them equal
                    c = self.lfu[s]
                    n = ks.lfu_touch(c, self.lru[s], now)
                    if n != c:
                        self.lfu[s] = n
                self.lru[s] = now
                return s
            if not ks.expire_frozen:    # CLIENT PAUSE: missing, but not deleted
                self._expire_slot(s)
        ks.misses += 1
        if ks.miss_hook is not None:
            ks.miss_hook(key)
        if ks.notify_flags:
            ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
        return None

    def lookup_value(self, key: bytes, _hash=hash, _n=SHARDS):
        """:meth:`lookup_read`, then the value: the value or None (GET / MGET's read path).
        Its body is lookup_read's but for the hit's return value: a change to one is a
        change to both (tests/ferrumkv/test_read_paths.py drives them side by side).

        The same expiry, hit/miss stats, miss hook, keymiss event and touch as lookup_read
        (tests drive both alike), in one call: GET on a hit runs no other Python frame
        but the LFU hook's.  O(1)."""
        ks = self.ks
        s = self.shards[_hash(key) % _n].get(key)
        if s is not None:
            now = ks.now_ms
            # no key with a TTL: exp[] is not read (one cache miss fewer per hit)
            if not self.vslots or not (x := self.exp[s]) or x >= now:
                ks.hits += 1
                if ks.lfu_on:   # touch(), inline (a call fewer per read hit): keep them equal
                    c = self.lfu[s]
                    n = ks.lfu_touch(c, self.lru[s], now)
                    if n != c:
                        self.lfu[s] = n
                self.lru[s] = now
                return self.vals[s]
            if not ks.expire_frozen:    # CLIENT PAUSE: missing, but not deleted
                self._expire_slot(s)
        ks.misses += 1
        if ks.miss_hook is not None:
            ks.miss_hook(key)
        if ks.notify_flags:
            ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
        return None

    def lookup_write(self, key: bytes, _hash=hash, _n=SHARDS):
        """Write-path lookup: lazy expiry and touch, no hit/miss stats.  Slot or None.  O(1)."""
        s = self.shards[_hash(key) % _n].get(key)
        if s is None:
            return None
        x = self.exp[s]
        if x and x < self.ks.now_ms:
            self._expire_slot(s)
            return None
        self.touch(s)
        return s

    def lookup_notouch(self, key: bytes, stats: bool = False, _hash=hash, _n=SHARDS):
        """TTL / OBJECT / TYPE / EXISTS-style lookup: lazy expiry, no touch; stats if asked.
        O(1)."""
        ks = self.ks
        s = self.shards[_hash(key) % _n].get(key)
        if s is not None and self.vslots:
            x = self.exp[s]
            if x and x < ks.now_ms:
                if not ks.expire_frozen:    # CLIENT PAUSE: missing, but not deleted
                    self._expire_slot(s)
                s = None
        if stats:
            if s is None:
                ks.misses += 1
                if ks.notify_flags:
                    ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
            else:
                ks.hits += 1
        return s

    def peek(self, key: bytes, _hash=hash, _n=SHARDS):
        """The slot of ``key`` if present and not past its deadline, with no side effects
        (no expiry, no touch, no stats).  O(1)."""
        s = self.shards[_hash(key) % _n].get(key)
        if s is None or not self.vslots:
            return s
        x = self.exp[s]
        return None if x and x < self.ks.now_ms else s

    # ---- writes ----

    def add(self, key: bytes, value, shard=None, _hash=hash, _n=SHARDS) -> int:
        """Insert a key known to be absent; returns its slot.  ``shard``: the key's index
        dict when the caller's lookup has it (:meth:`set`).  O(1)."""
        ks = self.ks
        keys = self.keys
        free = self.free
        if free:
            s = free.pop()
            if s >= len(keys) or keys[s] is not None:
                s = self.fresh_slot()       # a stale entry of the free stack (slots.py)
        else:
            s = self.fresh                  # SlotTable.new_slot(), its fast path inline
            if s < len(keys) and keys[s] is None:
                self.fresh = s + 1
            else:
                s = self.grow_table()
        if ks.snapshot is not None:     # persistence: a slot born after the cut
            ks.snapshot.before_change(self, s)
        self.holes -= 1
        keys[s] = key
        self.vals[s] = value
        self.lru[s] = ks.now_ms
        admit = ks.admit_hook
        self.lfu[s] = LFU_INIT_VAL if admit is None else admit(key)
        if shard is None:
            shard = self.shards[_hash(key) % _n]
        shard[key] = s
        # memory.entry_cost() inline for strings (SET -P 16 -4% CPU per command,
        # bench/server_bench.py --parts dispatch); Keyspace._check() holds the two equal
        ks.used_memory += (_STRING_ENTRY_COST + len(key) + len(value)
                           if value.__class__ is bytes else _entry_cost(key, value))
        if ks.watched:
            ks.signal(self, key)
        if ks.notify_flags:
            ks.notify(self, NOTIFY_NEW, b"new", key)
        return s

    def set_value(self, s: int, value) -> None:
        """Replace the value of a live key (TTL and access metadata stay).  O(1)."""
        ks = self.ks
        if ks.snapshot is not None:     # persistence: the value as of the cut, first
            ks.snapshot.before_change(self, s)
        vals = self.vals
        old = vals[s]
        if value.__class__ is bytes and old.__class__ is bytes:
            ks.used_memory += len(value) - len(old)   # value_cost() difference, inline
        else:
            ks.used_memory += _value_cost(value) - _value_cost(old)
        vals[s] = value
        if ks.watched:
            ks.signal(self, self.keys[s])

    def set(self, key: bytes, value, keep_ttl: bool = False, _hash=hash,
            _n=SHARDS) -> int:
        """SET semantics: create or overwrite, dropping any TTL unless ``keep_ttl``.

        One dict lookup, then either :meth:`add` or an in-place overwrite that keeps the
        slot (and so its LRU/LFU history, as Redis's dbOverwrite does after lookupKeyWrite
        touched it).  Returns the slot.  Complexity: O(1).
        """
        shard = self.shards[_hash(key) % _n]
        s = shard.get(key)
        if s is None:
            return self.add(key, value, shard)
        ks = self.ks
        if ks.snapshot is not None:     # persistence: the value as of the cut, first
            ks.snapshot.before_change(self, s)
        x = self.exp[s]
        if x:
            if x < ks.now_ms:
                self._expire_slot(s)
                return self.add(key, value)
            if not keep_ttl:
                self._clear_ttl(s)
        self.touch(s)
        vals = self.vals
        old = vals[s]
        if value.__class__ is bytes and old.__class__ is bytes:
            ks.used_memory += len(value) - len(old)   # value_cost() difference, inline
        else:
            ks.used_memory += _value_cost(value) - _value_cost(old)
            if ks.lazy_server_del and old.__class__ is not bytes:
                ks.free_value(old)
        vals[s] = value
        if ks.watched:
            ks.signal(self, key)
        return s

    def grow(self, s: int, delta_bytes: int) -> None:
        """A container value changed in place by ``delta_bytes`` of modelled memory."""
        ks = self.ks
        self.vals[s].mem += delta_bytes
        ks.used_memory += delta_bytes
        if ks.watched:  # signal() only under WATCH: one call fewer per LPUSH/SADD/HSET
            ks.signal(self, self.keys[s])

    def delete(self, key: bytes, lazy: bool = False) -> bool:
        """DEL of one key (lazily expired keys count as absent); ``lazy``: UNLINK.  O(1)."""
        s = self.lookup_notouch(key)
        if s is None:
            return False
        self.unlink(s, lazy)
        return True

    def unlink(self, s: int, lazy: bool = False) -> None:
        """Free slot ``s`` (a live key); memory of containers is accounted in O(1).
        ``lazy``: a value of more than LAZYFREE_THRESHOLD elements is freed by slices later
        (``lazyfree.py``); used_memory drops now either way."""
        ks = self.ks
        if ks.snapshot is not None:     # persistence: the key as of the cut, first
            ks.snapshot.before_change(self, s)
        keys = self.keys
        key = keys[s]
        del self.shards[hash(key) % SHARDS][key]
        vals = self.vals
        value = vals[s]
        if value.__class__ is bytes:
            cost = _STRING_ENTRY_COST + len(key) + len(value)
        else:
            cost = memory.KEY_OVERHEAD + len(key) + value.mem
        if self.exp[s]:
            self._drop_volatile(s)
            cost += memory.EXPIRE_COST
        ks.used_memory -= cost
        if lazy and value.__class__ is not bytes:
            ks.free_value(value)
        keys[s] = None
        vals[s] = None
        self.lru[s] = FREE_SLOT
        self.free.append(s)
        self.holes += 1
        if ks.watched:
            ks.signal(self, key)

    def unlink_many(self, slots, n: int, lazy: bool = False) -> None:
        """:meth:`unlink` of the first ``n`` entries of ``slots`` (live keys, each once):
        the compiled eviction path's batch of victims, with the per-key attribute lookups
        hoisted out of the loop.  Complexity: O(n)."""
        ks = self.ks
        keys, vals, lru, exp, shards, free = (self.keys, self.vals, self.lru, self.exp,
                                              self.shards, self.free)
        watched = ks.watched
        base_str = _STRING_ENTRY_COST
        base_key = memory.KEY_OVERHEAD
        ttl_cost = memory.EXPIRE_COST
        ttls = bool(self.vslots)    # no key has a TTL: exp[] unread (a cache miss per victim)
        snap = ks.snapshot
        if snap is not None:        # persistence: the victims as of the cut, first
            for i in range(n):
                snap.before_change(self, slots[i])
        freed = 0
        for i in range(n):
            s = slots[i]
            key = keys[s]
            del shards[hash(key) % SHARDS][key]
            value = vals[s]
            if value.__class__ is bytes:
                freed += base_str + len(key) + len(value)
            else:
                freed += base_key + len(key) + value.mem
                if lazy:
                    ks.free_value(value)
            if ttls and exp[s]:
                self._drop_volatile(s)
                freed += ttl_cost
            keys[s] = None
            vals[s] = None
            lru[s] = FREE_SLOT
            free.append(s)
            if watched:
                ks.signal(self, key)
        self.holes += n
        ks.used_memory -= freed

    def rename(self, s: int, newkey: bytes) -> None:
        """Give the key in slot ``s`` the name ``newkey`` (which must be absent), keeping its
        slot and metadata.  O(1)."""
        ks = self.ks
        if ks.snapshot is not None:     # persistence: the key as of the cut, first
            ks.snapshot.before_change(self, s)
        oldkey = self.keys[s]
        del self.shards[hash(oldkey) % SHARDS][oldkey]
        ks.used_memory += len(newkey) - len(oldkey)
        self.keys[s] = newkey
        self.shards[hash(newkey) % SHARDS][newkey] = s
        ks.signal(self, oldkey)
        ks.signal(self, newkey)

    def move_to(self, s: int, dst: "Database") -> int:
        """MOVE: take a live key out of this database and into ``dst`` (key absent there),
        keeping its value, TTL and access metadata.  Returns its slot in ``dst``.  O(1)."""
        key, value, lru, lfu, x = self.keys[s], self.vals[s], self.lru[s], self.lfu[s], \
            self.exp[s]
        self.unlink(s)
        t = dst.add(key, value)
        dst.lru[t], dst.lfu[t] = lru, lfu
        if x:
            dst.set_expire(t, x)
        return t

    def set_access(self, s: int, lru_ms: int, lfu: int | None = None) -> None:
        """RESTORE IDLETIME / FREQ: a live key's last access (epoch ms, also the start of
        its LFU decay period) and, if given, its LFU counter (0..255).  O(1)."""
        self.lru[s] = lru_ms
        if lfu is not None:
            self.lfu[s] = lfu

    def _expire_slot(self, s: int) -> None:
        """Delete a key past its deadline (lazy and active expiry): "expired" event."""
        key = self.keys[s]
        self.unlink(s, self.ks.lazy_expire)
        ks = self.ks
        ks.expired_keys += 1
        if ks.notify_flags:
            ks.notify(self, NOTIFY_EXPIRED, b"expired", key)

    # ---- TTL ----

    def set_expire(self, s: int, when_ms: int) -> None:
        """Give a live key an absolute deadline (ms).  O(1)."""
        if self.ks.snapshot is not None:    # persistence: the key as of the cut, first
            self.ks.snapshot.before_change(self, s)
        if not self.exp[s]:
            vs = self.vslots
            self.vpos[s] = len(vs)
            vs.append(s)
            self.ks.used_memory += memory.EXPIRE_COST
        self.exp[s] = when_ms
        self.ks.signal(self, self.keys[s])

    def persist(self, s: int) -> bool:
        """Remove the TTL; False if there was none.  O(1)."""
        if not self.exp[s]:
            return False
        if self.ks.snapshot is not None:    # persistence: the key as of the cut, first
            self.ks.snapshot.before_change(self, s)
        self._clear_ttl(s)
        self.ks.signal(self, self.keys[s])
        return True

    def _clear_ttl(self, s: int) -> None:
        self._drop_volatile(s)
        self.ks.used_memory -= memory.EXPIRE_COST

    def _drop_volatile(self, s: int) -> None:
        """Take slot ``s`` out of ``vslots``: the last one fills its place.  O(1)."""
        vs = self.vslots
        vpos = self.vpos
        i = vpos[s]
        last = vs.pop()
        if last != s:
            vs[i] = last
            vpos[last] = i
        vpos[s] = -1
        self.exp[s] = 0

    # ---- whole-database operations ----

    def clear(self, lazy: bool = False) -> int:
        """FLUSHDB: drop every key.  Returns how many there were.  O(n), or O(watched
        keys) with ``lazy`` (FLUSHDB ASYNC): the tables are detached and released by
        slices (``lazyfree.py``)."""
        ks = self.ks
        n = self.nkeys
        if ks.watched:
            for db_id, key in list(ks.watched):
                if db_id == self.id and self.find(key) is not None:
                    ks.signal(self, key)
        if lazy:
            return self._detach(n)
        freed = self._cost()
        ks.used_memory -= freed
        if ks.snapshot is not None and ks.snapshot.adopt(self, freed):
            # persistence: a snapshot still walks these tables; it keeps them (and hands
            # them to lazy free when its walk of them ends), the database starts afresh
            self._new_tables()
            return n
        # the same list objects, emptied: frozen ones (gcstats.py) stay frozen
        del self.keys[:]
        del self.vals[:]
        for shard in self.shards:
            shard.clear()
        self._new_tables(keep_lists=True)
        return n

    def _cost(self) -> int:
        """The modelled memory of every key (used_memory's share of this database).
        O(slots)."""
        exp, keys = self.exp, self.keys
        freed = 0
        for s, v in enumerate(self.vals):
            if v is not None:
                freed += memory.entry_cost(keys[s], v)
                if exp[s]:
                    freed += memory.EXPIRE_COST
        return freed

    def _detach(self, n: int) -> int:
        """FLUSHDB ASYNC / FLUSHALL ASYNC: hand the whole database to the lazy free queue.
        used_memory drops now when no other database holds keys (FLUSHALL zeroes it
        itself); otherwise this database's share is subtracted as it is released."""
        ks = self.ks
        if ks.snapshot is not None and ks.snapshot.wants(self):
            # persistence: a snapshot still walks these tables.  It keeps them and hands
            # them to lazy free when done (uncharged: their memory is subtracted now,
            # O(keys) as a synchronous flush), so nothing takes them apart meanwhile.
            freed = self._cost()
            ks.used_memory -= freed
            ks.snapshot.adopt(self, freed)
            self._new_tables()
            return n
        charged = (any(db.nkeys for db in ks.dbs if db is not self)
                   or ks.lazyfree.charged())
        if not charged:
            ks.used_memory = 0
        if self.keys:
            ks.lazyfree.add_index(self.shards)
            ks.lazyfree.add_db(self.keys, self.vals, self.exp, n, charged)
        self._new_tables()
        return n

    def swap_contents(self, other: "Database") -> None:
        """SWAPDB: exchange every key and table with another database.  O(1).  (A
        snapshot's walk is bound to the table objects, not to the database: it follows
        them, persistence/snapshot.py.)"""
        for name in ("shards", "keys", "vals", "lru", "lfu", "exp", "vpos", "vslots",
                     "free", "fresh", "holes", "expires_cursor"):
            a, b = getattr(self, name), getattr(other, name)
            setattr(self, name, b)
            setattr(other, name, a)

    def _check(self) -> None:
        """Assert every invariant (tests call this after each mutation)."""
        keys, vals = self.keys, self.vals
        n = len(keys)
        assert len(vals) == len(self.lru) == len(self.lfu) == len(self.exp) \
            == len(self.vpos) == n
        live = [s for s in range(n) if keys[s] is not None]
        assert len(live) == self.nkeys == sum(map(len, self.shards))
        assert n - len(live) == self.holes
        for s in range(n):
            if keys[s] is None:
                assert vals[s] is None and self.lru[s] == FREE_SLOT
                assert self.exp[s] == 0 and self.vpos[s] == -1
            else:
                assert self.find(keys[s]) == s
                assert vals[s] is not None and self.lru[s] >= 0
                assert 0 <= self.lfu[s] <= 255
        assert set(self.free) | set(range(self.fresh, n)) >= \
            {s for s in range(n) if keys[s] is None}
        assert all(keys[s] is None for s in range(self.fresh, n))
        vs = self.vslots
        assert len(set(vs)) == len(vs)
        for i, s in enumerate(vs):
            assert keys[s] is not None and self.exp[s] > 0 and self.vpos[s] == i
        assert sum(1 for s in live if self.exp[s]) == len(vs)


class Keyspace:
    """All databases plus the server-wide counters and policy hooks they share."""

    def __init__(self, databases: int = 16, clock=None, rng=None):
        from .clock import SystemClock
        self.clock = clock or SystemClock()
        self.rng = rng or _random.Random()
        self.now_ms = self.clock.now_ms()
        self.used_memory = 0          # modelled bytes of the data set (memory.py)
        self.hits = 0
        self.misses = 0
        self.expired_keys = 0
        self.evicted_keys = 0
        self.expired_stale_perc = 0.0
        self.expired_time_cap_reached_count = 0
        self.expire_next_db = 0       # where the next active expire cycle starts
        # CLIENT PAUSE (ops.py): reads see a key past its deadline as missing but leave it
        # (Redis expireIfNeeded while paused: deleting would be a write); active expiry
        # waits for the pause's end too
        self.expire_frozen = False
        self.slot_moves = 0           # keys moved by compaction (slot numbers changed)
        # Policy hooks, set by the eviction layer: LFU touch on every access when on.
        self.lfu_on = False
        self.lfu_touch = _no_lfu_touch
        # Read-miss hook of an AHE controller that wants the miss stream (eviction/ahe.py),
        # called only on lookup_read's miss branches; None = off.
        self.miss_hook = None
        # New-key hook of an AHE controller on probation (eviction/probation.py): returns
        # the Morris counter a new key starts with; None = LFU_INIT_VAL.
        self.admit_hook = None
        # WATCH: (db id, key) -> set of watching clients; empty dict = nothing to do.
        # While a client tracks keys it also holds tracking.TRACKING_MARK, so that the
        # write paths' "if ks.watched" calls signal(), which calls ``invalidate(key)``.
        self.watched: dict = {}
        self.invalidate = None
        # Keyspace notifications (notify.py): the enabled classes, 0 when nothing can be
        # published; the Notifier that publishes.  See :meth:`notify`.
        self.notify_flags = 0
        self.notifier = None
        # lazyfree-lazy-* switches (set from the config by the server) and the queue
        self.lazyfree = LazyFree(self)
        self.lazy_expire = self.lazy_server_del = self.lazy_eviction = False
        # persistence/snapshot.py: the snapshot being taken, None when none is.  Every
        # method that changes a slot calls its before_change(db, slot) first (the hook
        # docs/persistence.md section 2 lists); compaction waits while it is set.
        self.snapshot = None
        self.dbs = [Database(i, self) for i in range(databases)]

    def refresh_time(self) -> int:
        """Cache the clock once per batch of commands; returns the new now_ms."""
        self.now_ms = now = self.clock.now_ms()
        return now

    def signal(self, db: Database, key: bytes) -> None:
        """A key changed: mark the transactions that WATCH it as dirty and invalidate
        client-side caches (tracking.py).  O(1) plus the clients told."""
        if self.watched:
            clients = self.watched.get((db.id, key))
            if clients:
                for c in clients:
                    c.dirty_cas = True
            if self.invalidate is not None:
                self.invalidate(key)

    def notify(self, db: Database, cls: int, event: bytes, key: bytes) -> None:
        """Keyspace notification of ``event`` on ``key`` (class ``cls``: notify.NOTIFY_*).

        Every command that changes a key calls this once per Redis event, after the change;
        it costs one attribute test when notifications are off (hot paths test
        ``ks.notify_flags`` inline first).  Complexity: O(1) off; two PUBLISHes on.
        """
        if self.notify_flags & cls:
            self.notifier.fire(db.id, event, key)

    def signal_all(self) -> None:
        """FLUSHALL / SWAPDB: every watched key counts as touched."""
        for clients in self.watched.values():
            for c in clients:
                c.dirty_cas = True

    def flushall(self, lazy: bool = False) -> int:
        """FLUSHALL; ``lazy`` (ASYNC): every database detached, used_memory zeroed now.
        Complexity: O(keys), or O(databases + watched keys) with ``lazy``."""
        self.signal_all()
        if not lazy:
            return sum(db.clear() for db in self.dbs)
        n = 0
        for db in self.dbs:
            n += db._detach(db.nkeys)
        self.used_memory = 0
        for job in self.lazyfree.jobs:
            job[2] = False          # nothing of the detached databases is charged now
        return n

    def maintain(self, budget_moves: int) -> int:
        """Cron work between commands: compact databases whose tables are mostly holes,
        moving at most ``budget_moves`` keys in all (``slots.py``).  Returns keys moved.
        Complexity: O(budget_moves)."""
        if self.snapshot is not None:   # a snapshot's walk needs keys to keep their slots
            return 0
        moved = 0
        for db in self.dbs:
            if db.needs_compaction():
                moved += db.compact_some(budget_moves - moved)
                if moved >= budget_moves:
                    break
        self.slot_moves += moved
        return moved

    def free_value(self, value) -> None:
        """Release a value no key holds any more: by slices when it is big.  O(1)."""
        if _free_effort(value) > LAZYFREE_THRESHOLD:
            self.lazyfree.add_value(value)

    def total_keys(self) -> int:
        return sum(db.nkeys for db in self.dbs)

    def _check(self) -> None:
        total = 0
        for db in self.dbs:
            db._check()
            for key, s in db.items():
                total += memory.entry_cost(key, db.vals[s])
                if db.exp[s]:
                    total += memory.EXPIRE_COST
        self.lazyfree._check()
        total += self.lazyfree.charged_bytes()
        assert total == self.used_memory, (total, self.used_memory)


def _no_lfu_touch(counter: int, last_ms: int, now_ms: int) -> int:
    return counter
