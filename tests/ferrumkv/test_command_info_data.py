"""COMMAND INFO of the geo, SORT, sorted-set algebra and LCS commands: name, arity, flags,
legacy key positions and ACL categories equal to redis-server 7.0's."""

from __future__ import annotations

import pytest
from redis.connection import Connection

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
        args = [a[b"name"] for a in c.read_response()[b"geosearch"][b"arguments"]]
        assert args[1] == b"<FROMMEMBER member | FROMLONLAT longitude latitude>"
        assert args[2].startswith(b"<BYRADIUS radius") and args[2].endswith(b">")
    finally:
        c.disconnect()
