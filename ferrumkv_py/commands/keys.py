"""Generic key commands (Redis 7.0): DEL EXISTS TYPE RENAME COPY MOVE KEYS SCAN RANDOMKEY,
and the EXPIRE / TTL families (OBJECT and MEMORY live in ``introspection.py``).

Which lookup each command uses decides lazy expiry, LRU/LFU touch and the keyspace
hit/miss counters, exactly as Redis 7.0 does:

    lookup_read                 touch + stats      TOUCH, COPY (source)
    lookup_notouch(stats=True)  stats, no touch    EXISTS TYPE TTL* OBJECT, SCAN ... TYPE
    lookup_write / delete       touch, no stats    DEL EXPIRE* PERSIST RENAME MOVE
    data.get (no expiry)        nothing            MEMORY USAGE (Redis uses dbFind)
"""

from __future__ import annotations

import copy as _copy
import re

from .. import errors, memory
from ..errors import CommandError
from ..keyspace import RHash, RList, RSet
from ..notify import NOTIFY_GENERIC, NOTIFY_NEW
from ..registry import command
from ..resp import OK, Status
from ._util import LLONG_MAX, glob_matcher, parse_int

MS_PER_S = 1000
INT_MAX = 2 ** 31 - 1
ULONG_MAX = 2 ** 64 - 1
SCAN_DEFAULT_COUNT = 10


def _db_index(c, arg: bytes):
    """A DB argument (Redis getIntFromObjectOrReply + selectDb) -> the Database."""
    v = parse_int(arg)
    if not -INT_MAX - 1 <= v <= INT_MAX:
        raise CommandError(errors.INT_OUT_OF_RANGE)
    if not 0 <= v < len(c.ks.dbs):
        raise CommandError(errors.DB_INDEX_OUT_OF_RANGE)
    return c.ks.dbs[v]


def copy_value(value):
    """A private copy of a value for COPY, carrying its modelled ``mem``."""
    cls = value.__class__
    if cls is bytes:
        return value
    if cls is RList or cls is RHash or cls is RSet:
        new = cls(value)
    else:
        dup = getattr(value, "copy", None)
        new = dup() if dup is not None else _copy.deepcopy(value)
    new.mem = value.mem
    return new


# ---- DEL EXISTS TOUCH TYPE ----

def _delete(c, keys: list, lazy: bool) -> int:
    """DEL and UNLINK: delete ``keys``, a ``del`` event each; how many existed.
    ``lazy``: values of more than 64 elements are freed later by slices (lazyfree.py)."""
    db = c.db
    delete = db.delete
    notify = c.ks.notify
    n = 0
    for key in keys:
        if delete(key, lazy):
            notify(db, NOTIFY_GENERIC, b"del", key)
            n += 1
    return n


@command("del", -2, "write", first_key=1, last_key=-1)
def del_(c, argv):
    """DEL key [key ...]
    Deletes keys; returns how many existed (freed as UNLINK under lazyfree-lazy-user-del)."""
    return _delete(c, argv[1:], c.server.config["lazyfree-lazy-user-del"])


@command("unlink", -2, "write fast", first_key=1, last_key=-1)
def unlink(c, argv):
    """UNLINK key [key ...]
    Deletes keys; a value of more than 64 elements is freed later by slices (lazyfree.py);
    returns how many existed."""
    return _delete(c, argv[1:], True)


@command("exists", -2, "readonly fast", first_key=1, last_key=-1)
def exists(c, argv):
    """EXISTS key [key ...]
    Returns how many of the keys exist (a key named twice counts twice)."""
    lookup = c.db.lookup_notouch
    return sum(1 for key in argv[1:] if lookup(key, True) is not None)


@command("touch", -2, "readonly fast", first_key=1, last_key=-1)
def touch(c, argv):
    """TOUCH key [key ...]
    Updates the last access time of keys; returns how many exist."""
    lookup = c.db.lookup_read
    return sum(1 for key in argv[1:] if lookup(key) is not None)


@command("type", 2, "readonly fast", first_key=1)
def type_(c, argv):
    """TYPE key
    Returns the type of the value of a key (none when missing)."""
    e = c.db.lookup_notouch(argv[1], True)
    return Status(b"none" if e is None else memory.type_name(c.db.vals[e]).encode())


# ---- RENAME COPY MOVE ----

def _rename(c, argv, nx: bool):
    src, dst = argv[1], argv[2]
    db = c.db
    e = db.lookup_write(src)
    if e is None:
        raise CommandError(errors.NO_SUCH_KEY)
    if src == dst:
        return 0 if nx else OK
    old = db.lookup_write(dst)
    if old is not None:
        if nx:
            return 0
        db.unlink(old, c.ks.lazy_server_del)
    db.rename(e, dst)
    ks = c.ks
    ks.notify(db, NOTIFY_NEW, b"new", dst)    # Redis re-adds the value under dst (dbAdd)
    ks.notify(db, NOTIFY_GENERIC, b"rename_from", src)
    ks.notify(db, NOTIFY_GENERIC, b"rename_to", dst)
    return 1 if nx else OK


@command("rename", 3, "write", first_key=1, last_key=2)
def rename(c, argv):
    """RENAME key newkey
    Renames a key, overwriting the destination; the TTL moves with it."""
    return _rename(c, argv, False)


@command("renamenx", 3, "write fast", first_key=1, last_key=2)
def renamenx(c, argv):
    """RENAMENX key newkey
    Renames a key only when the new name does not exist; 1 if renamed."""
    return _rename(c, argv, True)


@command("copy", -3, "write denyoom", first_key=1, last_key=2)
def copy_(c, argv):
    """COPY source destination [DB destination-db] [REPLACE]
    Copies the value of a key (and its TTL) to a new key; 1 if copied."""
    db = dst = c.db
    replace = False
    j, n = 3, len(argv)
    while j < n:
        opt = argv[j].lower()
        if opt == b"replace":
            replace = True
        elif opt == b"db" and j + 1 < n:
            j += 1
            dst = _db_index(c, argv[j])
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    if dst is db and argv[1] == argv[2]:
        raise CommandError(errors.SAME_OBJECT)
    e = db.lookup_read(argv[1])
    if e is None:
        return 0
    old = dst.lookup_write(argv[2])
    if old is not None:
        if not replace:
            return 0
        dst.unlink(old, c.ks.lazy_server_del)
    ne = dst.add(argv[2], copy_value(db.vals[e]))
    if db.exp[e] > 0:
        dst.set_expire(ne, db.exp[e])
    c.ks.notify(dst, NOTIFY_GENERIC, b"copy_to", argv[2])
    return 1


@command("move", 3, "write fast", first_key=1)
def move(c, argv):
    """MOVE key db
    Moves a key (with its TTL) to another database; 1 if moved."""
    dst = _db_index(c, argv[2])
    db = c.db
    if dst is db:
        raise CommandError(errors.SAME_OBJECT)
    e = db.lookup_write(argv[1])
    if e is None or dst.lookup_write(argv[1]) is not None:
        return 0
    db.move_to(e, dst)
    c.ks.notify(db, NOTIFY_GENERIC, b"move_from", argv[1])
    c.ks.notify(dst, NOTIFY_GENERIC, b"move_to", argv[1])
    return 1


# ---- KEYS SCAN RANDOMKEY ----

@command("keys", 2, "readonly")
def keys(c, argv):
    """KEYS pattern
    Returns every key matching a glob pattern (expired keys are skipped, not deleted)."""
    now = c.ks.now_ms
    db = c.db
    match = glob_matcher(argv[1], subjects=len(db))
    items = db.items()
    exp = db.exp
    if match is None:
        return [k for k, s in items if not 0 < exp[s] < now]
    return [k for k, s in items if not 0 < exp[s] < now and match(k)]


_CURSOR = re.compile(rb"([+-]?)([0-9]+)\Z")


def parse_cursor(arg: bytes) -> int:
    """Redis parseScanCursorOrReply: strtoul base 10, no leading space, nothing after."""
    arg = arg.split(b"\0", 1)[0]
    if not arg:
        return 0
    m = _CURSOR.match(arg)
    if m is None:
        raise CommandError(errors.INVALID_CURSOR)
    v = int(m.group(2))
    if v > ULONG_MAX:
        raise CommandError(errors.INVALID_CURSOR)
    return (-v) & ULONG_MAX if m.group(1) == b"-" else v


@command("scan", -2, "readonly")
def scan(c, argv):
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
    Iterates the keys of the database a few at a time (see keyspace.Database.scan)."""
    cursor = parse_cursor(argv[1])
    count, pattern, typename = SCAN_DEFAULT_COUNT, None, None
    j, n = 2, len(argv)
    while j < n:
        opt = argv[j].lower()
        if n - j < 2 or opt not in (b"count", b"match", b"type"):
            raise CommandError(errors.SYNTAX)
        if opt == b"count":
            count = parse_int(argv[j + 1])
            if count < 1:
                raise CommandError(errors.SYNTAX)
        elif opt == b"match":
            pattern = argv[j + 1]
        else:
            typename = argv[j + 1].lower().decode("latin-1")
        j += 2
    db = c.db
    nxt, entries = db.scan(cursor, count)
    match = glob_matcher(pattern, subjects=len(entries)) if pattern is not None else None
    out = []
    for e in entries:
        key = db.keys[e]
        if match is not None and not match(key):
            continue
        if typename is not None:  # Redis looks the key up here, counting a hit or miss
            t = db.lookup_notouch(key, True)
            if (memory.type_name(db.vals[t]) if t is not None else "none") != typename:
                continue
            if t is None:         # Redis quirk: TYPE none returns a key it just expired
                out.append(key)
                continue
        if db.lookup_notouch(key) is not None:
            out.append(key)
    return [b"%d" % nxt, out]


@command("randomkey", 1, "readonly")
def randomkey(c, argv):
    """RANDOMKEY
    Returns a random key name (expired keys met on the way are deleted)."""
    return c.db.random_key()


# ---- EXPIRE family ----

_EXPIRE_OPTS = {b"nx": 1, b"xx": 2, b"gt": 4, b"lt": 8}
E_NX, E_XX, E_GT, E_LT = 1, 2, 4, 8


def _expire(c, argv, unit_ms: int, relative: bool, name: str):
    """Redis expireGenericCommand: options, overflow checks, NX/XX/GT/LT, past deadline."""
    flags = 0
    for opt in argv[3:]:
        f = _EXPIRE_OPTS.get(opt.lower())
        if f is None:
            raise CommandError(errors.UNSUPPORTED_OPTION % opt.split(b"\0", 1)[0].decode(
                "utf-8", "replace"))
        flags |= f
    if flags & E_NX and flags & (E_XX | E_GT | E_LT):
        raise CommandError(errors.EXPIRE_NX_CONFLICT)
    if flags & E_GT and flags & E_LT:
        raise CommandError(errors.EXPIRE_GT_LT_CONFLICT)
    when = parse_int(argv[2])
    if unit_ms != 1 and not -(LLONG_MAX // unit_ms) <= when <= LLONG_MAX // unit_ms:
        raise CommandError(errors.INVALID_EXPIRE % name)
    when *= unit_ms
    base = c.ks.now_ms if relative else 0
    if when > LLONG_MAX - base:
        raise CommandError(errors.INVALID_EXPIRE % name)
    when += base
    db = c.db
    e = db.lookup_write(argv[1])
    if e is None:
        return 0
    if flags:
        current = db.exp[e] if db.exp[e] > 0 else -1
        if (flags & E_NX and current != -1) or (flags & E_XX and current == -1) or \
                (flags & E_GT and (current == -1 or when <= current)) or \
                (flags & E_LT and current != -1 and when >= current):
            return 0
    if when <= c.ks.now_ms:
        db.unlink(e)              # a deadline in the past deletes (a DEL, not an expiry)
        c.ks.notify(db, NOTIFY_GENERIC, b"del", argv[1])
    else:
        db.set_expire(e, when)
        c.ks.notify(db, NOTIFY_GENERIC, b"expire", argv[1])
    return 1


@command("expire", -3, "write fast", first_key=1)
def expire(c, argv):
    """EXPIRE key seconds [NX|XX|GT|LT]
    Sets a key's time to live in seconds; 1 if set (a past deadline deletes the key)."""
    return _expire(c, argv, MS_PER_S, True, "expire")


@command("pexpire", -3, "write fast", first_key=1)
def pexpire(c, argv):
    """PEXPIRE key milliseconds [NX|XX|GT|LT]
    Sets a key's time to live in milliseconds; 1 if set."""
    return _expire(c, argv, 1, True, "pexpire")


@command("expireat", -3, "write fast", first_key=1)
def expireat(c, argv):
    """EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
    Sets a key's deadline as a Unix time in seconds; 1 if set."""
    return _expire(c, argv, MS_PER_S, False, "expireat")


@command("pexpireat", -3, "write fast", first_key=1)
def pexpireat(c, argv):
    """PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
    Sets a key's deadline as a Unix time in milliseconds; 1 if set."""
    return _expire(c, argv, 1, False, "pexpireat")


def _ttl(c, argv, in_ms: bool, absolute: bool) -> int:
    """Redis ttlGenericCommand: -2 missing, -1 no TTL; seconds round to nearest."""
    e = c.db.lookup_notouch(argv[1], True)
    if e is None:
        return -2
    if c.db.exp[e] <= 0:
        return -1
    ttl = max(c.db.exp[e] if absolute else c.db.exp[e] - c.ks.now_ms, 0)
    return ttl if in_ms else (ttl + MS_PER_S // 2) // MS_PER_S


@command("ttl", 2, "readonly fast", first_key=1)
def ttl(c, argv):
    """TTL key
    Returns the time to live of a key in seconds (-1 none, -2 missing)."""
    return _ttl(c, argv, False, False)


@command("pttl", 2, "readonly fast", first_key=1)
def pttl(c, argv):
    """PTTL key
    Returns the time to live of a key in milliseconds (-1 none, -2 missing)."""
    return _ttl(c, argv, True, False)


@command("expiretime", 2, "readonly fast", first_key=1)
def expiretime(c, argv):
    """EXPIRETIME key
    Returns the deadline of a key as a Unix time in seconds (-1 none, -2 missing)."""
    return _ttl(c, argv, False, True)


@command("pexpiretime", 2, "readonly fast", first_key=1)
def pexpiretime(c, argv):
    """PEXPIRETIME key
    Returns the deadline of a key as a Unix time in milliseconds (-1 none, -2 missing)."""
    return _ttl(c, argv, True, True)


@command("persist", 2, "write fast", first_key=1)
def persist(c, argv):
    """PERSIST key
    Removes the time to live of a key; 1 if it had one."""
    e = c.db.lookup_write(argv[1])
    if e is not None and c.db.persist(e):
        c.ks.notify(c.db, NOTIFY_GENERIC, b"persist", argv[1])
        return 1
    return 0
