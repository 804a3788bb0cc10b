"""Probation for AHE-adaptive (``ahe-probation yes``): one-hit wonders leave first.

Most keys a cache admits are never read again (a scan, a one-off lookup, the tail of a KV
block stream).  S3-FIFO's insight is to let such a key go quickly unless it is asked for
again, instead of letting it age through the whole cache; ARC and W-TinyLFU act on the same
fact.  Here it is carried over to a sampled, Redis-style policy without any queue:

* a key is **on probation** from its insertion until its first access after it;
* a probationary key idle for more than ``PROBATION_IDLE_TURNOVERS`` turnovers (the time
  the cache takes to evict its own size, ``ahe_adaptive.py``) outscores every key that is
  not: it is evicted first (among such keys, the longest idle first);
* every evicted key goes into a **ghost** of recently evicted keys; re-inserted while its
  id is there, it starts off probation and a little above a new key's counter
  (LFU_INIT_VAL + GHOST_RETURN_BOOST): it has proved that it comes back (S3-FIFO's ghost
  queue; the boost is a short memory of frequency across evictions, as TinyLFU's sketch
  keeps a long one).

Where the bit lives.  No per-key memory is added: a probationary key's Morris counter is
``PROBATION_COUNTER`` (4, one below Redis's ``LFU_INIT_VAL`` 5).  The adaptive controller
never decays counters by wall time, and a touch increments every counter at or below
LFU_INIT_VAL with probability 1 (``lfu.py``), so the first access after insertion moves the
counter to 5 and ends probation with the write the touch already does.  Scores and the
duel's picks read a counter of 4 as 5 (probation is a flag, not a lower frequency).  A key
whose counter reached 4 some other way (``RESTORE ... FREQ 4``, or an LFU policy's decay
before the policy changed) reads as probationary: a cold key either way.

The ghost: two rotating Bloom filters.  An exact FIFO of ids needs an index; a pair of
Bloom filters keeps "evicted within the last G to 2G evictions" in a few bits per id: ids
go into the *current* filter; when it has taken G ids, it becomes the *previous* one and
the former previous is cleared to take over.  A lookup asks both.  G =
``PROBATION_GHOST_GENERATION`` x the candidate keys (resized with the population, like the
duel ring, at most ``GHOST_MAX_IDS``); each filter has ``BLOOM_BITS_PER_ID`` x G bits, and
an id's 3 bits lie in one 64-bit word (a *blocked* Bloom filter, see ``add``), all derived
from the key's 64-bit ``hash()`` (cached in the bytes object), so a lookup hashes nothing
and reads one word per filter.  Memory: ``BLOOM_BITS_PER_ID * G * 2 / 8``
bytes, 8 bytes per cached key at G = 2 x keys, counted against maxmemory with the
controller's.

False positives matter more than the bytes: a false positive hands a one-hit wonder the
return boost, which at a frequency-leaning alpha protects it for many turnovers.  Live,
read-through, hit % (``bench/trace_quality.py``; the bits also cost keys held):

    bits/id, probes      CP 500   CP 2,000  CP 8,000  Mooncake 500  2,000   8,000
    8, 2  (~5 % FP)      16.70    18.86     27.94     5.38          9.70    20.32
    12, 2 (~2.3 %)       16.91    19.45     28.37     5.80          10.02   20.46
    16, 2 (~1.4 %)       17.04    20.09     28.49     6.00          10.13   20.37
    16, 3 (~0.5 %)       17.08    20.40     28.57     6.09          10.32   20.50
    (then the blocked form of 16, 3: ~1 %, one word per lookup: same hit rates within
    the noise, section 10 of docs/ahe-adaptive.md)

Measured in the simulator first (``research/probation/``: the AHE-adaptive kernel on the
real traces; two generations of 2C ids, every victim in the ghost and a return boost of 3
were the best of the 60 variants tried, against the best published policy per row; the
idle threshold between 0.05 and 0.3 turnover changes little), then on the live server
(``docs/eviction-quality.md``).

Complexity: ``admit`` and ``evicted`` O(1); rotation O(bits / 8) once per G probationary
evictions; memory O(G).
"""

from __future__ import annotations

import sys
from array import array

from ..values import LFU_INIT_VAL

PROBATION_COUNTER = LFU_INIT_VAL - 1   # a new key's Morris counter while on probation
PROBATION_IDLE_TURNOVERS = 0.1         # idle beyond this many turnovers: evicted first
PROBATION_FIRST = 1.0e6                # score added then (above any blend score)
PROBATION_GHOST_GENERATION = 2         # ids per ghost generation, per candidate key
GHOST_RETURN_BOOST = 3                 # counter points above LFU_INIT_VAL for a returning key
BLOOM_BITS_PER_ID = 16                 # bits per id in each filter, in 64-bit words
GHOST_MIN_IDS = 64                     # generation size, lower bound ...
GHOST_MAX_IDS = 1 << 24                # ... and upper bound (2 x 32 MiB of filters; above
                                       # 8M candidate keys the window shrinks relatively)
_LOW32 = 0xFFFF_FFFF
_WORD_BITS = 64


class ProbationGhost:
    """Two rotating Bloom filters of key hashes (see the module docstring)."""

    __slots__ = ("generation", "words", "_cur", "_prev", "_n", "rotations", "added",
                 "_bytes")

    def __init__(self, population: int):
        self.rotations = 0
        self.added = 0
        self.resize(population)

    def resize(self, population: int) -> None:
        """Size both filters for ``population`` candidate keys; forgets every id.
        Complexity: O(words)."""
        g = self.wanted(population)
        self.generation = g
        self.words = (BLOOM_BITS_PER_ID * g + _WORD_BITS - 1) // _WORD_BITS
        self._cur = self._empty()
        self._prev = self._empty()
        self._n = 0
        self._bytes = sys.getsizeof(self._cur) + sys.getsizeof(self._prev)

    def _empty(self) -> array:
        return array("Q", [0]) * self.words        # exact allocation (no growth slack)

    def wanted(self, population: int) -> int:
        """The generation size ``population`` keys ask for."""
        return min(max(PROBATION_GHOST_GENERATION * population, GHOST_MIN_IDS),
                   GHOST_MAX_IDS)

    # A blocked Bloom filter: an id sets 3 bits of ONE 64-bit word, the word chosen by the
    # low 32 bits of its hash() (multiply-shift onto the filter), the bits by three 6-bit
    # fields of the high 32.  One word read per filter and no loop: admit() runs once per
    # new key.  With 16 bits per id a word holds about 4 ids, so a false positive (all 3
    # bits set by others) is about 1 %.

    def add(self, h: int) -> None:
        """Remember the key whose ``hash()`` is ``h`` (``kernel.bloom_add_many`` is the
        same bit rule compiled, for a batch: change both or neither).  Complexity: O(1) (a rotation,
        once per ``generation`` adds, allocates one empty filter)."""
        w = ((h & _LOW32) * self.words) >> 32
        self._cur[w] |= (1 << ((h >> 32) & 63)) | (1 << ((h >> 38) & 63)) | \
            (1 << ((h >> 44) & 63))
        self.added += 1
        self._n += 1
        if self._n >= self.generation:
            self._prev = self._cur
            self._cur = self._empty()
            self._n = 0
            self.rotations += 1

    def add_many(self, hashes, n: int) -> None:
        """:meth:`add` of ``hashes[:n]`` (an array('q')), the bits set by the compiled
        kernel (``kernel.bloom_add_many``, the same rule), rotating where :meth:`add`
        would.  Complexity: O(n)."""
        from .kernel import bloom_add_many
        i = 0
        while i < n:
            k = min(n - i, self.generation - self._n)
            bloom_add_many(self._cur, self.words, hashes[i:i + k] if i else hashes, k)
            i += k
            self.added += k
            self._n += k
            if self._n >= self.generation:
                self._prev = self._cur
                self._cur = self._empty()
                self._n = 0
                self.rotations += 1

    def __contains__(self, h: int) -> bool:
        """Whether the key with ``hash()`` ``h`` was added within the last one to two
        generations (or is a false positive).  Complexity: O(1)."""
        w = ((h & _LOW32) * self.words) >> 32
        bits = (1 << ((h >> 32) & 63)) | (1 << ((h >> 38) & 63)) | (1 << ((h >> 44) & 63))
        return self._cur[w] & bits == bits or self._prev[w] & bits == bits

    def memory_bytes(self) -> int:
        """What CPython allocated for both filters (sys.getsizeof, taken at resize)."""
        return self._bytes
