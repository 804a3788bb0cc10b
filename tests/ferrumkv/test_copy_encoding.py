"""COPY across every type (DB, REPLACE, TTL) and OBJECT ENCODING of copies and of the values
the geo / SORT / sorted-set algebra commands store, replayed against redis-server 7.0."""

from __future__ import annotations

from ferrumkv_py import memory
from ferrumkv_py.zset import ZSet
from tests.ferrumkv.container_diff import assert_same_as_redis

SCRIPT = """
set s hello
set n 12345
set longs aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
rpush l a b c
hset h f v g w
sadd si 1 2 3
sadd ss a b c
zadd z 1 a 2 b
geoadd g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
copy s s
copy s s2
get s2
object encoding s2
copy n n2
object encoding n2
copy longs longs2
object encoding longs2
copy l l2
lrange l2 0 -1
object encoding l2
copy h h2
hgetall h2
object encoding h2
copy si si2
object encoding si2
copy ss ss2
object encoding ss2
copy z z2
zrange z2 0 -1 withscores
object encoding z2
copy g g2
geopos g2 Palermo
object encoding g2
copy s l
copy s l replace
type l
get l
copy nokey x
copy s x db 1
copy s x db 1
copy s x db 1 replace
copy s x db 16
copy s x db -1
copy s x db a
copy s x foo
copy s x db
select 1
get x
select 0
set t v px 100000
copy t t2
ttl t2
copy s t2 replace
ttl t2
zadd big 1 a
zadd big 2 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
copy big big2
object encoding big2
zrem big2 bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
object encoding big2
zunionstore u 2 z si
object encoding u
zunionstore u 2 z big
object encoding u
zinterstore u 2 z z
object encoding u
zdiffstore u 2 big z
object encoding u
georadius g 15 37 200 km store gs
object encoding gs
sort l store sl
object encoding sl
rpush nums 3 1 2
sort nums store sl
object encoding sl
lrange sl 0 -1
"""


def test_copy_and_encodings_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, SCRIPT)
    # memory accounting and every keyspace invariant hold after the stores and copies
    server.call(_check_all, server.server.ks)


def _check_all(ks) -> None:
    """Every keyspace invariant, each container's modelled size, each ZSet's indexes (run on
    the server's loop, so no command or cron runs meanwhile)."""
    ks._check()
    for db in ks.dbs[:2]:
        for key, e in db.items():
            v = db.vals[e]
            if v.__class__ is not bytes:
                assert v.mem == memory.recount(v), key
            if v.__class__ is ZSet:
                v._check()
