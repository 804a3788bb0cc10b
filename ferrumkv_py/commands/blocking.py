"""Pops from the first non-empty of several keys, and their blocking forms: LMPOP ZMPOP
BLPOP BRPOP BRPOPLPUSH BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP, and CLIENT UNBLOCK.

Each blocking command first does what its non-blocking form would (the first key, in
argument order, holding a list or sorted set is popped; a key of another type is WRONGTYPE);
when every key is empty it blocks its client through ``ferrumkv_py/blocking.py``, handing it
a ``serve(client, key)`` function that does the same pop, with the same notifications, when
the key becomes ready.  Inside MULTI/EXEC and scripts it answers as the non-blocking form
would (a null array; BLMOVE / BRPOPLPUSH a null bulk).

Arguments are checked in Redis 7.0's order: BLPOP & co. parse the timeout first; BLMOVE its
two directions, then the timeout; the xMPOP forms numkeys, direction and COUNT, then the
timeout.  Timeouts are seconds as a C ``long double`` (hex and exponents accepted), turned
into milliseconds as Redis does, ``(long long) ceill(t * 1000.0)``: ``0.0001`` waits 1 ms,
``-0.0001`` is 0 (forever), and anything that overflows the cast (``1e16``, ``inf``) is
"timeout is negative".
"""

from __future__ import annotations

from .. import errors
from ..blocking import may_block
from ..errors import CommandError
from ..registry import COMMANDS, command
from ..resp import NULL_ARRAY
from ..values import RList
from ..zset import ZSet
from . import connection, lists, zsets  # noqa: F401  (connection: CLIENT, the parent)
from ._longdouble import LD_INF, _ld_round, parse_long_double
from ._util import parse_int, shrink, write_typed
from .movable_keys import _numkeys

LLONG_MAX = 2 ** 63 - 1
MS_PER_S = 1000


def parse_timeout(b: bytes) -> int:
    """Redis getTimeoutFromObjectOrReply(UNIT_SECONDS): milliseconds, 0 = forever.

    The seconds are a long double (``_longdouble.parse_long_double``); ``t * 1000.0`` is
    rounded to long double and ceiled exactly, and a result outside ``long long`` becomes
    LLONG_MIN as the x86 conversion does, hence "timeout is negative".
    Complexity: O(len(b)).
    """
    v = parse_long_double(b, errors.TIMEOUT_NOT_FLOAT)
    if v is LD_INF:
        raise CommandError(errors.TIMEOUT_NEGATIVE)
    m, e = v
    if m == 0:
        return 0
    mag = abs(m) * MS_PER_S
    r = _ld_round(mag << e, 1) if e >= 0 else _ld_round(mag, 1 << -e)
    if r is None:
        raise CommandError(errors.TIMEOUT_NEGATIVE)
    q, e2 = r
    if e2 >= 0:
        whole = q << e2
        ms = whole if m > 0 else -whole
    elif m > 0:
        ms = -((-q) >> -e2)       # ceil(q / 2**k)
    else:
        ms = -(q >> -e2)          # ceil(-q / 2**k)
    if ms < 0 or ms > LLONG_MAX:
        raise CommandError(errors.TIMEOUT_NEGATIVE)
    return ms


def _block(c, keys: list, vtype, serve, timeout_ms: int, deny_reply=NULL_ARRAY):
    """Nothing to pop now: block, or answer ``deny_reply`` where blocking is not allowed."""
    if not may_block(c):
        return deny_reply
    return c.server.blocking.block(c, keys, vtype, serve, timeout_ms)


# ---- the pops, shared by the immediate and the served paths ----

def _list_pop(left: bool):
    def serve(c, key):
        return [key, lists._pop(c, [b"lpop", key], left)]
    return serve


def _list_mpop(left: bool, count: int):
    def serve(c, key):
        return [key, lists._pop(c, [b"lpop", key, b"%d" % count], left)]
    return serve


def _zset_pop(highest: bool):
    def serve(c, key):
        e = write_typed(c, key, ZSet)
        (m, s), = c.db.vals[e].pop(1, highest)
        emptied = shrink(c, e, -zsets._cost(m))
        zsets.notify_shrunk(c, emptied, key, b"zpopmax" if highest else b"zpopmin")
        return [key, m, s]
    return serve


def _zset_mpop(highest: bool, count: int):
    def serve(c, key):
        e = write_typed(c, key, ZSet)
        popped = c.db.vals[e].pop(count, highest)
        emptied = shrink(c, e, -sum(zsets._cost(m) for m, _ in popped))
        zsets.notify_shrunk(c, emptied, key, b"zpopmax" if highest else b"zpopmin")
        return [key, [[m, s] for m, s in popped]]
    return serve


def _first_ready(c, keys: list, vtype):
    """The first key holding a non-empty ``vtype`` (WRONGTYPE at the first other type)."""
    for key in keys:
        e = write_typed(c, key, vtype)
        if e is not None:
            return key
    return None


# ---- BLPOP BRPOP ----

def _bpop(c, argv: list, left: bool):
    timeout = parse_timeout(argv[-1])
    keys = argv[1:-1]
    serve = _list_pop(left)
    key = _first_ready(c, keys, RList)
    if key is not None:
        return serve(c, key)
    return _block(c, keys, RList, serve, timeout)


@command("blpop", -3, "write noscript blocking", first_key=1, last_key=-2, group="list")
def blpop(c, argv):
    """BLPOP key [key ...] timeout
    Pops the first element of the first non-empty list, blocking until one is pushed."""
    return _bpop(c, argv, True)


@command("brpop", -3, "write noscript blocking", first_key=1, last_key=-2, group="list")
def brpop(c, argv):
    """BRPOP key [key ...] timeout
    Pops the last element of the first non-empty list, blocking until one is pushed."""
    return _bpop(c, argv, False)


# ---- BLMOVE BRPOPLPUSH ----

def _bmove(c, src: bytes, dst: bytes, from_left: bool, to_left: bool, timeout: int):
    def serve(cl, key):
        return lists._move(cl, key, dst, from_left, to_left)
    if write_typed(c, src, RList) is not None:
        return serve(c, src)
    return _block(c, [src], RList, serve, timeout, deny_reply=None)


@command("blmove", 6, "write denyoom noscript blocking", first_key=1, last_key=2,
         group="list")
def blmove(c, argv):
    """BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
    Moves an element between lists, blocking until the source has one."""
    from_left, to_left = lists._side(argv[3]), lists._side(argv[4])
    return _bmove(c, argv[1], argv[2], from_left, to_left, parse_timeout(argv[5]))


@command("brpoplpush", 4, "write denyoom noscript blocking", first_key=1, last_key=2,
         group="list")
def brpoplpush(c, argv):
    """BRPOPLPUSH source destination timeout
    Pops the last element of a list and pushes it to the head of another, blocking."""
    return _bmove(c, argv[1], argv[2], False, True, parse_timeout(argv[3]))


# ---- BZPOPMIN BZPOPMAX ----

def _bzpop(c, argv: list, highest: bool):
    timeout = parse_timeout(argv[-1])
    keys = argv[1:-1]
    serve = _zset_pop(highest)
    key = _first_ready(c, keys, ZSet)
    if key is not None:
        return serve(c, key)
    return _block(c, keys, ZSet, serve, timeout)


@command("bzpopmin", -3, "write noscript blocking fast", first_key=1, last_key=-2,
         group="sorted-set")
def bzpopmin(c, argv):
    """BZPOPMIN key [key ...] timeout
    Pops the lowest-scored member of the first non-empty sorted set, blocking."""
    return _bzpop(c, argv, False)


@command("bzpopmax", -3, "write noscript blocking fast", first_key=1, last_key=-2,
         group="sorted-set")
def bzpopmax(c, argv):
    """BZPOPMAX key [key ...] timeout
    Pops the highest-scored member of the first non-empty sorted set, blocking."""
    return _bzpop(c, argv, True)


# ---- LMPOP ZMPOP BLMPOP BZMPOP ----

def _mpop_args(argv: list, at: int, ends: dict):
    """``numkeys key [key ...] <end> [COUNT count]`` from ``argv[at]``: (keys, end, count),
    count None when absent.  Errors in Redis's order and words."""
    try:
        numkeys = parse_int(argv[at], errors.NUMKEYS_NOT_POSITIVE)
    except CommandError:
        raise CommandError(errors.NUMKEYS_NOT_POSITIVE) from None
    if numkeys < 1:
        raise CommandError(errors.NUMKEYS_NOT_POSITIVE)
    where = at + numkeys + 1
    if where >= len(argv):
        raise CommandError(errors.SYNTAX)
    end = ends.get(argv[where].lower())
    if end is None:
        raise CommandError(errors.SYNTAX)
    count = None
    j = where + 1
    while j < len(argv):
        if argv[j].lower() == b"count" and j + 1 < len(argv) and count is None:
            try:
                count = parse_int(argv[j + 1], errors.COUNT_NOT_POSITIVE)
            except CommandError:
                raise CommandError(errors.COUNT_NOT_POSITIVE) from None
            if count < 1:
                raise CommandError(errors.COUNT_NOT_POSITIVE)
            j += 2
        else:
            raise CommandError(errors.SYNTAX)
    return argv[at + 1:where], end, count


_LIST_ENDS = {b"left": True, b"right": False}
_ZSET_ENDS = {b"min": False, b"max": True}


def _mpop(c, argv: list, at: int, blocking: bool, vtype):
    keys, end, count = _mpop_args(argv, at, _LIST_ENDS if vtype is RList else _ZSET_ENDS)
    timeout = parse_timeout(argv[1]) if blocking else 0
    n = 1 if count is None else count
    serve = _list_mpop(end, n) if vtype is RList else _zset_mpop(end, n)
    key = _first_ready(c, keys, vtype)
    if key is not None:
        return serve(c, key)
    if not blocking:
        return NULL_ARRAY
    return _block(c, keys, vtype, serve, timeout)


@command("lmpop", -4, "write movablekeys", group="list")
def lmpop(c, argv):
    """LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]
    Pops elements from the first non-empty list; returns its name and the elements."""
    return _mpop(c, argv, 1, False, RList)


@command("blmpop", -5, "write blocking movablekeys", group="list")
def blmpop(c, argv):
    """BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]
    Pops elements from the first non-empty list, blocking until one has elements."""
    return _mpop(c, argv, 2, True, RList)


@command("zmpop", -4, "write movablekeys", group="sorted-set")
def zmpop(c, argv):
    """ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]
    Pops members with their scores from the first non-empty sorted set."""
    return _mpop(c, argv, 1, False, ZSet)


@command("bzmpop", -5, "write blocking movablekeys", group="sorted-set")
def bzmpop(c, argv):
    """BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]
    Pops members from the first non-empty sorted set, blocking until one has members."""
    return _mpop(c, argv, 2, True, ZSet)


def _numkeys_at_2(argv: list) -> list:
    return _numkeys(argv, 2)


def _numkeys_at_1(argv: list) -> list:
    return _numkeys(argv, 1)


for _name, _fn in ((b"lmpop", _numkeys_at_1), (b"zmpop", _numkeys_at_1),
                   (b"blmpop", _numkeys_at_2), (b"bzmpop", _numkeys_at_2)):
    COMMANDS[_name].getkeys = _fn


# ---- CLIENT UNBLOCK ----

@command("unblock", -3, "admin noscript loading stale", parent="client")
def client_unblock(c, argv):
    """CLIENT UNBLOCK client-id [TIMEOUT|ERROR]
    Unblocks a client blocked in a blocking command; returns 1 if it was blocked."""
    if len(argv) > 4:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % ("UNBLOCK", "CLIENT"))
    cid = parse_int(argv[2])
    error = False
    if len(argv) == 4:
        reason = argv[3].lower()
        if reason == b"error":
            error = True
        elif reason != b"timeout":
            raise CommandError(errors.UNBLOCK_REASON)
    target = c.server.clients.get(cid)
    if target is None or getattr(target, "bstate", None) is None:
        return 0
    return int(c.server.blocking.unblock(target, error))
