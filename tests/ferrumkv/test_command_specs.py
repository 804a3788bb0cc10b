"""COMMAND INFO / DOCS / LIST / GETKEYS / GETKEYSANDFLAGS against redis-server 7.0
(ferrumkv_py/command_specs.py and the COMMAND subcommands in commands/admin.py)."""

from __future__ import annotations

import pytest
import redis
from redis.connection import Connection

from ferrumkv_py import command_specs
from ferrumkv_py.resp import RespSet, Status

# Registry flags that differ from redis-server 7.0.15's COMMAND INFO (the dispatcher acts on
# the registry's): EVAL / EVALSHA / FCALL carry may_replicate here.
FLAG_DIFFERENCES = {"eval", "evalsha", "fcall"}


def _raw(port: int, *args, proto: int = 2):
    c = Connection(port=port, protocol=proto)
    c.connect()
    try:
        c.send_command(*args)
        return c.read_response()
    except redis.ResponseError as e:
        return "ERR " + str(e)
    finally:
        c.disconnect()


@pytest.fixture
def common(server, redis_server):
    ours = {n.decode() for n in _raw(server.port, "COMMAND", "LIST")}
    theirs = {n.decode() for n in _raw(redis_server, "COMMAND", "LIST")}
    assert len(ours & theirs) > 200
    return sorted(ours & theirs)


@pytest.mark.needs_redis
def test_command_info_equals_redis_server(server, redis_server, common):
    """Name, arity, flags, legacy range, ACL categories, tips and key specs of every
    command both have (subcommands compared on their own)."""
    diffs = []
    for name in common:
        a = _raw(server.port, "COMMAND", "INFO", name)[0]
        b = _raw(redis_server, "COMMAND", "INFO", name)[0]
        a, b = a[:9], b[:9]
        if name in FLAG_DIFFERENCES:
            a, b = a[:2] + a[3:], b[:2] + b[3:]
        if a != b:
            diffs.append((name, a, b))
    assert not diffs, "\n".join(map(repr, diffs))


@pytest.mark.needs_redis
@pytest.mark.parametrize("proto", [2, 3])
def test_command_docs_equal_redis_server(server, redis_server, common, proto):
    ours = _raw(server.port, "COMMAND", "DOCS", *common, proto=proto)
    theirs = _raw(redis_server, "COMMAND", "DOCS", *common, proto=proto)
    if proto == 2:
        ours, theirs = dict(zip(ours[::2], ours[1::2])), dict(zip(theirs[::2], theirs[1::2]))
    for name in common:
        a, b = ours[name.encode()], theirs[name.encode()]
        if proto == 2:
            a, b = dict(zip(a[::2], a[1::2])), dict(zip(b[::2], b[1::2]))
        a.pop(b"subcommands", None)
        b.pop(b"subcommands", None)
        assert a == b, name


@pytest.mark.needs_redis
def test_command_list_filters_equal_redis_server(server, redis_server, common):
    shared = set(common)
    for args in ([], ["FILTERBY", "ACLCAT", "string"], ["FILTERBY", "ACLCAT", "STRING"],
                 ["FILTERBY", "ACLCAT", "@string"], ["FILTERBY", "ACLCAT", "nosuch"],
                 ["FILTERBY", "ACLCAT", "keyspace"], ["FILTERBY", "ACLCAT", "dangerous"],
                 ["FILTERBY", "PATTERN", "config*"], ["FILTERBY", "PATTERN", "*|h?lp"],
                 ["FILTERBY", "MODULE", "x"], ["FILTERBY", "foo", "bar"], ["x"],
                 ["FILTERBY", "PATTERN"]):
        a = _raw(server.port, "COMMAND", "LIST", *args)
        b = _raw(redis_server, "COMMAND", "LIST", *args)
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, args
            continue
        assert {n.decode() for n in a} & shared == {n.decode() for n in b} & shared, args


CALLS = [
    ["get", "k"], ["set", "k", "v"], ["mset", "a", "1", "b", "2"], ["mset", "a", "1", "b"],
    ["del", "a", "b", "c"], ["rename", "a", "b"], ["lmove", "a", "b", "left", "right"],
    ["sort", "k", "store", "d"], ["sort", "k", "by", "x", "get", "y", "store", "d1",
                                           "store", "d2"],
    ["sort_ro", "k"], ["zunionstore", "d", "2", "a", "b"], ["zunionstore", "d", "2", "a"],
    ["zunion", "2", "a", "b"], ["zinter", "0", "a"], ["zintercard", "1", "a", "limit", "2"],
    ["eval", "", "0"], ["eval", "", "2", "a", "b", "c"], ["eval", "", "x"],
    ["fcall", "f", "1", "k"], ["evalsha_ro", "sha", "1", "k", "a"],
    ["georadius", "k", "0", "0", "1", "m", "store", "d"],
    ["georadius", "k", "0", "0", "1", "m", "storedist", "d2", "store", "d"],
    ["georadiusbymember", "k", "m", "1", "km", "store", "d"],
    ["geosearchstore", "d", "s", "frommember", "m", "byradius", "1", "km"],
    ["lmpop", "2", "a", "b", "left"], ["blpop", "a", "b", "0"], ["bitop", "and", "d", "a", "b"],
    ["object", "encoding", "k"], ["memory", "usage", "k"], ["config", "get", "x"],
    ["config"], ["nosuch", "x"], ["get"], ["ping"], ["xread", "streams", "a", "b"],
    ["xread", "count", "1", "streams", "a", "b", "c", "d"], ["lcs", "a", "b"],
    ["copy", "a", "b", "db", "1"], ["smove", "a", "b", "m"], ["getex", "k", "px", "1"],
    ["pfmerge", "d", "a", "b"], ["pfdebug", "getreg", "k"], ["touch", "a"],
    ["migrate", "h", "1", "", "0", "5", "keys", "a", "b"], ["migrate", "h", "1", "k", "0", "5"],
    ["restore", "k", "0", "x"], ["watch", "a", "b"], ["subscribe", "c"],
]


@pytest.mark.needs_redis
@pytest.mark.parametrize("sub", ["GETKEYS", "GETKEYSANDFLAGS"])
@pytest.mark.parametrize("proto", [2, 3])
def test_getkeys_equal_redis_server(server, redis_server, sub, proto):
    ours_cmds = {n.decode() for n in _raw(server.port, "COMMAND", "LIST")}
    diffs = []
    for call in CALLS:
        if call[0] not in ours_cmds and call[0] != "nosuch":
            continue
        a = _raw(server.port, "COMMAND", sub, *call, proto=proto)
        b = _raw(redis_server, "COMMAND", sub, *call, proto=proto)
        if a != b:
            diffs.append((call, a, b))
    assert not diffs, "\n".join(map(repr, diffs))


@pytest.mark.needs_redis
def test_command_help_equals_redis_server(server, redis_server):
    assert _raw(server.port, "COMMAND", "HELP") == _raw(redis_server, "COMMAND", "HELP")


def test_parse_resp3_types():
    v = command_specs.parse_resp3(b"*4\r\n~1\r\n+RO\r\n%1\r\n$1\r\na\r\n:-2\r\n,1.5\r\n_\r\n")
    assert v == [RespSet([Status(b"RO")]), {b"a": -2}, 1.5, None] or v[:3] == [
        RespSet([Status(b"RO")]), {b"a": -2}, 1.5]
    assert type(v[0]) is RespSet and type(v[0][0]) is Status
    assert command_specs.redis_version() == "7.0.15"
    assert command_specs.info_entry("config|get")[0] == b"config|get"
    assert command_specs.docs_entry("get")[b"complexity"] == b"O(1)"
    assert command_specs.info_entry("litehit") is None


def test_our_own_commands_get_a_key_spec():
    """A command redis-server does not have gets one index/range spec from its legacy
    key positions (RW update for writes, RO access for reads)."""
    import dataclasses

    from ferrumkv_py.registry import COMMANDS
    mine = dataclasses.replace(COMMANDS[b"mset"], name="ferrum-mset")
    (ks,) = command_specs.key_specs(mine)
    assert list(ks[b"flags"]) == [b"RW", b"update"]
    assert ks[b"find_keys"][b"spec"] == {b"lastkey": -1, b"keystep": 2, b"limit": 0}
    argv = [b"ferrum-mset", b"a", b"1", b"b", b"2"]
    assert [i for i, _ in command_specs.keys_with_flags(mine, argv)] == [1, 3]
    assert command_specs.key_specs(dataclasses.replace(mine, first_key=0)) == []
