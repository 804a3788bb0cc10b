"""Introspection of single keys: OBJECT (ENCODING FREQ IDLETIME REFCOUNT HELP) and MEMORY.

OBJECT looks keys up with ``lookup_notouch(stats=True)`` (counted as a hit or miss, no
LRU/LFU touch, as Redis's LOOKUP_NOTOUCH); MEMORY USAGE uses the dict directly (Redis's
dbFind: no expiry, no stats) and answers with the memory model of ``memory.py``.
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError
from ..registry import command
from ..resp import Status
from ._util import LLONG_MAX, parse_int

MS_PER_S = 1000
SHARED_REFCOUNT = 2147483647     # OBJECT REFCOUNT of Redis's shared integers
OBJ_SHARED_INTEGERS = 10000      # integers 0..9999 are shared objects in Redis
EMBSTR_SIZE_LIMIT = 44           # bytes: longer strings are "raw"
LONG_STR_SIZE = 20               # bytes: longer strings are never "int"
# Encoding thresholds, Redis 7.0.15 defaults (read from CONFIG when the table has them)
ENCODING_DEFAULTS = {"hash-max-listpack-entries": 512, "hash-max-listpack-value": 64,
                     "set-max-intset-entries": 512, "zset-max-listpack-entries": 128,
                     "zset-max-listpack-value": 64}


# ---- OBJECT and MEMORY ----

def _is_ll(b: bytes) -> bool:
    """Redis string2ll acceptance: what a shared / "int" / intset value looks like."""
    if not b or len(b) > LONG_STR_SIZE:
        return False
    neg = b[:1] == b"-"
    s = b[1:] if neg else b
    if not s.isdigit() or (s[:1] == b"0" and (len(s) > 1 or neg)):
        return False
    return -LLONG_MAX - 1 <= int(b) <= LLONG_MAX


def _conf(c, name: str) -> int:
    try:
        return c.server.config[name]
    except KeyError:
        return ENCODING_DEFAULTS[name]


def value_encoding(c, value) -> bytes:
    """OBJECT ENCODING: the value's own ``encoding`` when it tracks one (ZSet), else
    inferred from the content with Redis 7.0's thresholds (a hash or set that shrank back
    under them reports the small encoding, where Redis never converts back).

    Complexity: O(1) for strings and lists, O(n) up to the container's threshold otherwise.
    """
    if value.__class__ is bytes:
        if _is_ll(value):
            return b"int"
        return b"embstr" if len(value) <= EMBSTR_SIZE_LIMIT else b"raw"
    kind = memory.type_name(value)
    if kind == "list":
        return b"quicklist"
    if kind == "stream":
        return b"stream"
    if kind == "hash":
        maxv = _conf(c, "hash-max-listpack-value")
        small = len(value) <= _conf(c, "hash-max-listpack-entries") and all(
            len(f) <= maxv and len(v) <= maxv for f, v in value.items())
        return b"listpack" if small else b"hashtable"
    if kind == "set":
        small = len(value) <= _conf(c, "set-max-intset-entries") and all(map(_is_ll, value))
        return b"intset" if small else b"hashtable"
    tracked = getattr(value, "encoding", None)   # ZSet keeps Redis's one-way switch
    if tracked is not None:
        return tracked.encode()
    maxv = _conf(c, "zset-max-listpack-value")
    small = len(value) <= _conf(c, "zset-max-listpack-entries") and all(
        len(m) <= maxv for m in value.members())
    return b"listpack" if small else b"skiplist"


def _tracked(c, what: str) -> bool:
    """Does the eviction layer keep the LFU counter ("freq") / access time ("idle")?

    Redis: FREQ only under an LFU policy, IDLETIME under any other.  The Evictor says so
    with ``freq_tracked`` / ``idle_tracked`` (AHE keeps both); without those, the policy kind.
    """
    evictor = c.server.evictor
    tracked = getattr(evictor, what + "_tracked", None)
    if tracked is not None:
        return tracked
    kind = getattr(evictor, "policy_kind", None) or \
        c.server.config["maxmemory-policy"].rpartition("-")[2]
    return (kind == "lfu") == (what == "freq")


def _object_entry(c, argv):
    return c.db.lookup_notouch(argv[2], True)


@command("object", -2, "", group="generic")
def object_(c, argv):
    """OBJECT subcommand [arguments ...]
    Inspects the internals of a key's value."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (argv[1].decode("utf-8", "replace"),
                                                   "OBJECT"))


@command("encoding", 3, "readonly", first_key=2, parent="object")
def object_encoding(c, argv):
    """OBJECT ENCODING key
    Returns the internal encoding Redis would use for the key's value."""
    e = _object_entry(c, argv)
    return None if e is None else value_encoding(c, c.db.vals[e])


@command("freq", 3, "readonly", first_key=2, parent="object")
def object_freq(c, argv):
    """OBJECT FREQ key
    Returns the logarithmic access frequency counter of a key (LFU policies only)."""
    e = _object_entry(c, argv)
    if e is None:
        return None
    if not _tracked(c, "freq"):
        raise CommandError(errors.LFU_NOT_SELECTED)
    freq = getattr(c.server.evictor, "object_freq", None)
    return freq(c.db, e) if freq is not None else c.db.lfu[e]


@command("idletime", 3, "readonly", first_key=2, parent="object")
def object_idletime(c, argv):
    """OBJECT IDLETIME key
    Returns the seconds since the last access to a key (not under LFU policies)."""
    e = _object_entry(c, argv)
    if e is None:
        return None
    if not _tracked(c, "idle"):
        raise CommandError(errors.LFU_SELECTED)
    return max(c.ks.now_ms - c.db.lru[e], 0) // MS_PER_S


@command("refcount", 3, "readonly", first_key=2, parent="object")
def object_refcount(c, argv):
    """OBJECT REFCOUNT key
    Returns the reference count of a key's value (shared small integers report INT_MAX)."""
    e = _object_entry(c, argv)
    if e is None:
        return None
    v = c.db.vals[e]
    if v.__class__ is bytes and _is_ll(v) and 0 <= int(v) < OBJ_SHARED_INTEGERS:
        policy = c.server.config["maxmemory-policy"]
        if not c.server.maxmemory or not policy.endswith(("-lru", "-lfu")):
            return SHARED_REFCOUNT
    return 1


@command("help", 2, "loading stale", parent="object")
def object_help(c, argv):
    """OBJECT HELP
    Lists the OBJECT subcommands."""
    return [Status(s.encode()) for s in (
        "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ENCODING <key>",
        "    Return the kind of internal representation used in order to store the value",
        "    associated with a <key>.",
        "FREQ <key>",
        "    Return the access frequency index of the <key>. The returned integer is",
        "    proportional to the logarithm of the recent access frequency of the key.",
        "IDLETIME <key>",
        "    Return the idle time of the <key>, that is the approximated number of",
        "    seconds elapsed since the last access to the key.",
        "REFCOUNT <key>",
        "    Return the number of references of the value associated with the specified",
        "    <key>.",
        "HELP",
        "    Prints this help.")]


@command("memory", -2, "", group="server")
def memory_(c, argv):
    """MEMORY subcommand [arguments ...]
    Reports on the memory the server uses."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (argv[1].decode("utf-8", "replace"),
                                                   "MEMORY"))


@command("usage", -3, "readonly", first_key=2, parent="memory")
def memory_usage(c, argv):
    """MEMORY USAGE key [SAMPLES count]
    Returns the modelled bytes of a key, its value and its TTL (memory.py)."""
    j = 3
    while j < len(argv):
        if argv[j].lower() != b"samples" or j + 1 >= len(argv):
            raise CommandError(errors.SYNTAX)
        if parse_int(argv[j + 1]) < 0:
            raise CommandError(errors.SYNTAX)
        j += 2
    db = c.db
    e = db.find(argv[2])
    if e is None:
        return None
    return memory.entry_cost(argv[2], db.vals[e]) + (memory.EXPIRE_COST if db.exp[e] else 0)


@command("help", 2, "loading stale", parent="memory")
def memory_help(c, argv):
    """MEMORY HELP
    Lists the MEMORY subcommands."""
    return [Status(s.encode()) for s in (
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help.")]
