"""Compiled replay kernel: exact LRU stack depths with a Fenwick tree over positions.

Everything here is plain Python over numpy arrays, compiled with ``@njit(cache=True)``.
With ``NUMBA_DISABLE_JIT=1`` the very same source runs as ordinary Python, which is how
the tests check that both agree.  The state lives in arrays owned by ``LiteHit``
(``litehit.core``); kernels that may grow an array return the (possibly new) arrays.
The hash table stays in this module on purpose, though the module is long: numba's on-disk
cache is keyed on the file that defines a compiled function, so a kernel compiled with
helpers inlined from another module would keep running stale code after an edit there.

Stack depth by counting latest positions
----------------------------------------
LRU has the stack-inclusion property: a cache of capacity C holds exactly the C most
recent distinct keys, so a key at depth d (1 = most recent) hits at every C >= d.  Every
commit gets the next integer *position*; ``table[key]`` is the key's latest position and
the Fenwick tree holds a 1 at every key's latest position, 0 at stale ones.  Then

    depth(key) = (number of 1s after table[key]) + 1 = live - prefix(table[key]) + 1

Snapshot evaluation and reverse commit
--------------------------------------
A request is processed in two passes.  Pass 1 reads every block's depth from the state
*before* the request (until the first cold block: absent, or expired under a TTL) and
RLE-encodes the thresholds ``max(prefix max depth, last + 1)``.  Pass 2 commits all
blocks, hit or miss, from the tail to the head, so the head ends most recent and a
parent key is always more recent than its resident children.  A key repeated inside a
request is simply re-committed; its final place is that of its first occurrence.

Worked example (the five-request example, test_core.py; ``pos`` row = key at each
position, ``bit`` = tree 1s)::

    after #1 [A B C]   pos: 1=C 2=B 3=A               bit: 1 1 1         live 3
    #2 [A B D]         A@3: 0 ones after -> depth 1
                       B@2: 1 one after  -> depth 2;  D absent -> curve stops
                       thresholds 1 2 -> segments [[1,2]]
    commit D,B,A       pos: 1=C 2=. 3=. 4=D 5=B 6=A   bit: 1 0 0 1 1 1   live 4
    #3 [A B C]         A@6 -> 1, B@5 -> 2, C@1 -> 3 ones after -> 4
                       thresholds 1 2 4 -> segments [[1,2],[4,1]]

Fenwick tree with in-order appends
----------------------------------
Only nodes ``1..size`` are kept valid.  A new position q = size + 1 always goes at the
end, so its node is summed from its children ``q-1, q-2, q-4, ...`` (just written, so in
cache; amortised O(1)) instead of walking an update path to the end of the array, and a
removal walks up only while the node is ``<= size``::

    positions   1 2 3 4 5 6          node 6 covers (4, 6] = its child node 5 + value at 6
    node cover  1 2 1 4 1 2          append 7: node 7 = 1 (lowbit 1, no children)

Growth and compaction
---------------------
Stale positions accumulate.  When a request would not fit in the position array:

* if stale positions dominate (the reference rule: ``alive < (size - slack) / 2``, where
  alive counts unexpired keys), the live positions are renumbered ``1..live`` in their
  old order (old order = LRU order, so every depth is unchanged), the tree is refilled,
  and the array is sized to ``2 * (live + room) + slack``;
* otherwise the array doubles by a plain copy: positions do not move, and since only
  nodes ``1..size`` are valid the tree needs no repair.

Renumbering keeps the table's slots: one sequential scan maps each value from old to new
position (the map sits in the tree array meanwhile).  The table is rebuilt from itself
only when it must be resized or when keys go.  No live key is ever dropped, because any
capacity may be queried later; only keys expired under a TTL (cold forever, and all at
the oldest positions) may go.  Illustration (the kernel stores no key per position)::

    before  pos: 1=C 2=. 3=. 4=D 5=B 6=A   bit: 1 0 0 1 1 1
    map          1->1      4->2 5->3 6->4
    after   pos: 1=C 2=D 3=B 4=A           bit: 1 1 1 1       (depths unchanged)

Hash table
----------
Open addressing with linear probing: ``ht_keys`` (int64) and ``ht_vals`` (int32 latest
position; 0 means inserted during this request's pass 1, with no position yet).
``EMPTY_KEY`` (int64 min) marks a free slot, so a real key equal to it is kept outside
the table in ``meta[M_SPECIAL_POS]``.  The table doubles before a request that could
push the load above ``TABLE_MAX_LOAD_NUM / TABLE_MAX_LOAD_DEN``, so slot indices found
in pass 1 stay valid in pass 2.

Batch loop
----------
``process_batch`` alternates between ``_replay_while_room`` (requests that fit: no
array is reassigned, so numba does not refcount arrays per request: on the one-key
Zipf trace of bench/litehit_bench.py this took the kernel from about 2.3 to 5-6 M
accesses/s) and a grow/compact step.  Growing by copy instead of renumbering on every
full array took the prefix-tree trace there from about 9 to 12+ M accesses/s.

Complexity: per request of m blocks O(m log P) with P <= 4 * live + 2 * slack
positions; growth and compaction O(P + table slots), amortised O(1) per commit.
Memory: 4 bytes per position (12 with a TTL) and 12 bytes per table slot, measured at
about 27-35 bytes per distinct block by bench/litehit_bench.py (no TTL: 28.7 and 26.7 at
1M accesses, 32.3 and 35.3 with --quick).
"""
from __future__ import annotations

import numpy as np
from numba import njit

# ---- constants (units in names) ----
EMPTY_KEY = -(1 << 63)          # free hash slot marker; the real key with this value is kept aside
TABLE_MIN_SLOTS = 1024          # initial hash table size (power of two)
TABLE_MAX_LOAD_NUM = 7          # grow when (count + incoming) > 7/10 of the slots
TABLE_MAX_LOAD_DEN = 10
TABLE_REBUILD_LOAD_NUM = 1      # a resized table is sized for a load of at most 1/2
TABLE_REBUILD_LOAD_DEN = 2
TABLE_SPARSE_FACTOR = 8         # compaction shrinks a table 8x larger than needed
SLACK_POSITIONS = 4096          # the reference SLACK (positions)
POSITION_GROWTH_FACTOR = 2      # a full position array without dominant staleness doubles
POSITION_SHRINK_FACTOR = 4      # compaction shrinks a position array 4x larger than needed
HASH_MUL_LO = 0x2545F491        # odd multipliers below 2^30: products stay below 2^62,
HASH_MUL_HI = 0x3C6EF35F        # so un-jitted numpy int64 arithmetic never overflows
HASH_MIX_MUL = 0x2C1B3C6D
HASH_LOW_BITS_MASK = 0xFFFFFFFF
HASH_MIX_MASK = 0x3FFFFFFF
HASH_FOLD_SHIFT_BITS = 29
HASH_HALF_BITS = 32

# ---- meta array layout (int64 scalars shared by Python and the kernels) ----
M_SIZE = 0              # highest position written
M_LIVE = 1              # keys holding a position (number of 1s in the tree)
M_TABLE_COUNT = 2       # occupied hash slots
M_SPECIAL_POS = 3       # latest position of the key equal to EMPTY_KEY, 0 if absent
M_NOW = 4               # clock (ns), never goes backwards
M_TTL = 5               # ttl in ns, 0 = none
M_SLACK = 6             # the slack of the compaction rule (positions)
M_COMPACTIONS = 7       # renumbering compactions done (observability and tests)
M_ACCESSES = 8          # block accesses processed
META_LEN = 9


def new_state(ttl_ns, slack_positions):
    """Fresh state arrays: (ht_keys, ht_vals, tree, pos_ts, meta)."""
    positions = max(int(slack_positions), 1)
    ht_keys = np.full(TABLE_MIN_SLOTS, EMPTY_KEY, dtype=np.int64)
    ht_vals = np.zeros(TABLE_MIN_SLOTS, dtype=np.int32)
    tree = np.zeros(positions + 1, dtype=np.int32)
    pos_ts = np.zeros(positions + 1 if ttl_ns > 0 else 1, dtype=np.int64)
    meta = np.zeros(META_LEN, dtype=np.int64)
    meta[M_TTL] = ttl_ns
    meta[M_SLACK] = slack_positions
    return ht_keys, ht_vals, tree, pos_ts, meta


# ---- hashing and the open-addressing table ----
@njit(cache=True, inline="always")
def _slot_of(key, mask):
    """Home slot of a key: two 32-bit halves multiplied, folded, multiplied, folded."""
    lo = key & HASH_LOW_BITS_MASK
    hi = (key >> HASH_HALF_BITS) & HASH_LOW_BITS_MASK
    x = lo * HASH_MUL_LO + hi * HASH_MUL_HI
    x ^= x >> HASH_FOLD_SHIFT_BITS
    x = (x & HASH_MIX_MASK) * HASH_MIX_MUL + (x >> HASH_HALF_BITS)
    x ^= x >> HASH_FOLD_SHIFT_BITS
    return x & mask


@njit(cache=True, inline="always")
def _table_find(ht_keys, key):
    """Slot holding ``key``, or the free slot where it would go (linear probing)."""
    mask = ht_keys.shape[0] - 1
    s = _slot_of(key, mask)
    while True:
        k = ht_keys[s]
        if k == key or k == EMPTY_KEY:
            return s
        s = (s + 1) & mask


@njit(cache=True)
def _table_slots_for(count):
    """Smallest power-of-two table keeping ``count`` keys under the rebuild load."""
    slots = TABLE_MIN_SLOTS
    while count * TABLE_REBUILD_LOAD_DEN > slots * TABLE_REBUILD_LOAD_NUM:
        slots *= 2
    return slots


@njit(cache=True)
def _table_copy(ht_keys, ht_vals, slots, remap):
    """New table of ``slots`` slots with every key; values pass through ``remap``.

    ``remap`` maps old position -> new position (0 = drop the key); pass an empty
    array to keep values as they are.  Returns (ht_keys, ht_vals, count).
    Complexity: O(old slots + new slots).
    """
    new_keys = np.full(slots, EMPTY_KEY, dtype=np.int64)
    new_vals = np.zeros(slots, dtype=np.int32)
    use_map = remap.shape[0] > 0
    count = 0
    for s in range(ht_keys.shape[0]):
        key = ht_keys[s]
        if key == EMPTY_KEY:
            continue
        p = np.int64(ht_vals[s])
        if use_map:
            p = np.int64(remap[p])
            if p == 0:
                continue
        t = _table_find(new_keys, key)
        new_keys[t] = key
        new_vals[t] = p
        count += 1
    return new_keys, new_vals, count


@njit(cache=True)
def _table_reserve(ht_keys, ht_vals, meta, incoming):
    """Double the table until ``count + incoming`` fits under the max load.

    Complexity: O(slots) when it grows, O(1) otherwise.
    """
    count = meta[M_TABLE_COUNT]
    slots = ht_keys.shape[0]
    if (count + incoming) * TABLE_MAX_LOAD_DEN <= slots * TABLE_MAX_LOAD_NUM:
        return ht_keys, ht_vals
    while (count + incoming) * TABLE_MAX_LOAD_DEN > slots * TABLE_MAX_LOAD_NUM:
        slots *= 2
    new_keys, new_vals, _count = _table_copy(ht_keys, ht_vals, slots,
                                             np.zeros(0, dtype=np.int32))
    return new_keys, new_vals


# ---- Fenwick tree over positions 1..size (tree[0] unused) ----
@njit(cache=True, inline="always")
def _fen_remove_one(tree, p, size):
    """Point value at p goes 1 -> 0 (nodes up to size).

    Complexity: O(log size).
    """
    while p <= size:
        tree[p] -= 1
        p += p & (-p)


@njit(cache=True, inline="always")
def _fen_append_one(tree, q):
    """Position q = size + 1 gets point value 1, its node summed from its children.

    Complexity: amortised O(1).
    """
    low = q & (-q)
    total = 1
    step = 1
    while step < low:
        total += tree[q - step]
        step += step
    tree[q] = total


@njit(cache=True, inline="always")
def _fen_prefix(tree, i):
    """Number of 1s at positions 1..i.

    Complexity: O(log i).
    """
    total = 0
    while i > 0:
        total += tree[i]
        i -= i & (-i)
    return total


@njit(cache=True)
def _fen_to_values(tree, size):
    """Turn nodes 1..size into their point values in place.

    Complexity: O(size).
    """
    for i in range(size, 0, -1):
        parent = i + (i & (-i))
        if parent <= size:
            tree[parent] -= tree[i]


# ---- growth and compaction ----
@njit(cache=True)
def grow_positions(tree, pos_ts, meta, room):
    """Copy the position arrays into ones POSITION_GROWTH_FACTOR times larger.

    Positions keep their numbers and nodes 1..size stay valid, so nothing else changes.
    Complexity: O(P).
    """
    size = meta[M_SIZE]
    have = tree.shape[0] - 1
    want = max(POSITION_GROWTH_FACTOR * have, size + room + meta[M_SLACK])
    new_tree = np.zeros(want + 1, dtype=np.int32)
    new_tree[: size + 1] = tree[: size + 1]
    if meta[M_TTL] > 0:
        new_ts = np.zeros(want + 1, dtype=np.int64)
        new_ts[: size + 1] = pos_ts[: size + 1]
        pos_ts = new_ts
    return new_tree, pos_ts


@njit(cache=True)
def compact(ht_keys, ht_vals, tree, pos_ts, meta, room):
    """Renumber live positions 1..live, refill the tree, leave ``room`` free positions.

    Keys expired under a TTL are dropped; every other key is kept.  When the table
    keeps its size and loses no key, its values are remapped in one sequential scan
    (old position -> new position; the map is held in the tree array meanwhile).
    Returns the four state arrays (new ones when resized).
    Complexity: O(P + table slots).
    """
    size = meta[M_SIZE]
    ttl = meta[M_TTL]
    _fen_to_values(tree, size)
    dropped = 0
    if ttl > 0:
        for p in range(1, first_alive_position(pos_ts, meta)):
            if tree[p] == 1:
                tree[p] = 0
                dropped += 1
    live = 0
    for p in range(1, size + 1):
        if tree[p] == 1:
            live += 1
            if ttl > 0:
                pos_ts[live] = pos_ts[p]
            tree[p] = live              # tree now maps old position -> new position
    special = meta[M_SPECIAL_POS]
    meta[M_SPECIAL_POS] = tree[special] if special > 0 else 0
    have_slots = ht_keys.shape[0]
    too_full = (live + room) * TABLE_MAX_LOAD_DEN > have_slots * TABLE_MAX_LOAD_NUM
    too_sparse = _table_slots_for(live + room) * TABLE_SPARSE_FACTOR < have_slots
    if dropped > 0 or too_full or too_sparse:
        slots = _table_slots_for(live + room) if too_full or too_sparse else have_slots
        ht_keys, ht_vals, count = _table_copy(ht_keys, ht_vals, slots, tree)
        meta[M_TABLE_COUNT] = count
    else:
        for s in range(have_slots):
            if ht_keys[s] != EMPTY_KEY:
                ht_vals[s] = tree[ht_vals[s]]
    want = 2 * (live + room) + meta[M_SLACK]
    have = tree.shape[0] - 1
    if want > have or want * POSITION_SHRINK_FACTOR < have:
        tree = np.zeros(want + 1, dtype=np.int32)
        if ttl > 0:
            new_ts = np.zeros(want + 1, dtype=np.int64)
            new_ts[: live + 1] = pos_ts[: live + 1]
            pos_ts = new_ts
    for i in range(1, live + 1):
        tree[i] = i & (-i)              # all ones: node i covers lowbit(i) positions
    meta[M_SIZE] = live
    meta[M_LIVE] = live
    meta[M_COMPACTIONS] += 1
    return ht_keys, ht_vals, tree, pos_ts


# ---- one request: snapshot evaluation, RLE encoding, reverse commit ----
@njit(cache=True, inline="always")
def _request(keys, lo, hi, now, ht_keys, ht_vals, tree, pos_ts, meta,
             slots, seg_start, seg_run, nseg):
    """Evaluate and commit ``keys[lo:hi]``; append its segments, return the new nseg.

    The caller has reserved room for ``hi - lo`` new keys and positions.
    Complexity: O(m log P).
    """
    ttl = meta[M_TTL]
    live = meta[M_LIVE]
    count = meta[M_TABLE_COUNT]
    first_seg = nseg
    cold = False
    prefix_max = 0
    last = 0
    # Pass 1: locate (or reserve) every key; read depths from the snapshot until cold.
    for j in range(lo, hi):
        key = keys[j]
        if key == EMPTY_KEY:
            s = -1
            p = meta[M_SPECIAL_POS]
        else:
            s = _table_find(ht_keys, key)
            if ht_keys[s] == key:
                p = np.int64(ht_vals[s])
            else:
                ht_keys[s] = key
                ht_vals[s] = 0
                count += 1
                p = np.int64(0)
        slots[j - lo] = s
        if cold:
            continue
        if p == 0 or (ttl > 0 and now - pos_ts[p] >= ttl):
            cold = True
            continue
        depth = live - _fen_prefix(tree, p) + 1
        if depth > prefix_max:
            prefix_max = depth
        threshold = prefix_max if prefix_max > last else last + 1
        last = threshold
        if nseg > first_seg and seg_start[nseg - 1] + seg_run[nseg - 1] == threshold:
            seg_run[nseg - 1] += 1
        else:
            seg_start[nseg] = threshold
            seg_run[nseg] = 1
            nseg += 1
    # Pass 2: commit tail to head; the head ends most recent.
    size = meta[M_SIZE]
    special = meta[M_SPECIAL_POS]
    for j in range(hi - 1, lo - 1, -1):
        s = slots[j - lo]
        p = special if s < 0 else np.int64(ht_vals[s])
        if p > 0:
            _fen_remove_one(tree, p, size)
        else:
            live += 1
        size += 1
        _fen_append_one(tree, size)
        if ttl > 0:
            pos_ts[size] = now
        if s < 0:
            special = size
        else:
            ht_vals[s] = size
    meta[M_SIZE] = size
    meta[M_LIVE] = live
    meta[M_TABLE_COUNT] = count
    meta[M_SPECIAL_POS] = special
    meta[M_ACCESSES] += hi - lo
    return nseg


@njit(cache=True)
def _replay_while_room(keys, offsets, times, r, ht_keys, ht_vals, tree, pos_ts, meta,
                       slots, seg_offsets, seg_start, seg_run):
    """Replay requests from r on while they fit; return the first one that does not.

    The arrays are never reassigned here: numba would otherwise refcount them on every
    iteration, which costs more than the replay itself for one-block requests.
    """
    n_req = offsets.shape[0] - 1
    nseg = seg_offsets[r]
    positions = tree.shape[0] - 1
    table_budget = ht_keys.shape[0] * TABLE_MAX_LOAD_NUM
    while r < n_req:
        lo = offsets[r]
        hi = offsets[r + 1]
        m = hi - lo
        if meta[M_SIZE] + m > positions:
            break
        if (meta[M_TABLE_COUNT] + m) * TABLE_MAX_LOAD_DEN > table_budget:
            break
        now = times[r]
        if now < meta[M_NOW]:
            now = meta[M_NOW]
        meta[M_NOW] = now
        nseg = _request(keys, lo, hi, now, ht_keys, ht_vals, tree, pos_ts, meta,
                        slots, seg_start, seg_run, nseg)
        r += 1
        seg_offsets[r] = nseg
    return r


@njit(cache=True)
def process_batch(keys, offsets, times, ht_keys, ht_vals, tree, pos_ts, meta):
    """Replay requests ``keys[offsets[r]:offsets[r+1]]`` at ``times[r]`` in order.

    Returns ``(seg_offsets, seg_start, seg_run, ht_keys, ht_vals, tree, pos_ts)``; the
    segment arrays are trimmed to the segments produced.  The clock is clamped so it
    never goes backwards.  When a request does not fit, the position array is compacted
    (stale positions dominate) or doubled, and the table grown, before going on.
    Complexity: O(N log P) for N block accesses.
    """
    n_req = offsets.shape[0] - 1
    longest = 0
    for r in range(n_req):
        m = offsets[r + 1] - offsets[r]
        if m > longest:
            longest = m
    capacity = offsets[n_req] - offsets[0] if n_req > 0 else 0
    seg_offsets = np.zeros(n_req + 1, dtype=np.int64)
    seg_start = np.empty(capacity, dtype=np.int64)
    seg_run = np.empty(capacity, dtype=np.int64)
    slots = np.empty(longest, dtype=np.int64)
    r = 0
    while True:
        r = _replay_while_room(keys, offsets, times, r, ht_keys, ht_vals, tree, pos_ts,
                               meta, slots, seg_offsets, seg_start, seg_run)
        if r >= n_req:
            break
        m = offsets[r + 1] - offsets[r]
        size = meta[M_SIZE]
        if size + m > tree.shape[0] - 1:
            if 2 * unexpired_keys(tree, pos_ts, meta) < size - meta[M_SLACK]:
                ht_keys, ht_vals, tree, pos_ts = compact(ht_keys, ht_vals, tree, pos_ts,
                                                         meta, m)
            else:
                tree, pos_ts = grow_positions(tree, pos_ts, meta, m)
        ht_keys, ht_vals = _table_reserve(ht_keys, ht_vals, meta, m)
    nseg = seg_offsets[n_req]
    return (seg_offsets, seg_start[:nseg].copy(), seg_run[:nseg].copy(),
            ht_keys, ht_vals, tree, pos_ts)


# ---- observability ----
@njit(cache=True)
def first_alive_position(pos_ts, meta):
    """Smallest position whose access is still alive (timestamps rise with position).

    Returns ``size + 1`` when everything expired; 1 without a TTL.
    Complexity: O(log P) (binary search).
    """
    ttl = meta[M_TTL]
    size = meta[M_SIZE]
    if ttl <= 0:
        return 1
    now = meta[M_NOW]
    lo = 1
    hi = size + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if now - pos_ts[mid] < ttl:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def unexpired_keys(tree, pos_ts, meta):
    """Live keys whose latest access is still alive.

    Complexity: O(log P).
    """
    first = first_alive_position(pos_ts, meta)
    return meta[M_LIVE] - _fen_prefix(tree, first - 1)


@njit(cache=True)
def depth_of(key, ht_keys, ht_vals, tree, pos_ts, meta):
    """Current depth of ``key`` (1 = most recent), 0 when absent or expired.

    Complexity: O(log P).
    """
    if key == EMPTY_KEY:
        p = meta[M_SPECIAL_POS]
    else:
        s = _table_find(ht_keys, key)
        p = np.int64(ht_vals[s]) if ht_keys[s] == key else np.int64(0)
    if p == 0:
        return 0
    ttl = meta[M_TTL]
    if ttl > 0 and meta[M_NOW] - pos_ts[p] >= ttl:
        return 0
    return meta[M_LIVE] - _fen_prefix(tree, p) + 1


@njit(cache=True)
def misplaced_keys(ht_keys):
    """Keys that probing from their home slot would not reach (``_check`` support).

    Complexity: O(slots * probe length).
    """
    bad = 0
    for s in range(ht_keys.shape[0]):
        key = ht_keys[s]
        if key != EMPTY_KEY and _table_find(ht_keys, key) != s:
            bad += 1
    return bad
