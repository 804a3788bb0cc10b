"""XINFO STREAM [FULL [COUNT n]], XINFO GROUPS, XINFO CONSUMERS, XINFO HELP.

Replies are maps (RESP3) or flat arrays (RESP2) with Redis 7.0's field names and order.
Groups and consumers are listed sorted by name, the order of Redis's radix trees.

``radix-tree-nodes`` is the node count of a radix tree holding the nodes' master IDs
(16 bytes each, big-endian): :func:`rax_nodes` counts the nodes of the path-compressed
tree those keys make (a compressed node per shared run of bytes, a branching node per
fork, a leaf per key, and the root), which is the shape Redis's rax has after
insertions.  Redis's tree can keep an extra node after some removals (raxRemove does not
always recompress), so the figure is a model of Redis's, not a copy.

Complexity: STREAM O(nodes * 16) for the tree count, FULL adds O(COUNT) per group and
consumer PEL; GROUPS O(groups); CONSUMERS O(consumers).
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..stream import MAX_ID, id_text
from ._util import parse_int
from .stream_groups import help_reply
from .streams import entry_reply, read_stream

FULL_DEFAULT_COUNT = 10
KEY_BYTES = 16


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


def rax_nodes(keys: list) -> int:
    """Nodes of a path-compressed radix tree over ``keys`` (ints, as 16-byte big-endian
    strings), counting the root.  Complexity: O(len(keys) * 16)."""
    if not keys:
        return 1
    raw = [k.to_bytes(KEY_BYTES, "big") for k in keys]

    def count(group: list, depth: int) -> int:
        if len(group) == 1:
            return 1 if depth == KEY_BYTES else 2
        first, last = group[0], group[-1]          # sorted: the common prefix of the ends
        lcp = depth
        while lcp < KEY_BYTES and first[lcp] == last[lcp]:
            lcp += 1
        if lcp > depth:
            return 1 + count(group, lcp)
        total, start = 1, 0
        for j in range(1, len(group) + 1):
            if j == len(group) or group[j][depth] != group[start][depth]:
                total += count(group[start:j], depth + 1)
                start = j
        return total

    return count(raw, 0)


def _unknown(argv: list) -> CommandError:
    return CommandError(errors.SUBCOMMAND_SYNTAX % (_text(argv[1]), "XINFO"))


@command("xinfo", -2, "", group="stream")
def xinfo(c, argv):
    """XINFO subcommand [arguments ...]
    Returns information about streams, their groups and consumers."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (_text(argv[1]), "XINFO"))


def _stream(c, key: bytes):
    e, s = read_stream(c, key)
    if s is None:
        raise CommandError(errors.NO_SUCH_KEY)
    return s


@command("stream", -3, "readonly", first_key=2, parent="xinfo")
def xinfo_stream(c, argv):
    """XINFO STREAM key [FULL [COUNT count]]
    Returns information about a stream."""
    s = _stream(c, argv[2])
    full, count = False, FULL_DEFAULT_COUNT
    opts = argv[3:]
    if opts:
        if len(opts) not in (1, 3) or opts[0].lower() != b"full":
            raise _unknown(argv)
        full = True
        if len(opts) == 3:
            if opts[1].lower() != b"count":
                raise _unknown(argv)
            count = parse_int(opts[2])
            if count < 0:
                count = FULL_DEFAULT_COUNT
    info = {
        b"length": s.length,
        b"radix-tree-keys": len(s.keys),
        b"radix-tree-nodes": rax_nodes(s.keys),
        b"last-generated-id": id_text(s.last_id),
        b"max-deleted-entry-id": id_text(s.max_deleted_id),
        b"entries-added": s.entries_added,
        b"recorded-first-entry-id": id_text(s.first_id),
    }
    if not full:
        info[b"groups"] = len(s.groups)
        first = s.range(0, MAX_ID, False, 1)
        last = s.range(0, MAX_ID, True, 1)
        info[b"first-entry"] = entry_reply(*first[0]) if first else None
        info[b"last-entry"] = entry_reply(*last[0]) if last else None
        return info
    info[b"entries"] = [entry_reply(i, fv) for i, fv in s.range(0, MAX_ID, False, count)]
    groups = []
    for name in sorted(s.groups):
        g = s.groups[name]
        pending = []
        for i in g.pel.islice(0, count or None):
            nack = g.pel[i]
            pending.append([id_text(i), nack.consumer.name, nack.delivery_time,
                            nack.delivery_count])
        consumers = []
        for cname in sorted(g.consumers):
            cons = g.consumers[cname]
            cpel = [[id_text(i), cons.pel[i].delivery_time, cons.pel[i].delivery_count]
                    for i in cons.pel.islice(0, count or None)]
            consumers.append({b"name": cname, b"seen-time": cons.seen_time,
                              b"pel-count": len(cons.pel), b"pending": cpel})
        groups.append({
            b"name": name,
            b"last-delivered-id": id_text(g.last_id),
            b"entries-read": g.entries_read if g.entries_read >= 0 else None,
            b"lag": s.lag(g),
            b"pel-count": len(g.pel),
            b"pending": pending,
            b"consumers": consumers,
        })
    info[b"groups"] = groups
    return info


@command("groups", 3, "readonly", first_key=2, parent="xinfo")
def xinfo_groups(c, argv):
    """XINFO GROUPS key
    Returns the consumer groups of a stream."""
    s = _stream(c, argv[2])
    out = []
    for name in sorted(s.groups):
        g = s.groups[name]
        out.append({
            b"name": name,
            b"consumers": len(g.consumers),
            b"pending": len(g.pel),
            b"last-delivered-id": id_text(g.last_id),
            b"entries-read": g.entries_read if g.entries_read >= 0 else None,
            b"lag": s.lag(g),
        })
    return out


@command("consumers", 4, "readonly", first_key=2, parent="xinfo")
def xinfo_consumers(c, argv):
    """XINFO CONSUMERS key group
    Returns the consumers of a consumer group."""
    s = _stream(c, argv[2])
    g = s.groups.get(argv[3])
    if g is None:
        raise CommandError(errors.XGROUP_NOGROUP % (_text(argv[3]), _text(argv[2])))
    now = c.ks.now_ms
    return [{b"name": name, b"pending": len(g.consumers[name].pel),
             b"idle": max(now - g.consumers[name].seen_time, 0)}
            for name in sorted(g.consumers)]


XINFO_HELP = (
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
)


@command("help", 2, "loading stale", parent="xinfo")
def xinfo_help(c, argv):
    """XINFO HELP
    Lists the XINFO subcommands."""
    return help_reply("XINFO", XINFO_HELP)

