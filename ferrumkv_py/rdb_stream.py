"""Streams in RDB: type 19 (RDB_TYPE_STREAM_LISTPACKS_2, what Redis 7.0 writes) and type 15
(Redis 5-6.2, read only), as DUMP writes them and RESTORE reads them.

A stream value is its nodes, each as Redis keeps it in memory, then its counters, then
its consumer groups::

    <node count>  then per node: <master ID: string of 16 bytes, ms and seq u64 BE>
                                 <listpack: string>
    <length> <last ms> <last seq>
    <first ms> <first seq> <max-deleted ms> <max-deleted seq> <entries added>    (19 only)
    <group count> then per group (sorted by name):
        <name: string> <last-delivered ms> <seq> <entries-read, -1 as 2^64-1>   (19 only)
        <PEL size> then per entry: <ID: 16 raw bytes> <delivery time: i64 LE ms>
                                   <delivery count: length>
        <consumer count> then per consumer (sorted by name):
            <name: string> <seen time: i64 LE ms> <PEL size> <ID: 16 raw bytes> ...

Numbers are RDB lengths, strings RDB strings (so a listpack of more than 20 bytes may be
LZF-compressed, as rdbSaveRawString does).  A node's listpack::

    <live count> <deleted count> <master field count> <field> ... <0>
    then per entry: <flags> <ms - master ms> <seq - master seq>
                    [<field count> <field> <value> ...]  or, with SAMEFIELDS, <value> ...
                    <count of the entry's listpack elements after its first, lp-count>

with the deltas stored as int64 (a seq below the master's wraps to a negative number).
``stream.Node`` holds exactly these parts, so :func:`dump` rebuilds the same bytes
redis-server would write, and :func:`load` keeps redis-server's nodes, tombstones and
master fields as they were.

A payload is refused (``Bad data format``) when a listpack is malformed or disagrees with
itself (counts, lp-count, entry layout), node keys repeat or are not 16 bytes, the
length is not the sum of live entries, a group or consumer name repeats, a consumer's PEL
names an ID missing from its group's, or bytes follow the value -- Redis 7.0 with
``sanitize-dump-payload yes`` refuses these too.

Complexity: O(size of the value) both ways.
"""

from __future__ import annotations

import struct

from .rdb_blobs import BlobError, lp_build, lp_decode, lp_entry
from .stream import (FLAG_DELETED, FLAG_SAMEFIELDS, ID_BITS, LP_EMPTY_BYTES, SEQ_MASK,
                     Consumer, Group, Nack, Node, Stream, entry_cost, lp_size, signed64)

T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2 = 15, 19
ID_BYTES = 16
U64 = 1 << 64
_ID = struct.Struct(">QQ")
_MS = struct.Struct("<q")


class StreamFormatError(Exception):
    """A stream payload RESTORE must refuse."""


def _raw_id(i: int) -> bytes:
    return _ID.pack(i >> ID_BITS, i & SEQ_MASK)


def _id_of(raw: bytes) -> int:
    ms, seq = _ID.unpack(raw)
    return (ms << ID_BITS) | seq


# ---- writing ----

def node_listpack(node: Node) -> bytes:
    """The listpack Redis holds for ``node``.  Complexity: O(node size)."""
    master = node.ids[0]
    mms, mseq = master >> ID_BITS, master & SEQ_MASK
    mf = node.mfields
    parts = [lp_entry(node.live), lp_entry(node.dead), lp_entry(len(mf))]
    parts += [lp_entry(f) for f in mf]
    parts.append(lp_entry(0))
    for i, flags, fv in zip(node.ids, node.flags, node.fvs):
        parts.append(lp_entry(flags))
        parts.append(lp_entry(signed64((i >> ID_BITS) - mms)))
        parts.append(lp_entry(signed64((i & SEQ_MASK) - mseq)))
        n = len(fv) // 2
        if flags & FLAG_SAMEFIELDS:
            parts += [lp_entry(fv[k]) for k in range(1, len(fv), 2)]
            parts.append(lp_entry(n + 3))
        else:
            parts.append(lp_entry(n))
            parts += [lp_entry(x) for x in fv]
            parts.append(lp_entry(2 * n + 4))
    return lp_build(parts)


def dump(s: Stream, save_len, save_str) -> bytes:
    """The body of a type-19 value (type byte included); ``save_len`` / ``save_str`` are
    rdb.py's length and string writers.  Complexity: O(size of the value)."""
    out = [bytes((T_STREAM_LISTPACKS_2,)), save_len(len(s.nodes))]
    for key, node in zip(s.keys, s.nodes):
        out.append(save_str(_raw_id(key)))
        out.append(save_str(node_listpack(node)))
    for v in (s.length, s.last_id >> ID_BITS, s.last_id & SEQ_MASK, s.first_id >> ID_BITS,
              s.first_id & SEQ_MASK, s.max_deleted_id >> ID_BITS, s.max_deleted_id & SEQ_MASK,
              s.entries_added, len(s.groups)):
        out.append(save_len(v))
    for name in sorted(s.groups):
        g = s.groups[name]
        out += [save_str(name), save_len(g.last_id >> ID_BITS),
                save_len(g.last_id & SEQ_MASK), save_len(g.entries_read % U64),
                save_len(len(g.pel))]
        for i, nack in g.pel.items():
            out += [_raw_id(i), _MS.pack(nack.delivery_time), save_len(nack.delivery_count)]
        out.append(save_len(len(g.consumers)))
        for cname in sorted(g.consumers):
            cons = g.consumers[cname]
            out += [save_str(cname), _MS.pack(cons.seen_time), save_len(len(cons.pel))]
            out += [_raw_id(i) for i in cons.pel]
    return b"".join(out)


# ---- reading ----

def _int(item) -> int:
    if item.__class__ is not int:
        raise StreamFormatError("integer expected in a stream listpack")
    return item


def _text(item) -> bytes:
    return item if item.__class__ is bytes else b"%d" % item


def _node(key: int, blob: bytes) -> Node:
    """A Node from one listpack (validated as Redis's deep check does)."""
    try:
        items = lp_decode(blob)
    except BlobError as e:
        raise StreamFormatError(str(e)) from None
    if not items:
        raise StreamFormatError("empty listpack inside stream")
    pos = 0

    def take():
        nonlocal pos
        if pos >= len(items):
            raise StreamFormatError("stream listpack truncated")
        pos += 1
        return items[pos - 1]

    live, dead, nmaster = _int(take()), _int(take()), _int(take())
    if live < 0 or dead < 0 or nmaster < 0:
        raise StreamFormatError("negative count")
    mfields = tuple(_text(take()) for _ in range(nmaster))
    if _int(take()) != 0:
        raise StreamFormatError("master entry terminator")
    node = Node(mfields)
    mms, mseq = key >> ID_BITS, key & SEQ_MASK
    seen_dead = 0
    for _ in range(live + dead):
        flags = _int(take())
        ms = (mms + _int(take())) % U64
        seq = (mseq + _int(take())) % U64
        if flags & FLAG_SAMEFIELDS:
            fv = []
            for f in mfields:
                fv.append(f)
                fv.append(_text(take()))
            want = nmaster + 3
        else:
            n = _int(take())
            if n < 0:
                raise StreamFormatError("negative field count")
            fv = [_text(take()) for _ in range(2 * n)]
            want = 2 * n + 4
        if _int(take()) != want:
            raise StreamFormatError("lp-count mismatch")
        i = (ms << ID_BITS) | seq
        if node.ids and i <= node.ids[-1]:
            raise StreamFormatError("entries out of order")
        node.ids.append(i)
        node.flags.append(flags & (FLAG_DELETED | FLAG_SAMEFIELDS))
        node.fvs.append(tuple(fv))
        node.cost += entry_cost(fv, bool(flags & FLAG_SAMEFIELDS))
        seen_dead += bool(flags & FLAG_DELETED)
    if pos != len(items) or seen_dead != dead or not node.ids or node.ids[0] != key:
        raise StreamFormatError("stream listpack inconsistent")
    node.live, node.dead = live, dead
    node.body = len(blob) - LP_EMPTY_BYTES - lp_size(live) - lp_size(dead)
    return node


def load(r, t: int) -> Stream:
    """A Stream from reader ``r`` (rdb_load's ``_Reader``) after type byte ``t`` (15 or
    19).  Raises StreamFormatError.  Complexity: O(size of the value)."""
    s = Stream()
    prev = -1
    for _ in range(r.count()):
        raw = r.string()
        if len(raw) != ID_BYTES:
            raise StreamFormatError("node key is not a stream ID")
        key = _id_of(raw)
        if key <= prev:
            raise StreamFormatError("node keys out of order or repeated")
        node = _node(key, r.string())
        if s.nodes and node.ids[0] <= s.nodes[-1].ids[-1]:
            raise StreamFormatError("nodes overlap")
        prev = key
        s.nodes.append(node)
        s.keys.append(key)
        s.length += node.live
    length = r.count()
    s.last_id = (r.count() << ID_BITS) | r.count()
    if length != s.length:
        raise StreamFormatError("stream length inconsistent with its nodes")
    if t == T_STREAM_LISTPACKS_2:
        s.first_id = (r.count() << ID_BITS) | r.count()
        s.max_deleted_id = (r.count() << ID_BITS) | r.count()
        s.entries_added = r.count()
    else:
        first = s.first_live()
        s.first_id = first if first is not None else 0
        s.entries_added = s.length
    for _ in range(r.count()):
        _group(r, s, t)
    s.mem = s.recount()
    return s


def _group(r, s: Stream, t: int) -> None:
    name = r.string()
    last = (r.count() << ID_BITS) | r.count()
    if t == T_STREAM_LISTPACKS_2:
        read = r.count()
        entries_read = read - U64 if read >= U64 // 2 else read
    else:
        entries_read = s.estimate_read(last)
    if name in s.groups:
        raise StreamFormatError("duplicated consumer group")
    g = s.groups[name] = Group(last, entries_read)
    for _ in range(r.count()):
        i = _id_of(r.take(ID_BYTES))
        when = _MS.unpack(r.take(8))[0]
        if i in g.pel:
            raise StreamFormatError("duplicated PEL entry")
        g.pel[i] = Nack(None, when, r.count())
    for _ in range(r.count()):
        cname = r.string()
        if cname in g.consumers:
            raise StreamFormatError("duplicated consumer")
        cons = g.consumers[cname] = Consumer(cname, _MS.unpack(r.take(8))[0])
        for _ in range(r.count()):
            i = _id_of(r.take(ID_BYTES))
            nack = g.pel.get(i)
            if nack is None or i in cons.pel:
                raise StreamFormatError("consumer PEL entry not in the group PEL")
            nack.consumer = cons
            cons.pel[i] = nack
    if any(n.consumer is None for n in g.pel.values()):
        raise StreamFormatError("PEL entry without a consumer")

