"""The memory model: what a key costs, in bytes, deterministically and in O(1).

``used_memory`` is not read from the allocator: it is the sum of these costs, updated on
every change (``keyspace.py``).  The constants are CPython 3.11's object sizes on 64-bit
Linux, so the model follows the process's real growth (checked against RSS by
``bench/eviction_cost.py`` and ``tests/ferrumkv/test_memory.py``):

    string key            slot int (32) + keys / vals list slots (~18) + lru, lfu, exp,
                          vpos array cells (~27) + keyspace dict slot (~42)
                          + key bytes (33 + 8 rounding + len)
                          + value bytes (33 + 16 rounding / malloc header + len)
    TTL                   vslots cell (8; the deadline is the key's exp cell)
    list element          deque slot (8) + bytes object (33 + len)
    hash field            dict slot (~50) + field and value bytes (66 + lengths)
    set member            set slot (~40) + bytes object (33 + len) + random-access
                          index slot (8, SPOP / SRANDMEMBER, charged even before built)
    zset member           dict slot (~50) + ScoreOrder double and pointer with sublist
                          slack (~20) + member bytes + score float

Containers keep the running total of their elements in ``value.mem`` so a delete is O(1).

Strings and keys, calibrated against RSS (``docs/memory.md`` has the method).  RSS growth
per key for 1M keys ``key:%012d`` (16 bytes) set into a fresh keyspace (the slot layout of
``slots.py``; tests/ferrumkv/test_memory.py's probe), against this model:

    value     RSS growth / key    model / key    model / RSS
    10 B      250.3               235            0.94
    100 B     347.1               325            0.94
    1000 B    1234.5              1225           0.99
    10 B + EX 257.5               243            0.94

(The former layout, one ``Entry`` object per key: 242.5, 339.3, 1249.4 and 314.1 bytes --
the same for plain keys, where the slot int replaced the Entry's share, and 57 bytes less per
TTL, which now costs one cell of ``vslots`` instead of an int object and a list slot.)

The model is linear in the lengths while CPython is not quite (16-byte pymalloc classes for
objects up to 512 bytes, malloc's 8-byte header and 16-byte rounding above), so the
per-string constant is the value that splits the error evenly between small and large
values.  The keyspace dict's share swings between ~30 and ~60 bytes a key as it fills and
doubles; 42 is its share at 1M keys, about the middle of that cycle.
Complexity: every function here is O(1) except :func:`recount` (O(elements), tests only).
"""

from __future__ import annotations

BYTES_OBJ = 33            # sys.getsizeof(b"") on CPython 3.11
INT_OBJ = 32              # a non-cached int
DICT_SLOT = 50            # average per key of a dict (entry + index, at 2/3 load)
LIST_SLOT = 8             # one pointer in a list / deque
SET_SLOT = 40             # average per member of a set table
# ---- string and key constants (calibrated against RSS, see the docstring) ----
KEYSPACE_DICT_SLOT = 42   # keyspace dict bytes per key at 1M keys (8 MB index + 33.5 MB table)
SLOT_INT = INT_OBJ        # the key's slot number, the index dict's value (ints > 256 are objects)
SLOT_LISTS = 2 * LIST_SLOT + 2    # keys[] and vals[] pointers plus list over-allocation
SLOT_ARRAYS = 8 + 1 + 8 + 8 + 2   # lru, lfu, exp, vpos cells plus array over-allocation
SMALL_ALLOC_SLACK = 8     # average pymalloc rounding of a small object (16-byte classes)
STRING_ALLOC_SLACK = 16   # value bytes: rounding, or malloc's header + rounding above 512 B
KEY_OVERHEAD = SLOT_INT + SLOT_LISTS + SLOT_ARRAYS + KEYSPACE_DICT_SLOT + BYTES_OBJ + \
    SMALL_ALLOC_SLACK
STRING_OVERHEAD = BYTES_OBJ + STRING_ALLOC_SLACK
EXPIRE_COST = LIST_SLOT   # the key's cell in vslots (slots.py)
CONTAINER_BASE = {"list": 640, "hash": 72, "set": 224, "zset": 400}
LIST_ELEM_OVERHEAD = LIST_SLOT + BYTES_OBJ
HASH_FIELD_OVERHEAD = DICT_SLOT + 2 * BYTES_OBJ
SET_MEMBER_OVERHEAD = SET_SLOT + LIST_SLOT + BYTES_OBJ   # + index slot (commands/sets.py)
# ScoreOrder's share: tracemalloc over 200k ZSet.insert calls, dict + order 69.6 bytes per
# member (117 with the SortedList of tuples it replaced), the dict being ~50 of it
ZSET_ORDER_SLOT = 20
ZSET_MEMBER_OVERHEAD = DICT_SLOT + ZSET_ORDER_SLOT + BYTES_OBJ + 24   # + float object


def list_elem_cost(elem: bytes) -> int:
    return LIST_ELEM_OVERHEAD + len(elem)


def hash_field_cost(field: bytes, value: bytes) -> int:
    return HASH_FIELD_OVERHEAD + len(field) + len(value)


def set_member_cost(member: bytes) -> int:
    return SET_MEMBER_OVERHEAD + len(member)


def zset_member_cost(member: bytes) -> int:
    return ZSET_MEMBER_OVERHEAD + len(member)


def value_cost(value) -> int:
    """Modelled bytes of a value (strings by length, containers from their ``mem``)."""
    if value.__class__ is bytes:
        return STRING_OVERHEAD + len(value)
    return value.mem


def entry_cost(key: bytes, value) -> int:
    """Modelled bytes of one key with its value (without TTL)."""
    return KEY_OVERHEAD + len(key) + value_cost(value)


def type_name(value) -> str:
    """The Redis type name of a value: string, list, hash, set, zset or stream."""
    if value.__class__ is bytes:
        return "string"
    return _TYPE_NAMES[value.__class__.__name__]


_TYPE_NAMES = {"RList": "list", "RHash": "hash", "RSet": "set", "ZSet": "zset",
               "Stream": "stream"}


def recount(value) -> int:
    """Recompute a value's cost from its elements (the invariant ``_check`` compares)."""
    if value.__class__ is bytes:
        return value_cost(value)
    kind = type_name(value)
    if kind == "stream":        # stream.py models its nodes, groups and PELs itself
        return value.recount()
    base = CONTAINER_BASE[kind]
    if kind == "list":
        return base + sum(list_elem_cost(x) for x in value)
    if kind == "hash":
        return base + sum(hash_field_cost(f, v) for f, v in value.items())
    if kind == "set":
        return base + sum(set_member_cost(m) for m in value)
    return base + sum(zset_member_cost(m) for m in value.members())
