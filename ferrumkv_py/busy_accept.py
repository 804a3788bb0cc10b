"""New connections while a script holds the event loop (Redis accepts them in
``processEventsWhileBlocked`` and answers them like the others).

A busy script runs on the loop's thread, so asyncio's listeners are not served: a
``redis-cli SCRIPT KILL`` typed in a new terminal sat in the listen backlog until the
script ended, which it never did.  While busy, the script's count hook
(``scripting/busy.py``) calls :func:`accept_new` on each pass:

1. Every listening socket (``Server.listeners``; a ``dup`` of each descriptor, made once
   per busy period) is polled with a zero timeout; ready ones are ``accept``-ed, up to
   ``ACCEPT_PER_PASS`` a pass.
2. Each new socket gets a normal :class:`~ferrumkv_py.client.Client` whose transport is a
   :class:`BusyTransport`: ``connection_made`` runs as usual (maxclients, protected mode,
   the client registry), so the busy pass reads and answers it like any other client
   (-BUSY for most commands; AUTH, SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE work).
   A BusyTransport writes with non-blocking ``send`` and keeps what the socket did not take.
3. When the script ends, the loop runs the callback scheduled at the first accept: each
   such client is handed to the loop (``connect_accepted_socket`` with a factory returning
   the same Client); ``Client.connection_made`` sees it already has a transport and calls
   :func:`adopt`, which swaps in the loop's transport and writes what was kept.  The
   client's reader keeps any partial command, so nothing read is lost or read twice.

Invariant: a connection accepted while busy is in ``server.clients`` from its accept on,
exactly once, with the same Client object before and after the hand-over.

Complexity: O(listeners) per busy pass, plus O(1) per accepted connection.
"""

from __future__ import annotations

import logging
import os
import select
import socket

log = logging.getLogger("ferrumkv")

ACCEPT_PER_PASS = 64        # connections accepted per busy pass (Redis: MAX_ACCEPTS_PER_CALL)


class BusyTransport:
    """The transport of a connection accepted while a script is busy (until :func:`adopt`).
    Only what the dispatcher and the busy pass call on a transport."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.kept = bytearray()     # bytes the socket did not take yet
        self.closed = False
        self.aborted = False
        self._info = {"socket": sock}
        try:
            self._info["peername"] = sock.getpeername()
            self._info["sockname"] = sock.getsockname()
        except OSError:
            pass

    def get_extra_info(self, name, default=None):
        return self._info.get(name, default)

    def write(self, data) -> None:
        if self.closed:
            return
        if not self.kept:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.closed = True
                return
            data = memoryview(data)[sent:]
        self.kept += data

    def get_write_buffer_size(self) -> int:
        return len(self.kept)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = self.aborted = True
        self.kept.clear()

    def is_closing(self) -> bool:
        return self.closed

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _BusyListeners:
    """The duplicated listening sockets and the clients accepted in one busy period."""

    def __init__(self, server):
        self.socks = []
        for srv in server.listeners:
            for s in srv.sockets or ():
                try:
                    dup = socket.socket(fileno=os.dup(s.fileno()))
                except OSError:
                    continue
                dup.setblocking(False)
                self.socks.append(dup)
        self.accepted: list = []     # (client, socket) to hand to the loop afterwards


def accept_new(server) -> None:
    """Accept and register the connections waiting on the listeners (step 1 and 2).
    Called by the busy pass; the hand-over (step 3) is scheduled on the first call of a
    busy period.  Complexity: O(listeners + accepted)."""
    state = getattr(server, "busy_listeners", None)
    if state is None:
        if not server.listeners or server.loop is None:
            return
        state = server.busy_listeners = _BusyListeners(server)
        server.loop.call_soon(_hand_over, server)   # runs once the script has returned
    if not state.socks:
        return
    poller = select.poll()
    for s in state.socks:
        poller.register(s.fileno(), select.POLLIN)
    try:
        ready = {fd for fd, _ in poller.poll(0)}
    except OSError:
        return
    from .client import Client
    for lsock in state.socks:
        if lsock.fileno() not in ready:
            continue
        for _ in range(ACCEPT_PER_PASS):
            try:
                sock, _addr = lsock.accept()
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                log.warning("Accepting client connection: %s", e)
                break
            sock.setblocking(False)
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            client = Client(server)
            transport = BusyTransport(sock)
            client.connection_made(transport)
            state.accepted.append((client, sock))


def _hand_over(server) -> None:
    """Step 3: after the script, every connection accepted meanwhile joins the loop."""
    state = server.busy_listeners
    server.busy_listeners = None
    for s in state.socks:
        s.close()
    loop = server.loop
    for client, sock in state.accepted:
        transport = client.transport
        if transport.closed and not transport.kept:
            client.connection_lost(None)
            sock.close()
            continue
        loop.create_task(_join(loop, client, sock))


async def _join(loop, client, sock) -> None:
    try:
        await loop.connect_accepted_socket(lambda: client, sock)
    except OSError:
        client.connection_lost(None)
        sock.close()


def adopt(client, transport) -> None:
    """``Client.connection_made`` for a client accepted while busy: take the loop's
    transport, write what the busy transport kept, close if it was closed."""
    busy = client.transport
    client.transport = transport
    client.paused = False
    if busy.kept:
        transport.write(bytes(busy.kept))
        busy.kept.clear()
    if busy.closed:
        if busy.aborted:
            transport.abort()
        else:
            transport.close()
