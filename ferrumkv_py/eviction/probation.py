"""Probation for AHE-adaptive (``ahe-probation yes``): one-hit wonders leave first.

Most keys a cache admits are never read again (a scan, a one-off lookup, the tail of a KV
block stream).  S3-FIFO's insight is to let such a key go quickly unless it is asked for
again, instead of letting it age through the whole cache; ARC and W-TinyLFU act on the same
fact.  Here it is carried over to a sampled, Redis-style policy without any queue:

* a key is **on probation** from its insertion until its first access after it;
* a probationary key idle for more than ``PROBATION_IDLE_TURNOVERS`` turnovers (the time
  the cache takes to evict its own size, ``ahe_adaptive.py``) outscores every key that is
  not: it is evicted first (among such keys, the longest idle first; the score is
  ``scores.adaptive_score``, its PROBATION_FIRST term);
* every evicted key goes into a **ghost** of recently evicted keys; re-inserted while its
  id is there, it starts off probation and a little above a new key's counter
  (LFU_INIT_VAL + GHOST_RETURN_BOOST): it has proved that it comes back (S3-FIFO's ghost
  queue; the boost is a short memory of frequency across evictions, as TinyLFU's sketch
  keeps a long one).

Where the bit lives.  No per-key memory is added: a probationary key's Morris counter is
``PROBATION_COUNTER`` (4, one below Redis's ``LFU_INIT_VAL`` 5).  The adaptive controller
never decays counters by wall time, and a touch increments every counter at or below
LFU_INIT_VAL with probability 1 (``lfu.py``); with probation on, the Evictor's touch makes
that increment a jump from 4 to ``PROBATION_END`` (6), so the first access after insertion
ends probation with the write the touch already does.  Scores and the duel's picks read a
counter of 4 as 5 (probation is a flag, not a lower frequency), so a key read once ranks a
point above a key never read, as it does in the simulator, where probation is a flag beside
the counter (``research/evsim_ahe/adaptive.py``: a new key at 5, its first hit to 6).
Until session 9 the first access moved the counter to 5 only: a key read once then looked
exactly like a new one to frequency, which made it the frequency pick of most blend
evictions, and the live server started 3x the simulator's duels, most of them never
decided (docs/ahe-adaptive.md section 13).  Measured live, one run each: CloudPhysics
2,000 / 8,000 +0.39 / +0.44, Mooncake synthetic 16,000 +0.37, no trace row lower by more
than 0.02; the seven synthetic workloads at 50k -0.09 to +0.28 (shift40 +0.28).  A key
whose counter reached 4 some other way (``RESTORE ... FREQ 4``, or an LFU policy's decay
before the policy changed) reads as probationary: a cold key either way.

The ghost: 16-bit fingerprints in buckets of four.  ``GHOST_LANES_PER_KEY`` x the candidate
keys lanes (resized with the population, like the duel ring, at most ``GHOST_MAX_IDS``),
four to a 64-bit word; a key's bucket is chosen by the low 32 bits of its 64-bit ``hash()``
(cached in the bytes object: a lookup hashes nothing), its lane holds 15 bits of the high
half and a tag bit (was the victim on probation?).  Each bucket is a FIFO of its last four
victims (an add shifts the word by a lane), so the ghost remembers roughly the last
3 x keys victims (a victim stays until four later ones hit its bucket).  A lookup compares
the four lanes in one word operation.  Memory: 2 bytes per lane, 6 per cached key, counted
against maxmemory with the controller's.  False positives: about 4 / 32768 per lookup.

Until round 2 of issue 20 the ghost was a pair of rotating blocked Bloom filters (16 bits
per id, 2 x 2 x keys ids: 8 bytes per key, ~1 % false positives); the fingerprints hold
about as many ids for 6 bytes, with a hundredth of the false positives (a false positive
hands a one-hit wonder the return boost), and carry the tag the switch below needs.

The switch (round 2, docs/ahe-adaptive.md section 11).  Probation-first is right when the
keys it evicts are one-hit wonders, wrong when a moving hot set brings new keys whose second
request comes after PROBATION_IDLE_TURNOVERS (shift40: every phase's hot keys paid an extra
miss).  The ghost tells which: per eviction, how often probation's victims come back
against how often the blend's do (rho).  On moving hot sets the blend's victims (the old
hot set) never come back and probation's do: rho 6.6 in the simulator on shift40, 0.1-1.4
on the six other synthetic workloads and the nine trace rows.  Above ``RHO_OFF`` the
threshold becomes ``PROBATION_LOOSE`` (probation-first off: the blend alone scores, a
probationary key still reads as LFU_INIT_VAL, and probation's victims start duels again, as
the blend chose them); below ``RHO_ON`` it is back.  The counts are halved at every
decision (one per turnover) by RHO_KEEP: the switch sees about the last 20 turnovers,
longer than a phase of shift40 (3.4 turnovers, over which rho swings from 8 down to 0.4
and back) and needs RHO_MIN_BACK returns of each kind and RHO_WARMUP turnovers before it moves (a
cold cache evicts new keys only, so its first rho says nothing: CloudPhysics at 8,000 keys
went off there and lost 1.5-3 points live; a trace with hardly any returns, such as
CloudPhysics at 500 keys, keeps probation-first).

Measured in the simulator first (``research/probation/``: the AHE-adaptive kernel on the
real traces and the live bench's synthetic streams, ``ghost_study.py``), then on the live
server (``docs/eviction-quality.md``).

Complexity: ``admit`` and ``evicted`` O(1); memory O(lanes).
"""

from __future__ import annotations

import sys
from array import array

from ..values import LFU_INIT_VAL

PROBATION_COUNTER = LFU_INIT_VAL - 1   # a new key's Morris counter while on probation
PROBATION_END = LFU_INIT_VAL + 1       # ... and after its first access (the touch's jump)
PROBATION_IDLE_TURNOVERS = 0.1         # idle beyond this many turnovers: evicted first
PROBATION_LOOSE = float("inf")         # the threshold while probation-first is off
GHOST_RETURN_BOOST = 1                 # counter points above LFU_INIT_VAL for a returning key
GHOST_LANES_PER_KEY = 3                # ghost ids (16-bit lanes) per candidate key: 6 bytes
GHOST_MIN_IDS = 64                     # lanes, lower bound ...
GHOST_MAX_IDS = 1 << 25                # ... and upper bound (64 MiB; above 11M candidate
                                       # keys the window shrinks relatively)
RHO_OFF = 2.0       # probation-first off when probation victims come back this many times
RHO_ON = 0.7        # ... as often as blend victims (per eviction); on again below RHO_ON
RHO_KEEP = 0.95     # share of the counts kept at each decision (one per turnover)
RHO_MIN_BACK = 16.0 # returns of each kind a decision needs (counted with RHO_KEEP)
RHO_WARMUP = 8      # decisions (turnovers) before the switch may move
LANE_BITS = 16
LANES_PER_WORD = 4
_LOW32 = 0xFFFF_FFFF
_MASK64 = 0xFFFF_FFFF_FFFF_FFFF
_FP_MASK = 0x7FFF                      # 15 fingerprint bits; bit 15 of a lane is the tag
_TAG = 0x8000
_ONES = 0x0001_0001_0001_0001          # 1 in every lane
_LOW15 = 0x7FFF_7FFF_7FFF_7FFF         # every lane without its tag bit
_HIGH = 0x8000_8000_8000_8000          # the top bit of every lane
BLEND_VICTIM, PROBATION_VICTIM = 1, 2  # what :meth:`ProbationGhost.lookup` tells


class ProbationGhost:
    """Recently evicted keys as 16-bit fingerprints in buckets of four (see the module
    docstring)."""

    __slots__ = ("lanes", "words", "_w", "added", "_bytes")

    def __init__(self, population: int):
        self.added = 0
        self.resize(population)

    def resize(self, population: int) -> None:
        """Size the table for ``population`` candidate keys; forgets every id.
        Complexity: O(words)."""
        self.lanes = self.wanted(population)
        self.words = (self.lanes + LANES_PER_WORD - 1) // LANES_PER_WORD
        self._w = array("Q", [0]) * self.words        # exact allocation (no growth slack)
        self._bytes = sys.getsizeof(self._w)

    def wanted(self, population: int) -> int:
        """The lanes ``population`` keys ask for."""
        return min(max(GHOST_LANES_PER_KEY * population, GHOST_MIN_IDS), GHOST_MAX_IDS)

    # A bucket is one 64-bit word of four 16-bit lanes, chosen by the low 32 bits of the
    # key's hash() (multiply-shift onto the table); a lane holds 15 bits of the hash's high
    # half (never 0: 0 is an empty lane) and, in its top bit, whether the victim was on
    # probation.  An add shifts the word left by a lane: each bucket is a FIFO of its last
    # four ids.  A lookup compares the four lanes at once (the "has a zero lane" test of
    # x ^ fingerprint): one word read, no loop.

    def add(self, h: int, tag: int = 0) -> None:
        """Remember the key whose ``hash()`` is ``h``; ``tag`` 1: it was on probation
        (``kernel.probation_run`` is the same rule compiled, for a batch's probation
        victims: change both or neither).  Complexity: O(1)."""
        w = ((h & _LOW32) * self.words) >> 32
        fp = (h >> 32) & _FP_MASK or 1
        self._w[w] = ((self._w[w] << LANE_BITS) & _MASK64) | fp | (tag << 15)
        self.added += 1

    def lookup(self, h: int) -> int:
        """0 if the key with ``hash()`` ``h`` is not in the ghost (its bucket's last four
        ids), else BLEND_VICTIM or PROBATION_VICTIM (the newest matching lane's tag).
        A false positive needs 15 equal bits in one of four lanes: about 4 / 32768.
        Complexity: O(1)."""
        w = ((h & _LOW32) * self.words) >> 32
        word = self._w[w]
        m = (word ^ (((h >> 32) & _FP_MASK or 1) * _ONES)) & _LOW15
        found = (m - _ONES) & ~m & _HIGH          # the top bit of each matching lane (and
        if not found:                             # maybe of lanes above one: never below)
            return 0
        low = (found & -found).bit_length() - 1   # the lowest (newest) matching lane's top bit
        return PROBATION_VICTIM if (word >> low) & 1 else BLEND_VICTIM

    def __contains__(self, h: int) -> bool:
        return self.lookup(h) != 0

    def memory_bytes(self) -> int:
        """What CPython allocated for the table (sys.getsizeof, taken at resize)."""
        return self._bytes
