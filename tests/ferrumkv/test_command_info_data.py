"""COMMAND INFO of the geo, SORT, sorted-set algebra and LCS commands: name, arity, flags,
legacy key positions and ACL categories equal to redis-server 7.0's."""

from __future__ import annotations

import pytest
from redis.connection import Connection

from tests.ferrumkv.container_diff import assert_same_as_redis

NAMES = ("geoadd geodist geohash geopos georadius georadius_ro georadiusbymember "
         "georadiusbymember_ro geosearch geosearchstore sort sort_ro lcs zunion zinter zdiff "
         "zunionstore zinterstore zdiffstore zintercard").split()


def _info(port: int, name: str) -> list:
    c = Connection(port=port)
    c.connect()
    try:
        c.send_command("COMMAND", "INFO", name)
        return c.read_response()[0][:7]      # key specs / tips are not modelled
    finally:
        c.disconnect()


@pytest.mark.parametrize("name", NAMES)
def test_command_info_same_as_redis(redis_server, server, name):
    assert _info(server.port, name) == _info(redis_server, name)


def test_command_docs_group_the_alternatives(server):
    c = Connection(port=server.port)
    c.connect()
    try:
        for name in NAMES:
            c.send_command("COMMAND", "DOCS", name)
            doc = c.read_response()[name.encode()]
            assert doc[b"summary"] and doc[b"arguments"], name
        c.send_command("COMMAND", "DOCS", "geosearch")
        args = c.read_response()[b"geosearch"][b"arguments"]   # Redis 7.0's own docs
        assert (args[1][b"name"], args[1][b"type"]) == (b"from", b"oneof")
        assert [a[b"token"] for a in args[1][b"arguments"]] == [b"FROMMEMBER", b"FROMLONLAT"]
        assert (args[2][b"name"], args[2][b"type"]) == (b"by", b"oneof")
    finally:
        c.disconnect()


# Movable keys: numkeys read as C atoi, keyword searches for GEORADIUS's STORE/STOREDIST,
# Redis's sortGetKeys for SORT (last STORE wins; LIMIT/GET/BY arguments skipped).
GETKEYS = """
command getkeys zunionstore d 2 a b weights 1 2
command getkeys zunion 2 a b
command getkeys zintercard 2 a b limit 1
command getkeys sort k by w_* store d
command getkeys sort k store d store e
command getkeys sort k
command getkeys sort_ro k
command getkeys georadius k 1 1 1 km store d storedist e
command getkeys georadiusbymember k m 1 km storedist d
command getkeys zdiff 3 a b
command getkeys zunion 0 a
command getkeys lcs a b
command getkeys geosearchstore d s fromlonlat 1 1 byradius 1 km
command getkeys georadius k 1 1 1 km store d store e
command getkeys georadius k 1 1 1 km storedist e store d
command getkeys georadius k 1 1 1 km asc
command getkeys georadius_ro k 1 1 1 km asc
command getkeys georadius k store 1 1 km store
command getkeys zunion -1 a
command getkeys zunion 2 a b c
command getkeys zunionstore d 2 a
command getkeys zintercard 1 a
command getkeys sort k by store store d limit 1 2 get x
command getkeys sort k store
command getkeys zunion x a
command getkeys zunion +1 a
command getkeys zdiffstore d 1 a
command getkeys sort k get store store x
command getkeys sort k limit store x y store z
command getkeys geosearch k fromlonlat 1 1 byradius 1 km
command getkeys geoadd k 1 1 m
command getkeys zunion " 1" a
command getkeys zunion "01" a
command getkeys zunion "1 " a
command getkeys zunion -0 a
command getkeys zunion 0x1 a
command getkeys zunion 1.0 a
command getkeys zunion +0 a
command getkeys zunion 99999999999 a
"""


def test_getkeys_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, GETKEYS)
