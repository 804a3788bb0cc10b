"""Stream commands end to end through redis-py (RESP3 ``r``, RESP2 ``r2``) and raw bytes:
the equivalents of redis-py's own x* tests (its tests/test_commands.py), reply shapes in
both protocols, Redis's error texts, keyspace events, TYPE / OBJECT ENCODING, memory
accounting and eviction of stream keys."""

from __future__ import annotations

import time

import pytest
import redis

from tests.conftest import command_frame

from .conftest import err


def _ids(entries):
    return [i for i, _ in entries]


# ---- the equivalents of redis-py's x* tests ----

def test_xadd_and_xlen(r2):
    m1 = r2.xadd(b"s", {"foo": "bar"})
    assert m1.count(b"-") == 1
    r2.delete("s")
    assert r2.xadd("s", {"a": "1"}, id="1-1") == b"1-1"
    assert r2.xadd("s", {"a": "2"}, id="1-*") == b"1-2"
    assert r2.xadd("s", {"a": "3"}, id="2") == b"2-0"
    assert r2.xlen("s") == 3 and r2.xlen("missing") == 0
    assert r2.xadd("nomk", {"a": 1}, nomkstream=True) is None
    assert r2.exists("nomk") == 0


def test_xadd_maxlen_minid_limit(r2):
    for n in range(1, 1001):
        r2.xadd("s", {"x": n}, id="%d-0" % n)
    r2.xadd("s", {"x": 0}, maxlen=5, approximate=False)
    assert r2.xlen("s") == 5
    r2.delete("s")
    for n in range(1, 1001):
        r2.xadd("s", {"x": n}, id="%d-0" % n)
    # ~ with LIMIT: whole 100-entry nodes only, and at most LIMIT entries
    r2.xadd("s", {"x": 0}, maxlen=2, approximate=True, limit=300)
    assert r2.xlen("s") == 1001 - 300
    r2.xadd("s", {"x": 0}, minid="900-0", approximate=False)
    assert r2.xrange("s", count=1)[0][0] == b"900-0"
    with pytest.raises(redis.DataError):
        r2.xadd("s", {"x": 0}, maxlen=1, minid="1")


def test_xrange_and_xrevrange(r2):
    ids = [r2.xadd("s", {"n": n}, id="%d-1" % n) for n in range(1, 6)]
    assert _ids(r2.xrange("s")) == ids
    assert _ids(r2.xrange("s", min=ids[1])) == ids[1:]
    assert _ids(r2.xrange("s", max=ids[1])) == ids[:2]
    assert _ids(r2.xrange("s", min="(" + ids[1].decode())) == ids[2:]
    assert _ids(r2.xrange("s", count=2)) == ids[:2]
    assert _ids(r2.xrevrange("s")) == ids[::-1]
    assert _ids(r2.xrevrange("s", max=ids[2], count=2)) == [ids[2], ids[1]]
    assert r2.xrange("s")[0][1] == {b"n": b"1"}
    assert r2.xrange("missing") == []


def test_xdel_and_xtrim(r2):
    ids = [r2.xadd("s", {"n": n}) for n in range(4)]
    assert r2.xdel("s", ids[0], ids[1], "99-0") == 2
    assert r2.xdel("missing", "1-0") == 0
    assert r2.xtrim("s", maxlen=1, approximate=False) == 1
    assert r2.xlen("s") == 1
    r2.delete("s")
    for n in range(1, 5):
        r2.xadd("s", {"n": n}, id="%d-0" % n)
    assert r2.xtrim("s", minid="3-0", approximate=False) == 2
    with pytest.raises(redis.DataError):
        r2.xtrim("s", maxlen=1, minid="1")


def test_xgroup_create_setid_destroy(r2):
    r2.xadd("s", {"a": 1}, id="1-0")
    assert r2.xgroup_create("s", "g", id="0")
    assert err(r2, "XGROUP", "CREATE", "s", "g", "0") == \
        "BUSYGROUP Consumer Group name already exists"
    assert r2.xgroup_create("new", "g", mkstream=True)
    assert r2.xgroup_create("s", "g2", id="$", entries_read=1)
    assert r2.xinfo_groups("s")[1]["entries-read"] == 1
    assert r2.xgroup_setid("s", "g", "1-0", entries_read=1)
    assert r2.xinfo_groups("s")[0]["last-delivered-id"] == b"1-0"
    assert r2.xgroup_destroy("s", "g") == 1
    assert r2.xgroup_destroy("s", "g") == 0
    assert "requires the key to exist" in err(r2, "XGROUP", "CREATE", "nokey", "g", "0")


def test_xgroup_consumers(r2):
    r2.xadd("s", {"a": 1}, id="1-0")
    r2.xadd("s", {"a": 2}, id="2-0")
    r2.xgroup_create("s", "g", id="0")
    assert r2.xgroup_createconsumer("s", "g", "alice") == 1
    assert r2.xgroup_createconsumer("s", "g", "alice") == 0
    r2.xreadgroup("g", "bob", {"s": ">"})
    info = {c["name"]: c for c in r2.xinfo_consumers("s", "g")}
    assert info[b"bob"]["pending"] == 2 and info[b"alice"]["pending"] == 0
    assert r2.xgroup_delconsumer("s", "g", "bob") == 2
    assert r2.xpending("s", "g")["pending"] == 0


def test_xreadgroup_history_and_noack(r2):
    ids = [r2.xadd("s", {"n": n}, id="%d-0" % n) for n in range(1, 4)]
    r2.xgroup_create("s", "g", id="0")
    got = r2.xreadgroup("g", "c", {"s": ">"}, count=2)
    assert got == [[b"s", [(ids[0], {b"n": b"1"}), (ids[1], {b"n": b"2"})]]]
    # history: the consumer's own pending entries from an ID
    assert _ids(r2.xreadgroup("g", "c", {"s": "0"})[0][1]) == ids[:2]
    r2.xdel("s", ids[0])
    hist = r2.xreadgroup("g", "c", {"s": "0"})[0][1]
    assert hist[0][0] == ids[0] and not hist[0][1] and hist[1][0] == ids[1]
    r2.xreadgroup("g", "c2", {"s": ">"}, noack=True)
    assert r2.xpending("s", "g")["pending"] == 2
    assert r2.xreadgroup("g", "c", {"s": ">"}) == []
    assert err(r2, "XREADGROUP", "GROUP", "nog", "c", "STREAMS", "s", ">") == \
        "NOGROUP No such key 's' or consumer group 'nog' in XREADGROUP with GROUP option"


def test_xread(r, r2):
    ids = [r2.xadd("s", {"n": n}, id="%d-0" % n) for n in range(1, 4)]
    r2.xadd("t", {"n": 9}, id="9-0")
    assert r2.xread({"s": 0}, count=1) == [[b"s", [(ids[0], {b"n": b"1"})]]]
    assert r2.xread({"s": ids[2]}) == []
    got = r.xread({"s": ids[1], "t": 0})      # RESP3: a map
    assert got == {b"s": [[(ids[2], {b"n": b"3"})]], b"t": [[(b"9-0", {b"n": b"9"})]]} or \
        set(got) == {b"s", b"t"}


def test_xack_xpending(r2):
    ids = [r2.xadd("s", {"n": n}, id="%d-0" % n) for n in range(1, 4)]
    r2.xgroup_create("s", "g", id="0")
    r2.xreadgroup("g", "c1", {"s": ">"}, count=1)
    r2.xreadgroup("g", "c2", {"s": ">"})
    summary = r2.xpending("s", "g")
    assert summary["pending"] == 3 and summary["min"] == ids[0] and summary["max"] == ids[2]
    assert summary["consumers"] == [{"name": b"c1", "pending": 1},
                                    {"name": b"c2", "pending": 2}]
    rng = r2.xpending_range("s", "g", min="-", max="+", count=5, consumername="c2")
    assert [x["message_id"] for x in rng] == ids[1:]
    assert r2.xpending_range("s", "g", "-", "+", 5, idle=100000) == []
    assert r2.xack("s", "g", *ids) == 3
    assert r2.xpending("s", "g") == {"pending": 0, "min": None, "max": None,
                                     "consumers": []}


def test_xclaim_and_xautoclaim(r2):
    ids = [r2.xadd("s", {"n": n}, id="%d-0" % n) for n in range(1, 4)]
    r2.xgroup_create("s", "g", id="0")
    r2.xreadgroup("g", "alice", {"s": ">"})
    assert r2.xclaim("s", "g", "bob", 0, [ids[0]]) == [(ids[0], {b"n": b"1"})]
    assert r2.xclaim("s", "g", "bob", 0, [ids[1]], justid=True) == [ids[1]]
    assert r2.xclaim("s", "g", "bob", 10 ** 9, [ids[2]]) == []     # not idle enough
    r2.xdel("s", ids[2])
    cursor, claimed, deleted = r2.xautoclaim("s", "g", "carol", 0, "0-0", count=10)[:3] \
        if len(r2.xautoclaim("s", "g", "carol", 0, "0-0", count=1)) == 3 else (0, 0, 0)
    assert deleted == [] or deleted == [ids[2]]
    pending = r2.xpending_range("s", "g", "-", "+", 10)
    assert {p["consumer"] for p in pending} == {b"carol"}
    assert err(r2, "XCLAIM", "s", "g", "bob", "0", ids[0], "FOO") == \
        "Unrecognized XCLAIM option 'FOO'"
    assert err(r2, "XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "0") == \
        "COUNT must be > 0"


def test_xinfo_stream_and_full(r, r2):
    r2.xadd("s", {"a": 1}, id="1-0")
    r2.xadd("s", {"a": 2}, id="2-0")
    r2.xgroup_create("s", "g", id="0")
    r2.xreadgroup("g", "c", {"s": ">"}, count=1)
    info = r2.xinfo_stream("s")
    assert info["length"] == 2 and info["groups"] == 1
    assert info["first-entry"] == (b"1-0", {b"a": b"1"})
    assert info["last-entry"] == (b"2-0", {b"a": b"2"})
    assert info["entries-added"] == 2 and info["recorded-first-entry-id"] == b"1-0"
    full = r2.xinfo_stream("s", full=True)
    g = full["groups"][0]
    assert g["name"] == b"g" and g["pel-count"] == 1 and g["lag"] == 1
    assert g["consumers"][0]["name"] == b"c"
    info3 = r.xinfo_stream("s")
    assert info3["length"] == 2
    assert err(r2, "XINFO", "STREAM", "nokey") == "no such key"


def test_xsetid(r2):
    r2.xadd("s", {"a": 1}, id="5-0")
    assert err(r2, "XSETID", "s", "1-0") == \
        "The ID specified in XSETID is smaller than the target stream top item"
    assert r2.execute_command("XSETID", "s", "9-0", "ENTRIESADDED", "7",
                              "MAXDELETEDID", "3-0") == b"OK"
    info = r2.xinfo_stream("s")
    assert info["last-generated-id"] == b"9-0" and info["entries-added"] == 7
    assert info["max-deleted-entry-id"] == b"3-0"
    assert err(r2, "XADD", "s", "8-0", "a", "b") == \
        "The ID specified in XADD is equal or smaller than the target stream top item"


# ---- errors, shapes, types ----

def test_exact_errors(r2):
    r2.xadd("s", {"a": 1}, id="1-0")
    assert err(r2, "XADD", "s", "0-0", "a", "b") == \
        "The ID specified in XADD must be greater than 0-0"
    assert err(r2, "XADD", "s", "abc", "a", "b") == \
        "Invalid stream ID specified as stream command argument"
    assert err(r2, "XADD", "s", "*", "a") == "wrong number of arguments for 'xadd' command"
    assert err(r2, "XADD", "s", "LIMIT", "5", "*", "a", "b") == \
        "syntax error, LIMIT cannot be used without specifying a trimming strategy"
    assert err(r2, "XADD", "s", "MAXLEN", "5", "LIMIT", "5", "*", "a", "b") == \
        "syntax error, LIMIT cannot be used without the special ~ option"
    assert err(r2, "XADD", "s", "MAXLEN", "-1", "*", "a", "b") == \
        "The MAXLEN argument must be >= 0."
    assert err(r2, "XTRIM", "s", "COUNT", "1") == "syntax error"
    assert err(r2, "XTRIM", "s", "LIMIT", "1") == \
        "syntax error, LIMIT cannot be used without specifying a trimming strategy"
    assert err(r2, "XRANGE", "s", "(-", "+") == \
        "Invalid stream ID specified as stream command argument"
    assert err(r2, "XRANGE", "s", "(18446744073709551615-18446744073709551615", "+") == \
        "invalid start ID for the interval"
    assert err(r2, "XREAD", "STREAMS", "s", "t", "u") == \
        "Unbalanced XREAD list of streams: for each stream key an ID or '$' must be " \
        "specified."
    assert err(r2, "XREAD", "STREAMS", "s", ">") == \
        "The > ID can be specified only when calling XREADGROUP using the GROUP <group> " \
        "<consumer> option."
    assert err(r2, "XREADGROUP", "COUNT", "1", "NOACK", "STREAMS", "s", "0") == \
        "Missing GROUP option for XREADGROUP"
    assert err(r2, "XPENDING", "s", "nog") == "NOGROUP No such key 's' or consumer group 'nog'"
    assert err(r2, "XGROUP", "SETID", "s", "nog", "0") == \
        "NOGROUP No such consumer group 'nog' for key name 's'"
    r2.set("str", "x")
    assert err(r2, "XADD", "str", "*", "a", "b").startswith("WRONGTYPE Operation against a key")
    assert err(r2, "XLEN", "str").startswith("WRONGTYPE Operation against a key")


def test_error_prefixes_on_the_wire(server, raw):
    c = raw()
    c.send(command_frame("XADD", "s", "1-0", "a", "b"))
    c.read_reply()
    c.send(command_frame("XGROUP", "CREATE", "s", "g", "0"))
    c.read_reply()
    c.send(command_frame("XGROUP", "CREATE", "s", "g", "0"))
    assert c.read_reply() == b"-BUSYGROUP Consumer Group name already exists\r\n"
    c.send(command_frame("XPENDING", "s", "x"))
    assert c.read_reply() == b"-NOGROUP No such key 's' or consumer group 'x'\r\n"
    c.send(command_frame("XPENDING", "s", "g"))
    assert c.read_reply() == b"*4\r\n:0\r\n$-1\r\n$-1\r\n*-1\r\n"
    c.send(command_frame("XRANGE", "s", "-", "+", "COUNT", "0"))
    assert c.read_reply() == b"*-1\r\n"
    c.send(command_frame("XREAD", "STREAMS", "s", "$"))
    assert c.read_reply() == b"*-1\r\n"


def test_type_encoding_and_empty_stream_stays(r2):
    r2.xadd("s", {"a": 1}, id="1-0")
    assert r2.type("s") == b"stream"
    assert r2.object("encoding", "s") == b"stream"
    r2.xdel("s", "1-0")
    assert r2.exists("s") == 1 and r2.xlen("s") == 0
    info = r2.xinfo_stream("s")
    assert info["first-entry"] is None and info["max-deleted-entry-id"] == b"1-0"
    assert r2.scan(0, _type="stream")[1] == [b"s"]


def test_copy_rename_and_digest(r2, server):
    r2.xadd("s", {"a": 1}, id="1-0")
    r2.xgroup_create("s", "g", id="0")
    r2.xreadgroup("g", "c", {"s": ">"})
    assert r2.copy("s", "t")
    r2.xack("t", "g", "1-0")
    assert r2.xpending("s", "g")["pending"] == 1 and r2.xpending("t", "g")["pending"] == 0
    from ferrumkv_py.digest import DIGEST_BYTES, value_digest

    def digests():
        db = server.server.ks.dbs[0]
        out = []
        for k in (b"s", b"t"):
            d = bytearray(DIGEST_BYTES)
            value_digest(d, db.vals[db.find(k)], False)
            out.append(bytes(d))
        return out
    a, b = server.call(digests)
    assert a == b


def test_keyspace_events(r2, server):
    r2.config_set("notify-keyspace-events", "KEt")
    p = r2.pubsub()
    p.psubscribe("__keyevent@0__:*")
    p.get_message(timeout=1)
    r2.xadd("s", {"a": 1}, id="1-0", maxlen=0, approximate=False)
    r2.xgroup_create("s", "g", id="0")
    r2.xgroup_createconsumer("s", "g", "c")
    r2.xgroup_setid("s", "g", "0")
    r2.xadd("s", {"a": 1}, id="2-0")
    r2.xdel("s", "2-0")
    r2.execute_command("XSETID", "s", "5-0")
    r2.xgroup_delconsumer("s", "g", "c")
    r2.xgroup_destroy("s", "g")
    events = []
    deadline = time.time() + 5
    while len(events) < 11 and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m and m["type"] == "pmessage":
            events.append(m["channel"].split(b":")[-1])
    assert events == [b"xadd", b"xtrim", b"xgroup-create", b"xgroup-createconsumer",
                      b"xgroup-setid", b"xadd", b"xdel", b"xsetid", b"xgroup-delconsumer",
                      b"xgroup-destroy"]
    p.close()


def test_memory_counts_streams_and_they_evict(make_server):
    s = make_server(maxmemory="1mb", maxmemory_policy="allkeys-lru")
    c = redis.Redis(port=s.port)
    before = c.info("memory")["used_memory"]
    c.xadd("s", {"f": "v" * 100}, id="1-0")
    grown = c.info("memory")["used_memory"] - before
    assert grown > 100
    for n in range(2000):
        c.xadd("k%d" % n, {"f": "x" * 500})
    assert c.dbsize() < 2000                # stream keys were evicted to fit
    c.close()


def test_memory_matches_recount(r2, server):
    for n in range(1, 300):
        r2.xadd("s", {"f": n}, id="%d-0" % n)
    r2.xgroup_create("s", "g", id="0")
    r2.xreadgroup("g", "c", {"s": ">"}, count=50)
    r2.xdel("s", "3-0", "4-0")
    r2.xtrim("s", maxlen=120, approximate=True)
    r2.xack("s", "g", "60-0")

    def check():
        ks = server.server.ks
        e = ks.dbs[0].find(b"s")
        v = ks.dbs[0].vals[e]
        v._check()
        return v.mem
    assert server.call(check) > 0


def test_acl_key_patterns_and_getkeys(server, raw):
    """XREAD / XREADGROUP keys are found after STREAMS (Redis xreadGetKeys); the replies
    were checked against redis-server 7.0.15 for these calls."""
    c = raw()

    def call(*args):
        c.send(command_frame(*args))
        return c.read_reply()
    call("ACL", "SETUSER", "u", "on", "nopass", "~a*", "+@all")
    assert call("COMMAND", "GETKEYS", "XREAD", "COUNT", "1", "STREAMS", "a1", "b1", "0",
                "0") == b"*2\r\n$2\r\na1\r\n$2\r\nb1\r\n"
    assert call("COMMAND", "GETKEYS", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "a1",
                "0") == b"*1\r\n$2\r\na1\r\n"
    assert call("ACL", "DRYRUN", "u", "XREAD", "STREAMS", "a1", "0") == b"+OK\r\n"
    assert b"no permissions to access the 'b1' key" in call(
        "ACL", "DRYRUN", "u", "XREADGROUP", "GROUP", "g", "c", "STREAMS", "b1", "0")
    assert b"no permissions to access the 'b1' key" in call(
        "ACL", "DRYRUN", "u", "XINFO", "STREAM", "b1")


def test_unlink_frees_big_streams_lazily(r2):
    """Redis's free effort of a stream (its tree's nodes, groups x the first PEL): a
    1000-entry stream in 5-entry nodes goes to the lazy free queue, a one-node stream whose
    group was destroyed is freed at once; CONFIG RESETSTAT zeroes lazyfreed_objects (the
    scenario of Redis's unit/lazyfree.tcl)."""
    def lazyfreed():
        return r2.info("memory").get("lazyfreed_objects", r2.info().get("lazyfreed_objects"))
    r2.config_set("stream-node-max-entries", 5)
    for j in range(1000):
        r2.xadd("stream", {"foo" if j % 10 else "bar": j})
    r2.xgroup_create("stream", "g", id="0")
    r2.xreadgroup("g", "alice", {"stream": ">"}, count=2)
    r2.config_resetstat()
    r2.unlink("stream")
    deadline = time.time() + 10
    while r2.info("memory")["lazyfree_pending_objects"] and time.time() < deadline:
        time.sleep(0.02)
    assert lazyfreed() == 1
    r2.config_resetstat()
    assert lazyfreed() == 0
    r2.xadd("s", {"a": "b"})
    r2.xgroup_create("s", "bla", id="$")
    r2.xgroup_destroy("s", "bla")
    r2.unlink("s")
    assert lazyfreed() == 0
    r2.config_set("stream-node-max-entries", 100)


def test_consumer_events_of_claims(r2):
    """Redis's unit/pubsub 'stream events test': consumers made by XREADGROUP and XCLAIM
    announce themselves, deleting a missing consumer and claiming for an existing one
    do not."""
    r2.config_set("notify-keyspace-events", "Kt")
    p = r2.pubsub()
    p.psubscribe("*")
    p.get_message(timeout=1)
    r2.xgroup_create("mystream", "mygroup", id="$", mkstream=True)
    r2.xgroup_createconsumer("mystream", "mygroup", "Bob")
    sid = r2.xadd("mystream", {"field1": "A"}, id="1")
    r2.xreadgroup("mygroup", "Alice", {"mystream": ">"})
    r2.xclaim("mystream", "mygroup", "Mike", 0, [sid], force=True)
    r2.xgroup_delconsumer("mystream", "mygroup", "Lee")
    r2.xautoclaim("mystream", "mygroup", "Bob", 0, sid)
    r2.xgroup_delconsumer("mystream", "mygroup", "Bob")
    events, deadline = [], time.time() + 5
    while len(events) < 6 and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m and m["type"] == "pmessage":
            events.append(m["data"])
    assert events == [b"xgroup-create", b"xgroup-createconsumer", b"xadd",
                      b"xgroup-createconsumer", b"xgroup-createconsumer",
                      b"xgroup-delconsumer"]
    p.close()


def test_client_tracking_of_xread_keys(server, raw):
    """XREAD's keys (after STREAMS) are remembered by CLIENT TRACKING and invalidated by
    XADD, as Redis's getKeysFromCommand finds them."""
    c, other = raw(), raw()

    def call(conn, *args):
        conn.send(command_frame(*args))
        return conn.read_reply()
    call(c, "HELLO", "3")
    call(c, "CLIENT", "TRACKING", "on")
    call(other, "XADD", "s", "1-0", "a", "b")
    call(c, "XREAD", "STREAMS", "s", "0")
    call(other, "XADD", "s", "2-0", "a", "b")
    assert c.read_reply() == b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ns\r\n"


def test_xread_resp3_map_repeats_a_key_named_twice(server, raw):
    """Redis writes its map entry by entry: a stream named twice appears twice."""
    c = raw()
    for args in (("HELLO", "3"), ("XADD", "s", "1-0", "a", "b")):
        c.send(command_frame(*args))
        c.read_reply()
    c.send(command_frame("XREAD", "STREAMS", "s", "s", "0", "0"))
    one = b"$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    assert c.read_reply() == b"%2\r\n" + one + one


QUIET_WRITES = [  # Redis's t_stream.c calls signalModifiedKey for none of these
    ("XGROUP", "CREATECONSUMER", "s", "g", "bob"), ("XREADGROUP", "GROUP", "g", "c",
                                                    "STREAMS", "s", ">"),
    ("XACK", "s", "g", "1-0"), ("XCLAIM", "s", "g", "bob", "0", "2-0"),
    ("XAUTOCLAIM", "s", "g", "bob", "0", "0"), ("XGROUP", "SETID", "s", "g", "0"),
    ("XSETID", "s", "9-0"), ("XGROUP", "CREATE", "s", "g2", "0"),
    ("XGROUP", "DELCONSUMER", "s", "g", "c"), ("XGROUP", "DESTROY", "s", "g"),
]
LOUD_WRITES = [("XADD", "s", "10-0", "a", "b"), ("XDEL", "s", "1-0"),
               ("XTRIM", "s", "MAXLEN", "0")]


@pytest.mark.parametrize("write", QUIET_WRITES + LOUD_WRITES, ids=lambda w: " ".join(w[:2]))
def test_which_stream_writes_touch_a_watched_key(server, raw, write):
    """WATCH sees XADD / XDEL / XTRIM only, as in Redis 7.0.15 (checked on redis-server
    with the same calls)."""
    c, other = raw(), raw()

    def call(conn, *args):
        conn.send(command_frame(*args))
        return conn.read_reply()
    for n in (1, 2):
        call(other, "XADD", "s", "%d-0" % n, "a", "b")
    call(other, "XGROUP", "CREATE", "s", "g", "0")
    call(other, "XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    call(c, "WATCH", "s")
    assert not call(other, *write).startswith(b"-")
    call(c, "MULTI")
    call(c, "PING")
    aborted = call(c, "EXEC") == b"*-1\r\n"
    assert aborted == (write in LOUD_WRITES)
