"""LCS: the longest common subsequence of two strings (LEN, IDX, MINMATCHLEN, WITHMATCHLEN).

Redis fills the whole (alen+1) x (blen+1) table of LCS lengths as uint32 cells, then walks
back from the corner to collect the subsequence and its matching ranges; it refuses when the
table would take more than ``proto-max-bulk-len`` bytes.  The replies here are those of that
walk, including its choices among equally long subsequences, and the same refusal applies.

The table is kept as bit vectors instead of integers (Crochemore, Iliopoulos, Pinzon and Reid,
"A fast and practical bit-vector algorithm for the longest common subsequence problem",
2001).  Rows run over prefixes of the shorter string ``x``; a row is an integer with one bit
per position of the longer string ``y``, where a 0 bit marks a position at which the LCS
length grows by one::

    V_0 = all ones;  U = V_{i-1} & M[x[i-1]];  V_i = (V_{i-1} + U) | (V_{i-1} - U)
    LCS(i, j) = number of 0 bits among the j lowest bits of V_i

``M[c]`` has a 1 bit where ``y`` holds the byte ``c``.  Each row costs a few big-integer
operations on ``len(y)`` bits, so the table costs 32x less memory than Redis's and is built
at C speed.  The walk back takes O(1) integer operations per step, and a run of steps along
a row with no match and no LCS increase is crossed in one jump (the highest set bit of a
mask), so it makes O(len(x)) steps however long ``y`` is.

Complexity: O(len(a) * len(b) / w) time for machine words of w bits, and
O(min(len(a), len(b)) * max(len(a), len(b)) / 8) bytes.
"""

from __future__ import annotations

from ..first_use import NUMPY, gate_commands
from .. import errors
from ..errors import CommandError
from ..registry import command
from ._util import parse_int

UINT32_MAX = 2 ** 32 - 1
LCS_CELL_BYTES = 4          # Redis's table cell: uint32_t


def _match_masks(x: bytes, y: bytes) -> dict:
    """byte -> int with bit k set where y[k] == byte, for each byte that occurs in x."""
    import numpy as np
    yarr = np.frombuffer(y, dtype=np.uint8)
    out = {}
    for ch in set(x):
        bits = np.packbits(yarr == ch, bitorder="little")
        out[ch] = int.from_bytes(bits.tobytes(), "little")
    return out


def lcs_rows(x: bytes, y: bytes, keep: bool = True) -> list:
    """[V_0, ..., V_len(x)]: the bit-vector rows of the LCS table (module docstring); only
    [V_len(x)] unless ``keep``.  Complexity: O(len(x) * len(y) / w)."""
    full = (1 << len(y)) - 1
    masks = _match_masks(x, y)
    v = full
    rows = [v]
    for ch in x:
        u = v & masks[ch]
        v = ((v + u) | (v - u)) & full
        if keep:
            rows.append(v)
    return rows if keep else [v]


def _lcs_at(rows: list, i: int, j: int) -> int:
    """LCS(x[:i], y[:j]) from the rows.  Complexity: O(j / w)."""
    return j - (rows[i] & ((1 << j) - 1)).bit_count()


class _Ranges:
    """Redis's range bookkeeping during the walk, in (a, b) coordinates."""

    __slots__ = ("alen", "a_start", "a_end", "b_start", "b_end", "out", "minlen", "withlen")

    def __init__(self, alen: int, minlen: int, withlen: bool):
        self.alen = alen
        self.a_start, self.a_end, self.b_start, self.b_end = alen, 0, 0, 0
        self.out = []
        self.minlen, self.withlen = minlen, withlen

    def match(self, ia: int, jb: int) -> None:
        """A matching byte at 1-based (ia, jb)."""
        emit = False
        if self.a_start == self.alen:
            self.a_start = self.a_end = ia - 1
            self.b_start = self.b_end = jb - 1
        elif self.a_start == ia and self.b_start == jb:
            self.a_start -= 1
            self.b_start -= 1
        else:
            emit = True
        if self.a_start == 0 or self.b_start == 0:
            emit = True
        if emit:
            self._emit()

    def gap(self) -> None:
        if self.a_start != self.alen:
            self._emit()

    def _emit(self) -> None:
        n = self.a_end - self.a_start + 1
        if self.minlen == 0 or n >= self.minlen:
            item = [[self.a_start, self.a_end], [self.b_start, self.b_end]]
            if self.withlen:
                item.append(n)
            self.out.append(item)
        self.a_start = self.alen


def lcs_walk(a: bytes, b: bytes, minlen: int = 0, withlen: bool = False):
    """(lcs bytes, ranges) exactly as Redis's walk back from LCS(alen, blen) finds them.

    At a mismatch Redis steps to the longer of LCS(i-1, j) and LCS(i, j-1), preferring
    ``j - 1`` on a tie.  With ``a`` as the rows that is the same rule; with ``b`` as the
    rows (``a`` longer) the coordinates swap and the tie goes the other way.
    Complexity: O(min(alen, blen)) steps of O(max(alen, blen) / w) each.
    """
    swapped = len(a) > len(b)
    x, y = (b, a) if swapped else (a, b)
    rows = lcs_rows(x, y)
    i, j = len(x), len(y)
    cur = _lcs_at(rows, i, j)
    total = cur
    result = bytearray(total)
    ranges = _Ranges(len(a), minlen, withlen)
    full = (1 << len(y)) - 1
    masks = _match_masks(x, y) if x else {}
    k = total
    while i > 0 and j > 0:
        ch = x[i - 1]
        if ch == y[j - 1]:
            k -= 1
            result[k] = ch
            if swapped:
                ranges.match(j, i)
            else:
                ranges.match(i, j)
            i -= 1
            j -= 1
            cur -= 1                  # a match: LCS(i - 1, j - 1) = LCS(i, j) - 1
            continue
        inc = ((rows[i] >> (j - 1)) & 1) ^ 1          # LCS(i, j) - LCS(i, j - 1)
        up = _lcs_at(rows, i - 1, j)                   # LCS(i - 1, j)
        left = cur - inc                               # LCS(i, j - 1)
        ranges.gap()
        # Redis (a as rows): i-- iff up > left.  Swapped: j-- (its i--) iff left > up.
        go_up = up > left if not swapped else not left > up
        if go_up:
            i -= 1
            cur = up
            continue
        if inc:
            j -= 1
            cur = left
            continue
        # a run along the row: no match, no increase; every step of it goes left (the
        # tie-breaks cannot change while both LCS values stay put), up to the next
        # position holding a match or an increase
        stop = ((full ^ rows[i]) | masks[ch]) & ((1 << (j - 1)) - 1)
        j = stop.bit_length()                          # 0 when the run reaches the start
    return bytes(result), ranges.out


@command("lcs", -3, "readonly", first_key=1, last_key=2, group="string")
def lcs(c, argv):
    """LCS key1 key2 [LEN] [IDX] [MINMATCHLEN min-match-len] [WITHMATCHLEN]
    Returns the longest common subsequence of two strings, its length, or its ranges."""
    ea, eb = c.db.lookup_read(argv[1]), c.db.lookup_read(argv[2])
    if (ea is not None and c.db.vals[ea].__class__ is not bytes) or \
            (eb is not None and c.db.vals[eb].__class__ is not bytes):
        raise CommandError(errors.LCS_NOT_STRINGS)
    a = b"" if ea is None else c.db.vals[ea]
    b = b"" if eb is None else c.db.vals[eb]
    getlen = getidx = withlen = False
    minlen = 0
    j, n = 3, len(argv)
    while j < n:
        opt = argv[j].lower()
        if opt == b"idx":
            getidx = True
        elif opt == b"len":
            getlen = True
        elif opt == b"withmatchlen":
            withlen = True
        elif opt == b"minmatchlen" and j + 1 < n:
            minlen = max(parse_int(argv[j + 1]), 0)
            j += 1
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    if getidx and getlen:
        raise CommandError(errors.LCS_LEN_AND_IDX)
    if len(a) >= UINT32_MAX - 1 or len(b) >= UINT32_MAX - 1:
        raise CommandError(errors.LCS_TOO_LONG)
    if (len(a) + 1) * (len(b) + 1) * LCS_CELL_BYTES > c.server.config["proto-max-bulk-len"]:
        raise CommandError(errors.LCS_TABLE_TOO_BIG)
    if getlen:
        if not a or not b:
            return 0
        x, y = (b, a) if len(a) > len(b) else (a, b)
        return len(y) - lcs_rows(x, y, keep=False)[0].bit_count()
    text, ranges = lcs_walk(a, b, minlen, withlen) if a and b else (b"", [])
    if getidx:
        return {b"matches": ranges, b"len": len(text)}
    return text


# ---- first use (first_use.py): numpy loads on a thread while only the caller waits ----

gate_commands(NUMPY, ['lcs'])
