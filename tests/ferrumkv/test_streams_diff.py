"""Differential test of the stream commands against redis-server 7.0.15: Hypothesis draws
sequences of XADD ... XSETID (explicit IDs, so both servers make the same ones) over two
stream keys, a string key, two groups and two consumers, with small node limits so
entries spread over several nodes; every reply is compared byte for byte in RESP2 and
RESP3.  The only masking is of clock readings: the idle times of XPENDING's extended form
and XINFO CONSUMERS, and the delivery / seen times inside XINFO STREAM FULL (epoch
milliseconds), which the two servers stamp a millisecond apart at times."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ServerThread

from .diff_util import Pair

pytestmark = pytest.mark.needs_redis

KEYS = ["s1", "s2", "str"]
GROUPS = ["g1", "g2"]
CONSUMERS = ["c1", "c2"]
EPOCH_MS = re.compile(rb":1[0-9]{12}\r\n")       # an epoch-milliseconds integer reply

key = st.sampled_from(KEYS)
stream_key = st.sampled_from(KEYS[:2])
group = st.sampled_from(GROUPS + ["nog"])
consumer = st.sampled_from(CONSUMERS)
ms = st.integers(0, 12)
sid = st.builds(lambda m, s: "%d-%d" % (m, s), ms, st.integers(0, 3))
any_id = st.one_of(sid, st.builds(str, ms), st.sampled_from(["-", "+", "0", "0-0", "x"]))
range_end = st.one_of(any_id, st.builds(lambda i: "(" + i, sid))
fields = st.lists(st.tuples(st.sampled_from(["a", "b", "12"]),
                            st.sampled_from(["v", "1", "-5", "w" * 30])),
                  min_size=1, max_size=3).map(lambda p: [x for kv in p for x in kv])
count = st.one_of(st.just([]), st.builds(lambda n: ["COUNT", str(n)], st.integers(-1, 4)))


def _trim(strategy, op, arg, limit):
    out = [strategy] + ([op] if op else []) + [arg]
    return out + (["LIMIT", str(limit)] if limit is not None else [])


trim = st.builds(_trim, st.sampled_from(["MAXLEN", "MINID"]), st.sampled_from(["", "=", "~"]),
                 st.one_of(st.integers(0, 6).map(str), sid), st.one_of(st.none(), st.integers(0, 3)))

commands = st.one_of(
    st.builds(lambda k, nm, t, i, f: ["XADD", k] + nm + t + [i] + f, key,
              st.sampled_from([[], ["NOMKSTREAM"]]), st.one_of(st.just([]), trim),
              st.one_of(sid, st.builds(lambda m: "%d-*" % m, ms), st.builds(str, ms)), fields),
    st.builds(lambda k, a, b, c: ["XRANGE", k, a, b] + c, key, range_end, range_end, count),
    st.builds(lambda k, a, b, c: ["XREVRANGE", k, a, b] + c, key, range_end, range_end, count),
    st.builds(lambda k: ["XLEN", k], key),
    st.builds(lambda k, ids: ["XDEL", k] + ids, key, st.lists(sid, min_size=1, max_size=3)),
    st.builds(lambda k, t: ["XTRIM", k] + t, key, trim),
    st.builds(lambda c, ks, ids: ["XREAD"] + c + ["STREAMS"] + ks + ids[:len(ks)],
              count, st.lists(key, min_size=1, max_size=2, unique=True),
              st.lists(st.one_of(sid, st.just("$")), min_size=2, max_size=2)),
    st.builds(lambda k, g, i, mk: ["XGROUP", "CREATE", k, g, i] + mk, key, group,
              st.one_of(sid, st.just("$")),
              st.sampled_from([[], ["MKSTREAM"], ["ENTRIESREAD", "2"]])),
    st.builds(lambda k, g, i, er: ["XGROUP", "SETID", k, g, i] + er, key, group,
              st.one_of(sid, st.just("$")), st.sampled_from([[], ["ENTRIESREAD", "1"]])),
    st.builds(lambda k, g: ["XGROUP", "DESTROY", k, g], key, group),
    st.builds(lambda sub, k, g, c: ["XGROUP", sub, k, g, c], st.sampled_from(
        ["CREATECONSUMER", "DELCONSUMER"]), key, group, consumer),
    st.builds(lambda g, c, n, na, k, i: ["XREADGROUP", "GROUP", g, c] + n + na +
              ["STREAMS", k, i], group, consumer, count, st.sampled_from([[], ["NOACK"]]),
              key, st.one_of(st.just(">"), sid, st.just("0"))),
    st.builds(lambda k, g, ids: ["XACK", k, g] + ids, key, group,
              st.lists(sid, min_size=1, max_size=3)),
    st.builds(lambda k, g: ["XPENDING", k, g], key, group),
    st.builds(lambda k, g, idle, a, b, n, c: ["XPENDING", k, g] + idle + [a, b, str(n)] + c,
              key, group, st.sampled_from([[], ["IDLE", "0"], ["IDLE", "999999999"]]),
              range_end, range_end, st.integers(-1, 5), st.sampled_from([[], ["c1"], ["zz"]])),
    st.builds(lambda k, g, c, ids, opts: ["XCLAIM", k, g, c, "0"] + ids + opts, key, group,
              consumer, st.lists(sid, min_size=1, max_size=3), st.lists(st.sampled_from(
                  [["FORCE"], ["JUSTID"], ["RETRYCOUNT", "7"], ["LASTID", "9-0"]]),
                  max_size=2).map(lambda xs: [y for x in xs for y in x])),
    st.builds(lambda k, g, c, s, n, j: ["XAUTOCLAIM", k, g, c, "0", s] + n + j, key, group,
              consumer, st.one_of(sid, st.just("0")), st.sampled_from([[], ["COUNT", "2"]]),
              st.sampled_from([[], ["JUSTID"]])),
    st.builds(lambda k, f: ["XINFO", "STREAM", k] + f, key,
              st.sampled_from([[], ["FULL"], ["FULL", "COUNT", "2"]])),
    st.builds(lambda k: ["XINFO", "GROUPS", k], key),
    st.builds(lambda k, g: ["XINFO", "CONSUMERS", k, g], key, group),
    st.builds(lambda k, i, o: ["XSETID", k, i] + o, key, sid, st.sampled_from(
        [[], ["ENTRIESADDED", "20"], ["ENTRIESADDED", "20", "MAXDELETEDID", "1-0"]])),
    st.builds(lambda k: ["SET", k, "x"], st.sampled_from(["str", "s2"])),
    st.builds(lambda k: ["DEL", k], key),
    st.builds(lambda k: ["TYPE", k], key),
)


def _mask(args: list, reply: bytes) -> bytes:
    name = args[0].upper()
    if name == "XPENDING" and len(args) > 3 and reply.startswith(b"*"):
        # each entry: *4 id consumer idle count -> the idle integer masked
        return re.sub(rb"(\*4\r\n\$\d+\r\n[^\r]*\r\n\$\d+\r\n[^\r]*\r\n):\d+\r\n",
                      rb"\1:IDLE\r\n", reply)
    if name == "XINFO" and args[1].upper() == "CONSUMERS":
        return re.sub(rb"(\$4\r\nidle\r\n):\d+\r\n", rb"\1:IDLE\r\n", reply)
    if name == "XINFO":
        return EPOCH_MS.sub(b":TIME\r\n", reply)
    return reply


@pytest.fixture(scope="module")
def servers(redis_server):
    ours = ServerThread()
    yield redis_server, ours.port, ours
    ours.stop()


def _check_values(ours: ServerThread) -> None:
    """Every stream's invariants (Stream._check: nodes, PELs, mem == recount) and the
    keyspace's (used_memory is the sum of the values' costs)."""
    def check():
        ks = ours.server.ks
        for db in ks.dbs:
            for v in db.vals:
                if v is not None and v.__class__.__name__ == "Stream":
                    v._check()
        ks._check()
    ours.call(check)


def _run(servers, proto: int, seq: list) -> None:
    pair = Pair(servers[0], servers[1], proto)
    try:
        pair.run(["FLUSHALL"])
        pair.run(["CONFIG", "SET", "stream-node-max-entries", "3"])
        for args in seq:
            real, ours = pair.run(args)
            assert _mask(args, ours) == _mask(args, real), (args, real[:300], ours[:300])
        _check_values(servers[2])
        pair.run(["CONFIG", "SET", "stream-node-max-entries", "100"])
    finally:
        pair.close()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(commands, min_size=5, max_size=40), st.sampled_from([2, 3]))
def test_random_stream_sequences(servers, seq, proto):
    _run(servers, proto, seq)


def test_a_long_fixed_scenario(servers):
    """Many entries over many nodes, then every read and group command once."""
    seq = [["XADD", "s1", "%d-%d" % (n // 2, n % 2), "a", str(n), "b", "x"] for n in range(1, 60)]
    seq += [["XDEL", "s1", "3-0", "7-1", "20-0"], ["XTRIM", "s1", "MAXLEN", "~", "40"],
            ["XTRIM", "s1", "MINID", "12-1"], ["XGROUP", "CREATE", "s1", "g1", "0"],
            ["XREADGROUP", "GROUP", "g1", "c1", "COUNT", "7", "STREAMS", "s1", ">"],
            ["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "s1", ">"],
            ["XDEL", "s1", "15-0"], ["XAUTOCLAIM", "s1", "g1", "c1", "0", "0", "COUNT", "3"],
            ["XINFO", "STREAM", "s1", "FULL"], ["XINFO", "GROUPS", "s1"],
            ["XPENDING", "s1", "g1"], ["XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "s1", "0"]]
    for proto in (2, 3):
        _run(servers, proto, seq)
