"""The maxmemory policy table: what each ``maxmemory-policy`` name means.

Every policy is two independent choices, as in Redis's bit layout (server.h ``MAXMEMORY_*``):

* the **scope**: ``allkeys-*`` may evict any key; ``volatile-*`` only keys with a TTL (it
  samples the database's volatile list and never touches a key without a TTL);
* the **kind** of victim choice:

  =========  ==================================================  =========  ==========
  kind       score of a sampled key (higher = evicted first)      pool       LFU counter
  =========  ==================================================  =========  ==========
  none       (noeviction: nothing is ever evicted)                no         no
  lru        -last access ms (same order as idle time)            yes        no
  lfu        255 - decayed Morris counter                         yes        yes
  random     (one uniformly random key, round-robin over DBs)     no         no
  ttl        -deadline (sooner expiry = larger)                   yes        no
  ahe        EPS of the AHE controller (``ahe.py``)               yes        yes
  =========  ==================================================  =========  ==========

"LFU counter" says whether the keyspace maintains the Morris counter on every access
(``ks.lfu_on``): the lfu policies and AHE (whose infrequency term reads the same counter).

Complexity: :func:`parse` is O(1); the reference scorers are O(len(slots)).
"""

from __future__ import annotations

from dataclasses import dataclass

KIND_NONE = "none"
KIND_LRU = "lru"
KIND_LFU = "lfu"
KIND_RANDOM = "random"
KIND_TTL = "ttl"
KIND_AHE = "ahe"
POOL_KINDS = frozenset({KIND_LRU, KIND_LFU, KIND_TTL, KIND_AHE})
LFU_COUNTER_KINDS = frozenset({KIND_LFU, KIND_AHE})


@dataclass(frozen=True, slots=True)
class Policy:
    name: str           # the maxmemory-policy value
    kind: str           # one of the KIND_* names
    volatile: bool      # True: only keys with a TTL are candidates

    @property
    def uses_pool(self) -> bool:
        return self.kind in POOL_KINDS

    @property
    def uses_lfu_counter(self) -> bool:
        return self.kind in LFU_COUNTER_KINDS


# The one list of policy names, in the order Redis's CONFIG SET error lists its own eight
# (config.c), ours after them: the config table's choices come from here.
POLICIES: dict[str, Policy] = {p.name: p for p in (
    Policy("volatile-lru", KIND_LRU, True),
    Policy("volatile-lfu", KIND_LFU, True),
    Policy("volatile-random", KIND_RANDOM, True),
    Policy("volatile-ttl", KIND_TTL, True),
    Policy("allkeys-lru", KIND_LRU, False),
    Policy("allkeys-lfu", KIND_LFU, False),
    Policy("allkeys-random", KIND_RANDOM, False),
    Policy("noeviction", KIND_NONE, False),
    Policy("allkeys-ahe", KIND_AHE, False),
    Policy("volatile-ahe", KIND_AHE, True),
)}
POLICY_NAMES = tuple(POLICIES)


def parse(name: str) -> Policy:
    """The :class:`Policy` for a ``maxmemory-policy`` value (ValueError if unknown).

    Complexity: O(1).
    """
    try:
        return POLICIES[name.lower()]
    except KeyError:
        raise ValueError("unknown maxmemory-policy '%s'" % name) from None

