"""The eviction pool: the 16 best eviction candidates seen so far, kept across evictions.

Sampling 5 random keys and evicting the best of them is a poor approximation of "evict the
globally best key".  Redis improves it with a small pool (evict.c ``evictionPoolPopulate``):
every sampled key is offered to the pool, the pool keeps the ``EVPOOL_SIZE`` highest scores
seen over *many* samplings, and each eviction takes the best entry of the pool.  With the
default 5 samples this brings approximate LRU close to exact LRU.

Layout: entries sorted by ascending score, packed to the left; the best candidate is the
last one (Redis's index 15)::

    scores  [ 3  7  7  12  40 ]            (capacity 16, 5 used)
    insert 7  -> first k with score[k] >= 7 is k=1 -> [ 3  7* 7  7  12  40 ]
                 (a new sample goes left of equal scores, as in Redis)

Insert rules for a sample with score ``s`` (Redis's, on a left-packed array):

* ``k`` = first index whose score is ``>= s`` (``len`` if none);
* pool full and ``k == 0``: ``s`` is worse than everything kept -> dropped;
* free slots: insert at ``k``, shifting the right part one place right;
* pool full: drop element 0 (the worst), shift the left part one place left and insert at
  ``k - 1``.

Entries are ``(score, db id, key)`` (kept as two parallel lists: ``scores`` and
``items = (db id, key)``): a key may have been deleted, re-created or lost its TTL
since it was scored, so whoever pops an entry re-checks it (``Evictor._pop_victim``); stale
entries ("ghosts") are simply discarded.  Scores of different policies are not comparable, so
the pool is emptied when the policy changes.

Complexity: ``offer`` is O(log EVPOOL_SIZE) to find the slot plus O(EVPOOL_SIZE) to shift,
i.e. O(1); a rejected sample (the common case once the pool is full) costs one comparison.
``pop_best`` is O(1).
"""

from __future__ import annotations

from bisect import bisect_left

EVPOOL_SIZE = 16             # candidates kept, as Redis


class EvictionPool:
    """The best ``EVPOOL_SIZE`` (score, db id, key) candidates, ascending by score."""

    __slots__ = ("scores", "items", "size")

    def __init__(self, size: int = EVPOOL_SIZE):
        self.size = size
        self.scores: list = []    # ascending; scores[i] belongs to items[i]
        self.items: list = []     # (db id, key)

    def __len__(self) -> int:
        return len(self.scores)

    def offer(self, score, db_id: int, key: bytes) -> bool:
        """Insert a sampled key by Redis's rules; False if it was dropped.  Complexity: O(1)."""
        scores = self.scores
        n = len(scores)
        if n == self.size:
            if score <= scores[0]:
                return False          # k == 0 on a full pool: worse than everything
            k = bisect_left(scores, score)
            del scores[0]
            del self.items[0]
            k -= 1
        else:
            k = bisect_left(scores, score)
        scores.insert(k, score)
        self.items.insert(k, (db_id, key))
        return True

    def pop_best(self):
        """Remove the best candidate and return its ``(db id, key)``, or None if empty.

        Complexity: O(1).
        """
        if not self.scores:
            return None
        self.scores.pop()
        return self.items.pop()

    def clear(self) -> None:
        self.scores.clear()
        self.items.clear()

    def _check(self) -> None:
        """Assert the invariants: bounded, parallel lists, ascending scores."""
        assert len(self.scores) == len(self.items) <= self.size
        for a, b in zip(self.scores, self.scores[1:]):
            assert a <= b, (a, b)
        for item in self.items:
            assert isinstance(item, tuple) and len(item) == 2
