"""DUMP / RESTORE of streams (RDB type 19) against redis-server 7.0.15, both ways.

Every stream shape (empty, one entry, many nodes, trimmed to nothing with XSETID counters,
with deleted entries, with groups, consumers and pending entries, a node of tombstones
left by MINID) is built on one server, DUMPed, RESTOREd on the other and DUMPed again: the
two payloads must be the same bytes (times travel inside the payload, so nothing needs
masking), and XINFO STREAM FULL must read the same on both.  A payload built here must
also equal what redis-server itself DUMPs for the same commands, apart from the times it
stamps (checked on the shapes without consumer groups).  Malformed payloads are refused
with Redis's error and leave the key space as it was."""

from __future__ import annotations

import random

import pytest

from tests.conftest import ServerThread

from .diff_util import Pair

pytestmark = pytest.mark.needs_redis


def _entries(seed: int, n: int, first_ms: int = 1):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        fv = []
        for _ in range(rnd.randint(1, 3)):
            fv += [rnd.choice(["a", "b", "12", "-7"]),
                   rnd.choice(["x", "123", "y" * 80, "-9999999999", ""])]
        out.append(["XADD", "k", "%d-%d" % (first_ms + i // 2, i % 2)] + fv)
    return out


SHAPES = {
    "empty": [["XGROUP", "CREATE", "k", "g", "$", "MKSTREAM"]],
    "one": [["XADD", "k", "1-1", "f", "v"]],
    "nodes": _entries(1, 350),
    "trimmed": [["XADD", "k", "1-1", "f", "v"], ["XADD", "k", "2-1", "f", "v"],
                ["XTRIM", "k", "MAXLEN", "0"],
                ["XSETID", "k", "5-5", "ENTRIESADDED", "9", "MAXDELETEDID", "3-3"]],
    "deleted": _entries(2, 250) + [["XDEL", "k", "3-0", "50-1", "51-0", "1-0"],
                                   ["XTRIM", "k", "MAXLEN", "200"]],
    "minid-tombstones": [["XADD", "k", "1-0", "f", "v"], ["XADD", "k", "2-0", "f", "v"],
                         ["XADD", "k", "3-0", "f", "v"], ["XDEL", "k", "3-0"],
                         ["XTRIM", "k", "MINID", "3-0"], ["XADD", "k", "4-0", "f", "v"]],
    "small-nodes": [["CONFIG", "SET", "stream-node-max-bytes", "90"]] + _entries(3, 60) +
                   [["CONFIG", "SET", "stream-node-max-bytes", "4096"]],
}
GROUPS = [["XGROUP", "CREATE", "k", "g1", "0"], ["XGROUP", "CREATE", "k", "g2", "$"],
          ["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "10", "STREAMS", "k", ">"],
          ["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "5", "STREAMS", "k", ">"],
          ["XGROUP", "CREATECONSUMER", "k", "g2", "idle"],
          ["XACK", "k", "g1", "5-0"], ["XDEL", "k", "6-0"]]


@pytest.fixture(scope="module")
def pair(redis_server):
    ours = ServerThread()
    p = Pair(redis_server, ours.port)
    yield p
    p.close()
    ours.stop()


def _bulk(reply: bytes) -> bytes:
    head, body = reply.split(b"\r\n", 1)
    assert head.startswith(b"$"), reply[:80]
    return body[:int(head[1:])]


def _one(conn, *args) -> bytes:
    from tests.conftest import command_frame
    conn.send(command_frame(*args))
    return conn.read_reply()


CASES = [(shape, groups) for shape in sorted(SHAPES) for groups in (False, True)
         if not (groups and shape == "empty")]     # (the empty shape has its group already)


@pytest.mark.parametrize("shape,groups", CASES,
                         ids=["%s-%s" % (s, "groups" if g else "plain") for s, g in CASES])
def test_dump_restores_both_ways_byte_for_byte(pair, shape, groups):
    for conn in (pair.real, pair.ours):
        _one(conn, "FLUSHALL")
        for cmd in SHAPES[shape] + (GROUPS if groups else []):
            _one(conn, *cmd)
    full = ["XINFO", "STREAM", "k", "FULL", "COUNT", "0"]
    for src, dst in ((pair.ours, pair.real), (pair.real, pair.ours)):
        payload = _bulk(_one(src, "DUMP", "k"))
        assert _one(dst, "RESTORE", "copy", "0", payload) == b"+OK\r\n"
        assert _bulk(_one(dst, "DUMP", "copy")) == payload
        assert _one(dst, *full[:2], "copy", *full[3:]) == _one(src, *full)
        _one(dst, "DEL", "copy")
    if not groups:            # no times inside: the payloads themselves agree
        assert _one(pair.ours, "DUMP", "k") == _one(pair.real, "DUMP", "k")


def test_malformed_payloads_are_refused(pair):
    conn = pair.ours
    _one(conn, "FLUSHALL")
    for cmd in SHAPES["deleted"] + GROUPS:
        _one(conn, *cmd)
    payload = _bulk(_one(conn, "DUMP", "k"))
    for bad in (payload[:40] + payload[-10:], payload[:-11] + payload[-10:]):
        assert _one(conn, "RESTORE", "bad", "0", bad).startswith(b"-ERR")
    assert _one(conn, "EXISTS", "bad") == b":0\r\n"


def _stream_with_group():
    from ferrumkv_py.stream import Nack, Stream, make_id
    s = Stream()
    for n in range(1, 6):
        s.append(make_id(n, 0), (b"f", b"%d" % n), 4096, 100)
    g = s.add_group(b"g", make_id(2, 0), 2)
    alice = s.add_consumer(g, b"alice", 1000)
    s.add_nack(g, make_id(1, 0), Nack(alice, 1000))
    s.add_nack(g, make_id(2, 0), Nack(alice, 1001, 3))
    return s


def test_payloads_inconsistent_inside_are_refused():
    from ferrumkv_py import rdb
    from ferrumkv_py.rdb import RdbError
    from ferrumkv_py.stream import make_id
    good = _stream_with_group()
    back = rdb.load(rdb.dump(good, "stream"))
    back._check()
    assert rdb.dump(back, "stream") == rdb.dump(good, "stream")
    broken = []
    s = _stream_with_group()
    s.length += 1                                   # length not the sum of live entries
    broken.append(s)
    s = _stream_with_group()
    s.nodes[0].live += 1                            # header count disagrees with flags
    broken.append(s)
    s = _stream_with_group()
    alice = s.groups[b"g"].consumers[b"alice"]
    alice.pel[make_id(4, 0)] = s.groups[b"g"].pel[make_id(1, 0)]   # not in the group PEL
    broken.append(s)
    s = _stream_with_group()
    s.groups[b"g"].consumers[b"alice"].pel.clear()   # a pending entry without an owner
    broken.append(s)
    for bad in broken:
        with pytest.raises(RdbError):
            rdb.load(rdb.dump(bad, "stream"))
