"""The data: databases of keys, lazy expiry, access metadata, sampling, memory accounting.

No sockets, no RESP, no asyncio here: commands call these methods, the cron calls the
expire and eviction cycles, tests drive it all with a :class:`~ferrumkv_py.clock.ManualClock`.

Each key maps to an :class:`Entry` (value, LRU clock, LFU counter, deadline); the entry and
the value types (``RList``, ``RHash``, ``RSet``) are described in ``values.py``.  The sample
lists every database keeps beside its dict, for uniform random draws (eviction, active
expiry, RANDOMKEY) and SCAN cursors, are explained and read in ``sample_lists.py``.

Complexity: lookups, writes, deletes O(1); ``sample(n)`` O(n) expected; ``scan(count)``
O(count) amortised (plus O(compactions since the cursor was made)).
"""

from __future__ import annotations

import random as _random
from collections import deque

from . import memory
from .lazyfree import LAZYFREE_THRESHOLD, LazyFree, effort as _free_effort
from .memory import entry_cost as _entry_cost, value_cost as _value_cost
from .sample_lists import (_CLEARED_REMAP, COMPACT_MIN_DEAD, SAMPLE_MAX_TRIES,  # noqa: F401
                           SCAN_REMAP_HISTORY, SampleLists)
from .notify import NOTIFY_EXPIRED, NOTIFY_KEY_MISS, NOTIFY_NEW
from .values import (EXP_PERSISTED, LFU_INIT_VAL, TOMBSTONE, Entry,  # noqa: F401
                     RHash, RList, RSet)

_STRING_ENTRY_COST = memory.KEY_OVERHEAD + memory.STRING_OVERHEAD  # + len(key) + len(value)


class Database(SampleLists):
    """One logical database (SELECT n)."""

    __slots__ = ("id", "ks", "data", "alist", "adead", "afree", "vlist", "vdead", "vfree",
                 "volatile", "expires_cursor", "agen", "aremap")

    def __init__(self, db_id: int, ks: "Keyspace"):
        self.id = db_id
        self.ks = ks
        self.data: dict[bytes, Entry] = {}
        self.alist: list[Entry] = []
        self.adead = 0
        self.afree: list[int] = []   # alist slots holding TOMBSTONE (each once)
        self.vlist: list[Entry] = []
        self.vdead = 0          # vlist slots whose entry is dead or has no TTL now
        self.vfree: list[int] = []   # vlist slots holding TOMBSTONE
        self.volatile = 0       # live keys with a TTL
        self.expires_cursor = 0
        self.agen = 0           # alist compaction generation (SCAN cursors)
        self.aremap: deque = deque(maxlen=SCAN_REMAP_HISTORY)  # (step, ckpt, new_len)

    def __len__(self) -> int:
        return len(self.data)

    # ---- lookups ----

    def lookup_read(self, key: bytes):
        """Read lookup: lazy expiry, keyspace hit/miss stats, access touch.  O(1)."""
        ks = self.ks
        e = self.data.get(key)
        if e is None:
            ks.misses += 1
            if ks.miss_hook is not None:
                ks.miss_hook(key)
            if ks.notify_flags:
                ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
            return None
        exp = e.exp
        if exp > 0 and exp < ks.now_ms:
            self._expire_entry(e)
            ks.misses += 1
            if ks.miss_hook is not None:
                ks.miss_hook(key)
            if ks.notify_flags:
                ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
            return None
        ks.hits += 1
        if ks.lfu_on:
            e.lfu = ks.lfu_touch(e.lfu, e.lru, ks.now_ms)
        e.lru = ks.now_ms
        return e

    def lookup_write(self, key: bytes):
        """Write-path lookup: lazy expiry and touch, no hit/miss stats.  O(1).

        Inlined, for a key without a TTL, in the per-command fast paths (bench/
        command_cost.py): strings._incr_fast, lists._push_one / _pop_one, sets.sadd,
        hashes.hset, zsets.zadd.  A change to the touch (LRU clock, LFU counter) goes there
        too; tests/ferrumkv/test_fast_paths.py compares them with the general paths.
        """
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
                if ks.notify_flags:
                    ks.notify(self, NOTIFY_KEY_MISS, b"keymiss", key)
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
        free = self.afree
        if free:
            self.alist[free.pop()] = e
            self.adead -= 1
        else:
            self.alist.append(e)
        # memory.entry_cost() inline for strings (SET -P 16 -4% CPU per command,
        # bench/server_bench.py --parts dispatch); Keyspace._check() holds the two equal
        ks.used_memory += (_STRING_ENTRY_COST + len(key) + len(value)
                           if value.__class__ is bytes else _entry_cost(key, value))
        if ks.watched:
            ks.signal(self, key)
        if ks.notify_flags:
            ks.notify(self, NOTIFY_NEW, b"new", key)
        return e

    def set_value(self, e: Entry, value) -> None:
        """Replace the value of a live entry (TTL and access metadata stay).  O(1)."""
        ks = self.ks
        old = e.value
        if value.__class__ is bytes and old.__class__ is bytes:
            ks.used_memory += len(value) - len(old)   # value_cost() difference, inline
        else:
            ks.used_memory += _value_cost(value) - _value_cost(old)
        e.value = value
        if ks.watched:
            ks.signal(self, e.key)

    def set(self, key: bytes, value, keep_ttl: bool = False) -> Entry:
        """SET semantics: create or overwrite, dropping any TTL unless ``keep_ttl``.

        The plain ``SET key value`` path: one dict lookup, then either :meth:`add` or an
        in-place overwrite that keeps the entry (and so its LRU/LFU history, as Redis's
        dbOverwrite does after lookupKeyWrite touched it).  Complexity: O(1).
        """
        ks = self.ks
        e = self.data.get(key)
        if e is not None:
            exp = e.exp
            now = ks.now_ms
            if exp > 0 and exp < now:
                self._expire_entry(e)
                return self.add(key, value)
            if ks.lfu_on:
                e.lfu = ks.lfu_touch(e.lfu, e.lru, now)
            e.lru = now
            if exp > 0 and not keep_ttl:
                self._clear_ttl(e)
            old = e.value
            if value.__class__ is bytes and old.__class__ is bytes:
                ks.used_memory += len(value) - len(old)   # value_cost() difference, inline
            else:
                ks.used_memory += _value_cost(value) - _value_cost(old)
                if ks.lazy_server_del and old.__class__ is not bytes:
                    ks.free_value(old)
            e.value = value
            if ks.watched:
                ks.signal(self, key)
            return e
        return self.add(key, value)

    def grow(self, e: Entry, delta_bytes: int) -> None:
        """A container value changed in place by ``delta_bytes`` of modelled memory."""
        ks = self.ks
        e.value.mem += delta_bytes
        ks.used_memory += delta_bytes
        if ks.watched:  # signal() only under WATCH: one call fewer per LPUSH/SADD/HSET
            ks.signal(self, e.key)

    def delete(self, key: bytes, lazy: bool = False) -> bool:
        """DEL of one key (lazily expired keys count as absent); ``lazy``: UNLINK.  O(1)."""
        e = self.lookup_notouch(key)
        if e is None:
            return False
        self.unlink(e, lazy)
        return True

    def unlink(self, e: Entry, lazy: bool = False) -> None:
        """Remove a live entry; memory of containers is accounted in O(1).  ``lazy``: a
        value of more than LAZYFREE_THRESHOLD elements is freed by slices later
        (``lazyfree.py``); used_memory drops now either way."""
        ks = self.ks
        key = e.key
        del self.data[key]
        # memory.entry_cost inlined and signal() called only under WATCH: three calls fewer
        # per deleted key; cumulative time per unlink under cProfile 7.6 -> 3.9 us
        # (bench/eviction_cost.py --inproc --profile, allkeys-lru, 100k evictions).
        value = e.value
        if value.__class__ is bytes:
            cost = _STRING_ENTRY_COST + len(key) + len(value)
        else:
            cost = memory.KEY_OVERHEAD + len(key) + value.mem
        if e.exp > 0:
            self.volatile -= 1
            cost += memory.EXPIRE_COST
            self.vdead += 1
        # (exp == EXP_PERSISTED: already counted in vdead when its TTL was removed)
        ks.used_memory -= cost
        if lazy and value.__class__ is not bytes:
            ks.free_value(value)
        e.value = None
        self.adead += 1
        if ks.watched:
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

    def move_to(self, e: Entry, dst: "Database") -> Entry:
        """MOVE: take a live entry out of this database and into ``dst`` (key absent
        there), keeping its value, TTL and access metadata.  O(1)."""
        key, value, lru, lfu, exp = e.key, e.value, e.lru, e.lfu, e.exp
        self.unlink(e)
        ne = dst.add(key, value)
        ne.lru, ne.lfu = lru, lfu
        if exp > 0:
            dst.set_expire(ne, exp)
        return ne

    def set_access(self, e: Entry, lru_ms: int, lfu: int | None = None) -> None:
        """RESTORE IDLETIME / FREQ: a live entry's last access (epoch ms, also the start of
        its LFU decay period) and, if given, its LFU counter (0..255).  O(1)."""
        e.lru = lru_ms
        if lfu is not None:
            e.lfu = lfu

    def _expire_entry(self, e: Entry) -> None:
        """Delete a key past its deadline (lazy and active expiry): "expired" event."""
        self.unlink(e, self.ks.lazy_expire)
        ks = self.ks
        ks.expired_keys += 1
        if ks.notify_flags:
            ks.notify(self, NOTIFY_EXPIRED, b"expired", e.key)

    # ---- TTL ----

    def set_expire(self, e: Entry, when_ms: int) -> None:
        """Give a live entry an absolute deadline (ms).  O(1)."""
        if e.exp <= 0:
            if e.exp == 0:
                if self.vfree:
                    self.vlist[self.vfree.pop()] = e
                    self.vdead -= 1
                else:
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

    # ---- whole-database operations ----

    def clear(self, lazy: bool = False) -> int:
        """FLUSHDB: drop every key.  Returns how many there were.  O(n), or O(watched
        keys) with ``lazy`` (FLUSHDB ASYNC): the dict and sample lists are detached and
        released by slices (``lazyfree.py``)."""
        ks = self.ks
        n = len(self.data)
        if ks.watched:
            data = self.data
            for db_id, key in list(ks.watched):
                if db_id == self.id and key in data:
                    ks.signal(self, key)
        if lazy:
            return self._detach(n)
        for e in self.alist:
            if e.value is not None:
                ks.used_memory -= memory.entry_cost(e.key, e.value)
                if e.exp > 0:
                    ks.used_memory -= memory.EXPIRE_COST
                e.value = None
        self.data = {}
        self.alist, self.adead, self.afree = [], 0, []
        self.vlist, self.vdead, self.vfree, self.volatile = [], 0, [], 0
        self.expires_cursor = 0
        self._new_generation(_CLEARED_REMAP)
        return n

    def _detach(self, n: int) -> int:
        """FLUSHDB ASYNC / FLUSHALL ASYNC: hand the whole database to the lazy free queue.
        used_memory drops now when no other database holds keys (FLUSHALL zeroes it
        itself); otherwise this database's share is subtracted as it is released."""
        ks = self.ks
        charged = (any(db.data for db in ks.dbs if db is not self)
                   or ks.lazyfree.charged())
        if not charged:
            ks.used_memory = 0
        if n or self.alist or self.vlist:
            ks.lazyfree.add_db(self.data, (self.alist, self.vlist), charged)
        self.data = {}
        self.alist, self.adead, self.afree = [], 0, []
        self.vlist, self.vdead, self.vfree, self.volatile = [], 0, [], 0
        self.expires_cursor = 0
        self._new_generation(_CLEARED_REMAP)
        return n

    def swap_contents(self, other: "Database") -> None:
        """SWAPDB: exchange every key and index with another database.  O(1)."""
        for name in ("data", "alist", "adead", "afree", "vlist", "vdead", "vfree", "volatile",
                     "expires_cursor", "agen", "aremap"):
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
        assert {id(e) for e in live_a} == {id(e) for e in self.data.values()}
        vol = [e for e in self.vlist if e.value is not None and e.exp > 0]
        assert len(vol) == self.volatile == sum(1 for e in self.data.values() if e.exp > 0)
        assert len(self.vlist) - len(vol) == self.vdead
        for lst, free in ((self.alist, self.afree), (self.vlist, self.vfree)):
            assert len(set(free)) == len(free)
            assert all(lst[i] is TOMBSTONE for i in free)
            assert sum(e is TOMBSTONE for e in lst) == len(free)
        assert TOMBSTONE.value is None
        in_vlist = {id(e) for e in self.vlist if e is not TOMBSTONE}
        assert len(in_vlist) == len(self.vlist) - len(self.vfree)
        for e in self.data.values():
            assert e.exp > 0 or e.exp in (0, EXP_PERSISTED)
            assert (id(e) in in_vlist) == (e.exp != 0)
        assert len(self.aremap) <= SCAN_REMAP_HISTORY
        for step, ckpt, new_len in self.aremap:
            assert step > 0 and all(a <= b for a, b in zip(ckpt, ckpt[1:]))
            assert ckpt[-1] <= new_len


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
        # Policy hooks, set by the eviction layer: LFU touch on every access when on.
        self.lfu_on = False
        self.lfu_touch = _no_lfu_touch
        # Read-miss hook of an AHE controller that wants the miss stream (eviction/ahe.py),
        # called only on lookup_read's miss branches; None = off.
        self.miss_hook = None
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
            n += db._detach(len(db.data))
        self.used_memory = 0
        for job in self.lazyfree.jobs:
            job[2] = False          # nothing of the detached databases is charged now
        return n

    def free_value(self, value) -> None:
        """Release a value no key holds any more: by slices when it is big.  O(1)."""
        if _free_effort(value) > LAZYFREE_THRESHOLD:
            self.lazyfree.add_value(value)

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
        self.lazyfree._check()
        for job in self.lazyfree.jobs:
            if job[2]:      # a detached database still counted in used_memory
                for e in job[0].values():
                    if e.value is not None:
                        total += memory.entry_cost(e.key, e.value)
                        total += memory.EXPIRE_COST if e.exp > 0 else 0
        assert total == self.used_memory, (total, self.used_memory)


def _no_lfu_touch(counter: int, last_ms: int, now_ms: int) -> int:
    return counter
