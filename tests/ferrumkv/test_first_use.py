"""Kernels load off the event loop at first use (issue 26 row 10, first_use.py): while a
family's modules load (an injected slow loader stands in for numba), the caller waits
and other clients are answered; MULTI and scripts load on the spot; the eviction kernel
and the litehit shadow compile on a thread while the server goes on."""

from __future__ import annotations

import threading
import time

import pytest
import redis

from ferrumkv_py import first_use, shadow
from ferrumkv_py.eviction.compiled import CompiledSampler
from ferrumkv_py.registry import COMMANDS

from ..conftest import RawConn, command_frame as cmd

WAIT_S = 20         # hang guards, not timing assertions


def _wait(pred, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not pred():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


@pytest.fixture
def slow_family():
    """PFADD / PFCOUNT gated behind a loader that blocks until ``release`` is set."""
    release = threading.Event()
    threads = []

    def load():
        threads.append(threading.current_thread().name)
        assert release.wait(WAIT_S)
    k = first_use.Kernels("test", load=load)
    first_use.gate(k, [COMMANDS[b"pfadd"], COMMANDS[b"pfcount"]])
    yield k, release, threads
    release.set()
    k.load_now()                            # puts the plain handlers back
    assert not k.gated


def test_caller_waits_others_are_answered(server, slow_family):
    k, release, threads = slow_family
    a = RawConn(server.port)
    a.send(cmd("PFADD", "h", "x") + cmd("PFCOUNT", "h") + cmd("SET", "after", "1"))
    _wait(lambda: k.loading and threads, "the load never started")
    b = RawConn(server.port)
    for _ in range(3):                      # answered while a's load is in progress
        b.send(cmd("PING"))
        assert b.read_reply() == b"+PONG\r\n"
    b.send(cmd("EXISTS", "h", "after"))
    assert b.read_reply() == b":0\r\n"      # nothing of a's read ran yet
    a.send(cmd("GET", "after"))             # a later read waits behind the held one
    assert threads[0].startswith("first-use-")
    release.set()
    assert a.read_reply() == b":1\r\n"      # PFADD ran once
    assert a.read_reply() == b":1\r\n"
    assert a.read_reply() == b"+OK\r\n"
    assert a.read_reply() == b"$1\r\n1\r\n"
    assert k.ready and COMMANDS[b"pfadd"].handler.__name__ == "pfadd"
    a.close()
    b.close()


def test_multi_and_scripts_load_on_the_spot(server):
    calls = []
    k = first_use.Kernels("test-sync", load=lambda: calls.append(threading.current_thread()))
    first_use.gate(k, [COMMANDS[b"pfadd"]])
    try:
        r = redis.Redis(port=server.port)
        p = r.pipeline(transaction=True)
        p.pfadd("h", "a")
        assert p.execute() == [1]
        assert len(calls) == 1 and calls[0] is server.thread    # the loop's own thread
        assert k.ready
        k2 = first_use.Kernels("test-script", load=lambda: calls.append(
            threading.current_thread()))
        first_use.gate(k2, [COMMANDS[b"pfadd"]])
        assert r.eval("return redis.call('pfadd', KEYS[1], 'b')", 1, "h") == 1
        assert calls[1] is server.thread and k2.ready
        r.close()
    finally:
        k.load_now()


def test_closed_waiter_is_dropped(server, slow_family):
    k, release, threads = slow_family
    a = RawConn(server.port)
    a.send(cmd("PFADD", "h", "x"))
    _wait(lambda: k.loading, "the load never started")
    a.close()
    release.set()
    _wait(lambda: k.ready and not k.loading, "the load never ended")
    r = redis.Redis(port=server.port)
    assert r.ping()
    r.close()


def test_eviction_kernel_compiles_on_a_thread(make_server, monkeypatch):
    release = threading.Event()
    where = []
    real_warm = CompiledSampler.warm

    def slow_warm():
        where.append(threading.current_thread().name)
        assert release.wait(WAIT_S)
        real_warm()
    monkeypatch.setattr(CompiledSampler, "warm", staticmethod(slow_warm))
    s = make_server()
    r = redis.Redis(port=s.port)
    r.config_set("maxmemory", "10mb")
    assert r.config_set("maxmemory-policy", "allkeys-ahe")     # answered before it compiled
    assert r.ping() and where and where[0].startswith("first-use-")
    assert s.call(lambda: s.server.evictor.compiled) is None    # Python sampler meanwhile
    release.set()
    _wait(lambda: s.call(lambda: s.server.evictor.compiled) is not None, "never compiled")
    r.close()


def test_shadow_loads_on_a_thread(make_server, monkeypatch):
    release = threading.Event()
    where = []
    loaded = shadow.LiteHit

    def slow_load():
        where.append(threading.current_thread().name)
        assert release.wait(WAIT_S)
        shadow.LiteHit = loaded
    monkeypatch.setattr(shadow, "LiteHit", None)
    monkeypatch.setattr(shadow, "load_kernels", slow_load)
    s = make_server()
    r = redis.Redis(port=s.port)
    assert r.config_set("litehit-shadow", "yes")
    assert r.ping() and where and where[0].startswith("first-use-")
    assert s.call(lambda: s.server.shadow) is None
    release.set()
    _wait(lambda: s.call(lambda: s.server.shadow) is not None, "the shadow never started")
    r.close()
