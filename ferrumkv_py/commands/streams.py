"""Stream commands without consumer groups: XADD XRANGE XREVRANGE XLEN XDEL XTRIM XSETID.

The value is a :class:`~ferrumkv_py.stream.Stream` (its module docstring explains the
nodes, IDs as one int ``ms << 64 | seq`` and the lag accounting).  This module also holds
what every stream command shares: ID parsing with Redis's exact rules
(:func:`parse_id`), the entry reply ``[id, [field, value, ...]]`` and the memory delta
bookkeeping (each write reads ``Stream.mem`` before and after and reports the change
through ``Database.grow``).

Errors follow t_stream.c word for word and in its order: XADD parses its options, then
checks the arity of the field/value list, then refuses the ID 0-0, and only then looks the
key up (so a wrong ID never creates a key).  A stream is kept when its last entry goes
(XDEL, XTRIM): unlike the other containers, an empty stream is still a key.

Complexity: XADD O(fields) plus the trimming's O(entries removed); XRANGE O(log n + k);
XDEL O(log n) per ID; XLEN and XSETID O(1) (XSETID reads the last live entry: O(tombstones
at the tail)).
"""

from __future__ import annotations

import re

from .. import errors
from ..errors import CommandError
from ..notify import NOTIFY_STREAM
from ..registry import command
from ..resp import NULL_ARRAY, OK, Raw
from ..stream import (ID_BITS, MAX_ID, SEQ_MASK, TRIM_MAXLEN, TRIM_MINID, LISTPACK_MAX_SIZE,
                      Stream, id_text)
from ._util import parse_int, read_typed, write_typed

ULLONG_MAX = (1 << 64) - 1
ID_TEXT_MAX = 127                 # streamGenericParseIDOrReply copies into char buf[128]
APPROX_LIMIT_PER_NODE = 100       # '~' trims at most 100 nodes' worth of entries
APPROX_LIMIT_DEFAULT = 10000      # ... 10000 when stream-node-max-entries is 0
APPROX_LIMIT_MAX = 1000000        # ... and never more than this
_STRTOULL = re.compile(rb"[ \t\n\v\f\r]*([+-]?)([0-9]+)\Z")


# ---- IDs ----

def _ull(b: bytes):
    """Redis string2ull: string2ll (refusing negatives), else C strtoull in base 10 (which
    accepts leading spaces, a sign, leading zeros and negates a '-').  None if invalid."""
    if b.isdigit() and len(b) < 20:      # plain digits: both parsers agree (XACK -P 16)
        return int(b)
    m = _STRTOULL.match(b)
    if m is None:
        return None
    sign, digits = m.groups()
    v = int(digits)
    if v > ULLONG_MAX:
        return None
    if sign == b"-":
        canonical = digits[:1] != b"0" and not b[:1].isspace()
        if canonical and v <= 1 << 63:     # string2ll took it: a negative is refused
            return None
        return (-v) & ULLONG_MAX
    return v


def parse_id(b: bytes, missing_seq: int = 0, strict: bool = False, seq_star: bool = False):
    """A client's stream ID (Redis streamGenericParseIDOrReply): ``ms-seq``, ``ms`` (seq =
    ``missing_seq``), ``-`` and ``+`` unless ``strict``, and with ``seq_star`` the
    ``ms-*`` form.  Returns ``(id, seq_given)``.  Complexity: O(len(b))."""
    if len(b) > ID_TEXT_MAX:
        raise CommandError(errors.STREAM_BAD_ID)
    if b == b"-" or b == b"+":
        if strict:
            raise CommandError(errors.STREAM_BAD_ID)
        return (0 if b == b"-" else MAX_ID), True
    ms_text, dash, seq_text = b.partition(b"-")
    ms = _ull(ms_text)
    if ms is None:
        raise CommandError(errors.STREAM_BAD_ID)
    if not dash:
        return (ms << ID_BITS) | missing_seq, True
    if seq_star and seq_text == b"*":
        return ms << ID_BITS, False
    seq = _ull(seq_text)
    if seq is None:
        raise CommandError(errors.STREAM_BAD_ID)
    return (ms << ID_BITS) | seq, True


def strict_id(b: bytes, missing_seq: int = 0) -> int:
    return parse_id(b, missing_seq, True)[0]


def interval_start(b: bytes) -> int:
    """A range's start: ``(id`` is exclusive (strict, then + 1), a bare ms means ms-0."""
    if len(b) > 1 and b[:1] == b"(":
        i = strict_id(b[1:])
        if i == MAX_ID:
            raise CommandError(errors.XRANGE_BAD_START)
        return i + 1
    return parse_id(b, 0)[0]


def interval_end(b: bytes) -> int:
    """A range's end: ``(id`` is exclusive (strict, then - 1), a bare ms means ms-max."""
    if len(b) > 1 and b[:1] == b"(":
        i = strict_id(b[1:], SEQ_MASK)
        if i == 0:
            raise CommandError(errors.XRANGE_BAD_END)
        return i - 1
    return parse_id(b, SEQ_MASK)[0]


# ---- replies and bookkeeping shared by the stream commands ----

def entry_reply(i: int, fv) -> list:
    return [id_text(i), list(fv)]


def entries_reply(entries) -> Raw:
    """``[[id, [f, v, ...]], ...]`` encoded once (the same bytes in RESP2 and RESP3): XRANGE
    of 100 one-pair entries -P 16 in-process 179 -> ~90 us per command against the generic
    encoder (bench/streams.py's notes).  Complexity: O(bytes)."""
    parts = [b"*%d\r\n" % len(entries)]
    add = parts.append
    for i, fv in entries:
        t = b"%d-%d" % (i >> ID_BITS, i & SEQ_MASK)
        if len(fv) == 2:               # one pair: the whole entry in one format
            f, v = fv
            add(b"*2\r\n$%d\r\n%b\r\n*2\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"
                % (len(t), t, len(f), f, len(v), v))
            continue
        add(b"*2\r\n$%d\r\n%b\r\n*%d\r\n" % (len(t), t, len(fv)))
        add(b"".join([b"$%d\r\n%b\r\n" % (len(x), x) for x in fv]))
    return Raw(b"".join(parts))


def read_stream(c, key: bytes):
    """(slot, Stream) for a read, or (None, None); WRONGTYPE for another type."""
    e = read_typed(c, key, Stream)
    return (e, c.db.vals[e]) if e is not None else (None, None)


def write_stream(c, key: bytes):
    e = write_typed(c, key, Stream)
    return (e, c.db.vals[e]) if e is not None else (None, None)


def account(c, e: int, s: Stream, before: int) -> None:
    """Report the change of ``s.mem`` since ``before`` to the keyspace (``Database.grow``
    adds it to ``s.mem`` itself, so it is handed back first), and signal the key modified
    (WATCH, client tracking): Redis's signalModifiedKey, which XADD, XDEL and XTRIM call."""
    delta = s.mem - before
    s.mem = before
    c.db.grow(e, delta)


def account_quiet(c, s: Stream, before: int) -> None:
    """Report the change of ``s.mem`` without signalling the key: the group commands
    (XGROUP, XREADGROUP, XACK, XCLAIM, XAUTOCLAIM) and XSETID, which Redis does not count
    as modifying the key, so a WATCH on it survives them and tracking sends nothing."""
    c.ks.used_memory += s.mem - before


def node_limits(c) -> tuple[int, int]:
    cfg = c.server.config
    return cfg["stream-node-max-bytes"], cfg["stream-node-max-entries"]


def stream_ready(c, key: bytes) -> None:
    """New entries or a destroyed group: serve the clients blocked on ``key`` (XREAD,
    XREADGROUP) after this command, as Redis's signalKeyAsReady."""
    blocking = getattr(c.server, "blocking", None)
    if blocking is not None:
        blocking.signal_stream(c.db.id, key)


# ---- XADD XTRIM ----

class TrimArgs:
    __slots__ = ("strategy", "maxlen", "minid", "approx", "limit", "id", "id_given",
                 "seq_given", "nomkstream", "idpos")

    def __init__(self):
        self.strategy = 0
        self.maxlen = 0
        self.minid = 0
        self.approx = False
        self.limit = 0
        self.id = 0
        self.id_given = False
        self.seq_given = True
        self.nomkstream = False
        self.idpos = 0


def parse_trim_args(c, argv: list, xadd: bool) -> TrimArgs:
    """XADD / XTRIM options (Redis streamParseAddOrTrimArgsOrReply), errors in its order;
    for XADD ``idpos`` is the index of the ID argument.  Complexity: O(len(argv))."""
    a = TrimArgs()
    limit_given = False
    i, n = 2, len(argv)
    while i < n:
        more = n - 1 - i
        opt = argv[i]
        low = opt.lower()
        if xadd and opt == b"*":
            break
        if (low == b"maxlen" or low == b"minid") and more:
            if a.strategy:
                raise CommandError(errors.XTRIM_BOTH)
            a.approx = False
            nxt = argv[i + 1]
            if more >= 2 and nxt == b"~":
                a.approx = True
                i += 1
            elif more >= 2 and nxt == b"=":
                i += 1
            if low == b"maxlen":
                a.maxlen = parse_int(argv[i + 1])
                if a.maxlen < 0:
                    raise CommandError(errors.XTRIM_MAXLEN_NEGATIVE)
                a.strategy = TRIM_MAXLEN
            else:
                a.minid = strict_id(argv[i + 1])
                a.strategy = TRIM_MINID
            i += 2
            continue
        if low == b"limit" and more:
            a.limit = parse_int(argv[i + 1])
            if a.limit < 0:
                raise CommandError(errors.XTRIM_LIMIT_NEGATIVE)
            limit_given = True
            i += 2
            continue
        if xadd and low == b"nomkstream":
            a.nomkstream = True
            i += 1
            continue
        if not xadd:
            raise CommandError(errors.SYNTAX)
        a.id, a.seq_given = parse_id(opt, 0, True, True)
        a.id_given = True
        break
    a.idpos = i
    if a.limit and not a.strategy:
        raise CommandError(errors.XTRIM_LIMIT_NO_STRATEGY)
    if not xadd and not a.strategy:
        raise CommandError(errors.XTRIM_NO_STRATEGY)
    if limit_given:
        if not a.approx:
            raise CommandError(errors.XTRIM_LIMIT_NO_APPROX)
    elif a.approx:
        limit = APPROX_LIMIT_PER_NODE * c.server.config["stream-node-max-entries"]
        if limit <= 0:
            limit = APPROX_LIMIT_DEFAULT
        a.limit = min(limit, APPROX_LIMIT_MAX)
    else:
        a.limit = 0
    return a


_AUTO_ID = TrimArgs()       # XADD key * ...: no option, ID generated (never mutated)
_AUTO_ID.idpos = 2


def _trim(s: Stream, a: TrimArgs) -> int:
    return s.trim(a.strategy, a.maxlen, a.minid, a.approx, a.limit)


@command("xadd", -5, "write denyoom fast", first_key=1, group="stream")
def xadd(c, argv):
    """XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
    Appends a new entry to a stream; returns its ID."""
    a = _AUTO_ID if argv[2] == b"*" else parse_trim_args(c, argv, True)
    nfv = len(argv) - a.idpos - 1
    if nfv < 2 or nfv % 2:
        raise CommandError(errors.WRONG_ARGS % "xadd")
    if a.id_given and a.seq_given and a.id == 0:
        raise CommandError(errors.XADD_ID_ZERO)
    key = argv[1]
    e, s = write_stream(c, key)
    if s is None:
        if a.nomkstream:
            return None
        s = Stream()
        e = c.db.add(key, s)
    if s.last_id == MAX_ID:
        raise CommandError(errors.XADD_ID_EXHAUSTED)
    last = s.last_id
    if not a.id_given:
        ms = c.ks.now_ms
        new = (ms << ID_BITS) if ms > last >> ID_BITS else last + 1
    elif a.seq_given:
        new = a.id
    elif last >> ID_BITS == a.id >> ID_BITS:
        if last & SEQ_MASK == SEQ_MASK:
            raise CommandError(errors.XADD_ID_SMALL)
        new = last + 1
    else:
        new = a.id
    if new <= last:
        raise CommandError(errors.XADD_ID_SMALL)
    fv = tuple(argv[a.idpos + 1:])
    totlen = sum(map(len, fv))
    if totlen > LISTPACK_MAX_SIZE:
        raise CommandError(errors.XADD_TOO_LARGE)
    before = s.mem
    cfg = c.server.config
    s.append(new, fv, cfg["stream-node-max-bytes"], cfg["stream-node-max-entries"], totlen)
    account(c, e, s, before)
    c.ks.notify(c.db, NOTIFY_STREAM, b"xadd", key)
    if a.strategy:
        before = s.mem
        if _trim(s, a):
            c.ks.notify(c.db, NOTIFY_STREAM, b"xtrim", key)
        account(c, e, s, before)
    stream_ready(c, key)
    return id_text(new)


@command("xtrim", -4, "write", first_key=1, group="stream")
def xtrim(c, argv):
    """XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
    Deletes entries from the head of a stream; returns how many."""
    a = parse_trim_args(c, argv, False)
    e, s = write_stream(c, argv[1])
    if s is None:
        return 0
    before = s.mem
    deleted = _trim(s, a)
    if deleted:
        c.ks.notify(c.db, NOTIFY_STREAM, b"xtrim", argv[1])
        account(c, e, s, before)
    return deleted


# ---- XRANGE XREVRANGE XLEN ----

def _range(c, argv: list, rev: bool):
    start = interval_start(argv[3] if rev else argv[2])
    end = interval_end(argv[2] if rev else argv[3])
    count = -1
    j = 4
    while j < len(argv):
        if argv[j].lower() == b"count" and j + 1 < len(argv):
            count = max(parse_int(argv[j + 1]), 0)
            j += 2
        else:
            raise CommandError(errors.SYNTAX)
    e, s = read_stream(c, argv[1])
    if s is None:
        return []
    if count == 0:
        return NULL_ARRAY
    return entries_reply(s.range(start, end, rev, max(count, 0)))


@command("xrange", -4, "readonly", first_key=1, group="stream")
def xrange(c, argv):
    """XRANGE key start end [COUNT count]
    Returns the entries with IDs in a range, oldest first."""
    return _range(c, argv, False)


@command("xrevrange", -4, "readonly", first_key=1, group="stream")
def xrevrange(c, argv):
    """XREVRANGE key end start [COUNT count]
    Returns the entries with IDs in a range, newest first."""
    return _range(c, argv, True)


@command("xlen", 2, "readonly fast", first_key=1, group="stream")
def xlen(c, argv):
    """XLEN key
    Returns the number of entries in a stream."""
    e, s = read_stream(c, argv[1])
    return 0 if s is None else s.length


# ---- XDEL XSETID ----

@command("xdel", -3, "write fast", first_key=1, group="stream")
def xdel(c, argv):
    """XDEL key id [id ...]
    Deletes entries by ID; returns how many existed."""
    e, s = write_stream(c, argv[1])
    if s is None:
        return 0
    ids = [strict_id(b) for b in argv[2:]]
    before = s.mem
    deleted = 0
    first_gone = False
    for i in ids:
        if s.delete(i):
            if i == s.first_id:
                first_gone = True
            if i > s.max_deleted_id:
                s.max_deleted_id = i
            deleted += 1
    if deleted:
        if s.length == 0:
            s.first_id = 0
        elif first_gone:
            s.first_id = s.first_live()
        account(c, e, s, before)
        c.ks.notify(c.db, NOTIFY_STREAM, b"xdel", argv[1])
    return deleted


@command("xsetid", -3, "write denyoom fast", first_key=1, group="stream")
def xsetid(c, argv):
    """XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
    Sets a stream's last ID, entries-added counter and largest deleted ID."""
    new = strict_id(argv[2])
    added, max_del = -1, 0
    i, n = 3, len(argv)
    while i < n:
        opt = argv[i].lower()
        if opt == b"entriesadded" and i + 1 < n:
            added = parse_int(argv[i + 1])
            if added < 0:
                raise CommandError(errors.XSETID_ENTRIES_ADDED)
        elif opt == b"maxdeletedid" and i + 1 < n:
            max_del = strict_id(argv[i + 1])
            if new < max_del:
                raise CommandError(errors.XSETID_BELOW_MAXDELETED)
        else:
            raise CommandError(errors.SYNTAX)
        i += 2
    e, s = write_stream(c, argv[1])
    if s is None:
        raise CommandError(errors.NO_SUCH_KEY)
    if s.length:
        if new < s.last_live():
            raise CommandError(errors.XSETID_SMALL)
        if added != -1 and s.length > added:
            raise CommandError(errors.XSETID_ENTRIES_SMALL)
    s.last_id = new
    if added != -1:
        s.entries_added = added
    if max_del:
        s.max_deleted_id = max_del
    c.ks.notify(c.db, NOTIFY_STREAM, b"xsetid", argv[1])
    return OK
