"""What the keyspace stores besides strings: the container value types.

No package imports: the keyspace (``keyspace.py``, ``slots.py``), the sorted set
(``zset.py``) and the command families all build on this module.

A key's value is ``bytes`` (string), :class:`RList` (list), :class:`RHash` (hash),
:class:`RSet` (set) or ``ZSet`` (sorted set, ``zset.py``); its metadata (LRU clock, LFU
counter, deadline) lives in the database's slot arrays (``slots.py``).  Container classes
carry ``mem``, the modelled bytes of their elements, so deleting a key costs O(1) in
accounting.
"""

from __future__ import annotations

from collections import deque

LFU_INIT_VAL = 5            # Morris counter of a new key, as Redis


class RList(deque):
    """A list value; ``mem`` is the modelled size of its elements."""
    __slots__ = ("mem",)


class RHash(dict):
    """A hash value (field -> value); ``mem`` is the modelled size of its fields."""
    __slots__ = ("mem",)


class RSet(set):
    """A set value; ``mem`` is the modelled size of its members.  ``index`` (None until
    the first SPOP / SRANDMEMBER) is the random-access index ``commands/sets.py`` keeps."""
    __slots__ = ("mem", "index")

    def __init__(self, members=()):
        set.__init__(self, members)
        # Set here so SADD reads ``s.index`` (5 ns) instead of getattr(s, "index", None)
        # on an unset slot (135 ns, timeit), once per SADD of a new member
        self.index = None



def index_span(n: int, start: int, end: int) -> tuple[int, int]:
    """Redis's inclusive index rule (LRANGE, LTRIM, ZRANGE, ZREMRANGEBYRANK) over ``n``
    elements: negative indexes count from the end, out-of-range ones are clamped; returns
    half-open ``[lo, hi)`` positions, or ``(0, 0)`` when the range is empty.

    Example, n = 5: (1, -2) -> (1, 4); (-100, 2) -> (0, 3); (3, 1) -> (0, 0).
    Complexity: O(1).
    """
    if start < 0:
        start += n
    if end < 0:
        end += n
    if start < 0:
        start = 0
    if start > end or start >= n:
        return 0, 0
    return start, min(end, n - 1) + 1
