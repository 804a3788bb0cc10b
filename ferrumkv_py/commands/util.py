"""Argument parsing shared by the command families, with Redis's exact error texts."""

from __future__ import annotations

import math

from .. import errors
from ..errors import CommandError, WrongTypeError

LLONG_MIN = -(2 ** 63)
LLONG_MAX = 2 ** 63 - 1


def parse_int(b: bytes, msg: str = errors.NOT_INT) -> int:
    """Redis string2ll: a 64-bit signed decimal without spaces, '+' or leading zeros."""
    if not b or len(b) > 20:
        raise CommandError(msg)
    s = b[1:] if b[:1] == b"-" else b
    if not s.isdigit() or (s[:1] == b"0" and len(s) > 1) or b == b"-0":
        raise CommandError(msg)
    v = int(b)
    if v < LLONG_MIN or v > LLONG_MAX:
        raise CommandError(msg)
    return v


def parse_float(b: bytes, msg: str = errors.NOT_FLOAT) -> float:
    """Redis string2ld / strtod for scores and increments: no spaces, no NaN."""
    if not b or b[:1].isspace() or b[-1:].isspace():
        raise CommandError(msg)
    try:
        v = float(b)
    except ValueError:
        raise CommandError(msg) from None
    if math.isnan(v):
        raise CommandError(msg)
    return v


def parse_positive_int(b: bytes) -> int:
    v = parse_int(b)
    if v <= 0:
        raise CommandError(errors.NOT_POSITIVE)
    return v


def check_type(e, cls) -> None:
    """Raise WRONGTYPE unless the entry's value is of class ``cls``."""
    if e.value.__class__ is not cls:
        raise WrongTypeError()


def glob_match(pattern: bytes, s: bytes, nocase: bool = False) -> bool:
    """Redis stringmatchlen: ``* ? [abc] [^a] [a-z] \\x`` on bytes.  Complexity: O(p * s)."""
    if nocase:
        pattern, s = pattern.lower(), s.lower()
    return _match(pattern, 0, s, 0)


def _match(p: bytes, pi: int, s: bytes, si: int) -> bool:
    plen, slen = len(p), len(s)
    while pi < plen:
        c = p[pi]
        if c == 0x2A:  # '*'
            while pi + 1 < plen and p[pi + 1] == 0x2A:
                pi += 1
            if pi + 1 == plen:
                return True
            for k in range(si, slen + 1):
                if _match(p, pi + 1, s, k):
                    return True
            return False
        if si >= slen:
            return False
        if c == 0x3F:  # '?'
            si += 1
        elif c == 0x5B:  # '['
            pi += 1
            neg = pi < plen and p[pi] == 0x5E
            if neg:
                pi += 1
            matched = False
            while pi < plen and p[pi] != 0x5D:
                if p[pi] == 0x5C and pi + 1 < plen:
                    pi += 1
                    if p[pi] == s[si]:
                        matched = True
                elif pi + 2 < plen and p[pi + 1] == 0x2D:
                    lo, hi = p[pi], p[pi + 2]
                    if lo > hi:
                        lo, hi = hi, lo
                    if lo <= s[si] <= hi:
                        matched = True
                    pi += 2
                elif p[pi] == s[si]:
                    matched = True
                pi += 1
            if pi >= plen:
                pi -= 1  # unterminated class: Redis treats the end as ']'
            if neg:
                matched = not matched
            if not matched:
                return False
            si += 1
        elif c == 0x5C and pi + 1 < plen:  # '\\'
            pi += 1
            if p[pi] != s[si]:
                return False
            si += 1
        else:
            if c != s[si]:
                return False
            si += 1
        pi += 1
    return si == slen
