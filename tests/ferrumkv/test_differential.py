"""Differential test: the same command sequences sent to ferrumkv_py and to a real
redis-server 7.0, replies compared byte for byte on raw sockets, over RESP2 and RESP3.

Hypothesis draws sequences of string, key/TTL, list, hash, set and sorted-set commands over a
small key pool (so types collide and WRONGTYPE happens), with wrong arities, bad numbers,
bad options, unknown commands and MULTI/EXEC/DISCARD/WATCH blocks.  Both servers are flushed
between examples.  A few replies are legitimately different and are normalized first:

* unordered collections (SMEMBERS, SUNION, KEYS ...) are compared sorted;
* TTL / PTTL / EXPIRETIME values are compared as "positive" (they depend on the clock).

``ALLOWLIST`` names the commands whose replies knowingly differ (never compared) and why;
``KNOWN_BUGS`` holds differences found here that belong to someone's open work, with the
exact difference, so they can be removed as they get fixed.
"""

from __future__ import annotations

import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ServerThread

pytestmark = pytest.mark.needs_redis

# Commands never compared, with the reason.
ALLOWLIST = {
    "client|setinfo": "Redis 7.2 command; 7.0 answers unknown subcommand, we accept it",
    "client|help": "our help lists only the subcommands we implement",
    "command|help": "our help lists only the subcommands we implement",
    "command": "no key specs / tips / doc arguments in COMMAND, COMMAND INFO, COMMAND DOCS",
    "object": "value encodings (listpack, quicklist ...) are Redis memory layouts",
    "memory": "MEMORY USAGE is our memory model, not jemalloc's",
    "info": "server facts (pids, memory, timings) differ by nature",
    "config|set maxmemory-policy allkeys-ahe": "our own policies (allkeys-ahe, volatile-ahe)",
    "time": "the clock", "randomkey": "random", "spop": "random", "srandmember": "random",
    "hrandfield": "random", "zrandmember": "random",
    "scan": "cursors are layout-dependent", "sscan": "cursors", "hscan": "cursors",
    "zscan": "cursors",
}

# Differences found by this test in command families owned by other work (exact diff).
KNOWN_BUGS: dict[str, str] = {}

# Replies compared as sets (order is a hash-table detail in Redis).
UNORDERED = {"smembers", "sunion", "sinter", "sdiff", "keys"}
# Replies whose positive integer values depend on the clock.
CLOCKED = {"ttl", "pttl", "expiretime", "pexpiretime"}


# ---- raw RESP reading and parsing ----

class Conn:
    """Replies as the raw bytes sent (scripts/gen_command_data.py's ``Raw`` reads them the
    same way: that script runs without the test tree, so each keeps its copy)."""

    def __init__(self, port: int, proto: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        if proto == 3:
            self.send([b"HELLO", b"3"])
            self.reply()  # contains the connection id: not compared

    def send(self, args: list) -> None:
        self.sock.sendall(b"*%d\r\n" % len(args)
                          + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args))

    def _line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            self.buf += chunk
        i = self.buf.index(b"\r\n") + 2
        line, self.buf = self.buf[:i], self.buf[i:]
        return line

    def _exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            assert chunk, "connection closed"
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def reply(self) -> bytes:
        """One complete reply, as the raw bytes the server sent."""
        line = self._line()
        t = line[:1]
        if t in b"$=!":
            n = int(line[1:-2])
            return line if n < 0 else line + self._exact(n + 2)
        if t in b"*~>%|":
            n = int(line[1:-2])
            count = 2 * n if t in b"%|" else max(n, 0)
            return line + b"".join(self.reply() for _ in range(count))
        return line

    def close(self) -> None:
        self.sock.close()


def parse(data: bytes, i: int = 0):
    """Raw RESP -> (value, next index); aggregates become (type byte, [items])."""
    j = data.index(b"\r\n", i)
    t, head = data[i:i + 1], data[i + 1:j]
    if t in b"$=!":
        n = int(head)
        if n < 0:
            return (t, None), j + 2
        return (t, data[j + 2:j + 2 + n]), j + 4 + n
    if t in b"*~>%|":
        n = int(head)
        items, k = [], j + 2
        for _ in range(2 * n if t in b"%|" else max(n, 0)):
            item, k = parse(data, k)
            items.append(item)
        return (t, items), k
    return (t, head), j + 2


def normalize(name: str, raw: bytes):
    value, end = parse(raw)
    assert end == len(raw)
    if name in UNORDERED and value[0] in b"*~":
        return (value[0], sorted(value[1], key=repr))
    if name in CLOCKED and value[0] == b":" and int(value[1]) > 0:
        return (b":", b"positive")
    return raw


# ---- command strategies ----

KEYS = st.sampled_from([b"a", b"b", b"c", b"{t}x"])
SMALL = st.sampled_from([b"0", b"1", b"-1", b"2", b"10", b"3.5", b"-0.5", b"abc", b"",
                         b"9223372036854775807", b"1e3", b" 1", b"007", b"inf"])
VAL = st.one_of(SMALL, st.binary(max_size=6))
IDX = st.sampled_from([b"0", b"1", b"-1", b"2", b"-2", b"5", b"-100", b"x"])
SCORE = st.sampled_from([b"0", b"1", b"1.5", b"-2", b"+inf", b"-inf", b"(1", b"nan", b"x"])
MEMBER = st.sampled_from([b"m1", b"m2", b"m3", b"a", b"b"])


def cmd(name: str, *parts):
    """A strategy for [NAME, *parts] where each part is a strategy or a constant."""
    strategies = [st.just(p) if isinstance(p, bytes) else p for p in parts]
    return st.tuples(st.just(name.encode()), *strategies).map(list)


def opt(*choices: bytes):
    return st.lists(st.sampled_from(choices), max_size=2)


STRINGS = st.one_of(
    cmd("SET", KEYS, VAL), cmd("GET", KEYS), cmd("MGET", KEYS, KEYS),
    cmd("MSET", KEYS, VAL, KEYS, VAL), cmd("INCR", KEYS), cmd("DECR", KEYS),
    cmd("INCRBY", KEYS, SMALL), cmd("DECRBY", KEYS, SMALL), cmd("INCRBYFLOAT", KEYS, SMALL),
    cmd("APPEND", KEYS, VAL), cmd("STRLEN", KEYS), cmd("GETRANGE", KEYS, IDX, IDX),
    cmd("SETRANGE", KEYS, st.sampled_from([b"0", b"2", b"-1", b"x"]), VAL),
    cmd("GETDEL", KEYS), cmd("GETSET", KEYS, VAL), cmd("SETNX", KEYS, VAL),
    cmd("MSETNX", KEYS, VAL, KEYS, VAL), cmd("SETEX", KEYS, st.sampled_from([b"100", b"0", b"x"]),
                                               VAL),
    cmd("PSETEX", KEYS, b"100000", VAL), cmd("SUBSTR", KEYS, IDX, IDX),
    cmd("GETEX", KEYS), cmd("GETEX", KEYS, st.sampled_from([b"PERSIST", b"EX", b"FOO"])),
    cmd("GETEX", KEYS, b"EX", st.sampled_from([b"100", b"0", b"-5", b"x"])),
    st.tuples(cmd("SET", KEYS, VAL), opt(b"NX", b"XX", b"GET", b"KEEPTTL"),
              st.sampled_from([[], [b"EX", b"100"], [b"PX", b"100000"], [b"EX", b"0"],
                               [b"EX", b"x"], [b"EX"]])).map(lambda t: t[0] + t[1] + t[2]),
)
KEYCMDS = st.one_of(
    cmd("DEL", KEYS, KEYS), cmd("EXISTS", KEYS, KEYS), cmd("TYPE", KEYS),
    cmd("EXPIRE", KEYS, st.sampled_from([b"100", b"x", b"-1"])), cmd("PEXPIRE", KEYS, b"100000"),
    st.tuples(cmd("EXPIRE", KEYS, b"100"), opt(b"NX", b"XX", b"GT", b"LT")).map(
        lambda t: t[0] + t[1]),
    cmd("PERSIST", KEYS), cmd("TTL", KEYS), cmd("PTTL", KEYS), cmd("EXPIRETIME", KEYS),
    cmd("RENAME", KEYS, KEYS), cmd("RENAMENX", KEYS, KEYS), cmd("KEYS", b"*"),
    cmd("KEYS", st.sampled_from([b"a*", b"?", b"[ab]", b"{*"])), cmd("DBSIZE"),
    cmd("TOUCH", KEYS, KEYS), cmd("UNLINK", KEYS), cmd("COPY", KEYS, KEYS),
    cmd("COPY", KEYS, KEYS, b"REPLACE"), cmd("EXPIREAT", KEYS, b"4102444800"),
    cmd("PEXPIREAT", KEYS, st.sampled_from([b"4102444800000", b"1", b"x"])),
    cmd("MOVE", KEYS, st.sampled_from([b"1", b"0", b"99", b"x"])),
)
LISTS = st.one_of(
    cmd("LPUSH", KEYS, VAL, VAL), cmd("RPUSH", KEYS, VAL), cmd("LPUSHX", KEYS, VAL),
    cmd("RPUSHX", KEYS, VAL), cmd("LPOP", KEYS), cmd("RPOP", KEYS),
    cmd("LPOP", KEYS, st.sampled_from([b"0", b"2", b"-1", b"x"])), cmd("LRANGE", KEYS, IDX, IDX),
    cmd("LLEN", KEYS), cmd("LINDEX", KEYS, IDX), cmd("LSET", KEYS, IDX, VAL),
    cmd("LREM", KEYS, IDX, VAL), cmd("LTRIM", KEYS, IDX, IDX),
    cmd("LINSERT", KEYS, st.sampled_from([b"BEFORE", b"AFTER", b"MIDDLE"]), VAL, VAL),
    cmd("LPOS", KEYS, VAL), cmd("LPOS", KEYS, VAL, b"RANK", IDX),
    cmd("LPOS", KEYS, VAL, b"COUNT", st.sampled_from([b"0", b"2", b"-1"])),
    cmd("LPOS", KEYS, VAL, b"MAXLEN", st.sampled_from([b"0", b"1", b"-1"])),
    cmd("LMOVE", KEYS, KEYS, st.sampled_from([b"LEFT", b"RIGHT"]),
                                st.sampled_from([b"LEFT", b"RIGHT", b"UP"])),
    cmd("RPOPLPUSH", KEYS, KEYS),
)
HASHES = st.one_of(
    cmd("HSET", KEYS, MEMBER, VAL), cmd("HSET", KEYS, MEMBER, VAL, MEMBER, VAL),
    cmd("HSET", KEYS, MEMBER), cmd("HGET", KEYS, MEMBER), cmd("HDEL", KEYS, MEMBER, MEMBER),
    cmd("HGETALL", KEYS), cmd("HKEYS", KEYS), cmd("HVALS", KEYS), cmd("HLEN", KEYS),
    cmd("HEXISTS", KEYS, MEMBER), cmd("HMGET", KEYS, MEMBER, MEMBER),
    cmd("HINCRBY", KEYS, MEMBER, SMALL), cmd("HINCRBYFLOAT", KEYS, MEMBER, SMALL),
    cmd("HSETNX", KEYS, MEMBER, VAL), cmd("HSTRLEN", KEYS, MEMBER), cmd("HMSET", KEYS, MEMBER, VAL),
)
SETS = st.one_of(
    cmd("SADD", KEYS, MEMBER, MEMBER), cmd("SREM", KEYS, MEMBER), cmd("SCARD", KEYS),
    cmd("SISMEMBER", KEYS, MEMBER), cmd("SMEMBERS", KEYS), cmd("SMISMEMBER", KEYS, MEMBER, MEMBER),
    cmd("SUNION", KEYS, KEYS), cmd("SINTER", KEYS, KEYS), cmd("SDIFF", KEYS, KEYS),
    cmd("SINTERCARD", st.sampled_from([b"2", b"0", b"x"]), KEYS, KEYS),
    cmd("SINTERCARD", b"2", KEYS, KEYS, b"LIMIT", st.sampled_from([b"1", b"0", b"-1"])),
    cmd("SMOVE", KEYS, KEYS, MEMBER), cmd("SUNIONSTORE", KEYS, KEYS, KEYS),
    cmd("SINTERSTORE", KEYS, KEYS, KEYS), cmd("SDIFFSTORE", KEYS, KEYS, KEYS),
)
ZSETS = st.one_of(
    cmd("ZADD", KEYS, SCORE, MEMBER), cmd("ZADD", KEYS, SCORE, MEMBER, SCORE, MEMBER),
    st.tuples(cmd("ZADD", KEYS), opt(b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"),
              st.lists(st.tuples(SCORE, MEMBER), min_size=1, max_size=2)).map(
        lambda t: t[0] + t[1] + [x for pair in t[2] for x in pair]),
    cmd("ZSCORE", KEYS, MEMBER), cmd("ZMSCORE", KEYS, MEMBER, MEMBER), cmd("ZCARD", KEYS),
    cmd("ZRANK", KEYS, MEMBER), cmd("ZREVRANK", KEYS, MEMBER), cmd("ZREM", KEYS, MEMBER),
    cmd("ZINCRBY", KEYS, SCORE, MEMBER), cmd("ZCOUNT", KEYS, SCORE, SCORE),
    cmd("ZRANGE", KEYS, IDX, IDX), cmd("ZRANGE", KEYS, IDX, IDX, b"WITHSCORES"),
    cmd("ZRANGE", KEYS, SCORE, SCORE, b"BYSCORE"),
    cmd("ZRANGE", KEYS, SCORE, SCORE, b"BYSCORE", b"REV", b"LIMIT", b"0", b"2"),
    cmd("ZRANGEBYSCORE", KEYS, SCORE, SCORE), cmd("ZREVRANGE", KEYS, IDX, IDX),
    cmd("ZPOPMIN", KEYS), cmd("ZPOPMAX", KEYS, st.sampled_from([b"2", b"0", b"-1"])),
    cmd("ZLEXCOUNT", KEYS, st.sampled_from([b"-", b"[a", b"(m1"]),
        st.sampled_from([b"+", b"[m2", b"x"])),
    cmd("ZRANGEBYLEX", KEYS, b"-", b"+"), cmd("ZREMRANGEBYRANK", KEYS, IDX, IDX),
    cmd("ZRANGE", KEYS, st.sampled_from([b"[a", b"-", b"(m1", b"x"]),
        st.sampled_from([b"+", b"[m3", b"(b"]), b"BYLEX"),
    cmd("ZRANGESTORE", KEYS, KEYS, IDX, IDX), cmd("ZREMRANGEBYSCORE", KEYS, SCORE, SCORE),
    cmd("ZREMRANGEBYLEX", KEYS, b"-", st.sampled_from([b"+", b"[m2"])),
    cmd("ZREVRANGEBYSCORE", KEYS, SCORE, SCORE, b"WITHSCORES"),
    cmd("ZREVRANGEBYLEX", KEYS, b"+", b"-", b"LIMIT", b"0", IDX),
    cmd("ZRANGEBYSCORE", KEYS, SCORE, SCORE, b"LIMIT", IDX, IDX),
)
ERRORS = st.one_of(
    cmd("NOSUCHCMD", VAL), cmd("GET"), cmd("SET", KEYS), cmd("LPUSH", KEYS), cmd("HSET", KEYS),
    cmd("ZADD", KEYS, SCORE), cmd("SELECT", st.sampled_from([b"99", b"x", b"1", b"0"])),
    cmd("PING"), cmd("PING", VAL), cmd("ECHO", VAL), cmd("ECHO"), cmd("FLUSHDB"),
    cmd("SWAPDB", st.sampled_from([b"0", b"1", b"x"]), st.sampled_from([b"1", b"99"])),
    cmd("CONFIG", b"GET", st.sampled_from([b"maxmemory", b"hz", b"nosuch", b"timeout"])),
    cmd("CONFIG", b"SET", st.sampled_from([b"hz", b"nosuch"]), st.sampled_from([b"10", b"x"])),
    cmd("CLIENT", b"GETNAME"), cmd("CLIENT", b"NOSUCH"), cmd("COMMAND", b"NOSUCH"),
)
SINGLE = st.one_of(STRINGS, KEYCMDS, LISTS, HASHES, SETS, ZSETS, ERRORS)
BLOCK = st.one_of(
    st.lists(SINGLE, max_size=4).map(lambda cs: [[b"MULTI"]] + cs + [[b"EXEC"]]),
    st.lists(SINGLE, max_size=2).map(lambda cs: [[b"MULTI"]] + cs + [[b"DISCARD"]]),
    st.tuples(KEYS, st.lists(SINGLE, max_size=2), st.lists(SINGLE, max_size=2)).map(
        lambda t: [[b"WATCH", t[0]]] + t[1] + [[b"MULTI"]] + t[2] + [[b"EXEC"]]),
    st.just([[b"MULTI"], [b"MULTI"], [b"EXEC"]]), st.just([[b"EXEC"]]),
)
SEQUENCE = st.lists(st.one_of(SINGLE.map(lambda c: [c]), BLOCK), min_size=1, max_size=12).map(
    lambda blocks: [c for b in blocks for c in b])


def command_key(argv: list) -> str:
    """The allowlist name of a call: 'get', 'config|set', 'config|set <param> <value>'."""
    name = argv[0].decode("latin-1").lower()
    if len(argv) > 1 and name in ("config", "client", "command", "object", "memory"):
        sub = "%s|%s" % (name, argv[1].decode("latin-1").lower())
        if sub == "config|set" and len(argv) > 3:
            full = "%s %s %s" % (sub, argv[2].decode("latin-1").lower(),
                                 argv[3].decode("latin-1").lower())
            if full in ALLOWLIST:
                return full
        return sub if sub in ALLOWLIST or name not in ALLOWLIST else name
    return name


def skipped(argv: list) -> bool:
    key = command_key(argv)
    return key in ALLOWLIST or key in KNOWN_BUGS or argv[0].lower() in (b"object", b"memory")


# ---- the test ----

@pytest.fixture(scope="module")
def servers(redis_server):
    ours = ServerThread()
    yield ours.port, redis_server
    ours.stop()


def flush(port: int) -> None:
    c = Conn(port, 2)
    c.send([b"FLUSHALL"])
    assert c.reply() == b"+OK\r\n"
    c.send([b"CONFIG", b"SET", b"hz", b"10"])
    c.reply()
    c.close()


def run_sequence(ports, proto: int, commands: list) -> None:
    ours_port, redis_port = ports
    for port in ports:
        flush(port)
    ours, ref = Conn(ours_port, proto), Conn(redis_port, proto)
    queued: list = []
    in_multi = False
    try:
        for argv in commands:
            ours.send(argv)
            ref.send(argv)
            got, want = ours.reply(), ref.reply()
            name = argv[0].lower()
            if name == b"multi" and want == b"+OK\r\n":
                in_multi, queued = True, []
            elif in_multi and want == b"+QUEUED\r\n":
                queued.append(argv)
            if name in (b"exec", b"discard") and in_multi:
                in_multi = False
                if any(skipped(q) for q in queued):
                    continue
                if name == b"exec" and want.startswith(b"*") and want != b"*-1\r\n":
                    assert _norm_exec(queued, got) == _norm_exec(queued, want), \
                        (proto, commands, argv, got, want)
                else:
                    assert got == want, (proto, commands, argv, got, want)
                continue
            if skipped(argv):
                continue
            label = argv[0].decode("latin-1").lower()
            assert normalize(label, got) == normalize(label, want), \
                (proto, argv, got, want, commands)
    finally:
        ours.close()
        ref.close()


def _norm_exec(queued: list, raw: bytes):
    value, _ = parse(raw)
    out = []
    items = value[1]
    assert len(items) == len(queued)
    for argv, item in zip(queued, items):
        name = argv[0].decode("latin-1").lower()
        if name in UNORDERED and item[0] in b"*~":
            item = (item[0], sorted(item[1], key=repr))
        elif name in CLOCKED and item[0] == b":" and int(item[1]) > 0:
            item = (b":", b"positive")
        out.append(item)
    return out


@pytest.mark.parametrize("proto", [2, 3])
@settings(max_examples=500, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(commands=SEQUENCE)
def test_same_replies_as_redis(servers, proto, commands):
    run_sequence(servers, proto, commands)


FIXED = [
    # hand-picked sequences that must keep matching, whatever Hypothesis draws
    [[b"SET", b"a", b"1"], [b"INCRBYFLOAT", b"a", b"0.1"], [b"GET", b"a"]],
    [[b"LPUSH", b"l", b"x"], [b"GET", b"l"], [b"INCR", b"l"], [b"TYPE", b"l"]],
    [[b"ZADD", b"z", b"1.5", b"m"], [b"ZSCORE", b"z", b"m"], [b"ZINCRBY", b"z", b"0.1", b"m"],
     [b"ZRANGE", b"z", b"0", b"-1", b"WITHSCORES"]],
    [[b"HSET", b"h", b"f", b"v"], [b"HGETALL", b"h"], [b"HINCRBYFLOAT", b"h", b"n", b"1e3"]],
    [[b"SET", b"t", b"v", b"EX", b"100"], [b"TTL", b"t"], [b"PERSIST", b"t"], [b"TTL", b"t"]],
    [[b"MULTI"], [b"SET", b"a", b"1"], [b"LPUSH", b"a", b"x"], [b"GET"], [b"EXEC"]],
    [[b"MULTI"], [b"SET", b"a", b"1"], [b"INCR", b"a"], [b"LPUSH", b"a", b"x"], [b"EXEC"]],
    [[b"WATCH", b"a"], [b"SET", b"a", b"2"], [b"MULTI"], [b"GET", b"a"], [b"EXEC"]],
    [[b"SELECT", b"1"], [b"SET", b"a", b"1"], [b"SWAPDB", b"0", b"1"], [b"SELECT", b"0"],
     [b"GET", b"a"]],
    [[b"CONFIG", b"GET", b"maxmemory"], [b"CONFIG", b"SET", b"maxmemory-samples", b"0"],
     [b"CONFIG", b"SET", b"nosuch", b"1"], [b"CONFIG", b"SET", b"hz"]],
    [[b"PING"], [b"PING", b"x"], [b"ECHO", b"e"], [b"CLIENT", b"GETNAME"],
     [b"CLIENT", b"SETNAME", b"n"], [b"CLIENT", b"GETNAME"], [b"RESET"], [b"CLIENT", b"GETNAME"]],
    [[b"AUTH", b"x"], [b"AUTH", b"default", b"x"], [b"HELLO", b"4"], [b"HELLO", b"x"]],
]


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("commands", FIXED, ids=[str(i) for i in range(len(FIXED))])
def test_fixed_sequences(servers, proto, commands):
    run_sequence(servers, proto, commands)
