"""Test-only naive multi-capacity LRU, written plainly as the reference for litehit.

One OrderedDict per capacity (first item = least recent).  Each request:
  1. evaluate every capacity against the state before the request: count leading
     blocks that are present (and, with a TTL, alive: now - last_access < ttl); the
     first miss stops the count;
  2. commit every distinct key once, from the tail to the head, at the position of its
     first occurrence, so the head ends most recent; evict from the LRU end past the
     capacity.  Every access refreshes last_access.
Capacity ``INF`` never evicts.  There is no cleverness here on purpose.
"""
from __future__ import annotations

import random
from collections import OrderedDict

INF = float("inf")
CAPACITIES = (0, 1, 2, 4, 9, INF)


class NaiveLRUOracle:
    def __init__(self, capacities=CAPACITIES, ttl_ns=0, forward_commit=False):
        self.capacities = list(capacities)
        self.ttl_ns = ttl_ns
        self.forward_commit = forward_commit
        self.caches = [OrderedDict() for _ in self.capacities]
        self.now_ns = 0

    def _alive(self, cache, key, now_ns):
        if key not in cache:
            return False
        return self.ttl_ns == 0 or now_ns - cache[key] < self.ttl_ns

    def process(self, keys, now_ns=0):
        """Replay one request; return the prefix hit blocks for each capacity."""
        now_ns = max(now_ns, self.now_ns)
        self.now_ns = now_ns
        hits = []
        for cache in self.caches:
            count = 0
            for key in keys:
                if not self._alive(cache, key, now_ns):
                    break
                count += 1
            hits.append(count)
        distinct = list(dict.fromkeys(keys))  # first-occurrence order
        commit_order = distinct if self.forward_commit else list(reversed(distinct))
        for cache, capacity in zip(self.caches, self.capacities):
            for key in commit_order:
                cache[key] = now_ns
                cache.move_to_end(key)
            while len(cache) > capacity:
                cache.popitem(last=False)
        return hits


# ---- trace generators ----
def prefix_tree_trace(rng: random.Random, requests: int, alphabet: int = 3,
                      max_len: int = 8):
    """Contract traces: random token-block paths, chained with the prefix hash.

    A small alphabet makes requests share prefixes and branch often.
    """
    from litehit import apply_prefix_hash

    trace = []
    for _ in range(requests):
        raws = [rng.randrange(alphabet) for _ in range(rng.randint(1, max_len))]
        trace.append(apply_prefix_hash(raws))
    return trace


def random_key_trace(rng: random.Random, requests: int, universe: int = 12,
                     max_len: int = 6):
    """Non-contract traces: arbitrary keys, repeats and reorderings allowed."""
    return [[rng.randrange(universe) for _ in range(rng.randint(0, max_len))]
            for _ in range(requests)]


def timestamps(rng: random.Random, requests: int, max_step_ns: int = 5):
    """Non-decreasing timestamps with frequent ties."""
    now = 1
    out = []
    for _ in range(requests):
        now += rng.randrange(max_step_ns + 1)
        out.append(now)
    return out
