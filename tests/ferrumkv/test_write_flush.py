"""Replies go out once per event-loop round (``Server.flush_soon``), in order, one write per
client: several reads of a round and the pushes between them are joined; a closing client
gets what it is owed before the close; without a running loop a read writes at once."""

from __future__ import annotations

import asyncio

from ferrumkv_py.client import Client
from ferrumkv_py.config import Config
from ferrumkv_py.server import Server
from tests.conftest import command_frame as _cmd


class RecordingTransport:
    """Keeps every write and whether close() came after it."""

    def __init__(self):
        self.writes: list = []
        self.closed_after = None     # number of writes made when close() was called

    def write(self, data):
        assert self.closed_after is None, "write after close"
        self.writes.append(bytes(data))

    def get_extra_info(self, name):
        return None

    def get_write_buffer_size(self):
        return 0

    def set_write_buffer_limits(self, high=None, low=None):
        pass

    def close(self):
        if self.closed_after is None:
            self.closed_after = len(self.writes)

    def abort(self):
        self.close()


def _pair():
    server = Server(Config())
    clients = []
    for _ in range(2):
        c = Client(server)
        c.connection_made(RecordingTransport())
        clients.append(c)
    return server, clients


def test_one_write_per_client_per_round_in_order():
    async def main():
        server, (a, b) = _pair()
        server.loop = asyncio.get_running_loop()
        a.data_received(_cmd(b"SET", b"k", b"v1"))
        b.data_received(_cmd(b"SUBSCRIBE", b"ch"))
        a.data_received(_cmd(b"GET", b"k") + _cmd(b"PUBLISH", b"ch", b"m"))
        a.data_received(_cmd(b"INCR", b"n"))
        # nothing is written inside the round
        assert a.transport.writes == [] and b.transport.writes == []
        await asyncio.sleep(0)          # the round ends: one flush
        assert a.transport.writes == [b"+OK\r\n$2\r\nv1\r\n:1\r\n:1\r\n"]
        assert b.transport.writes == [
            b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"
            b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n"]
        assert not server.write_clients and not server.flush_due
        a.data_received(_cmd(b"PING"))
        await asyncio.sleep(0)
        assert a.transport.writes[1:] == [b"+PONG\r\n"]
    asyncio.run(main())


def test_closing_client_gets_its_replies_before_the_close():
    async def main():
        server, (a, _) = _pair()
        server.loop = asyncio.get_running_loop()
        a.data_received(_cmd(b"SET", b"k", b"v"))       # queued for the flush
        a.data_received(_cmd(b"GET", b"k") + _cmd(b"QUIT") + _cmd(b"GET", b"k"))
        t = a.transport
        assert t.writes == [b"+OK\r\n$1\r\nv\r\n+OK\r\n"] and t.closed_after == 1
        await asyncio.sleep(0)
        assert len(t.writes) == 1       # the flush finds nothing more for it
    asyncio.run(main())


def test_big_reply_written_early_keeps_the_order():
    async def main():
        server, (a, _) = _pair()
        server.loop = asyncio.get_running_loop()
        a.obuf_early = 1000             # what limits.early_write_bytes gives a small limit
        a.data_received(_cmd(b"SET", b"big", b"x" * 5000))
        a.data_received(_cmd(b"PING") + _cmd(b"GET", b"big") + _cmd(b"PING"))
        await asyncio.sleep(0)
        joined = b"".join(a.transport.writes)
        assert joined == b"+OK\r\n+PONG\r\n$5000\r\n" + b"x" * 5000 + b"\r\n+PONG\r\n"
        assert len(a.transport.writes) >= 2     # the big reply did not wait for the round
    asyncio.run(main())


def test_without_a_loop_a_read_writes_at_once():
    server, (a, _) = _pair()
    assert server.loop is None
    a.data_received(_cmd(b"PING"))
    assert a.transport.writes == [b"+PONG\r\n"]


def test_a_busy_script_writes_what_its_round_queued():
    """Replies queued by the reads of a script's round go out when the script starts
    serving other clients (scripting/busy.py), not after the script."""
    from ferrumkv_py.scripting import busy

    async def main():
        server, (a, caller) = _pair()
        server.loop = asyncio.get_running_loop()
        a.data_received(_cmd(b"PING"))
        assert a.transport.writes == []
        busy.serve_others(server, caller)      # (no socket is readable: nothing read)
        assert a.transport.writes == [b"+PONG\r\n"]
    asyncio.run(main())
