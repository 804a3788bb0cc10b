"""DUMP, RESTORE and RESTORE-ASKING: values in Redis 7.0's serialization (``rdb.py``).

RESTORE checks in Redis 7.0's order, each failure leaving the keyspace as it was: options
(``IDLETIME`` and ``FREQ`` exclude each other: the second is a syntax error), then an
existing key without REPLACE (``BUSYKEY``), the TTL, the payload's version and checksum,
and the value itself (``Bad data format``).  Only then is an old key replaced.  A TTL whose
deadline has passed (an ABSTTL in the past, or a relative TTL that overflows, as Redis's
64-bit sum wraps negative) answers OK and creates nothing (with REPLACE the old key is
still removed, publishing ``del``).  A restored key publishes ``new`` then ``restore``.

IDLETIME and FREQ set the restored key's access metadata through the keyspace
(``Database.set_access``): FREQ under a policy that keeps the LFU counter, IDLETIME under one
that keeps access times (both under AHE), else they are ignored, as Redis ignores them.
Redis keeps the access time on a 24-bit seconds clock, so an IDLETIME beyond it wraps;
:func:`redis_idle_s` reproduces what OBJECT IDLETIME then shows.
"""

from __future__ import annotations

from .. import errors
from ..first_use import Kernels, gate_commands
from ..lazy import LazyModule
from ..errors import CommandError
from ..notify import NOTIFY_GENERIC
from ..registry import command
from ..resp import OK
from .introspection import _tracked, value_encoding
from ._stored import drop
from ._util import parse_int

rdb = LazyModule("ferrumkv_py.rdb")      # its LZF / list kernels load at the first DUMP

MS_PER_S = 1000
LRU_CLOCK_MAX = (1 << 24) - 1     # Redis's LRU clock: 24 bits of seconds
LRU_BITS_MASK = (1 << 24) - 1     # the robj lru bitfield keeps 24 bits
LFU_FREQ_MAX = 255
_2_63, _2_64 = 1 << 63, 1 << 64


def _c_int64(v: int) -> int:
    """``v`` wrapped to a C signed 64-bit integer (Redis's overflowing arithmetic)."""
    return (v + _2_63) % _2_64 - _2_63


def redis_idle_s(idle_s: int, now_ms: int) -> int:
    """The OBJECT IDLETIME Redis 7.0 reports right after ``RESTORE ... IDLETIME idle_s``.

    Redis computes ``lru = clock - idle*1000/1000`` (64-bit, wrapping), adds LRU_CLOCK_MAX
    once if negative, keeps 24 bits, and measures idle time back on the wrapping clock::

        idle < clock seconds        -> idle                 (the normal case)
        idle = 2**24 - 1            -> 0,   2**24 -> 1
        idle = 2**63 - 1            -> 16777214 (idle*1000 overflows to -1000)

    Complexity: O(1).
    """
    clock = (now_ms // MS_PER_S) & LRU_CLOCK_MAX
    scaled = _c_int64(idle_s * MS_PER_S)
    scaled = -(-scaled // MS_PER_S) if scaled < 0 else scaled // MS_PER_S   # C division
    lru_abs = clock - scaled
    if lru_abs < 0:
        lru_abs += LRU_CLOCK_MAX
    lru = lru_abs & LRU_BITS_MASK
    return clock - lru if clock >= lru else clock + (LRU_CLOCK_MAX - lru)


@command("dump", 2, "readonly", first_key=1)
def dump(c, argv):
    """DUMP key
    Returns a serialized value of the key in Redis 7.0's format (nil when missing)."""
    e = c.db.lookup_read(argv[1])
    if e is None:
        return None
    return rdb.dump(c.db.vals[e], value_encoding(c, c.db.vals[e]).decode())


def _options(argv) -> tuple:
    """(replace, absttl, idle_s, freq) from RESTORE's options; -1 = not given."""
    replace = absttl = False
    idle = freq = -1
    j, n = 4, len(argv)
    while j < n:
        opt = argv[j].lower()
        more = n - j - 1
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more >= 1 and freq == -1:
            idle = parse_int(argv[j + 1])
            if idle < 0:
                raise CommandError(errors.INVALID_IDLETIME)
            j += 1
        elif opt == b"freq" and more >= 1 and idle == -1:
            freq = parse_int(argv[j + 1])
            if not 0 <= freq <= LFU_FREQ_MAX:
                raise CommandError(errors.INVALID_FREQ)
            j += 1
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    return replace, absttl, idle, freq


def _restore(c, argv):
    replace, absttl, idle, freq = _options(argv)
    key, db = argv[1], c.db
    if not replace and db.lookup_write(key) is not None:
        raise CommandError(errors.BUSYKEY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise CommandError(errors.INVALID_TTL)
    payload = argv[3]
    if not rdb.verify(payload):
        raise CommandError(errors.DUMP_PAYLOAD_WRONG)
    try:
        value = rdb.load(payload)
    except rdb.RdbError:
        raise CommandError(errors.BAD_DATA_FORMAT) from None
    # Redis's dbDelete: an old key past its TTL is removed without an "expired" event
    deleted = replace and drop(db, key)
    now = c.ks.now_ms
    if ttl and not absttl:
        ttl = _c_int64(ttl + now)
    if ttl and ttl <= now:
        if deleted:               # already expired: nothing is created, the old key is gone
            c.ks.notify(db, NOTIFY_GENERIC, b"del", key)
        return OK
    e = db.add(key, value)        # publishes "new"
    if ttl:
        db.set_expire(e, ttl)     # no "expire" event: Redis publishes only "restore"
    if freq >= 0 and _tracked(c, "freq"):
        db.set_access(e, now, freq)
    elif idle >= 0 and _tracked(c, "idle"):
        db.set_access(e, now - redis_idle_s(idle, now) * MS_PER_S)
    c.ks.notify(db, NOTIFY_GENERIC, b"restore", key)
    return OK


@command("restore", -4, "write denyoom", first_key=1)
def restore(c, argv):
    """RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
    Creates a key from a DUMP payload, with a TTL in milliseconds (0 = none)."""
    return _restore(c, argv)


@command("restore-asking", -4, "write denyoom asking", first_key=1)
def restore_asking(c, argv):
    """RESTORE-ASKING key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]
    RESTORE for cluster slot migration; without cluster mode it is RESTORE."""
    return _restore(c, argv)


# ---- first use (first_use.py): the kernels load on a thread while only the caller waits ----

KERNELS = Kernels("dump", ("ferrumkv_py.rdb",))
gate_commands(KERNELS, ['dump', 'restore', 'restore-asking'])
