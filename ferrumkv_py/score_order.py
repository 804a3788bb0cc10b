"""A sorted set's order: (score, member) pairs by score, then member, in sorted sublists
whose scores are C doubles side by side.

Why not ``sortedcontainers.SortedList`` of ``(score, member)`` tuples (what this replaces)
--------------------------------------------------------------------------------------
Its bisections compare tuples, and each comparison reads a tuple and a float object at
random heap addresses: in a 100k-member set one update (remove + add) cost ~4.9 us, against
~2 us in a 1k-member set (``bench/command_cost.py``; redis-server's whole ZADD is ~3 us).
Here a sublist keeps its scores in an ``array('d')`` and its members in a parallel list, so
the bisection reads contiguous doubles; members are compared only among equal scores.

Layout (LOAD 4 for the example; the real LOAD is below)::

    _s      [array('d', [1, 1, 2]),     array('d', [5, 7])]
    _m      [[b"a", b"b", b"c"],        [b"x", b"y"]]
    _maxes  [(2.0, b"c"),               (7.0, b"y")]      last pair of each sublist
    order   (1, a) (1, b) (2, c) (5, x) (7, y)              positions 0..4

* Finding a pair: bisect ``_maxes`` (a short list of tuples, hot in cache) for the sublist,
  then its scores; if the score is there already, bisect the members of that run of equal
  scores (members of one score are kept in byte order: Redis's ``memcmp`` tie rule).
* A sublist longer than 2 * LOAD splits in two; one shorter than LOAD / 4 merges into a
  neighbour.
* Positions (rank, ``order[i]``, ranges by rank): with one sublist, direct.  Otherwise a
  Fenwick tree over the sublist lengths, built on the first positional query and kept up
  to date by later adds and deletes until a split or merge drops it (so a write-only
  workload never pays for it, as with SortedList's own index).

``(score,)`` works as a bound in ``bisect_left`` / ``bisect_right``: it sorts before every
pair with that score, as the 1-tuple does in Python's tuple order.

Complexity: add, remove, index, bisect O(log n) (plus O(LOAD) memmove); ``order[i]``
O(log(n / LOAD)); a slice of k pairs O(log n + k); building from n pairs O(n log n).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from itertools import chain

LOAD = 512                    # target sublist length
_SPLIT = 2 * LOAD             # a longer sublist splits in two
_MERGE = LOAD // 4            # a shorter one merges into a neighbour


class ScoreOrder:
    """The (score, member) pairs of a sorted set in Redis's order; see the module docstring."""

    __slots__ = ("_s", "_m", "_maxes", "_len", "_fen")

    def __init__(self, pairs=()):
        self._s: list = []           # array('d') of scores per sublist
        self._m: list = []           # list of members per sublist, parallel to _s
        self._maxes: list = []       # (score, member) of each sublist's last pair
        self._len = 0
        self._fen = None             # Fenwick tree over sublist lengths (1-based), or None
        pairs = sorted(pairs)
        for i in range(0, len(pairs), LOAD):
            chunk = pairs[i:i + LOAD]
            self._s.append(array("d", [p[0] for p in chunk]))
            self._m.append([p[1] for p in chunk])
            self._maxes.append(chunk[-1])
        self._len = len(pairs)
        if len(self._m) > 1 and len(self._m[-1]) < _MERGE:
            self._merge(len(self._m) - 1)

    def copy(self) -> "ScoreOrder":
        """An independent copy.  Complexity: O(n)."""
        new = ScoreOrder()
        new._s = [array("d", s) for s in self._s]
        new._m = [list(m) for m in self._m]
        new._maxes = list(self._maxes)
        new._len = self._len
        return new

    def __len__(self) -> int:
        return self._len

    def __iter__(self):
        return chain.from_iterable(map(zip, self._s, self._m))

    # ---- updates ----

    def add(self, pair: tuple) -> None:
        """Insert a (score, member) pair (the member must not be present).  O(log n)."""
        score, member = pair
        maxes = self._maxes
        if not maxes:
            self._s.append(array("d", (score,)))
            self._m.append([member])
            maxes.append(pair)
            self._len = 1
            self._fen = None
            return
        pos = bisect_right(maxes, pair)
        if pos == len(maxes):               # past every pair: append to the last sublist
            pos -= 1
            m = self._m[pos]
            self._s[pos].append(score)
            m.append(member)
            maxes[pos] = pair
        else:
            s = self._s[pos]
            m = self._m[pos]
            i = bisect_left(s, score)
            if i < len(s) and s[i] == score:    # equal scores: by member
                i = bisect_right(m, member, i, bisect_right(s, score, i))
            s.insert(i, score)
            m.insert(i, member)
        self._len += 1
        if len(m) > _SPLIT:
            self._split(pos)
        elif self._fen is not None:
            self._fen_add(pos, 1)

    def remove(self, pair: tuple) -> None:
        """Delete a present pair; ValueError if it is not there.  O(log n)."""
        pos, i = self._find(pair)
        self._delete(pos, i)

    def pop(self, index: int = -1) -> tuple:
        """Remove and return the pair at ``index`` (negative counts from the end)."""
        pos, i = self._loc(index)
        pair = (self._s[pos][i], self._m[pos][i])
        self._delete(pos, i)
        return pair

    def __delitem__(self, index) -> None:
        """``del order[i]`` or ``del order[lo:hi]`` (step 1).  O(log n + k)."""
        if not isinstance(index, slice):
            pos, i = self._loc(index)
            self._delete(pos, i)
            return
        lo, hi, step = index.indices(self._len)
        if step != 1:
            raise ValueError("ScoreOrder slices take no step")
        if lo >= hi:
            return
        if lo == 0 and hi == self._len:
            self.__init__()
            return
        pos, i = self._loc(lo)
        first = pos
        need = hi - lo
        self._len -= need
        while need:
            s, m = self._s[pos], self._m[pos]
            take = min(need, len(m) - i)
            del s[i:i + take]
            del m[i:i + take]
            need -= take
            if not m:
                del self._s[pos], self._m[pos], self._maxes[pos]
            else:
                self._maxes[pos] = (s[-1], m[-1])
                pos += 1
            i = 0
        self._fen = None
        # the sublists at the two ends of the cut may now be short (higher index first)
        for p in sorted({first, pos - 1}, reverse=True):
            if 0 <= p < len(self._m) and len(self._m[p]) < _MERGE and len(self._m) > 1:
                self._merge(p)

    # ---- positions ----

    def __getitem__(self, index: int) -> tuple:
        pos, i = self._loc(index)
        return self._s[pos][i], self._m[pos][i]

    def index(self, pair: tuple) -> int:
        """The position of a present pair; ValueError if absent.  O(log n)."""
        pos, i = self._find(pair)
        return self._before(pos) + i

    def bisect_left(self, key: tuple) -> int:
        """Where ``key`` ((score,) or (score, member)) would go, before equal pairs."""
        return self._bisect(key, bisect_left)

    def bisect_right(self, key: tuple) -> int:
        """Where ``key`` would go, after equal pairs."""
        return self._bisect(key, bisect_right)

    def _bisect(self, key: tuple, side) -> int:
        maxes = self._maxes
        pos = side(maxes, key)
        if pos == len(maxes):
            return self._len
        s = self._s[pos]
        score = key[0]
        i = bisect_left(s, score)           # (score,) sorts before every (score, member)
        if len(key) > 1 and i < len(s) and s[i] == score:
            i = side(self._m[pos], key[1], i, bisect_right(s, score, i))
        return self._before(pos) + i

    def islice(self, start=None, stop=None, reverse: bool = False):
        """An iterator over the pairs at positions ``start:stop`` (reversed if asked)."""
        lo, hi, _ = slice(start, stop).indices(self._len)
        if lo >= hi:
            return iter(())
        pos, i = self._loc(lo)
        need = hi - lo
        parts = []
        while need:
            s, m = self._s[pos], self._m[pos]
            take = min(need, len(m) - i)
            parts.append(zip(s[i:i + take], m[i:i + take]))
            need -= take
            pos += 1
            i = 0
        out = list(chain.from_iterable(parts))
        if reverse:
            out.reverse()
        return iter(out)

    # ---- internals ----

    def _find(self, pair: tuple) -> tuple:
        """(sublist, offset) of a present pair; ValueError if absent."""
        score, member = pair
        pos = bisect_left(self._maxes, pair)
        if pos < len(self._maxes):
            s, m = self._s[pos], self._m[pos]
            i = bisect_left(s, score)
            if i < len(s) and s[i] == score:
                if m[i] != member:
                    i = bisect_left(m, member, i, bisect_right(s, score, i))
                if i < len(m) and m[i] == member and s[i] == score:
                    return pos, i
        raise ValueError("%r not in the order" % (pair,))

    def _delete(self, pos: int, i: int) -> None:
        s, m = self._s[pos], self._m[pos]
        del s[i]
        del m[i]
        self._len -= 1
        n = len(m)
        if not n:
            del self._s[pos], self._m[pos], self._maxes[pos]
            self._fen = None
            return
        if i == n:
            self._maxes[pos] = (s[-1], m[-1])
        if n < _MERGE and len(self._m) > 1:
            self._merge(pos)
        elif self._fen is not None:
            self._fen_add(pos, -1)

    def _split(self, pos: int) -> None:
        s, m = self._s[pos], self._m[pos]
        half = len(m) >> 1
        self._s.insert(pos + 1, s[half:])
        self._m.insert(pos + 1, m[half:])
        del s[half:]
        del m[half:]
        self._maxes.insert(pos, (s[-1], m[-1]))     # the old max now ends sublist pos + 1
        self._fen = None

    def _merge(self, pos: int) -> None:
        """Merge short sublist ``pos`` into a neighbour (then split if that got long)."""
        if pos == 0:
            pos = 1                       # merge sublist 1 into 0
        self._s[pos - 1].extend(self._s[pos])
        self._m[pos - 1].extend(self._m[pos])
        self._maxes[pos - 1] = self._maxes[pos]
        del self._s[pos], self._m[pos], self._maxes[pos]
        self._fen = None
        if len(self._m[pos - 1]) > _SPLIT:
            self._split(pos - 1)

    def _loc(self, index: int) -> tuple:
        """(sublist, offset) of a position (negative counts from the end); IndexError."""
        n = self._len
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("ScoreOrder index out of range")
        if index < len(self._m[0]):
            return 0, index
        last = len(self._m) - 1
        tail = n - len(self._m[last])
        if index >= tail:
            return last, index - tail
        fen = self._fen if self._fen is not None else self._build()
        # Fenwick descent: the largest prefix of sublists holding at most ``index`` pairs
        pos = 0
        bit = 1 << ((len(fen) - 1).bit_length() - 1)
        while bit:
            nxt = pos + bit
            if nxt < len(fen) and fen[nxt] <= index:
                pos = nxt
                index -= fen[nxt]
            bit >>= 1
        return pos, index

    def _before(self, pos: int) -> int:
        """How many pairs the sublists before ``pos`` hold."""
        if pos == 0:
            return 0
        if pos == len(self._m) - 1:
            return self._len - len(self._m[pos])
        fen = self._fen if self._fen is not None else self._build()
        total = 0
        while pos:
            total += fen[pos]
            pos &= pos - 1
        return total

    def _build(self) -> list:
        self._fen = _fenwick(self._m)
        return self._fen

    def _fen_add(self, pos: int, delta: int) -> None:
        fen = self._fen
        pos += 1
        k = len(fen)
        while pos < k:
            fen[pos] += delta
            pos += pos & -pos

    def _check(self) -> None:
        """Assert the layout: sorted pairs, sublist sizes, maxes, length, Fenwick sums."""
        assert len(self._s) == len(self._m) == len(self._maxes)
        assert self._len == sum(map(len, self._m))
        prev = None
        for s, m, mx in zip(self._s, self._m, self._maxes):
            assert len(s) == len(m) and 0 < len(m) <= _SPLIT
            assert len(m) >= _MERGE or len(self._m) == 1, "a short sublist left unmerged"
            assert mx == (s[-1], m[-1])
            for pair in zip(s, m):
                assert prev is None or prev < pair, (prev, pair)
                prev = pair
        if self._fen is not None:
            assert self._fen == _fenwick(self._m)


def _fenwick(sublists: list) -> list:
    """The Fenwick tree (1-based) of the sublists' lengths.  O(number of sublists)."""
    fen = [0]
    fen.extend(map(len, sublists))
    k = len(fen)
    for i in range(1, k):
        j = i + (i & -i)
        if j < k:
            fen[j] += fen[i]
    return fen
