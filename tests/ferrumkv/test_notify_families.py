"""Keyspace notifications of the bitmap, HyperLogLog, geo, sorted-set algebra, SORT STORE,
RESTORE and COPY commands, compared byte for byte with redis-server 7.0: a scripted list of
edge cases (no change, empty results, overwrites, expired destinations, errors) that must
publish every event these families have, then seeded random sequences over the families.

Each step runs the same command on both servers and compares the reply and every frame two
subscribers (RESP2 and RESP3, on ``__keyspace@*__:*`` and ``__keyevent@*__:*``) received.
"""

from __future__ import annotations

import random
import time

import pytest
import redis

from tests.ferrumkv.test_notify import Side, no_active_expire, redis_debug  # noqa: F401

KEYS = ["a", "b", "c", "d"]
SHORT_TTL_WAIT_S = 0.004    # after a 1 ms TTL: both servers then find the key past due
# PEXPIRE's short TTL: redis-server 7.0 deletes at once ("del", not "expire") when the
# deadline is already past at its second clock read; with 1 ms, a millisecond boundary
# between its two reads is enough (a flake under load); 2 ms needs a 1 ms stall there
PEXPIRE_SHORT_MS = "2"
STEPS = 500                 # commands per random sequence
ELEMENTS = ["x", "y", "1", "7"]
PLACES = {"p": ("15.0", "37.0"), "q": ("15.5", "37.2"), "r": ("13.361389", "38.115556")}
FAR_PAST_MS = "1"           # an ABSTTL deadline long gone

# Every event these families publish (checked against what redis-server published).
FAMILY_EVENTS = {b"setbit", b"set", b"del", b"pfadd", b"zadd", b"georadiusstore",
                 b"geosearchstore", b"zunionstore", b"zinterstore", b"zdiffstore",
                 b"sortstore", b"restore", b"copy_to", b"new", b"expired"}

# (command line, seconds to sleep after it).  "@name" is the DUMP payload of PAYLOADS[name].
SCRIPT = [
    # SETBIT: created (even clearing a bit), unchanged, changed, grown, wrong type
    "SETBIT bm 7 1", "SETBIT bm 7 1", "SETBIT bm 7 0", "SETBIT bm 100 0", "SETBIT bm 100 0",
    "SETBIT bm2 3 0", "SET s abc", "SETBIT s 2 1", "SETBIT s 2 0", "LPUSH l a",
    "SETBIT l 1 1", "SETBIT bm 1 2",
    # BITOP: a result, an empty result deleting the destination, then nothing to delete
    "BITOP AND d bm s", "BITOP AND d nosuch nosuch2", "BITOP AND d nosuch nosuch2",
    "BITOP NOT d2 bm", "BITOP OR bm bm", "BITOP XOR d2 bm s", "BITOP NOT d2 bm s",
    "BITOP AND d l",
    # BITFIELD: reads, an unchanged write, a change, FAIL on a new and an existing key
    "BITFIELD f GET u8 0", "BITFIELD f SET u8 0 0", "BITFIELD f SET u8 0 0",
    "BITFIELD f SET u8 0 5", "BITFIELD f INCRBY u8 0 0",
    "BITFIELD f OVERFLOW FAIL INCRBY u8 0 255", "BITFIELD f2 OVERFLOW FAIL INCRBY u8 0 256",
    "BITFIELD f2 OVERFLOW FAIL SET i8 0 200", "BITFIELD f OVERFLOW FAIL SET u8 64 999",
    "BITFIELD f SET u8 100 0", "BITFIELD f OVERFLOW SAT INCRBY i8 0 1000",
    "BITFIELD_RO f GET u8 0", "BITFIELD l SET u8 0 1", "BITFIELD f SET u99 0 1",
    # values of 4 KiB and more are edited in place (inplace.py): the same events
    "SETBIT big 40000 1", "SETBIT big 8 1", "SETBIT big 8 1", "SETBIT big 8 0",
    "BITFIELD big SET u8 16 7", "BITFIELD big SET u8 16 7", "BITFIELD big INCRBY u8 16 1",
    "BITFIELD big OVERFLOW FAIL INCRBY u8 16 1000", "BITFIELD big GET u8 16",
    # HyperLogLog: created, unchanged, PFCOUNT's cache rewrite, PFMERGE (always "pfadd")
    "PFADD h a b", "PFADD h a", "PFADD h", "PFADD h2", "PFADD h2", "PFCOUNT h", "PFCOUNT h",
    "PFCOUNT h h2", "PFMERGE m h", "PFMERGE m h", "PFMERGE m2", "PFMERGE m3 nosuch",
    "PFADD s a", "PFMERGE s h", "PFMERGE h s", "PFDEBUG TODENSE h",
    # GEOADD (ZADD's events), the STORE forms, empty results, a missing source
    "GEOADD g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
    "GEOADD g 13.361389 38.115556 Palermo", "GEOADD g XX 13.361389 38.115556 Newone",
    "GEOADD g CH 13.0 38.0 Palermo", "GEOADD g NX 13.0 38.0 Palermo",
    "GEOADD g2 XX 13.0 38.0 P", "GEOADD g 200 38.0 P",
    "GEORADIUS g 15 37 200 km STORE gs", "GEORADIUS g 15 37 200 km STOREDIST gs",
    "GEORADIUS g 15 37 1 km STORE gs", "GEORADIUS g 15 37 1 km STORE gs",
    "GEORADIUSBYMEMBER g Palermo 500 km STORE gs",
    "GEORADIUSBYMEMBER g Palermo 500 km STOREDIST gs2",
    "GEOSEARCHSTORE gs3 g FROMLONLAT 15 37 BYRADIUS 200 km",
    "GEOSEARCHSTORE gs3 g FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
    "GEOSEARCHSTORE gs3 g FROMLONLAT 15 37 BYRADIUS 1 km",
    "GEOSEARCHSTORE gs2 nosuch FROMLONLAT 15 37 BYRADIUS 1 km",
    "GEORADIUS nosuch 15 37 1 km STORE gs", "GEORADIUS nosuch 15 37 1 km STORE s",
    "GEORADIUSBYMEMBER g Nobody 500 km STORE gs",
    "GEOSEARCHSTORE gs3 g FROMMEMBER Nobody BYRADIUS 200 km",
    "GEOSEARCHSTORE gs3 g FROMMEMBER Palermo BYBOX 400 400 km",
    "GEOSEARCHSTORE gs3 l FROMMEMBER Palermo BYRADIUS 200 km", "GEORADIUS_RO g 15 37 200 km",
    # sorted-set algebra STORE forms
    "ZADD z1 1 a 2 b", "ZADD z2 2 b 3 c", "SADD s1 a x", "ZUNIONSTORE zd 2 z1 z2",
    "ZUNIONSTORE zd 2 z1 z2", "ZINTERSTORE zd 2 z1 s1", "ZINTERSTORE zd 2 z1 nosuch",
    "ZINTERSTORE zd 2 z1 nosuch", "ZDIFFSTORE zd 2 z1 z2", "ZDIFFSTORE zd 2 z1 z1",
    "ZDIFFSTORE z1 1 z1", "ZUNIONSTORE zd 1 nosuch", "SET str v", "ZUNIONSTORE str 1 z1",
    "ZUNIONSTORE zd 2 z1 str WEIGHTS 2 3 AGGREGATE MAX", "ZUNIONSTORE zd 1 z1 WEIGHTS x",
    "ZINTERSTORE zd 2 z1 l",
    # SORT ... STORE
    "RPUSH sl 3 1 2", "SORT sl STORE so", "SORT sl STORE so", "SORT nosuch STORE so",
    "SORT nosuch STORE so", "SORT sl LIMIT 5 5 STORE so", "SORT sl STORE so",
    "SORT sl ALPHA STORE sl", "SORT s STORE so", "SORT sl BY nosort STORE so",
    "SADD ss b a", "SORT ss ALPHA STORE so2", "SORT ss BY nosort STORE so2", "SORT_RO sl",
    # RESTORE: created, BUSYKEY, REPLACE, a TTL (no "expire" event), an expired TTL
    "RESTORE r 0 @str", "RESTORE r 0 @str", "RESTORE r 0 @str REPLACE",
    "RESTORE r 100000 @zset REPLACE", "RESTORE r2 100000 @list",
    "RESTORE r2 " + FAR_PAST_MS + " @str ABSTTL REPLACE",
    "RESTORE r3 " + FAR_PAST_MS + " @str ABSTTL", "RESTORE r 1 @str ABSTTL",
    "RESTORE r 0 garbage REPLACE", "RESTORE r -5 @str REPLACE",
    "RESTORE r 0 @hll REPLACE IDLETIME 10", "RESTORE r 0 @str REPLACE FREQ 10",
    # destinations whose TTL has passed (no lookup expired them yet)
    ("SET x 1 PX 1", SHORT_TTL_WAIT_S), "RESTORE x 0 @str REPLACE",
    ("SET y 1 PX 1", SHORT_TTL_WAIT_S), "RESTORE y " + FAR_PAST_MS + " @str REPLACE ABSTTL",
    ("SET y2 1 PX 1", SHORT_TTL_WAIT_S), "RESTORE y2 0 @str",
    ("SET z 1 PX 1", SHORT_TTL_WAIT_S), "COPY str z",
    ("SET w 1 PX 1", SHORT_TTL_WAIT_S), "COPY str w REPLACE",
    ("SET u 1 PX 1", SHORT_TTL_WAIT_S), "ZUNIONSTORE u 1 nosuch",
    ("SET u2 1 PX 1", SHORT_TTL_WAIT_S), "SORT nosuch STORE u2",
    ("SET u3 1 PX 1", SHORT_TTL_WAIT_S), "GEORADIUS nosuch 15 37 1 km STORE u3",
    ("SET u4 1 PX 1", SHORT_TTL_WAIT_S), "BITOP AND u4 nosuch",
    ("SET u5 1 PX 1", SHORT_TTL_WAIT_S), "PFMERGE u5",
    ("SET u6 1 PX 1", SHORT_TTL_WAIT_S), "ZUNIONSTORE u6 1 z1",
    ("SET u7 1 PX 1", SHORT_TTL_WAIT_S), "SETBIT u7 3 1",
    ("SET u8 1 PX 1", SHORT_TTL_WAIT_S), "GEOSEARCHSTORE u8 g FROMLONLAT 15 37 BYRADIUS 1 km",
    ("RESTORE u9 1 @str", SHORT_TTL_WAIT_S), "EXISTS u9",
    # the older STORE forms: an empty result over an expired destination is a "del" too
    ("SET u10 1 PX 1", SHORT_TTL_WAIT_S), "SUNIONSTORE u10 nosuch",
    ("SET u11 1 PX 1", SHORT_TTL_WAIT_S), "SINTERSTORE u11 nosuch s1",
    ("SET u12 1 PX 1", SHORT_TTL_WAIT_S), "ZRANGESTORE u12 nosuch 0 -1",
    # COPY: to another database, BUSY, REPLACE, a missing source, a TTL carried over
    "COPY str c DB 1", "COPY str c DB 1", "COPY str c DB 1 REPLACE", "COPY nosuch c",
    "SET v 1 EX 100", "COPY v v2", "COPY v v2", "COPY v v2 REPLACE", "COPY v v",
    # LCS publishes nothing
    "SET k1 ohmytext", "SET k2 mynewtext", "LCS k1 k2", "LCS k1 k2 IDX MINMATCHLEN 2",
]


def _payloads(port: int) -> dict:
    """DUMP payloads made by redis-server (RESTORE accepts them on both servers)."""
    r = redis.Redis(port=port)
    r.set("p:str", "hello")
    r.zadd("p:zset", {"a": 1, "b": 2})
    r.rpush("p:list", "x", "y")
    r.pfadd("p:hll", "a", "b", "c")
    out = {name: r.dump("p:" + name) for name in ("str", "zset", "list", "hll")}
    r.delete("p:str", "p:zset", "p:list", "p:hll")
    r.close()
    return out


def _args(line: str, payloads: dict) -> list:
    return [payloads[w[1:]] if w.startswith("@") else w for w in line.split()]


class _Pair:
    """ferrumkv and redis-server, both with ``classes`` enabled, compared step by step."""

    def __init__(self, ours_port: int, real_port: int, classes: str):
        rc = redis.Redis(port=real_port)
        rc.flushall()
        rc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        rc.close()
        self.ports = (ours_port, real_port)
        for port in self.ports:
            redis.Redis(port=port).config_set("notify-keyspace-events", classes)
        self.ours, self.real = Side(ours_port), Side(real_port)
        self.events = set()

    def step(self, where, args: list) -> None:
        got, want = self.ours.run(args), self.real.run(args)
        assert got == want, (where, args)
        for frame in want[1]:       # RESP2 pmessage: pattern, channel, message
            parts = frame.split(b"\r\n")
            channel, message = parts[6], parts[8]
            self.events.add(channel.split(b"__:", 1)[1] if channel.startswith(b"__keyevent@")
                            else message)

    def close(self) -> None:
        self.ours.close()
        self.real.close()
        for port in self.ports:
            r = redis.Redis(port=port)
            r.config_set("notify-keyspace-events", "")
            r.flushall()
            r.close()
        rc = redis.Redis(port=self.ports[1])
        rc.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        rc.close()


@pytest.mark.needs_redis
@pytest.mark.parametrize("classes", ["KEAn", "KE$zg", "Kl", "Eg"])
def test_scripted_edge_cases_publish_what_redis_publishes(server, redis_debug,  # noqa: F811
                                                          no_active_expire,  # noqa: F811
                                                          classes):
    payloads = _payloads(redis_debug)
    pair = _Pair(server.port, redis_debug, classes)
    try:
        for i, item in enumerate(SCRIPT):
            line, wait = (item, 0) if isinstance(item, str) else item
            pair.step(i, _args(line, payloads))
            if wait:
                time.sleep(wait)
    finally:
        pair.close()
    if classes == "KEAn":
        assert FAMILY_EVENTS <= pair.events, FAMILY_EVENTS - pair.events


def _random_command(rng: random.Random, payloads: dict) -> list:
    """One command of the new families over four shared key names, so types collide: a
    family first (each equally likely, so that its sources often hold the right type), then
    one of its commands."""
    k, k2, k3 = rng.choice(KEYS), rng.choice(KEYS), rng.choice(KEYS)
    el = rng.sample(ELEMENTS, rng.randint(0, 3))
    member = rng.choice(list(PLACES))
    lon, lat = PLACES[member]
    radius = rng.choice(["1", "300", "300"])
    bit = str(rng.choice([0, 7, 20]))
    generic = [
        ["SET", k, rng.choice(ELEMENTS)], ["SET", k, "v", "PX", "1"], ["DEL", k],
        ["EXPIRE", k, "100"], ["PEXPIRE", k, PEXPIRE_SHORT_MS], ["TYPE", k], ["GET", k],
        ["COPY", k, k2] + rng.choice([[], ["REPLACE"], ["DB", "1"]]),
    ]
    bits = [
        ["SETBIT", k, bit, rng.choice(["0", "1"])], ["GETBIT", k, bit], ["BITCOUNT", k],
        ["BITOP", rng.choice(["AND", "OR", "XOR"]), k, k2, k3], ["BITOP", "NOT", k, k2],
        ["BITFIELD", k, "SET", "u8", "#" + str(rng.randint(0, 2)), rng.choice(["0", "5"])],
        ["BITFIELD", k, "OVERFLOW", rng.choice(["FAIL", "SAT", "WRAP"]), "INCRBY", "i8",
         bit, rng.choice(["0", "100", "-200"])],
        ["BITFIELD", k, "GET", "u4", "0"], ["BITFIELD_RO", k, "GET", "i8", bit],
    ]
    hll = [["PFADD", k] + el, ["PFMERGE", k] + rng.sample(KEYS, rng.randint(0, 2)),
           ["PFCOUNT", k], ["PFCOUNT", k, k2]]
    g = rng.choice(KEYS[:2])     # geo sources: two of the keys, so they often are one
    geo = [
        ["GEOADD", g] + rng.choice([[], ["NX"], ["XX"], ["CH"]]) + [lon, lat, member],
        ["GEOADD", g, lon, lat, member, "15.2", "37.1", "s"],
        ["GEORADIUS", g, "15", "37", radius, "km", rng.choice(["STORE", "STOREDIST"]), k2],
        ["GEORADIUSBYMEMBER", g, member, radius, "km", "STORE", k2],
        ["GEOSEARCHSTORE", k2, g, "FROMLONLAT", "15", "37", "BYRADIUS", radius, "km"]
        + rng.choice([[], ["STOREDIST"]]),
        ["GEOSEARCHSTORE", k2, g, "FROMMEMBER", member, "BYBOX", radius, radius, "km",
         "COUNT", "1"],
    ]
    zsets = [
        ["ZADD", k, str(rng.randint(0, 3)), rng.choice(ELEMENTS)],
        ["ZADD", k, "1", rng.choice(ELEMENTS), "2", rng.choice(ELEMENTS)],
        ["SADD", k, rng.choice(ELEMENTS)],
        ["ZUNIONSTORE", k, "2", k2, k3, "WEIGHTS", "1", "2"],
        ["ZINTERSTORE", k, "2", k2, k3, "AGGREGATE", rng.choice(["MIN", "MAX", "SUM"])],
        ["ZDIFFSTORE", k, "2", k2, k3],
    ]
    sort = [
        ["RPUSH", k, rng.choice(ELEMENTS), rng.choice(ELEMENTS)],
        ["SORT", k, "STORE", k2], ["SORT", k, "ALPHA", "STORE", k2],
        ["SORT", k, "BY", "nosort", "STORE", k2],
        ["SORT", k, "ALPHA", "LIMIT", str(rng.randint(0, 2)), "1", "STORE", k2],
    ]
    restore = [
        ["RESTORE", k, rng.choice(["0", "100000"]), payloads[rng.choice(list(payloads))]]
        + rng.choice([[], ["REPLACE"]]),
        ["RESTORE", k, FAR_PAST_MS, payloads["str"], "ABSTTL", "REPLACE"],
        ["RESTORE", k, "1", payloads["str"], "REPLACE"],
    ]
    return rng.choice(rng.choice([generic, bits, hll, geo, zsets, sort, restore]))


def _short_ttl(args: list) -> bool:
    return (args[0] == "PEXPIRE" or args[-2:] == ["PX", "1"]
            or (args[0] == "RESTORE" and args[2] == "1" and "ABSTTL" not in args))


@pytest.mark.needs_redis
@pytest.mark.parametrize("classes,seed", [("KEAn", 1), ("KEAn", 2), ("KEA", 3), ("KEAnm", 4),
                                          ("K$g", 5), ("Ezl", 6)])
def test_random_sequences_publish_what_redis_publishes(server, redis_debug,  # noqa: F811
                                                       no_active_expire,  # noqa: F811
                                                       classes, seed):
    payloads = _payloads(redis_debug)
    pair = _Pair(server.port, redis_debug, classes)
    rng = random.Random(seed)
    try:
        for step in range(STEPS):
            args = _random_command(rng, payloads)
            pair.step(step, args)
            if _short_ttl(args):
                time.sleep(SHORT_TTL_WAIT_S)
    finally:
        pair.close()
    assert len(pair.events) >= 3, pair.events    # the sequence did publish
    if classes.startswith("KEA"):   # and reached (nearly) all of the families' events
        assert len(FAMILY_EVENTS - pair.events) <= 2, FAMILY_EVENTS - pair.events
