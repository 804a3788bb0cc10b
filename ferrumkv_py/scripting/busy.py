"""Serving other clients while a script is busy (Redis's ``processEventsWhileBlocked``).

A script runs inline on the event loop, so while it runs nothing else is read.  Once it has
run longer than ``busy-reply-threshold``, the engine's count hook calls
:func:`serve_others` every ``HOOK_INSTRUCTIONS`` VM instructions: the sockets of the other
clients are polled with a zero timeout, what they sent is read and run through the normal
dispatcher (``Client.call``), which answers ``-BUSY ...`` to every command without the
``allow_busy`` flag (``server.busy_script`` is set).  The script's own connection is not
read (as Redis, which protects the caller); a client at EOF is marked paused and the loop
sees it after the script.  Replies queued before the script (by the reads of its round)
are written first, as Redis's processEventsWhileBlocked writes pending replies.
"""

from __future__ import annotations

import os
import select

from ..busy_accept import accept_new
from ..resp import ProtocolError

BUSY_READ_BYTES = 65536          # bytes read from a busy-time client per poll


def serve_others(server, caller) -> None:
    """One pass of processEventsWhileBlocked: write what the round before the script left
    queued (the replies of the reads before it: ``Server.flush_soon`` would have written
    them after the round, which the script holds), then read and answer every other
    client that has sent something.  Complexity: O(clients) plus the commands read."""
    if server.write_clients:
        server.flush_writes()
    accept_new(server)      # new connections are served too (busy_accept.py)
    fds = {}
    for c in server.clients.values():
        if (c is not caller and c.fd >= 0 and not c.closing and not c.paused
                and c.bstate is None):   # a blocked client (blocking.py) waits
            fds[c.fd] = c
    if not fds:
        return
    poller = select.poll()      # poll, not select: descriptors above 1023 work too
    for fd in fds:
        poller.register(fd, select.POLLIN)
    try:
        ready = [fd for fd, _ in poller.poll(0)]
    except OSError:
        return
    for fd in ready:
        c = fds[fd]
        try:
            data = os.read(fd, BUSY_READ_BYTES)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            data = b""
        if not data:
            c.paused = True   # EOF or error: the loop sees it after the script
            continue
        _serve_one(c, data)


def _serve_one(c, data: bytes) -> None:
    """Run the commands of one read from a busy-time client, as data_received would."""
    out = []
    reader = c.reader
    while True:
        try:
            batch = reader.get_batch(data)
            data = None
        except ProtocolError as e:
            out.append(e.reply())
            c.closing = True
            break
        if not batch:
            break
        for argv in batch:
            out.append(c.call(argv))
        if c.closing or not reader.more:
            break
    if out:
        c.write_now(out)    # the loop is held: nothing flushes this round
    if c.closing:
        c.transport.close()
