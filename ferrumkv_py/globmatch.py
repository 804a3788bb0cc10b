"""Glob patterns with Redis 7.0's ``stringmatchlen`` semantics, in bounded time.

Every pattern user (KEYS, SCAN / HSCAN / SSCAN / ZSCAN MATCH, CONFIG GET, COMMAND LIST
FILTERBY PATTERN) goes through :func:`glob_matcher` (compile once, test many subjects) or
:func:`glob_match` (one subject).  ``commands/_util.py`` re-exports both names.

The language, byte for byte as Redis's ``util.c``
--------------------------------------------------
``*`` any run of bytes; ``?`` one byte; ``\\x`` the byte ``x`` (a trailing ``\\`` is a
literal backslash); ``[abc]`` ``[^abc]`` ``[a-z]`` one byte of a set, where a range may be
reversed (``[z-a]`` = ``[a-z]``), ``\\x`` inside brackets is ``x`` compared *exactly* (even
with nocase), ``]`` right after ``[`` or ``[^`` closes an empty set, and an unclosed ``[``
takes the rest of the pattern as its set.  Ranges compare C ``char`` values, which are
signed on x86: ``[a-\\xff]`` is the signed range -1..97, so it holds 0xff and 0x00-0x61 but not
0x80.  nocase compares ``tolower`` of both sides (ASCII letters only; a range's ends are
lowered *after* the swap, so nocase ``[Z-a]`` is empty).  A subject of zero bytes matches
only the empty pattern (Redis's loop never starts), so ``**`` does not match ``""``.

How it runs in O(len(pattern) x len(subject))
---------------------------------------------
Each bracket set, ``?``, escape or literal depends only on the pattern, so compiling turns
the pattern into *tokens*: ``*``, or a one-byte test (a literal byte or a 256-entry table).
Splitting at the stars gives fixed-length segments.  A subject matches when the first
segment matches at offset 0, the last at ``len - its length``, and the middle ones one after
another in between; taking each middle segment at its leftmost place is always right (a
later place leaves less room for what follows and gains nothing, since a star absorbs any
bytes).  That is the greedy "last star" backtracking, made iterative.  Each segment is a
literal (``bytes.find`` / ``startswith``) or a fixed-length ``re`` without repetition, so a
segment search costs O(len(subject) x len(segment)) and the whole match
O(len(subject) x len(pattern)).  Redis's recursive matcher (with its 7.0.9
``skipLongerMatches`` cut) is polynomial too; before it, and in this module's previous
version, ``*`` recursion was exponential.

Common shapes get a matcher made of one C-level string call per subject (``bytes.__eq__``,
``startswith`` / ``endswith`` in a lambda, ``re.search``): ``exact``, ``prefix*``,
``*suffix``, ``prefix*suffix``, ``*infix*`` and ``**`` (``len``: any non-empty subject).
Every other pattern is one compiled ``re`` (Python >= 3.11, atomic groups) or the segment
walk in Python (3.10).  Compiling is skipped when it would cost more than it saves: a
pattern over 1 KB (``re.compile`` takes ~10 s per MB) or fewer than 128 subjects get
:func:`_direct`, the same greedy walk over the raw pattern with no set-up.

Worked example: ``h*l[lo]*o`` -> tokens ``h * l [lo] * o`` -> segments ``h``, ``l[lo]``,
``o``.  Subject ``hello``: ``h`` at 0, ``o`` at 4, ``l[lo]`` searched in ``ell`` -> found
at 2 (``ll``) -> match.
"""

from __future__ import annotations

import re
import sys

STAR = -1                     # token: '*'
ATOMIC_GROUPS = sys.version_info >= (3, 11)   # re supports (?>...) from Python 3.11
_CACHE_MAX_PATTERN_BYTES = 256  # compiled patterns up to this size are memoised
# Longer patterns are not compiled: ``re`` compiles ~10 s per MB of pattern, a stall a
# client could choose.  They run :func:`_direct` (no set-up); up to 1 KB compiles in ~12 ms.
GLOB_COMPILE_MAX_BYTES = 1024
# Compiling costs 25-450 us (re.compile); the uncompiled walk 0.2-5 us a subject: below
# this many subjects (SCAN COUNT 10, CONFIG GET's ~50 names) the walk is cheaper.
GLOB_COMPILE_MIN_SUBJECTS = 128
_CACHE_MAX_ENTRIES = 256
_UPPER_LO, _UPPER_HI = 0x41, 0x5A   # 'A', 'Z'
_CASE_DELTA = 0x20                  # 'a' - 'A'
_LOWER_LO, _LOWER_HI = 0x61, 0x7A   # 'a', 'z'


def _signed(b: int) -> int:
    """A byte as a signed C char (x86)."""
    return b - 256 if b >= 128 else b


def _lower(v: int) -> int:
    """C tolower in the "C" locale: ASCII upper case letters only."""
    return v + _CASE_DELTA if _UPPER_LO <= v <= _UPPER_HI else v


def _set_signed_range(table: bytearray, lo: int, hi: int) -> None:
    """Mark every byte whose signed value is in lo..hi (-128 <= lo <= hi <= 127)."""
    def mark(a: int, b: int) -> None:   # unsigned a..b inclusive
        table[a:b + 1] = b"\x01" * (b + 1 - a)
    if lo >= 0:
        mark(lo, hi)
    elif hi < 0:
        mark(lo + 256, hi + 256)
    else:
        mark(0, hi)
        mark(lo + 256, 255)


def _parse_class(p: bytes, i: int, nocase: bool) -> tuple[int, bytes]:
    """The set of one ``[...]`` whose body starts at ``p[i]``: (index after it, table).

    A step-for-step transcription of the ``case '['`` loop of Redis's stringmatchlen,
    evaluated for all 256 subject bytes at once.  Complexity: O(class length).
    """
    n = len(p)
    table = bytearray(256)
    neg = i < n and p[i] == 0x5E               # '^'
    if neg:
        i += 1
    while True:
        if i < n and p[i] == 0x5C and n - i >= 2:   # '\\': next byte, compared exactly
            i += 1
            table[p[i]] = 1
        elif i < n and p[i] == 0x5D:                # ']'
            break
        elif i >= n:                                # unclosed: the set ends with the pattern
            i -= 1
            break
        elif n - i >= 3 and p[i + 1] == 0x2D:       # 'a-z'
            lo, hi = _signed(p[i]), _signed(p[i + 2])
            if lo > hi:
                lo, hi = hi, lo
            if nocase:
                lo, hi = _lower(lo), _lower(hi)
            if lo <= hi:
                saved = table[_UPPER_LO:_UPPER_HI + 1]
                _set_signed_range(table, lo, hi)
                if nocase:   # an upper-case byte is tested as its lower case
                    table[_UPPER_LO:_UPPER_HI + 1] = saved
                    if lo <= _LOWER_HI and hi >= _LOWER_LO:
                        for c in range(_UPPER_LO, _UPPER_HI + 1):
                            if lo <= c + _CASE_DELTA <= hi:
                                table[c] = 1
            i += 2
        else:
            table[p[i]] = 1
            if nocase:   # tolower(c) == tolower(p)
                low = _lower(p[i])
                table[low] = 1
                if _LOWER_LO <= low <= _LOWER_HI:
                    table[low - _CASE_DELTA] = 1
        i += 1
    if neg:
        table = bytearray(1 - x for x in table)
    return i + 1, bytes(table)


def _literal_token(b: int, nocase: bool):
    """A literal byte: the byte itself, or under nocase a letter's two-case table."""
    if nocase and (_UPPER_LO <= b <= _UPPER_HI or _LOWER_LO <= b <= _LOWER_HI):
        table = bytearray(256)
        table[b] = table[b ^ _CASE_DELTA] = 1
        return bytes(table)
    return b


def tokenize(pattern: bytes, nocase: bool = False) -> list:
    """The pattern as tokens: ``STAR``, an int (one literal byte) or a 256-byte table.

    Runs of ``*`` collapse to one.  Complexity: O(len(pattern)).
    """
    out: list = []
    p, n, i = pattern, len(pattern), 0
    question = b"\x01" * 256          # "?": any byte
    while i < n:
        c = p[i]
        if c == 0x2A:                               # '*'
            if not out or out[-1] != STAR:
                out.append(STAR)
            i += 1
        elif c == 0x3F:                             # '?'
            out.append(question)
            i += 1
        elif c == 0x5B:                             # '['
            i, table = _parse_class(p, i + 1, nocase)
            out.append(table)
        elif c == 0x5C and i + 1 < n:               # '\\x'
            out.append(_literal_token(p[i + 1], nocase))
            i += 2
        else:
            out.append(_literal_token(c, nocase))
            i += 1
    return out


_class_rx_cache: dict = {}


def _class_regex(table: bytes) -> bytes:
    """A regex atom for one byte table: ``[\\x61-\\x7a]``, or ``(?!)`` for the empty set."""
    rx = _class_rx_cache.get(table)
    if rx is not None:
        return rx
    parts, b = [], 0
    while b < 256:
        if table[b]:
            e = b
            while e + 1 < 256 and table[e + 1]:
                e += 1
            parts.append(b"\\x%02x" % b if e == b else b"\\x%02x-\\x%02x" % (b, e))
            b = e + 1
        else:
            b += 1
    rx = b"[" + b"".join(parts) + b"]" if parts else b"(?!)"
    if len(_class_rx_cache) < _CACHE_MAX_ENTRIES:
        _class_rx_cache[table] = rx
    return rx


def _segment(tokens: list):
    """A run of one-byte tokens: ``bytes`` when all are literals, else a compiled ``re``."""
    if all(t.__class__ is int for t in tokens):
        return bytes(tokens)
    atoms = [re.escape(bytes((t,))) if t.__class__ is int else _class_regex(t)
             for t in tokens]
    return re.compile(b"".join(atoms), re.DOTALL)


def _rx_source(seg) -> bytes:
    return re.escape(seg) if seg.__class__ is bytes else seg.pattern


def _table_of(token) -> bytes:
    """A one-byte token as a 256-entry table."""
    if token.__class__ is int:
        table = bytearray(256)
        table[token] = 1
        return bytes(table)
    return token


def _middle_regex(run: list, seg) -> bytes:
    """``(?>.*?M)``; for a one-byte M, ``(?>[^M]*M)`` (same leftmost place, and ``re``
    runs it 1.6x faster on ``*1*2*3*4*5*``)."""
    if len(run) != 1:
        return b"(?>.*?" + _rx_source(seg) + b")"
    table = _table_of(run[0])
    others = _class_regex(bytes(1 - x for x in table))
    if others == b"(?!)":   # M is any byte: nothing to skip
        return _class_regex(table)
    return b"(?>" + others + b"*" + _class_regex(table) + b")"


def _one_regex(segs: list, runs: list):
    """The greedy walk as one regex: ``head(?>.*?M1)(?>.*?M2)...(.*tail\\Z)``.

    ``(?>.*?M)`` finds the leftmost place of a middle segment and, being atomic, is never
    retried, which is the walk in :func:`_compile`'s closure run by ``re`` in C; the tail is
    anchored at the end.  Complexity: O(len(subject) x len(pattern)) per match.
    """
    parts = [_rx_source(segs[0])]
    parts += [_middle_regex(run, m) for run, m in zip(runs[1:-1], segs[1:-1])]
    if _rx_source(segs[-1]):
        parts.append(b".*" + _rx_source(segs[-1]) + b"\\Z")
    return re.compile(b"".join(parts), re.DOTALL).match


def _compile(pattern: bytes, nocase: bool):
    """The matcher for one pattern (see the module docstring).  Complexity: O(len(pattern))."""
    tokens = tokenize(pattern, nocase)
    if STAR not in tokens:
        seg = _segment(tokens)
        if seg.__class__ is bytes:
            return seg.__eq__
        return seg.fullmatch
    runs: list = [[]]
    for t in tokens:
        if t == STAR:
            runs.append([])
        else:
            runs[-1].append(t)
    segs = []
    lens = []
    for run in runs:
        seg = _segment(run)
        segs.append(seg)
        lens.append(len(run))
    head, tail, middle = segs[0], segs[-1], segs[1:-1]
    head_len, tail_len = lens[0], lens[-1]
    mid_lens = lens[1:-1]
    literal = all(s.__class__ is bytes for s in segs)
    min_len = max(sum(lens), 1)   # a non-empty pattern never matches b""
    # prefix*suffix (either may be empty).  A lambda, not operator.methodcaller: 230 vs
    # 350 ns a key for prefix* (bench/glob_keys.py's patterns, in-process timing).
    if literal and not middle:
        if not tail:
            return len if not head else (lambda s: s.startswith(head))
        if not head:
            return lambda s: s.endswith(tail)
        return lambda s: (len(s) >= min_len and s.startswith(head)
                          and s.endswith(tail))
    if literal and len(middle) == 1 and not head and not tail:   # *infix*
        return re.compile(re.escape(middle[0])).search
    if ATOMIC_GROUPS:
        return _one_regex(segs, runs)

    def match(s: bytes) -> bool:
        n = len(s)
        if n < min_len:
            return False
        end = n - tail_len
        if head_len and not (s.startswith(head) if head.__class__ is bytes
                             else head.match(s)):
            return False
        if tail_len and not (s.endswith(tail) if tail.__class__ is bytes
                             else tail.match(s, end)):
            return False
        pos = head_len
        for seg, k in zip(middle, mid_lens):
            if not k:
                continue
            if seg.__class__ is bytes:
                at = s.find(seg, pos, end)
                if at < 0:
                    return False
                pos = at + k
            else:
                m = seg.search(s, pos, end)
                if m is None:
                    return False
                pos = m.end()
        return True
    return match


def _direct(pattern: bytes, nocase: bool):
    """A matcher that walks the raw pattern, with no compilation (long patterns).

    The same greedy last-star walk as the compiled forms, one token at a time: on a
    mismatch, go back to just after the last ``*`` and let that star take one more byte.
    Bracket sets are parsed the first time the walk reaches them (memoised by position),
    so setting up costs O(1) and a subject costs only as far as the walk gets, as in
    Redis.  Complexity: O(len(subject) x len(pattern)) per subject at worst.
    """
    p, plen = pattern, len(pattern)
    classes: dict = {}

    def step(pi: int, c: int) -> int:
        """The pattern index after the token at ``pi`` accepts byte ``c``, or -1."""
        t = p[pi]
        if t == 0x3F:                               # '?'
            return pi + 1
        if t == 0x5B:                               # '['
            got = classes.get(pi)
            if got is None:
                got = classes[pi] = _parse_class(p, pi + 1, nocase)
            return got[0] if got[1][c] else -1
        if t == 0x5C and pi + 1 < plen:             # '\\x'
            pi += 1
            t = p[pi]
        return pi + 1 if t == c or (nocase and _lower(t) == _lower(c)) else -1

    def match(s: bytes) -> bool:
        n = len(s)
        if not n:
            return plen == 0
        pi = si = 0
        star_pi, star_si = -1, 0
        while si < n:
            if pi < plen:
                if p[pi] == 0x2A:                   # '*': remember where to come back
                    while pi < plen and p[pi] == 0x2A:
                        pi += 1
                    if pi == plen:
                        return True
                    star_pi, star_si = pi, si
                    continue
                nxt = step(pi, s[si])
                if nxt >= 0:
                    pi, si = nxt, si + 1
                    continue
            if star_pi < 0:
                return False
            star_si += 1
            si, pi = star_si, star_pi
        while pi < plen and p[pi] == 0x2A:
            pi += 1
        return pi == plen
    return match


_compiled: dict = {}


def glob_matcher(pattern: bytes, nocase: bool = False, subjects: int | None = None):
    """A ``match(subject) -> truthy`` for one pattern, or None when the pattern is ``*``.

    ``subjects``: how many subjects the caller will test, when known; fewer than
    GLOB_COMPILE_MIN_SUBJECTS get the uncompiled walk (unless the pattern is cached).

    None lets callers skip matching, as Redis does for ``*`` (KEYS ``allkeys``, SCAN's
    ``use_pattern``); note that :func:`glob_match` itself says ``*`` does not match ``b""``.
    Complexity: O(len(pattern)) to build (O(1) above GLOB_COMPILE_MAX_BYTES); a match
    O(len(subject) x len(pattern)) at worst, one C-level call for ``prefix*``, ``*suffix``,
    ``*infix*``, exact and ``**`` patterns.
    """
    if pattern == b"*":
        return None
    if len(pattern) > GLOB_COMPILE_MAX_BYTES:
        return _direct(pattern, nocase)
    key = (pattern, nocase)
    m = _compiled.get(key)
    if m is None and subjects is not None and subjects < GLOB_COMPILE_MIN_SUBJECTS:
        return _direct(pattern, nocase)
    if m is None:
        m = _compile(pattern, nocase)
        if len(pattern) <= _CACHE_MAX_PATTERN_BYTES:
            if len(_compiled) >= _CACHE_MAX_ENTRIES:
                _compiled.clear()
            _compiled[key] = m
    return m


def glob_match(pattern: bytes, s: bytes, nocase: bool = False) -> bool:
    """Redis ``stringmatchlen(pattern, s, nocase)``.

    Complexity: O(len(pattern) x len(s)) at worst (see the module docstring).
    """
    if pattern == b"*":
        return len(s) > 0
    return bool(glob_matcher(pattern, nocase)(s))
