"""Lazy free: big values and flushed databases released in bounded slices, not in one go.

Freeing a million objects takes CPython about as long as creating them (FLUSHALL of 1M keys:
0.27 s inside one command before this), and no other client is served meanwhile.  Redis
hands such work to a background thread (lazyfree.c); we cannot free on another thread, so
the keyspace *detaches* what is to be freed, the command replies at once, and the objects
are released a slice at a time, each slice bounded by a time budget, with the event loop
serving clients between slices (``Server`` drives :meth:`LazyFree.release` with a
``loop.call_soon`` chain, or the cron when no loop runs)::

    FLUSHALL ASYNC   a database's keys, vals, exp  --detach-->  queue  --slices-->  freed
    UNLINK big       a value (> LAZYFREE_THRESHOLD elements) ----------^

A slice pops items off the front job (``list.pop``, ``dict.popitem``, ``deque.pop``,
``set.pop``): each pop drops one reference, so the objects die one by one, never as one
long deallocation.  A value met inside a detached database that is itself big (a
1M-element hash in a flushed database) is queued as its own job instead of being dropped
whole.  The database's index dicts are queued too, ahead of its slots: they hold the only
reference to each key's slot number, an ``int`` object, so dropping them whole freed one
int per key inside the command (FLUSHALL ASYNC of 1M keys: 55 ms, a client's PING as long;
``bench/hostile_clients.py --only flushall``).

Accounting: ``used_memory`` drops when the command runs, as Redis reports it after a
flush (FLUSHALL: the keyspace model is zeroed; a value: its cost is subtracted by
``Database.unlink``), except FLUSHDB ASYNC while other databases hold keys: that database's
cost is not known without a walk, so it is subtracted slice by slice as its entries are
released (a *charged* job).  INFO ``lazyfree_pending_objects`` counts the keys of flushed
databases and the big values still queued; ``lazyfreed_objects`` those released.

Complexity: detaching is O(1) (O(watched keys) for WATCH); :meth:`release` is O(items
released), at most one time budget per call.
"""

from __future__ import annotations

import time
from collections import deque

LAZYFREE_THRESHOLD = 64        # elements: smaller values are freed at once (Redis's value)
SLICE_ITEMS = 1024             # pops between two clock reads
SLICE_BUDGET_NS = 2_000_000    # one slice may take this long before clients are served


def effort(value) -> int:
    """Elements a value holds (Redis ``lazyfreeGetFreeEffort``): 1 for a string."""
    if value.__class__ is bytes:
        return 1
    nodes = getattr(value, "nodes", None)      # a Stream, as Redis counts it: its radix
    if nodes is not None:                      # tree's nodes (~2 per listpack + the root)
        groups = value.groups                  # and groups x (1 + the first one's PEL)
        first = groups[min(groups)] if groups else None
        return 2 * len(nodes) + 1 + (len(groups) * (1 + len(first.pel)) if first else 0)
    scores = getattr(value, "scores", None)     # a ZSet: its member dict
    return len(scores) if scores is not None else len(value)


class LazyFree:
    """The queue of detached objects and the counters INFO reports."""

    __slots__ = ("jobs", "pending_objects", "freed_objects", "ks", "wakeup")

    def __init__(self, ks=None):
        self.ks = ks
        self.jobs: deque = deque()   # [container, objects it stands for, charge memory?]
        self.pending_objects = 0
        self.freed_objects = 0
        self.wakeup = None           # called when work is queued (Server schedules slices)

    def add_value(self, value) -> None:
        """Queue a big value detached from its key (UNLINK, lazyfree-lazy-*)."""
        self.jobs.append([_slicer(value), 1, False])
        self.pending_objects += 1
        self._wake()

    def add_index(self, shards: list) -> None:
        """Queue a detached database's index dicts (released before its slots, uncounted:
        they stand for the same keys)."""
        self.jobs.append([_Chain([d for d in shards if d] + [()]), 0, False])
        self._wake()

    def add_db(self, keys: list, vals: list, exp, n: int, charged: bool) -> None:
        """Queue a detached database's slot tables (``n`` live keys).  ``charged``: its
        keys are still counted in used_memory (subtracted as they are released)."""
        self.jobs.append([DetachedSlots(keys, vals, exp), n, charged])
        self.pending_objects += n
        self._wake()

    def charged_bytes(self) -> int:
        """Modelled bytes of the queued databases still counted in used_memory (tests)."""
        from .memory import EXPIRE_COST, entry_cost
        total = 0
        for job in self.jobs:
            d = job[0]
            if job[2] and d.__class__ is DetachedSlots:
                for k, v, x in zip(d.keys, d.vals, d.exp):
                    if v is not None:
                        total += entry_cost(k, v) + (EXPIRE_COST if x else 0)
        return total

    def charged(self) -> bool:
        """True while a queued database is still counted in used_memory."""
        return any(job[2] for job in self.jobs)

    def _wake(self) -> None:
        if self.wakeup is not None:
            self.wakeup()

    def busy(self) -> bool:
        return bool(self.jobs)

    def release(self, budget_ns: int = SLICE_BUDGET_NS, clock=time.perf_counter_ns) -> bool:
        """Release queued objects for about ``budget_ns``; True while work remains.

        Complexity: O(items released); the clock is read every SLICE_ITEMS pops.
        """
        jobs = self.jobs
        deadline = clock() + budget_ns
        while jobs:
            job = jobs[0]
            obj = job[0]
            if obj.__class__ is DetachedSlots:
                done = self._release_slots(job, obj)
            else:
                done = _release_some(obj)
            if done:
                jobs.popleft()
                if job[1] == 1 and obj.__class__ is not DetachedSlots:
                    self.pending_objects -= 1
                    self.freed_objects += 1
            if clock() >= deadline:
                break
        return bool(jobs)

    def _release_slots(self, job: list, d: "DetachedSlots") -> bool:
        """Pop up to SLICE_ITEMS slots off the top of a detached database."""
        from .memory import EXPIRE_COST, entry_cost
        ks = self.ks
        charged = job[2]
        keys, vals, exp = d.keys, d.vals, d.exp
        n = min(SLICE_ITEMS, len(keys))
        freed = 0
        for _ in range(n):
            key = keys.pop()
            value = vals.pop()
            x = exp.pop()
            if value is None:
                continue
            if charged:
                ks.used_memory -= entry_cost(key, value) + (EXPIRE_COST if x else 0)
            freed += 1
            if value.__class__ is not bytes and effort(value) > LAZYFREE_THRESHOLD:
                self.jobs.append([_slicer(value), 0, False])
        job[1] -= freed
        self.pending_objects -= freed
        self.freed_objects += freed
        return not keys

    def _check(self) -> None:
        assert self.pending_objects >= 0
        assert self.pending_objects >= sum(j[1] for j in self.jobs
                                           if j[0].__class__ is DetachedSlots)


class DetachedSlots:
    """A flushed database's slot tables, released from the top by slices."""
    __slots__ = ("keys", "vals", "exp")

    def __init__(self, keys: list, vals: list, exp):
        self.keys, self.vals, self.exp = keys, vals, exp

    def __len__(self) -> int:
        return len(self.keys)


def _slicer(value):
    """What a slice pops from: the value itself, or a ZSet's parts one after the other
    (member dict, then the order's member sublists, then the rest)."""
    scores = getattr(value, "scores", None)
    if scores is not None:
        return _Chain([scores, value.order._m, value])
    nodes = getattr(value, "nodes", None)       # a Stream: its node list, then its groups
    if nodes is not None:
        return _Chain([nodes, value.groups, ()])
    return value


class _Chain:
    """Parts released one after the other by slices (the last one dropped whole)."""
    __slots__ = ("parts",)

    def __init__(self, parts: list):
        self.parts = parts

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts[:-1]) + 1


def _release_some(obj) -> bool:
    """Pop up to SLICE_ITEMS items off a list, deque, set, dict or chain; True when empty.
    A list of lists (a ZSet's member sublists, LOAD members each) loses two at a time."""
    if obj.__class__ is _Chain:
        parts = obj.parts
        if len(parts) > 1:
            if _release_some(parts[0]):
                parts.pop(0)
            return False
        parts.clear()
        return True
    if isinstance(obj, list):
        if obj and obj[-1].__class__ is list:
            del obj[-2:]
        else:
            del obj[-SLICE_ITEMS:]
        return not obj
    n = min(SLICE_ITEMS, len(obj))
    pop = obj.popitem if isinstance(obj, dict) else obj.pop
    for _ in range(n):
        pop()
    return not obj
