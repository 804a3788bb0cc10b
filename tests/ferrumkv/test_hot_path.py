"""The dispatcher's hot-path contracts: what client.py's inline path may read of other objects.

Two contracts, each owned by the object it concerns: ``shadow.HOT_PATH_ATTRS`` (the litehit
shadow's buffer and sampling fields, with ``shadow.FLAG_WRITE``) and
``server.ROOM_CHECK_ATTRS`` (the memory test that ``Evictor.room_for_write`` names).  These
tests check that the objects provide them, that client.py reads nothing else of them, and that
the inline path records and admits exactly what the named slow path does.
"""

from __future__ import annotations

import ast
import inspect

import pytest

from ferrumkv_py import client as client_mod
from ferrumkv_py import shadow as shadow_mod
from ferrumkv_py.client import Client
from ferrumkv_py.config import Config
from ferrumkv_py.eviction import ROOM_UNLIMITED
from ferrumkv_py.registry import lookup
from ferrumkv_py.server import ROOM_CHECK_ATTRS, Server
from tests.conftest import command_frame as _cmd

from .inproc_util import NullTransport


def _server(**settings) -> Server:
    cfg = Config()
    for name, value in settings.items():
        cfg.set(name.replace("_", "-"), str(value))
    return Server(cfg)


def _client(server: Server) -> Client:
    c = Client(server)
    c.connection_made(NullTransport())
    return c


def _attrs_read_on(tree: ast.AST, name: str) -> set:
    """Attribute names read directly off the local variable ``name``."""
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id == name}


def _client_tree() -> ast.AST:
    return ast.parse(inspect.getsource(client_mod))


# ---- the shadow ----

def test_shadow_provides_its_hot_path_attributes():
    server = _server(litehit_shadow="yes")
    sh = server.shadow
    for name in shadow_mod.HOT_PATH_ATTRS:
        assert hasattr(sh, name), name
    assert isinstance(sh.single, frozenset)
    assert lookup(b"get") in sh.single and lookup(b"set") in sh.single
    assert lookup(b"mget") not in sh.single      # more than one key: record()
    assert isinstance(sh.keep_all, bool) and isinstance(sh.keep, int)
    assert isinstance(sh.keys, list) and isinstance(sh.flags, bytearray)
    assert callable(sh.record)


def test_client_reads_only_the_shadow_contract():
    read = _attrs_read_on(_client_tree(), "shadow")
    assert read, "client.py no longer reads the shadow: update this test"
    assert read <= set(shadow_mod.HOT_PATH_ATTRS), read - set(shadow_mod.HOT_PATH_ATTRS)


def test_client_writes_the_named_write_flag_not_a_literal():
    tree = _client_tree()
    appends = [node for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "append" and isinstance(node.func.value, ast.Attribute)
               and node.func.value.attr == "flags"]
    assert appends
    for call in appends:
        names = {n.id for n in ast.walk(call) if isinstance(n, ast.Name)}
        consts = [n.value for n in ast.walk(call) if isinstance(n, ast.Constant)
                  and isinstance(n.value, int) and not isinstance(n.value, bool)]
        assert "FLAG_WRITE" in names and not consts
    assert client_mod.FLAG_WRITE is shadow_mod.FLAG_WRITE


@pytest.mark.parametrize("sample", ["1", "0.5"])
def test_inline_recording_equals_record(sample):
    """The same commands on the inline path and on the slow path (Client.run ->
    Shadow.record) leave the same keys and flag bytes in the buffer."""
    script = [_cmd(b"SET", b"k%d" % i, b"v") for i in range(40)]
    script += [_cmd(b"GET", b"k%d" % i) for i in range(0, 80, 3)]      # hits and misses
    script += [_cmd(b"INCR", b"n"), _cmd(b"DEL", b"k1"), _cmd(b"MGET", b"k2", b"zz")]
    buffers = []
    for slow in (False, True):
        server = _server(litehit_shadow="yes", litehit_shadow_sample=sample)
        c = _client(server)
        for frame in script:
            c.slow_path = slow          # True: every command takes call() and run()
            c.data_received(frame)
        buffers.append((list(server.shadow.keys), bytes(server.shadow.flags)))
    assert buffers[0] == buffers[1]
    keys, flags = buffers[0]
    if sample == "1":
        assert flags[0] == shadow_mod.FLAG_WRITE and keys[0] == b"k0"
        assert shadow_mod.FLAG_HIT in flags and 0 in flags


# ---- the room check ----

def test_client_reads_only_the_room_contract():
    """The inline denyoom test reads only ROOM_CHECK_ATTRS off the server."""
    tree = _client_tree()
    checks = [node for node in ast.walk(tree) if isinstance(node, ast.BoolOp)
              and "room_limit" in _attrs_read_on(node, "server")
              and not any(isinstance(child, ast.BoolOp) and "room_limit"
                          in _attrs_read_on(child, "server") for child in node.values)]
    assert len(checks) == 1
    assert _attrs_read_on(checks[0], "server") <= set(ROOM_CHECK_ATTRS)
    for name in ROOM_CHECK_ATTRS:
        assert hasattr(_server(), name), name


def _fill(server: Server, n: int) -> None:
    db = server.ks.dbs[0]
    c = _client(server)
    for i in range(n):
        c.data_received(_cmd(b"SET", b"key:%06d" % i, b"x" * 64))
    assert db.nkeys == n


def test_room_for_write_without_maxmemory():
    server = _server()
    assert server.room_limit == ROOM_UNLIMITED
    assert server.evictor.room_for_write() is True


def test_room_for_write_under_the_limit_evicts_nothing():
    server = _server(maxmemory="64mb", maxmemory_policy="allkeys-lru")
    _fill(server, 200)
    assert server.evictor.room_for_write() is True
    assert server.ks.evicted_keys == 0


@pytest.mark.parametrize("policy, admitted", [("noeviction", False), ("allkeys-lru", True)])
def test_room_for_write_over_the_limit(policy, admitted):
    server = _server(maxmemory_policy=policy)
    _fill(server, 2000)
    used = server.ks.used_memory
    server.maxmemory = server.room_limit = used // 2     # as if set, without the listener's pass
    assert server.evictor.room_for_write() is admitted
    assert server.evictor.make_room() is admitted        # the method it names
    if admitted:
        assert server.ks.evicted_keys > 0 and server.ks.used_memory <= used // 2
    else:
        assert server.ks.evicted_keys == 0


# ---- the inline table ----

def test_inline_table_follows_multi_auth_and_the_slow_path():
    """``Client.inline`` is the client's table without container commands, and empty while
    the client is in MULTI, owes an AUTH or is on the slow path; each change takes effect
    for the next command of the same read (one frame holds all of them here)."""
    server = _server(requirepass="pw")
    c = _client(server)
    db = server.ks.dbs[0]
    assert c.inline is client_mod._NO_INLINE               # owes an AUTH
    c.data_received(_cmd(b"AUTH", b"pw") + _cmd(b"SET", b"a", b"1") + _cmd(b"MULTI")
                    + _cmd(b"SET", b"b", b"2"))
    assert db.find(b"a") is not None                       # ran, inline or not
    assert db.find(b"b") is None and c.multi == [(lookup(b"set"), [b"SET", b"b", b"2"])]
    assert c.inline is client_mod._NO_INLINE               # queued, not run
    c.data_received(_cmd(b"EXEC") + _cmd(b"SET", b"c", b"3"))
    assert db.find(b"b") is not None and db.find(b"c") is not None
    assert c.inline.get(b"set") is lookup(b"set") and b"config" not in c.inline
    assert all(not spec.subcommands for spec in c.inline.values())
    c.slow_path = True
    assert c.inline is client_mod._NO_INLINE
    c.slow_path = False
    c.data_received(_cmd(b"RESET") + _cmd(b"SET", b"d", b"4"))
    assert db.find(b"d") is None and c.inline is client_mod._NO_INLINE   # NOAUTH again
