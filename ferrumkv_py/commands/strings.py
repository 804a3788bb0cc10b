"""String commands: GET/SET and their variants, counters, APPEND and ranges (Redis 7.0).

Values are ``bytes``; counters are stored as their decimal text, as Redis replies with them.
Keyspace hits/misses follow Redis: the read lookups (GET, MGET, GETEX, GETDEL, GETSET,
``SET ... GET``, STRLEN, GETRANGE) count, the write lookups (SET, INCR, APPEND...) do not.

GET and plain ``SET key value`` are the hottest code in the server: they do one keyspace
call and no option parsing (options are parsed only when ``len(argv) > 3``).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError, WrongTypeError
from ..notify import NOTIFY_GENERIC, NOTIFY_STRING
from ..registry import command
from ..resp import OK
from ._util import (LD_INF, LLONG_MAX, LLONG_MIN, format_long_double_human, long_double_add,
                   parse_int, parse_long_double)

MS_PER_S = 1000

# SET / GETEX option flags (Redis OBJ_SET_* bits)
NX, XX, GET_, KEEPTTL, PERSIST, EX, PX, EXAT, PXAT = (1 << i for i in range(9))
_EXPIRE_FLAGS = EX | PX | EXAT | PXAT
_RELATIVE = EX | PX
_SECONDS = EX | EXAT
# option -> (flag, flags it may not be combined with, takes a value, allowed in SET / GETEX)
_OPTIONS = {
    b"nx": (NX, XX, False, True, False),
    b"xx": (XX, NX, False, True, False),
    b"get": (GET_, 0, False, True, False),
    b"keepttl": (KEEPTTL, PERSIST | _EXPIRE_FLAGS, False, True, False),
    b"persist": (PERSIST, KEEPTTL | _EXPIRE_FLAGS, False, False, True),
    b"ex": (EX, KEEPTTL | PERSIST | EXAT | PX | PXAT, True, True, True),
    b"px": (PX, KEEPTTL | PERSIST | EX | EXAT | PXAT, True, True, True),
    b"exat": (EXAT, KEEPTTL | PERSIST | EX | PX | PXAT, True, True, True),
    b"pxat": (PXAT, KEEPTTL | PERSIST | EX | EXAT | PX, True, True, True),
}


def _parse_options(argv: list, start: int, for_set: bool) -> tuple:
    """Redis parseExtendedStringArgumentsOrReply: returns (flags, expire argument).

    A repeated option is allowed (the last value wins); conflicting ones, an option that
    misses its value or one the command does not know are a syntax error.
    """
    flags = 0
    expire = None
    j, n = start, len(argv)
    while j < n:
        spec = _OPTIONS.get(argv[j].lower())
        if spec is None:
            raise CommandError(errors.SYNTAX)
        flag, conflicts, has_value, in_set, in_getex = spec
        if (flags & conflicts) or not (in_set if for_set else in_getex) or \
                (has_value and j + 1 >= n):
            raise CommandError(errors.SYNTAX)
        flags |= flag
        if has_value:
            j += 1
            expire = argv[j]
        j += 1
    return flags, expire


def expire_deadline_ms(c, arg: bytes, flags: int, name: str) -> int:
    """Redis getExpireMillisecondsOrReply: the absolute deadline in ms of EX/PX/EXAT/PXAT."""
    v = parse_int(arg)
    if v <= 0 or (flags & _SECONDS and v > LLONG_MAX // MS_PER_S):
        raise CommandError(errors.INVALID_EXPIRE % name)
    if flags & _SECONDS:
        v *= MS_PER_S
    if flags & _RELATIVE:
        v += c.ks.now_ms
        if v > LLONG_MAX:           # the C addition would wrap to a negative number
            raise CommandError(errors.INVALID_EXPIRE % name)
    return v


def _get_string(c, key: bytes):
    """Redis getGenericCommand: (entry or None) after a counted read lookup."""
    e = c.db.lookup_read(key)
    if e is not None and c.db.vals[e].__class__ is not bytes:
        raise WrongTypeError()
    return e


# ---- GET / SET family ----

@command("get", 2, "readonly fast", first_key=1, group="string")
def get(c, argv):
    """GET key
    Returns the string value of a key."""
    v = c.db.lookup_value(argv[1])     # the dispatcher's inline path does the same (client.py)
    if v.__class__ is bytes or v is None:
        return v
    raise WrongTypeError()


@command("set", -3, "write denyoom", first_key=1, group="string")
def set_(c, argv):
    """SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]
    Sets the string value of a key, ignoring its type; the key is created if missing."""
    if len(argv) == 3:
        c.db.set(argv[1], argv[2])
        if c.ks.notify_flags:
            c.ks.notify(c.db, NOTIFY_STRING, b"set", argv[1])
        return OK
    flags, expire = _parse_options(argv, 3, True)
    return _set_generic(c, argv[1], argv[2], flags, expire, "set")


def _set_generic(c, key, value, flags, expire, name, ok=OK, aborted=None):
    """Redis setGenericCommand: validate the deadline, GET, NX/XX, store, set the TTL."""
    when = expire_deadline_ms(c, expire, flags, name) if expire is not None else 0
    old = None
    if flags & GET_:
        e = _get_string(c, key)
        old = c.db.vals[e] if e is not None else None
    db = c.db
    found = db.lookup_write(key) is not None
    if (flags & NX and found) or (flags & XX and not found):
        return old if flags & GET_ else aborted
    e = db.set(key, value, keep_ttl=bool(flags & KEEPTTL))
    ks = c.ks
    ks.notify(db, NOTIFY_STRING, b"set", key)
    if when:
        db.set_expire(e, when)
        ks.notify(db, NOTIFY_GENERIC, b"expire", key)
    return old if flags & GET_ else ok


@command("setnx", 3, "write denyoom fast", first_key=1, group="string")
def setnx(c, argv):
    """SETNX key value
    Sets the value of a key only when the key does not exist; 1 if it was set."""
    return _set_generic(c, argv[1], argv[2], NX, None, "setnx", 1, 0)


@command("setex", 4, "write denyoom", first_key=1, group="string")
def setex(c, argv):
    """SETEX key seconds value
    Sets the value and the time to live in seconds of a key."""
    return _set_generic(c, argv[1], argv[3], EX, argv[2], "setex")


@command("psetex", 4, "write denyoom", first_key=1, group="string")
def psetex(c, argv):
    """PSETEX key milliseconds value
    Sets the value and the time to live in milliseconds of a key."""
    return _set_generic(c, argv[1], argv[3], PX, argv[2], "psetex")


@command("getex", -2, "write fast", first_key=1, group="string")
def getex(c, argv):
    """GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|PERSIST]
    Returns the string value of a key after changing its expiration."""
    flags, expire = _parse_options(argv, 2, False)
    e = _get_string(c, argv[1])
    if e is None:
        return None
    value = c.db.vals[e]
    db = c.db
    if expire is not None:
        when = expire_deadline_ms(c, expire, flags, "getex")
        if flags & (EXAT | PXAT) and when <= c.ks.now_ms:
            db.unlink(e)            # an absolute deadline already past: deleted, not expired
            c.ks.notify(db, NOTIFY_GENERIC, b"del", argv[1])
        else:
            db.set_expire(e, when)
            c.ks.notify(db, NOTIFY_GENERIC, b"expire", argv[1])
    elif flags & PERSIST:
        if db.persist(e):
            c.ks.notify(db, NOTIFY_GENERIC, b"persist", argv[1])
    return value


@command("getdel", 2, "write fast", first_key=1, group="string")
def getdel(c, argv):
    """GETDEL key
    Returns the string value of a key after deleting the key."""
    e = _get_string(c, argv[1])
    if e is None:
        return None
    value = c.db.vals[e]
    c.db.unlink(e)
    c.ks.notify(c.db, NOTIFY_GENERIC, b"del", argv[1])
    return value


@command("getset", 3, "write denyoom fast", first_key=1, group="string")
def getset(c, argv):
    """GETSET key value
    Returns the previous string value of a key after setting it to a new value."""
    e = _get_string(c, argv[1])
    old = c.db.vals[e] if e is not None else None
    c.db.set(argv[1], argv[2])
    c.ks.notify(c.db, NOTIFY_STRING, b"set", argv[1])
    return old


@command("mget", -2, "readonly fast", first_key=1, last_key=-1, group="string")
def mget(c, argv):
    """MGET key [key ...]
    Returns the string values of the keys (null for missing or non-string keys)."""
    lookup = c.db.lookup_value
    out = []
    for key in argv[1:]:
        v = lookup(key)
        out.append(v if v.__class__ is bytes else None)
    return out


@command("mset", -3, "write denyoom", first_key=1, last_key=-1, step=2, group="string")
def mset(c, argv):
    """MSET key value [key value ...]
    Sets the string values of multiple keys, dropping their TTLs."""
    if len(argv) % 2 == 0:
        raise CommandError(errors.WRONG_ARGS % "mset")
    dbset = c.db.set
    notify = c.ks.notify
    for j in range(1, len(argv), 2):
        dbset(argv[j], argv[j + 1])
        notify(c.db, NOTIFY_STRING, b"set", argv[j])
    return OK


@command("msetnx", -3, "write denyoom", first_key=1, last_key=-1, step=2, group="string")
def msetnx(c, argv):
    """MSETNX key value [key value ...]
    Sets multiple keys only when none of them exists; 1 if they were set."""
    if len(argv) % 2 == 0:
        raise CommandError(errors.WRONG_ARGS % "msetnx")
    db = c.db
    for j in range(1, len(argv), 2):
        if db.lookup_write(argv[j]) is not None:
            return 0
    for j in range(1, len(argv), 2):
        db.set(argv[j], argv[j + 1])
        c.ks.notify(db, NOTIFY_STRING, b"set", argv[j])
    return 1


# ---- counters ----

def _incr(c, key: bytes, incr: int) -> int:
    """Redis incrDecrCommand: add to the integer in a string, keeping the TTL."""
    db = c.db
    e = db.lookup_write(key)
    if e is None:
        db.add(key, b"%d" % incr)
        c.ks.notify(db, NOTIFY_STRING, b"incrby", key)
        return incr
    v = db.vals[e]
    if v.__class__ is not bytes:
        raise WrongTypeError()
    old = parse_int(v)
    new = old + incr
    if new > LLONG_MAX or new < LLONG_MIN:
        raise CommandError(errors.OVERFLOW)
    db.set_value(e, b"%d" % new)
    c.ks.notify(db, NOTIFY_STRING, b"incrby", key)
    return new


def _incr_fast(c, key: bytes, incr: int):
    """INCR / DECR by one, inline: the new key, and the existing string of 1-18 canonical
    digits without a TTL (what redis-benchmark's INCR meets); None = take :func:`_incr`.

    Does what ``_incr`` does with Database.lookup_write / add / set_value and parse_int
    folded in (no side effect before it decides, so the fallback sees the same keyspace).
    Bumping <= 18 digits by one cannot leave int64.
    """
    db = c.db
    e = db.find(key)
    if e is None:
        db.add(key, b"%d" % incr)
        if db.ks.notify_flags:
            db.ks.notify(db, NOTIFY_STRING, b"incrby", key)
        return incr
    vals = db.vals
    v = vals[e]
    if db.exp[e] or v.__class__ is not bytes or not v.isdigit() or len(v) > 18 \
            or (v[0] == 48 and len(v) > 1):
        return None
    db.touch(e)
    ks = db.ks
    new = int(v) + incr
    nv = b"%d" % new
    ks.used_memory += len(nv) - len(v)     # set_value()'s accounting, inline
    vals[e] = nv
    if ks.watched:
        ks.signal(db, key)
    if ks.notify_flags:
        ks.notify(db, NOTIFY_STRING, b"incrby", key)
    return new


@command("incr", 2, "write denyoom fast", first_key=1, group="string")
def incr(c, argv):
    """INCR key
    Increments the integer value of a key by one (a missing key counts as 0)."""
    # _incr_fast: INCR -P 16 344 -> 306 opcodes/command, 1.96 -> ~1.75 us (half
    # the keys are new there, and Database.add is most of the rest), bench/command_cost.py
    r = _incr_fast(c, argv[1], 1)
    return _incr(c, argv[1], 1) if r is None else r


@command("decr", 2, "write denyoom fast", first_key=1, group="string")
def decr(c, argv):
    """DECR key
    Decrements the integer value of a key by one (a missing key counts as 0)."""
    r = _incr_fast(c, argv[1], -1)
    return _incr(c, argv[1], -1) if r is None else r


@command("incrby", 3, "write denyoom fast", first_key=1, group="string")
def incrby(c, argv):
    """INCRBY key increment
    Increments the integer value of a key by a number."""
    return _incr(c, argv[1], parse_int(argv[2]))


@command("decrby", 3, "write denyoom fast", first_key=1, group="string")
def decrby(c, argv):
    """DECRBY key decrement
    Decrements the integer value of a key by a number."""
    by = parse_int(argv[2])
    if by == LLONG_MIN:
        raise CommandError(errors.DECR_OVERFLOW)
    return _incr(c, argv[1], -by)


@command("incrbyfloat", 3, "write denyoom fast", first_key=1, group="string")
def incrbyfloat(c, argv):
    """INCRBYFLOAT key increment
    Increments the floating point value of a key, in long double precision as Redis."""
    db = c.db
    e = db.lookup_write(argv[1])
    if e is not None and db.vals[e].__class__ is not bytes:
        raise WrongTypeError()
    value = parse_long_double(db.vals[e]) if e is not None else (0, 0)
    total = long_double_add(value, parse_long_double(argv[2]))
    if total is LD_INF:
        raise CommandError(errors.INCR_FLOAT_NAN)
    text = format_long_double_human(total)
    if e is None:
        db.add(argv[1], text)
    else:
        db.set_value(e, text)
    c.ks.notify(db, NOTIFY_STRING, b"incrbyfloat", argv[1])
    return text


# ---- APPEND, STRLEN, ranges ----

def _check_length(c, total: int) -> None:
    if total > c.server.config["proto-max-bulk-len"]:
        raise CommandError(errors.STRING_TOO_LONG)


@command("append", 3, "write denyoom fast", first_key=1, group="string")
def append(c, argv):
    """APPEND key value
    Appends a string to the value of a key (creating it); returns the new length."""
    db = c.db
    e = db.lookup_write(argv[1])
    if e is None:
        db.add(argv[1], argv[2])
        c.ks.notify(db, NOTIFY_STRING, b"append", argv[1])
        return len(argv[2])
    if db.vals[e].__class__ is not bytes:
        raise WrongTypeError()
    _check_length(c, len(db.vals[e]) + len(argv[2]))
    db.set_value(e, db.vals[e] + argv[2])
    c.ks.notify(db, NOTIFY_STRING, b"append", argv[1])
    return len(db.vals[e])


@command("strlen", 2, "readonly fast", first_key=1, group="string")
def strlen(c, argv):
    """STRLEN key
    Returns the length of a string value (0 for a missing key)."""
    e = _get_string(c, argv[1])
    return len(c.db.vals[e]) if e is not None else 0


@command("getrange", 4, "readonly", first_key=1, group="string")
def getrange(c, argv):
    """GETRANGE key start end
    Returns a substring of a string value; negative offsets count from the end."""
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    e = _get_string(c, argv[1])
    if e is None:
        return b""
    s = c.db.vals[e]
    n = len(s)
    if start < 0 and end < 0 and start > end:
        return b""
    if start < 0:
        start = max(n + start, 0)
    if end < 0:
        end = max(n + end, 0)
    end = min(end, n - 1)
    if start > end or n == 0:
        return b""
    return s[start:end + 1]


@command("substr", 4, "readonly", first_key=1, group="string")
def substr(c, argv):
    """SUBSTR key start end
    Returns a substring of a string value (the old name of GETRANGE)."""
    return getrange(c, argv)


@command("setrange", 4, "write denyoom", first_key=1, group="string")
def setrange(c, argv):
    """SETRANGE key offset value
    Overwrites part of a string value at an offset, zero-padding; returns the new length."""
    offset = parse_int(argv[2])
    if offset < 0:
        raise CommandError(errors.OFFSET_OUT_OF_RANGE)
    value = argv[3]
    db = c.db
    e = db.lookup_write(argv[1])
    if e is None:
        if not value:
            return 0
        _check_length(c, offset + len(value))
        db.add(argv[1], bytes(offset) + value)
        c.ks.notify(db, NOTIFY_STRING, b"setrange", argv[1])
        return offset + len(value)
    old = db.vals[e]
    if old.__class__ is not bytes:
        raise WrongTypeError()
    if not value:
        return len(old)
    _check_length(c, offset + len(value))
    if offset > len(old):
        old += bytes(offset - len(old))
    db.set_value(e, old[:offset] + value + old[offset + len(value):])
    c.ks.notify(db, NOTIFY_STRING, b"setrange", argv[1])
    return len(db.vals[e])
