"""Raw-socket helpers for the pub/sub, notification and tracking tests.

``Conn`` sends one command and reads replies as raw RESP bytes.  ``drain`` is the barrier
the differential tests use: it sends PING on a subscribed RESP2 connection and returns every
frame that arrived before the ``pong`` frame.  The server runs one command at a time, so
whatever another connection's command pushed (messages, notifications, invalidations) is
already queued ahead of that PING's reply, on redis-server and on ferrumkv alike.
"""

from __future__ import annotations

from tests.conftest import RawConn
from tests.ferrumkv.container_diff import encode_command

PONG2 = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
PONG3 = b"+PONG\r\n"


class Conn(RawConn):
    def cmd(self, *args) -> bytes:
        """Send one command, return its single reply."""
        self.send(encode_command([a if isinstance(a, bytes) else str(a).encode()
                                  for a in args]))
        return self.read_reply()

    def cmd_frames(self, n: int, *args) -> list:
        """Send one command, return ``n`` frames (SUBSCRIBE a b -> 2 frames)."""
        self.send(encode_command([a if isinstance(a, bytes) else str(a).encode()
                                  for a in args]))
        return [self.read_reply() for _ in range(n)]

    def drain(self, pong: bytes | None = None) -> list:
        """Every frame queued before the reply to a PING sent now (``pong``: that reply;
        by default either form, a subscribed RESP2 client's frame or ``+PONG``)."""
        self.send(encode_command([b"PING"]))
        ends = (PONG2, PONG3) if pong is None else (pong,)
        out = []
        while True:
            f = self.read_reply()
            if f in ends or not f:
                return out
            out.append(f)
