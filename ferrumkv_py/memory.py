"""The memory model: what a key costs, in bytes, deterministically and in O(1).

``used_memory`` is not read from the allocator: it is the sum of these costs, updated on
every change (``keyspace.py``).  The constants are CPython 3.11's object sizes on 64-bit
Linux, so the model follows the process's real growth (checked against RSS by
``bench/eviction_cost.py`` and ``tests/ferrumkv/test_memory.py``):

    string key            Entry (72) + dict slot (~50) + alist slot (8)
                          + key bytes (33 + len) + value bytes (33 + len)
    TTL                   vlist slot (8) + deadline int (32)
    list element          deque slot (8) + bytes object (33 + len)
    hash field            dict slot (~50) + field and value bytes (66 + lengths)
    set member            set slot (~40) + bytes object (33 + len)
    zset member           dict slot (~50) + SortedList slot and tuple (~100) + member bytes

Containers keep the running total of their elements in ``value.mem`` so a delete is O(1).
Complexity: every function here is O(1) except :func:`recount` (O(elements), tests only).
"""

from __future__ import annotations

BYTES_OBJ = 33            # sys.getsizeof(b"") on CPython 3.11
INT_OBJ = 32              # a non-cached int
ENTRY_OBJ = 72            # Entry with 5 slots
DICT_SLOT = 50            # average per key of a dict (entry + index, at 2/3 load)
LIST_SLOT = 8             # one pointer in a list / deque
SET_SLOT = 40             # average per member of a set table
KEY_OVERHEAD = ENTRY_OBJ + DICT_SLOT + LIST_SLOT + BYTES_OBJ
STRING_OVERHEAD = BYTES_OBJ
EXPIRE_COST = LIST_SLOT + INT_OBJ
CONTAINER_BASE = {"list": 640, "hash": 72, "set": 224, "zset": 400}
LIST_ELEM_OVERHEAD = LIST_SLOT + BYTES_OBJ
HASH_FIELD_OVERHEAD = DICT_SLOT + 2 * BYTES_OBJ
SET_MEMBER_OVERHEAD = SET_SLOT + BYTES_OBJ
ZSET_MEMBER_OVERHEAD = DICT_SLOT + 100 + BYTES_OBJ + 24   # + float object


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
    """The Redis type name of a value: string, list, hash, set or zset."""
    if value.__class__ is bytes:
        return "string"
    return _TYPE_NAMES[value.__class__.__name__]


_TYPE_NAMES = {"RList": "list", "RHash": "hash", "RSet": "set", "ZSet": "zset"}


def recount(value) -> int:
    """Recompute a value's cost from its elements (the invariant ``_check`` compares)."""
    if value.__class__ is bytes:
        return value_cost(value)
    kind = type_name(value)
    base = CONTAINER_BASE[kind]
    if kind == "list":
        return base + sum(list_elem_cost(x) for x in value)
    if kind == "hash":
        return base + sum(hash_field_cost(f, v) for f, v in value.items())
    if kind == "set":
        return base + sum(set_member_cost(m) for m in value)
    return base + sum(zset_member_cost(m) for m in value.members())
