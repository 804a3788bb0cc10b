"""Pub/sub: SUBSCRIBE & co. byte for byte against redis-server 7.0, delivery, cleanup,
redis-py's PubSub (get_message, listen, handlers, run_in_thread, patterns, shard channels),
the RESP2 subscribed-state rules, and the one-encoding-per-protocol fan-out."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from ferrumkv_py.pubsub import PubSub
from tests.ferrumkv.container_diff import encode_command
from tests.ferrumkv.events_diff import PONG2, PONG3, Conn

# One connection's RESP2 session: subscribed-state rules, counts, null channel, RESET.
SESSION = [
    ("SUBSCRIBE", "a", "a"), ("SSUBSCRIBE", "b"), ("PSUBSCRIBE", "p*"), ("UNSUBSCRIBE", "a"),
    ("PUNSUBSCRIBE",), ("GET", "x"), ("SUNSUBSCRIBE",), ("GET", "x"),
    ("UNSUBSCRIBE", "zz"), ("SUNSUBSCRIBE", "q"), ("PUNSUBSCRIBE", "q"), ("SSUBSCRIBE", "b"),
    ("UNSUBSCRIBE",), ("PING", "x"), ("CLIENT", "LIST"), ("RESET",), ("GET", "x"),
    ("SUBSCRIBE", "a"), ("MULTI",), ("HELLO", "3"), ("PING",), ("PUBLISH", "a", "m"),
    ("QUIT",),
]
N_FRAMES = {0: 2}   # SUBSCRIBE a a answers twice


def _session(port: int) -> list:
    c = Conn(port)
    try:
        return [c.cmd_frames(N_FRAMES.get(i, 1), *args) for i, args in enumerate(SESSION)]
    finally:
        c.close()


@pytest.mark.needs_redis
def test_subscribed_session_matches_redis(server, redis_server):
    assert _session(server.port) == _session(redis_server)


def test_subscribed_resp2_rules_exact_bytes(raw):
    c = Conn(raw().sock.getpeername()[1])
    assert c.cmd("SUBSCRIBE", "ch1") == b"*3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n"
    assert c.cmd("GET", "k") == (b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                 b"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                                 b"this context\r\n")
    assert c.cmd("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
    assert c.cmd("PING", "hi") == b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"
    assert c.cmd("UNSUBSCRIBE") == b"*3\r\n$11\r\nunsubscribe\r\n$3\r\nch1\r\n:0\r\n"
    assert c.cmd("UNSUBSCRIBE") == b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"
    assert c.cmd("GET", "k") == b"$-1\r\n"
    c.close()


def test_resp3_subscriber_runs_any_command_and_gets_pushes(server):
    sub, pub = Conn(server.port), Conn(server.port)
    sub.cmd("HELLO", "3")
    assert sub.cmd("SUBSCRIBE", "ch1") == b">3\r\n$9\r\nsubscribe\r\n$3\r\nch1\r\n:1\r\n"
    assert sub.cmd("GET", "k") == b"_\r\n"
    assert sub.cmd("PING") == PONG3
    assert pub.cmd("PUBLISH", "ch1", "x") == b":1\r\n"
    assert sub.read_reply() == b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$1\r\nx\r\n"
    # publishing to itself: the push comes before the PUBLISH reply, as in Redis
    assert sub.cmd("PUBLISH", "ch1", "y") == b">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$1\r\ny\r\n"
    assert sub.read_reply() == b":1\r\n"
    sub.close()
    pub.close()


def _fanout(port: int) -> list:
    """Two RESP2 subscribers and a RESP3 one, channel + patterns; every frame each got."""
    subs = [Conn(port) for _ in range(3)]
    pub = Conn(port)
    subs[2].cmd("HELLO", "3")
    subs[0].cmd_frames(2, "SUBSCRIBE", "news", "other")
    subs[1].cmd_frames(1, "PSUBSCRIBE", "n*")   # one pattern: Redis orders patterns by hash
    subs[2].cmd_frames(1, "SUBSCRIBE", "news")
    subs[2].cmd_frames(1, "PSUBSCRIBE", "n?ws")
    counts = [pub.cmd("PUBLISH", ch, msg) for ch, msg in
              (("news", "m1"), ("nope", "m2"), ("other", ""), ("nows", "m\r\n3"))]
    counts.append(pub.cmd("PUBSUB", "NUMSUB", "news", "other", "x"))
    counts.append(pub.cmd("PUBSUB", "NUMPAT"))
    counts.append(pub.cmd("PUBSUB", "CHANNELS", "o*"))
    out = [counts] + [s.drain(PONG3 if i == 2 else PONG2) for i, s in enumerate(subs)]
    for s in subs + [pub]:
        s.close()
    return out


@pytest.mark.needs_redis
def test_fanout_matches_redis(server, redis_server):
    ours = _fanout(server.port)
    assert ours == _fanout(redis_server)
    assert ours[0][:4] == [b":4\r\n", b":1\r\n", b":1\r\n", b":2\r\n"]


def test_pipelined_publishes_arrive_in_order(server):
    sub, pub = Conn(server.port), Conn(server.port)
    sub.cmd("SUBSCRIBE", "c")
    n = 200
    pub.send(b"".join(b"*3\r\n$7\r\nPUBLISH\r\n$1\r\nc\r\n$%d\r\n%d\r\n" % (len(b"%d" % i), i)
                      for i in range(n)))
    assert [pub.read_reply() for _ in range(n)] == [b":1\r\n"] * n
    got = sub.drain()
    assert got == [b"*3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$%d\r\n%d\r\n" % (len(b"%d" % i), i)
                   for i in range(n)]
    sub.close()
    pub.close()


class _FakeClient:
    def __init__(self, proto):
        self.proto = proto
        self.frames = []
        self.sub_channels, self.sub_patterns, self.sub_shard = {}, {}, {}

    def push(self, frame):
        self.frames.append(frame)


def test_publish_encodes_once_per_protocol():
    ps = PubSub()
    clients = [_FakeClient(2 if i % 3 else 3) for i in range(30)]
    for c in clients:
        ps.subscribe(c, b"ch")
        ps.psubscribe(c, b"c*")
    assert ps.publish(b"ch", b"hello") == 60
    for proto in (2, 3):
        group = [c for c in clients if c.proto == proto]
        first = group[0].frames
        assert len(first) == 2
        for c in group[1:]:   # the very same bytes objects, not equal copies
            assert all(a is b for a, b in zip(c.frames, first))
    assert clients[1].frames[1] == (b"*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n"
                                    b"$5\r\nhello\r\n")
    assert clients[0].frames[0] == b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n"
    ps.drop_client(clients[0])
    assert ps.publish(b"ch", b"x") == 58 and not clients[0].sub_channels


def test_disconnect_and_reset_clean_up(server):
    r = redis.Redis(port=server.port, protocol=2, decode_responses=True)
    a = Conn(server.port)
    a.cmd_frames(2, "SUBSCRIBE", "x", "y")
    a.cmd("PSUBSCRIBE", "p*")
    a.cmd("SSUBSCRIBE", "s")
    line = r.client_list(_type="pubsub")[0]
    assert (line["sub"], line["psub"], line["ssub"], line["flags"]) == ("2", "1", "1", "P")
    assert r.client_list(_type="normal")[0]["flags"] == "N"
    stats = r.info("stats")
    assert (stats["pubsub_channels"], stats["pubsub_patterns"],
            stats["pubsubshard_channels"]) == (2, 1, 1)
    ours = [c for c in server.server.clients.values() if c.sub_channels][0]
    assert ours.obuf_class == "pubsub"
    assert a.cmd("RESET") == b"+RESET\r\n"
    assert ours.obuf_class == "normal" and not ours.slow_path
    assert r.pubsub_numsub("x") == [("x", 0)] and r.pubsub_numpat() == 0
    a.cmd("SUBSCRIBE", "x")
    a.close()
    deadline = time.time() + 5
    while r.pubsub_numsub("x")[0][1] and time.time() < deadline:
        time.sleep(0.01)
    assert r.pubsub_numsub("x") == [("x", 0)]
    assert r.info("stats")["pubsub_channels"] == 0
    assert r.publish("x", "gone") == 0
    r.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub(server, protocol):
    r = redis.Redis(port=server.port, protocol=protocol, decode_responses=True)
    p = r.pubsub()
    p.subscribe("chan")
    p.psubscribe("pat.*")
    assert p.get_message(timeout=2)["type"] == "subscribe"
    assert p.get_message(timeout=2) == {"type": "psubscribe", "pattern": None,
                                        "channel": "pat.*", "data": 2}
    assert r.publish("chan", "one") == 1
    assert r.publish("pat.x", "two") == 1
    assert p.get_message(timeout=2) == {"type": "message", "pattern": None, "channel": "chan",
                                        "data": "one"}
    assert p.get_message(timeout=2) == {"type": "pmessage", "pattern": "pat.*",
                                        "channel": "pat.x", "data": "two"}
    assert r.pubsub_channels() == ["chan"]
    p.unsubscribe("chan")
    assert p.get_message(timeout=2)["type"] == "unsubscribe"
    # listen()
    r.publish("pat.y", "three")
    msg = next(m for m in p.listen() if m["type"] == "pmessage")
    assert msg["data"] == "three"
    p.close()
    # handlers + run_in_thread
    got, done = [], threading.Event()

    def handler(m):
        got.append(m["data"])
        if len(got) == 3:
            done.set()
    p2 = r.pubsub(ignore_subscribe_messages=True)
    p2.subscribe(**{"h1": handler})
    p2.psubscribe(**{"h*": handler})
    thread = p2.run_in_thread(sleep_time=0.01, daemon=True)
    deadline = time.time() + 5
    while r.pubsub_numsub("h1")[0][1] == 0 and time.time() < deadline:
        time.sleep(0.01)
    r.publish("h1", "a")
    r.publish("h2", "b")
    assert done.wait(5)
    assert sorted(got) == ["a", "a", "b"]
    thread.stop()
    thread.join(5)
    p2.close()
    r.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_sharded_pubsub(server, protocol):
    r = redis.Redis(port=server.port, protocol=protocol, decode_responses=True)
    p = r.pubsub()
    p.ssubscribe("sh")
    assert p.get_sharded_message(timeout=2) == {"type": "ssubscribe", "pattern": None,
                                                "channel": "sh", "data": 1}
    assert r.spublish("sh", "v") == 1
    assert r.publish("sh", "not shard") == 0   # the namespaces are separate
    assert p.get_sharded_message(timeout=2) == {"type": "smessage", "pattern": None,
                                                "channel": "sh", "data": "v"}
    assert r.pubsub_shardchannels() == ["sh"]
    assert r.pubsub_shardnumsub("sh") == [("sh", 1)]
    p.sunsubscribe("sh")
    assert p.get_sharded_message(timeout=2)["type"] == "sunsubscribe"
    assert r.pubsub_shardchannels() == []
    p.close()
    r.close()


@pytest.mark.needs_redis
def test_pubsub_introspection_errors_match_redis(server, redis_server):
    script = [("PUBSUB", "CHANNELS", "a", "b"), ("PUBSUB", "SHARDCHANNELS", "a", "b"),
              ("PUBSUB", "NUMPAT", "x"), ("PUBSUB", "FOO"), ("PUBSUB", "HELP"),
              ("PUBLISH", "a"), ("SPUBLISH", "a", "b", "c"), ("SUBSCRIBE",),
              ("PUBSUB", "NUMSUB"), ("PUBSUB", "SHARDNUMSUB", "q"), ("PUBSUB", "CHANNELS"),
              ("COMMAND", "INFO", "subscribe", "publish", "unsubscribe", "pubsub|numsub")]

    def run(port):
        c = Conn(port)
        out = [c.cmd(*a) for a in script]
        c.close()
        return out
    assert run(server.port) == run(redis_server)


@pytest.mark.needs_redis
def test_subscribe_inside_multi_matches_redis(server, redis_server):
    def run(port):
        c = Conn(port)
        out = [c.cmd("MULTI"), c.cmd("SUBSCRIBE", "a", "b"), c.cmd("PSUBSCRIBE", "x*")]
        c.send(b"*1\r\n$4\r\nEXEC\r\n")
        out += [c.read_reply() for _ in range(2)]   # "*2" + two frames, then the third
        out.append(c.drain())
        c.close()
        return out
    assert run(server.port) == run(redis_server)


def test_client_kill_type_pubsub(server):
    r = redis.Redis(port=server.port, protocol=2)
    sub, plain = Conn(server.port), Conn(server.port)
    sub.cmd("SUBSCRIBE", "k")
    plain.cmd("PING")
    assert r.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
    assert sub.closed() and not plain.closed(0.2)
    assert r.pubsub_numsub("k") == [(b"k", 0)]
    sub.close()
    plain.close()
    r.close()


@pytest.mark.needs_redis
def test_pushes_to_itself_inside_exec_match_redis(server, redis_server):
    def run(port):
        c = Conn(port)
        c.cmd("HELLO", "3")
        c.cmd("CONFIG", "SET", "notify-keyspace-events", "E$")
        out = [c.cmd("SUBSCRIBE", "c"), c.cmd("PSUBSCRIBE", "__keyevent@0__:*"),
               c.cmd("MULTI"), c.cmd("PUBLISH", "c", "x"), c.cmd("SET", "q", "1"),
               c.cmd("PUBLISH", "c", "y")]
        c.send(b"*1\r\n$4\r\nEXEC\r\n")
        out.append(c.drain(PONG3))   # the EXEC reply with the pushes between its elements
        c.cmd("CONFIG", "SET", "notify-keyspace-events", "")
        c.close()
        return out
    ours = run(server.port)
    assert ours == run(redis_server)


CHANNELS = ["news", "nows", "n", "sport", "s.1", "s.2"]
PATTERNS = ["n*", "s.?", "*", "[ns]o*", "x*"]


def _random_pubsub(port: int, seed: int, steps: int = 500) -> list:
    """Three subscribers (RESP2, RESP2, RESP3) and a publisher doing random (un)subscribes
    and publishes; each subscriber holds one pattern at most (Redis serves several matching
    patterns in hash order) and unsubscribes by name (the no-argument form walks a hash)."""
    import random
    rng = random.Random(seed)
    subs = [Conn(port) for _ in range(3)]
    subs[2].cmd("HELLO", "3")
    pub = Conn(port)
    pattern = [None, None, None]
    out = []
    for _ in range(steps):
        op = rng.random()
        i = rng.randrange(3)
        s = subs[i]
        if op < 0.25:
            out.append(s.cmd_frames(1, "SUBSCRIBE", rng.choice(CHANNELS)))
        elif op < 0.4:
            out.append(s.cmd_frames(1, "UNSUBSCRIBE", rng.choice(CHANNELS)))
        elif op < 0.5:
            if pattern[i] is None:
                pattern[i] = rng.choice(PATTERNS)
                out.append(s.cmd_frames(1, "PSUBSCRIBE", pattern[i]))
            else:
                out.append(s.cmd_frames(1, "PUNSUBSCRIBE", pattern[i]))
                pattern[i] = None
        elif op < 0.55:
            out.append(s.cmd_frames(1, "SSUBSCRIBE", rng.choice(CHANNELS)))
        elif op < 0.85:
            shard = rng.random() < 0.2
            out.append(pub.cmd("SPUBLISH" if shard else "PUBLISH", rng.choice(CHANNELS),
                               rng.choice(["m", "", "x" * 40])))
            out.append([sub.drain() for sub in subs])
        elif op < 0.95:
            out.append(pub.cmd("PUBSUB", "NUMSUB", *CHANNELS))
            out.append(pub.cmd("PUBSUB", "NUMPAT"))
            out.append(pub.cmd("PUBSUB", "SHARDNUMSUB", *CHANNELS))
        else:
            from tests.ferrumkv.container_diff import split_elements
            head, items = split_elements(pub.cmd("PUBSUB", "CHANNELS", rng.choice(PATTERNS)))
            out.append(head + b"".join(sorted(items)))
    for c in subs + [pub]:
        c.close()
    return out


@pytest.mark.needs_redis
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_pubsub_matches_redis(server, redis_server, seed):
    ours = _random_pubsub(server.port, seed)
    assert ours == _random_pubsub(redis_server, seed)
    assert any(isinstance(x, list) and any(x) for x in ours)   # messages were delivered


def _reply_off_session(port: int, proto: int) -> list:
    """CLIENT REPLY OFF, then (P)(UN)SUBSCRIBE, a message, and REPLY ON: what arrives."""
    c, p = Conn(port), Conn(port)
    try:
        if proto == 3:
            c.cmd("HELLO", "3")
        for args in (("CLIENT", "REPLY", "OFF"), ("SUBSCRIBE", "ch"), ("PSUBSCRIBE", "c*")):
            c.send(encode_command([a.encode() for a in args]))
        frames = [c.read_reply(), c.read_reply()]         # the two confirmations
        assert p.cmd("PUBLISH", "ch", "hi") == b":2\r\n"
        frames += [c.read_reply(), c.read_reply()]        # message and pmessage
        if proto == 3:                                    # RESP2 allows no CLIENT in here
            c.send(encode_command([b"CLIENT", b"REPLY", b"OFF"]))
            c.send(encode_command([b"UNSUBSCRIBE", b"ch"]))
            frames.append(c.read_reply())
        return frames
    finally:
        c.close()
        p.close()


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_reply_off_does_not_silence_pubsub_confirmations(server, redis_server, proto):
    """Redis writes (un)subscribe confirmations while 'pushing', which CLIENT REPLY OFF does
    not silence (unit/pubsub "PubSub messages with CLIENT REPLY OFF" hung here)."""
    ours = _reply_off_session(server.port, proto)
    assert ours == _reply_off_session(redis_server, proto)
    assert b"subscribe" in ours[0] and b"psubscribe" in ours[1]
