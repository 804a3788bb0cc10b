"""Why an evicted key cost microseconds: the price of one random draw from the keyspace.

(A measurement of the layout before issue 15, kept because it motivated the slot layout of
``ferrumkv_py/slots.py``: the keyspace no longer holds ``Entry`` objects; this script builds
its own.)

Eviction sampled ``maxmemory-samples`` entries at uniformly random positions of a sample list
(``Database.alist``) per victim.  Each draw reads a list slot, the :class:`Entry` it points
to and the ``lru`` int object the entry points to: three dependent loads at random addresses.
Once the data set is larger than the CPU caches those are memory (and TLB) misses, and that,
not the interpreted bytecodes, is most of what a victim costs (``bench/eviction_cost.py``).

This script builds lists of N entries (100-byte values, distinct ``lru`` ints, as a loaded
server has) and times the same loop body -- read the slot, test ``value``, negate ``lru`` --
over random and over sequential positions, and the same over an ``array('q')`` of the lru
values (one load, no objects), for a few sizes::

    .venv/bin/python research/fullcache/sample_latency.py            # N = 10k, 200k, 1M
    .venv/bin/python research/fullcache/sample_latency.py --sizes 50000,2000000

Printed: ns per draw, and random minus sequential, the stall a random draw adds.  Seen here
(2 vCPU VM, L2 4 MiB, other jobs running; best of 3): 48 ns random vs 70 sequential at 10k
entries; 474 vs 38 at 200k; 751 vs 41 at 1M; the array column 86 ns at 200k, 170 at 1M.  With
~6 draws per victim plus the victim's own lookups, that accounts for most of the 6-9 us per
evicted key measured in-process.  The array column shows a mirror of ``lru`` in an array
would make the draw itself cheap, but a prototype of that (the sampler reading an
``array('q')`` kept in step with every touch) did not lower the cost per evicted key beyond
the noise (``populate`` best of 6: 5.9 against 6.6 us), because pool insertions, the victim's
dict slot and entry, and freeing dead entries pay the same kind of misses.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from array import array



class Entry:
    """The former per-key object: key, value, lru, lfu, exp."""
    __slots__ = ("key", "value", "lru", "lfu", "exp")

    def __init__(self, key, value, lru, lfu=5, exp=0):
        self.key, self.value, self.lru, self.lfu, self.exp = key, value, lru, lfu, exp

DRAWS = 1_000_000
REPEATS = 3
BASE_MS = 1_700_000_000_000     # an epoch-ms clock value, so lru ints are real objects


def _walk_entries(lst: list, positions: list) -> float:
    t = time.perf_counter()
    s = 0
    for j in positions:
        e = lst[j]
        if e.value is None:
            continue
        s -= e.lru
    return (time.perf_counter() - t) * 1e9 / len(positions)


def _walk_array(values: array, positions: list) -> float:
    t = time.perf_counter()
    s = 0
    for j in positions:
        v = values[j]
        if v < 0:
            continue
        s -= v
    return (time.perf_counter() - t) * 1e9 / len(positions)


def measure(n: int, rng: random.Random) -> dict:
    """ns per draw (best of REPEATS) for entries / array, random / sequential positions."""
    lst = [Entry(b"key:%012d" % i, b"x" * 100, BASE_MS + i) for i in range(n)]
    values = array("q", [e.lru for e in lst])
    rand_pos = [rng.randrange(n) for _ in range(DRAWS)]
    seq_pos = [i % n for i in range(DRAWS)]
    out = {}
    for name, fn, data in (("entries", _walk_entries, lst), ("array", _walk_array, values)):
        for kind, pos in (("random", rand_pos), ("sequential", seq_pos)):
            out[(name, kind)] = min(fn(data, pos) for _ in range(REPEATS))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,200000,1000000",
                    help="comma-separated entry counts")
    args = ap.parse_args()
    rng = random.Random(1)
    print("%10s %12s %12s %8s %12s %12s" % ("entries", "random ns", "seq ns", "stall",
                                              "array rand", "array seq"))
    for n in map(int, args.sizes.split(",")):
        r = measure(n, rng)
        print("%10d %12.0f %12.0f %8.0f %12.0f %12.0f" % (
            n, r[("entries", "random")], r[("entries", "sequential")],
            r[("entries", "random")] - r[("entries", "sequential")],
            r[("array", "random")], r[("array", "sequential")]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
