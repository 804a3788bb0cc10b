"""Glob matching (ferrumkv_py.globmatch) against a line-by-line port of Redis 7.0.15's
``stringmatchlen``, against redis-server's KEYS, and on patterns that used to take
exponential time."""

from __future__ import annotations

import random
import signal

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from ferrumkv_py import globmatch
from ferrumkv_py.commands._util import glob_match as util_glob_match
from ferrumkv_py.globmatch import glob_match, glob_matcher

# ---- the reference: Redis 7.0.15 util.c stringmatchlen_impl, transcribed ----


def _sc(b: int) -> int:
    return b - 256 if b >= 128 else b      # C char is signed on x86


def _tolower(v: int) -> int:
    return v + 32 if 65 <= v <= 90 else v


def redis_stringmatchlen(pattern: bytes, string: bytes, nocase: bool = False) -> bool:
    """Recursive, as util.c; reads past the end see the NUL terminator, as in C."""
    skip = [False]

    def impl(pi: int, plen: int, si: int, slen: int) -> bool:
        def P(k=0):
            j = pi + k
            return pattern[j] if j < len(pattern) else 0

        def S():
            return string[si] if si < len(string) else 0
        while plen and slen:
            c = P()
            if c == 0x2A:
                while plen and P(1) == 0x2A:
                    pi += 1
                    plen -= 1
                if plen == 1:
                    return True
                while slen:
                    if impl(pi + 1, plen - 1, si, slen):
                        return True
                    if skip[0]:
                        return False
                    si += 1
                    slen -= 1
                skip[0] = True
                return False
            elif c == 0x3F:
                si += 1
                slen -= 1
            elif c == 0x5B:
                pi += 1
                plen -= 1
                neg = P() == 0x5E
                if neg:
                    pi += 1
                    plen -= 1
                match = False
                while True:
                    if P() == 0x5C and plen >= 2:
                        pi += 1
                        plen -= 1
                        if P() == S():
                            match = True
                    elif P() == 0x5D:
                        break
                    elif plen == 0:
                        pi -= 1
                        plen += 1
                        break
                    elif plen >= 3 and P(1) == 0x2D:
                        start, end, ch = _sc(P()), _sc(P(2)), _sc(S())
                        if start > end:
                            start, end = end, start
                        if nocase:
                            start, end, ch = _tolower(start), _tolower(end), _tolower(ch)
                        pi += 2
                        plen -= 2
                        if start <= ch <= end:
                            match = True
                    else:
                        if not nocase:
                            if P() == S():
                                match = True
                        elif _tolower(_sc(P())) == _tolower(_sc(S())):
                            match = True
                    pi += 1
                    plen -= 1
                if neg:
                    match = not match
                if not match:
                    return False
                si += 1
                slen -= 1
            else:
                if c == 0x5C and plen >= 2:
                    pi += 1
                    plen -= 1
                if not nocase:
                    if P() != S():
                        return False
                elif _tolower(_sc(P())) != _tolower(_sc(S())):
                    return False
                si += 1
                slen -= 1
            pi += 1
            plen -= 1
            if slen == 0:
                while P() == 0x2A:
                    pi += 1
                    plen -= 1
                break
        return plen == 0 and slen == 0

    return impl(0, len(pattern), 0, len(string))


# ---- property tests against the reference ----

PATTERN_BYTES = b"ab*?[]^-\\Az\x00\x80\xff"
SUBJECT_BYTES = b"abAZz-]^\\*?[\x00\x7f\x80\xff"


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=9).map(lambda b: bytes(PATTERN_BYTES[x % len(PATTERN_BYTES)]
                                                  for x in b)),
       st.binary(max_size=9).map(lambda b: bytes(SUBJECT_BYTES[x % len(SUBJECT_BYTES)]
                                                  for x in b)),
       st.booleans())
def test_matches_redis_stringmatchlen(pattern, subject, nocase):
    expected = redis_stringmatchlen(pattern, subject, nocase)
    assert glob_match(pattern, subject, nocase) == expected
    m = glob_matcher(pattern, nocase)
    if m is not None:          # None = "*": callers list everything, as Redis does
        assert bool(m(subject)) == expected


@pytest.mark.parametrize("kind", ["regex", "walk", "direct"])
def test_every_matcher_agrees_with_the_reference(monkeypatch, kind):
    """The one-regex matcher (Python >= 3.11), the segment walk (3.10) and the uncompiled
    walk (patterns over 1 KB) on the same seeded cases."""
    if kind == "regex" and not globmatch.ATOMIC_GROUPS:
        pytest.skip("Python < 3.11")
    monkeypatch.setattr(globmatch, "ATOMIC_GROUPS", kind == "regex")
    make = globmatch._direct if kind == "direct" else globmatch._compile
    rng = random.Random(7)
    for _ in range(4000):
        pattern = bytes(rng.choice(PATTERN_BYTES) for _ in range(rng.randrange(0, 10)))
        subject = bytes(rng.choice(SUBJECT_BYTES) for _ in range(rng.randrange(0, 10)))
        nocase = rng.random() < 0.3
        m = make(pattern, nocase)
        assert bool(m(subject)) == redis_stringmatchlen(pattern, subject, nocase), (
            pattern, subject, nocase)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=12), st.binary(max_size=12), st.booleans())
def test_matches_reference_on_any_bytes(pattern, subject, nocase):
    assert glob_match(pattern, subject, nocase) == redis_stringmatchlen(pattern, subject,
                                                                         nocase)


@pytest.mark.parametrize("pattern,subject,expected", [
    (b"*", b"", False), (b"**", b"", False), (b"", b"", True), (b"*", b"x", True),
    (b"[z-a]", b"m", True), (b"[a-\xff]", b"\xff", True), (b"[a-\xff]", b"\x80", False),
    (b"[a-\xff]", b"\x00", True), (b"[", b"x", False), (b"[^", b"x", True),
    (b"[abc", b"c", True), (b"[]a]", b"]a]", False), (b"[^]a]", b"xa]", True),
    (b"a\\", b"a\\", True), (b"\\*", b"*", True), (b"\\*", b"a", False),
    (b"[\\]]", b"]", True), (b"[a\\-z]", b"-", True), (b"[a\\-z]", b"m", False),
    (b"h?llo", b"h\nllo", True),
])
def test_redis_quirks(pattern, subject, expected):
    assert redis_stringmatchlen(pattern, subject) == expected   # the port says so too
    assert glob_match(pattern, subject) == expected


@pytest.mark.parametrize("pattern,subject,expected", [
    (b"HELLO", b"hello", True), (b"[A-Z]", b"q", True), (b"[Z-a]", b"Z", False),
    (b"[Z-a]", b"_", False), (b"[\\A]", b"a", False), (b"[A]", b"a", True),
    (b"MAXMEMORY*", b"maxmemory-policy", True),
])
def test_nocase_quirks(pattern, subject, expected):
    assert redis_stringmatchlen(pattern, subject, True) == expected
    assert glob_match(pattern, subject, nocase=True) == expected


def test_util_reexports_the_matcher():
    assert util_glob_match is glob_match


# ---- bounded time ----

class _TooSlow(Exception):
    pass


def _within(seconds, fn, *args):
    """Run fn; a hang guard (SIGALRM), not a timing assertion: the old matcher needs
    astronomically long on these inputs, the new one well under a second."""
    def on_alarm(signum, frame):
        raise _TooSlow()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("pattern", [
    b"a*" * 40 + b"b",                 # literal segments (the find walk)
    b"*a" * 40 + b"*b",
    b"?*" * 40 + b"b",                 # '?' segments (regex search)
    b"[a]*" * 40 + b"[b]",
    b"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b*",
])
def test_pathological_patterns_finish(pattern):
    subject = b"a" * 3000
    assert _within(60, glob_match, pattern, subject) is False
    assert _within(60, glob_match, pattern, subject + b"b") is True


def test_few_subjects_are_not_compiled(r2, monkeypatch):
    """SCAN COUNT 10 and small containers walk the pattern: a compile (25-450 us) would
    cost more than it saves.  (COMMAND LIST and CONFIG GET have ~200 names: compiled.)"""
    r2.mset({"k%d" % i: 1 for i in range(300)})
    r2.sadd("s", *range(20))
    monkeypatch.setattr(globmatch, "_compiled", {})

    def no_compile(*args, **kwargs):
        raise AssertionError("re.compile called for a handful of subjects")
    monkeypatch.setattr(globmatch.re, "compile", no_compile)
    cursor, keys = r2.scan(0, match="k1[0-9]", count=10)
    assert all(k.startswith(b"k1") for k in keys)
    assert sorted(r2.sscan("s", 0, match="1?")[1]) == [b"%d" % i for i in range(10, 20)]
    monkeypatch.undo()
    assert len(r2.keys("k1[0-9]")) == 10          # 300 keys: compiled
    assert (b"k1[0-9]", False) in globmatch._compiled


def test_pathological_long_pattern_uncompiled():
    pattern = b"a*" * 600 + b"b"            # over 1 KB: the uncompiled walk
    assert _within(60, glob_match, pattern, b"a" * 1000) is False
    assert _within(60, glob_match, pattern, b"a" * 1000 + b"b") is True


def test_pathological_keys_through_the_server(r2):
    r2.set(b"a" * 2000, b"v")
    r2.set(b"a" * 1999 + b"b", b"v")
    pattern = b"a*" * 50 + b"b"
    got = _within(60, r2.keys, pattern)
    assert got == [b"a" * 1999 + b"b"]
    cursor, found = _within(60, r2.scan, 0, pattern, 1000)
    assert found == [b"a" * 1999 + b"b"]
    r2.sadd("s", b"a" * 1500, b"a" * 1500 + b"b")
    assert _within(60, r2.sscan, "s", 0, pattern)[1] == [b"a" * 1500 + b"b"]


def test_huge_patterns_are_not_compiled(monkeypatch):
    """A 1 MB pattern would take ~10 s in re.compile; above 1 KB nothing is compiled."""
    def no_compile(*args, **kwargs):
        raise AssertionError("re.compile called for a long pattern")
    monkeypatch.setattr(globmatch.re, "compile", no_compile)
    pattern = b"[a-c]?x\\y*" * 100000       # 1 MB of classes, escapes and stars
    m = _within(60, glob_matcher, pattern)
    assert m(b"abc") is False and m(b"a" * 5000) is False
    assert m(b"bqxy" * 100000) is True
    long_literal = b"k" * 5000 + b"*"
    assert glob_matcher(long_literal)(b"k" * 6000) is True


# ---- differential: KEYS against redis-server ----

KEY_ALPHABET = b"abAB-]^\\*?[x\x80\xff"
PAT_ALPHABET = b"ab*?[]^-\\A\x80\xff"


@pytest.mark.needs_redis
def test_keys_matches_redis_server(server, redis_server):
    rng = random.Random(14)
    keys = sorted({bytes(rng.choice(KEY_ALPHABET) for _ in range(rng.randrange(0, 7)))
                   for _ in range(400)})
    ours = redis.Redis(port=server.port, protocol=2)
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        theirs.select(13)
        theirs.flushdb()
        common = (set(ours.execute_command("CONFIG", "GET", "*")[::2])
                  & set(theirs.execute_command("CONFIG", "GET", "*")[::2]))
        assert len(common) > 10
        for k in keys:
            ours.set(k, b"1")
            theirs.set(k, b"1")
        for _ in range(400):
            pattern = bytes(rng.choice(PAT_ALPHABET) for _ in range(rng.randrange(0, 8)))
            assert sorted(ours.keys(pattern)) == sorted(theirs.keys(pattern)), pattern
            a = set(ours.execute_command("CONFIG", "GET", pattern)[::2]) & common
            b = set(theirs.execute_command("CONFIG", "GET", pattern)[::2]) & common
            assert a == b, pattern
    finally:
        theirs.flushdb()
        ours.close()
        theirs.close()
