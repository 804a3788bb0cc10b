"""The data: databases of keys, lazy expiry, access metadata, sampling, memory accounting.

No sockets, no RESP, no asyncio here: commands call these methods, the cron calls the
expire and eviction cycles, tests drive it all with a :class:`~ferrumkv_py.clock.ManualClock`.

Entries
-------
Each key maps to an :class:`Entry` holding the value and the metadata every policy needs::

    Entry(key, value, lru, lfu, exp)
      lru  last access, epoch ms (the keyspace's cached now_ms, so a batch shares one int)
      lfu  Morris counter 0..255 (LFU_INIT_VAL for a new key); its decay period starts at lru
      exp  0 = no TTL; > 0 = absolute deadline in ms; EXP_PERSISTED = no TTL any more but
           still listed in the volatile sample list (see below)

Values by type: ``bytes`` (string), :class:`RList` (list), :class:`RHash` (hash),
:class:`RSet` (set), ``ZSet`` (sorted set, ``types_zset``).  Container classes carry ``mem``,
the modelled bytes of their elements, so deleting a key costs O(1) in accounting.

Sampling in O(1)
----------------
Eviction, active expiry and RANDOMKEY need keys drawn uniformly at random; a Python dict has
no random access and iterating it from the start is insertion order (a literal port of the
Rust original's "first N keys" would be FIFO).  So every database keeps two arrays of entries:

    alist  every entry ever added since the last compaction
    vlist  every entry that got a TTL since the last compaction

A deleted entry is not removed from them (that would be O(n)); it is marked dead
(``value = None``) and skipped when drawn.  When dead slots outnumber live ones the array is
compacted in one O(n) pass, so a draw costs O(1) expected (at most 2 tries on average) and
compaction is amortised O(1) per deletion.  An entry whose TTL is removed keeps its vlist
slot with ``exp = EXP_PERSISTED``, and is not appended twice if it gets a TTL again.

Complexity: lookups, writes, deletes O(1); ``sample(n)`` O(n) expected.
"""

from __future__ import annotations

import random as _random
from collections import deque

from . import memory

LFU_INIT_VAL = 5            # Morris counter of a new key, as Redis
EXP_PERSISTED = -1          # exp value: TTL removed, entry still in vlist
COMPACT_MIN_DEAD = 64       # never compact sample lists for fewer dead slots than this
SAMPLE_MAX_TRIES = 64       # draws per wanted sample before giving up (lists mostly dead)


class Entry:
    __slots__ = ("key", "value", "lru", "lfu", "exp")

    def __init__(self, key, value, lru, lfu=LFU_INIT_VAL, exp=0):
        self.key = key
        self.value = value
        self.lru = lru
        self.lfu = lfu
        self.exp = exp


class RList(deque):
    """A list value; ``mem`` is the modelled size of its elements."""
    __slots__ = ("mem",)


class RHash(dict):
    """A hash value (field -> value); ``mem`` is the modelled size of its fields."""
    __slots__ = ("mem",)


class RSet(set):
    """A set value; ``mem`` is the modelled size of its members."""
    __slots__ = ("mem",)


class Database:
    """One logical database (SELECT n)."""

    __slots__ = ("id", "ks", "data", "alist", "adead", "vlist", "vdead", "volatile",
                 "expires_cursor")

    def __init__(self, db_id: int, ks: "Keyspace"):
        self.id = db_id
        self.ks = ks
        self.data: dict[bytes, Entry] = {}
        self.alist: list[Entry] = []
        self.adead = 0
        self.vlist: list[Entry] = []
        self.vdead = 0          # vlist slots whose entry is dead or has no TTL now
        self.volatile = 0       # live keys with a TTL
        self.expires_cursor = 0

    def __len__(self) -> int:
        return len(self.data)

    # ---- lookups ----

    def lookup_read(self, key: bytes):
        """Read lookup: lazy expiry, keyspace hit/miss stats, access touch.  O(1)."""
        ks = self.ks
        e = self.data.get(key)
        if e is None:
            ks.misses += 1
            return None
        exp = e.exp
        if exp > 0 and exp < ks.now_ms:
            self._expire_entry(e)
            ks.misses += 1
            return None
        ks.hits += 1
        if ks.lfu_on:
            e.lfu = ks.lfu_touch(e.lfu, e.lru, ks.now_ms)
        e.lru = ks.now_ms
        return e

    def lookup_write(self, key: bytes):
        """Write-path lookup: lazy expiry and touch, no hit/miss stats.  O(1)."""
        ks = self.ks
        e = self.data.get(key)
        if e is None:
            return None
        exp = e.exp
        if exp > 0 and exp < ks.now_ms:
            self._expire_entry(e)
            return None
        if ks.lfu_on:
            e.lfu = ks.lfu_touch(e.lfu, e.lru, ks.now_ms)
        e.lru = ks.now_ms
        return e

    def lookup_notouch(self, key: bytes, stats: bool = False):
        """TTL / OBJECT / TYPE-style lookup: lazy expiry, no touch; stats if asked.  O(1)."""
        ks = self.ks
        e = self.data.get(key)
        if e is not None and 0 < e.exp < ks.now_ms:
            self._expire_entry(e)
            e = None
        if stats:
            if e is None:
                ks.misses += 1
            else:
                ks.hits += 1
        return e

    def is_live(self, e: Entry) -> bool:
        """True if ``e`` is present and not logically expired (no side effects)."""
        return e.value is not None and not (0 < e.exp < self.ks.now_ms)

    # ---- writes ----

    def add(self, key: bytes, value) -> Entry:
        """Insert a key known to be absent.  O(1)."""
        ks = self.ks
        e = Entry(key, value, ks.now_ms)
        self.data[key] = e
        self.alist.append(e)
        ks.used_memory += memory.entry_cost(key, value)
        ks.signal(self, key)
        return e

    def set_value(self, e: Entry, value) -> None:
        """Replace the value of a live entry (TTL and access metadata stay).  O(1)."""
        ks = self.ks
        ks.used_memory += memory.value_cost(value) - memory.value_cost(e.value)
        e.value = value
        ks.signal(self, e.key)

    def set(self, key: bytes, value, keep_ttl: bool = False) -> Entry:
        """SET semantics: create or overwrite, dropping any TTL unless ``keep_ttl``.  O(1)."""
        e = self.lookup_write(key)
        if e is None:
            return self.add(key, value)
        if not keep_ttl and e.exp > 0:
            self._clear_ttl(e)
        self.set_value(e, value)
        return e

    def grow(self, e: Entry, delta_bytes: int) -> None:
        """A container value changed in place by ``delta_bytes`` of modelled memory."""
        e.value.mem += delta_bytes
        self.ks.used_memory += delta_bytes
        self.ks.signal(self, e.key)

    def delete(self, key: bytes) -> bool:
        """DEL of one key (lazily expired keys count as absent).  O(1)."""
        e = self.lookup_notouch(key)
        if e is None:
            return False
        self.unlink(e)
        return True

    def unlink(self, e: Entry) -> None:
        """Remove a live entry; memory of containers is released in O(1)."""
        ks = self.ks
        key = e.key
        del self.data[key]
        ks.used_memory -= memory.entry_cost(key, e.value)
        if e.exp > 0:
            self.volatile -= 1
            ks.used_memory -= memory.EXPIRE_COST
            self.vdead += 1
        elif e.exp == EXP_PERSISTED:
            pass  # already counted in vdead when its TTL was removed
        e.value = None
        self.adead += 1
        ks.signal(self, key)
        if self.adead > COMPACT_MIN_DEAD and self.adead * 2 > len(self.alist):
            self._compact_alist()
        if self.vdead > COMPACT_MIN_DEAD and self.vdead * 2 > len(self.vlist):
            self._compact_vlist()

    def rename(self, e: Entry, newkey: bytes) -> None:
        """Move a live entry to ``newkey`` (which must be absent), keeping its metadata."""
        ks = self.ks
        oldkey = e.key
        del self.data[oldkey]
        ks.used_memory += len(newkey) - len(oldkey)
        e.key = newkey
        self.data[newkey] = e
        ks.signal(self, oldkey)
        ks.signal(self, newkey)

    def _expire_entry(self, e: Entry) -> None:
        self.unlink(e)
        self.ks.expired_keys += 1

    # ---- TTL ----

    def set_expire(self, e: Entry, when_ms: int) -> None:
        """Give a live entry an absolute deadline (ms).  O(1)."""
        if e.exp <= 0:
            if e.exp == 0:
                self.vlist.append(e)
            else:
                self.vdead -= 1
            self.volatile += 1
            self.ks.used_memory += memory.EXPIRE_COST
        e.exp = when_ms
        self.ks.signal(self, e.key)

    def persist(self, e: Entry) -> bool:
        """Remove the TTL; False if there was none.  O(1)."""
        if e.exp <= 0:
            return False
        self._clear_ttl(e)
        self.ks.signal(self, e.key)
        return True

    def _clear_ttl(self, e: Entry) -> None:
        e.exp = EXP_PERSISTED
        self.volatile -= 1
        self.vdead += 1
        self.ks.used_memory -= memory.EXPIRE_COST

    # ---- sampling ----

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
        rand = self.ks.rng.random
        size = len(lst)
        tries = n * SAMPLE_MAX_TRIES
        while len(out) < n and tries > 0:
            tries -= 1
            e = lst[int(rand() * size)]
            if e.value is not None and (not volatile or e.exp > 0):
                out.append(e)
        return out

    def random_key(self):
        """RANDOMKEY: a live key, deleting expired ones met on the way.  O(1) expected."""
        for _ in range(SAMPLE_MAX_TRIES):
            if not self.data:
                return None
            got = self.sample(1)
            if not got:
                break
            e = got[0]
            if 0 < e.exp < self.ks.now_ms:
                self._expire_entry(e)
                continue
            return e.key
        # pathological: fall back to any key (O(1) via iteration start)
        for key in self.data:
            return key
        return None

    def _compact_alist(self) -> None:
        self.alist = [e for e in self.alist if e.value is not None]
        self.adead = 0

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
        self.expires_cursor = 0

    # ---- whole-database operations ----

    def clear(self) -> int:
        """FLUSHDB: drop every key.  Returns how many there were.  O(n)."""
        ks = self.ks
        n = len(self.data)
        if ks.watched:
            for key in self.data:
                ks.signal(self, key)
        for e in self.alist:
            if e.value is not None:
                ks.used_memory -= memory.entry_cost(e.key, e.value)
                if e.exp > 0:
                    ks.used_memory -= memory.EXPIRE_COST
                e.value = None
        self.data = {}
        self.alist, self.adead = [], 0
        self.vlist, self.vdead, self.volatile = [], 0, 0
        return n

    def swap_contents(self, other: "Database") -> None:
        """SWAPDB: exchange every key and index with another database.  O(1)."""
        for name in ("data", "alist", "adead", "vlist", "vdead", "volatile", "expires_cursor"):
            a, b = getattr(self, name), getattr(other, name)
            setattr(self, name, b)
            setattr(other, name, a)

    def _check(self) -> None:
        """Assert every invariant (tests call this after each mutation)."""
        live_a = [e for e in self.alist if e.value is not None]
        assert len(live_a) == len(self.data), (len(live_a), len(self.data))
        assert len(self.alist) - len(live_a) == self.adead
        for e in live_a:
            assert self.data[e.key] is e
            assert 0 <= e.lfu <= 255
        vol = [e for e in self.vlist if e.value is not None and e.exp > 0]
        assert len(vol) == self.volatile == sum(1 for e in self.data.values() if e.exp > 0)
        assert len(self.vlist) - len(vol) == self.vdead
        assert len({id(e) for e in self.vlist}) == len(self.vlist)


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
        # Policy hooks, set by the eviction layer: LFU touch on every access when on.
        self.lfu_on = False
        self.lfu_touch = _no_lfu_touch
        # WATCH: (db id, key) -> set of watching clients; empty dict = nothing to do.
        self.watched: dict = {}
        self.dbs = [Database(i, self) for i in range(databases)]

    def refresh_time(self) -> int:
        """Cache the clock once per batch of commands; returns the new now_ms."""
        self.now_ms = now = self.clock.now_ms()
        return now

    def signal(self, db: Database, key: bytes) -> None:
        """A key changed: mark the transactions that WATCH it as dirty.  O(1)."""
        if self.watched:
            clients = self.watched.get((db.id, key))
            if clients:
                for c in clients:
                    c.dirty_cas = True

    def signal_all(self) -> None:
        """FLUSHALL / SWAPDB: every watched key counts as touched."""
        for clients in self.watched.values():
            for c in clients:
                c.dirty_cas = True

    def flushall(self) -> int:
        self.signal_all()
        return sum(db.clear() for db in self.dbs)

    def total_keys(self) -> int:
        return sum(len(db.data) for db in self.dbs)

    def _check(self) -> None:
        total = 0
        for db in self.dbs:
            db._check()
            for e in db.data.values():
                total += memory.entry_cost(e.key, e.value)
                if e.exp > 0:
                    total += memory.EXPIRE_COST
        assert total == self.used_memory, (total, self.used_memory)


def _no_lfu_touch(counter: int, last_ms: int, now_ms: int) -> int:
    return counter
