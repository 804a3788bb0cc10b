"""A stream node: consecutive entries of a stream, one listpack in Redis (``stream.py``
explains why streams keep Redis's nodes).

A node holds ``ids`` (list of int IDs, ``ms << 64 | seq``), ``flags`` (bytearray:
DELETED 1, SAMEFIELDS 2, Redis's listpack entry flags), ``fvs`` (one tuple per entry: f1, v1,
f2, v2 ...), its ``live`` and ``dead`` (tombstone) counts and its master fields, the
field names of its first entry: a later entry with the same names is SAMEFIELDS, its names
are not written in the listpack and, here, its tuple shares the node's name objects.

``body`` is the byte size of the node's listpack without its header, terminator and the
two counters at its start (whose width changes with their values), kept exact from
:func:`lp_size` as entries are added, so ``stream-node-max-bytes`` splits nodes where
redis-server does.  Redis's listpack of a node::

    <live> <deleted> <master field count> <field> ... <0>
    then per entry: <flags> <ms - master ms> <seq - master seq>
                    [<field count> <field> <value> ...]  or, SAMEFIELDS: <value> ...
                    <lp-count: the entry's elements after its flags>

``cost`` is the node's modelled memory (the node, its master fields and its entries, as
``entry_cost`` / ``master_cost`` count them); ``Stream.mem`` is the sum over nodes plus the
groups.

Complexity: ``append`` O(fields of the entry); ``lp_size`` O(1) except for strings that may
spell numbers (O(length)).
"""

from __future__ import annotations

from .memory import BYTES_OBJ
from .rdb_blobs import _BACKLEN_LIMITS, _INT_FIRST, _STR6_MAX, _STR12_MAX, LONG_STR_SIZE, as_ll

ID_BITS = 64
SEQ_MASK = (1 << ID_BITS) - 1
FLAG_DELETED = 1                           # STREAM_ITEM_FLAG_DELETED
FLAG_SAMEFIELDS = 2                        # STREAM_ITEM_FLAG_SAMEFIELDS
LP_EMPTY_BYTES = 7                         # listpack header (6) + terminator (1)
INT64_WRAP = 1 << 64

# ---- modelled memory ----
NODE_COST = 200            # a node object, its ids / fvs lists and flags bytearray
ENTRY_OVERHEAD = 120       # int ID (44) + list slots (16) + flag byte + fv tuple header (56)
TUPLE_SLOT = 8             # one pointer of the entry's fv tuple
FIELD_OVERHEAD = TUPLE_SLOT + BYTES_OBJ     # an item with its own bytes object
# A SAMEFIELDS entry's field names are the node's master field objects (shared, charged
# once per node), so only its values' bytes objects are its own: XADD of one 5-byte field
# and a 10-byte value (bench/streams.py), RSS growth 234 -> 186 bytes per entry, modelled
# 219 -> 181.5 (redis-server: ~20).


def lp_size(item) -> int:
    """Bytes one listpack entry (encoding, data, back-length) takes for ``item`` (bytes or
    int), as Redis's lpAppend stores it (a string that spells an int64 is an integer).
    Complexity: O(len(item)) at worst, O(1) for strings that cannot be numbers."""
    if item.__class__ is not int:
        n = len(item)
        if n <= _STR6_MAX and (n == 0 or item[0] not in _INT_FIRST):
            return n + 2
        v = as_ll(item) if n < LONG_STR_SIZE else None
        if v is None:
            enc = n + 1 if n <= _STR6_MAX else n + 2 if n <= _STR12_MAX else n + 5
            return enc + _backlen_size(enc)
        item = v
    v = item
    if 0 <= v <= 127:
        return 2
    if -4096 <= v <= 4095:
        return 3
    if -32768 <= v <= 32767:
        return 4
    if -8388608 <= v <= 8388607:
        return 5
    if -2147483648 <= v <= 2147483647:
        return 6
    return 10


def _backlen_size(size: int) -> int:
    if size <= _BACKLEN_LIMITS[0]:
        return 1
    return 2 if size < _BACKLEN_LIMITS[1] else 3 if size < _BACKLEN_LIMITS[2] else \
        4 if size < _BACKLEN_LIMITS[3] else 5


def signed64(v: int) -> int:
    """A uint64 difference as the int64 Redis's lpAppendInteger stores."""
    v &= SEQ_MASK
    return v - INT64_WRAP if v >> 63 else v


def entry_cost(fv, same: bool = False) -> int:
    """Modelled bytes of one entry; ``same``: a SAMEFIELDS entry (shared field names)."""
    if same:
        values = fv[1::2]
        return ENTRY_OVERHEAD + TUPLE_SLOT * len(fv) + BYTES_OBJ * len(values) + \
            sum(map(len, values))
    return ENTRY_OVERHEAD + FIELD_OVERHEAD * len(fv) + sum(map(len, fv))


def master_cost(mfields: tuple) -> int:
    """A node's master field names: one bytes object each, shared by its entries."""
    return (BYTES_OBJ + TUPLE_SLOT) * len(mfields) + sum(map(len, mfields))


class Node:
    """Consecutive entries: one listpack in Redis (see the module docstring)."""

    __slots__ = ("ids", "flags", "fvs", "mfields", "live", "dead", "body", "cost")

    def __init__(self, mfields: tuple):
        self.ids: list = []
        self.flags = bytearray()
        self.fvs: list = []
        self.mfields = mfields
        self.live = 0
        self.dead = 0
        # listpack bytes of everything but the header, terminator and the two counters
        # (whose width changes with their value): master field count, fields, the 0
        # terminator, and every entry
        self.body = lp_size(len(mfields)) + sum(map(lp_size, mfields)) + lp_size(0)
        self.cost = NODE_COST + master_cost(mfields)

    @property
    def master(self) -> int:
        return self.ids[0]

    def lp_bytes(self) -> int:
        """lpBytes() of this node's listpack.  Complexity: O(1)."""
        return LP_EMPTY_BYTES + lp_size(self.live) + lp_size(self.dead) + self.body

    def append(self, i: int, fv: tuple, totlen: int) -> None:
        """Add entry ``i`` with pairs ``fv`` (``totlen``: the sum of their lengths) and
        account its listpack bytes exactly.  Complexity: O(len(fv)).

        The sizes are lp_size's, inlined for the common cases (ID deltas and counts of
        0..127, strings of up to 63 bytes that cannot be numbers): XADD -P 16 in-process
        9.6 -> 6.2 us per command (bench/streams.py's notes)."""
        ids = self.ids
        master = ids[0] if ids else i
        n = len(fv) >> 1
        same = fv[0::2] == self.mfields
        dms = (i >> ID_BITS) - (master >> ID_BITS)
        dseq = (i & SEQ_MASK) - (master & SEQ_MASK)
        size = 2 + (2 if dms < 128 else lp_size(signed64(dms))) + \
            (2 if 0 <= dseq < 128 else lp_size(signed64(dseq)))
        if same:
            items = fv[1::2]
            lp_count = n + 3
            mf = self.mfields      # share the node's field objects (the argv's are freed)
            if n == 1:
                fv = (mf[0], fv[1])
            else:
                shared = list(fv)
                shared[0::2] = mf
                fv = tuple(shared)
        else:
            items = fv
            lp_count = 2 * n + 4
            size += 2 if n < 128 else lp_size(n)
        first = _INT_FIRST
        for x in items:
            m = len(x)
            if m <= _STR6_MAX and (m == 0 or x[0] not in first):
                size += m + 2
            else:
                size += lp_size(x)
        self.body += size + (2 if lp_count < 128 else lp_size(lp_count))
        ids.append(i)
        self.flags.append(FLAG_SAMEFIELDS if same else 0)
        self.fvs.append(fv)
        self.live += 1
        if same:
            self.cost += ENTRY_OVERHEAD + TUPLE_SLOT * len(fv) + BYTES_OBJ * n + totlen - \
                sum(map(len, self.mfields))
        else:
            self.cost += ENTRY_OVERHEAD + FIELD_OVERHEAD * len(fv) + totlen
