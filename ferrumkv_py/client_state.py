"""The per-client state every command context carries, in one place.

Two kinds of client run commands: a connection (``client.Client``, the asyncio protocol)
and the client a script's ``redis.call`` runs on (``scripting.ScriptClient``, Redis's Lua
client).  Handlers, the dispatcher, pub/sub, tracking and the output limits read the same
attributes of either, so both start from :class:`ClientState`; a subclass sets what differs
(the id, the addresses, ``authenticated``) and adds its own (the reader, the transport).

An attribute added here is seen by both kinds of client: a new per-client field that
commands read belongs here, not in one subclass.
"""

from __future__ import annotations

import time


class ClientState:
    """What a command sees of its client (``c.db``, ``c.proto``, ``c.name`` ...)."""

    # ``multi`` and ``slow_path`` are properties: setting either tells the connection's
    # dispatcher (``Client.refresh_inline``), whose inline table is empty while the client
    # is in MULTI or on the slow path.

    @property
    def multi(self):
        """The commands queued since MULTI (a list), or None outside a transaction."""
        return self._multi

    @multi.setter
    def multi(self, value) -> None:
        self._multi = value
        self.refresh_inline()

    @property
    def slow_path(self) -> bool:
        """Every command takes the dispatcher's full path (``Client.call``): subscribed,
        tracking, CLIENT REPLY, MONITOR / CLIENT PAUSE on, or an ACL-limited user."""
        return self._slow_path

    @slow_path.setter
    def slow_path(self, value: bool) -> None:
        self._slow_path = value
        self.refresh_inline()

    def refresh_inline(self) -> None:
        """A script's client has no dispatcher of its own: nothing to refresh."""

    def __init__(self, server):
        self.server = server
        self.ks = server.ks
        self.db = server.ks.dbs[0]
        self.proto = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        self.fd = -1
        self.created = time.monotonic()
        self.last_interaction = self.created
        self.last_cmd = "NULL"
        self.closing = False
        self.paused = False
        # ---- MULTI / WATCH ----
        self._multi = None           # list of (spec, argv) while in MULTI (``multi``)
        self.multi_error = False
        self.multi_denyoom = False   # a queued command has the denyoom flag
        self.watched: list = []      # (db id, key) pairs this client WATCHes
        self.dirty_cas = False
        # ---- output limits (limits.py) ----
        self.obuf_class = "normal"
        self.aborted = False         # closed for its output limit: unsent replies dropped
        # ---- pub/sub, tracking (pubsub.py, tracking.py) ----
        self.sub_channels: dict = {}  # channel -> None, in subscription order
        self.sub_patterns: dict = {}
        self.sub_shard: dict = {}
        self.tracking = None         # tracking.ClientTracking while CLIENT TRACKING is on
        self._slow_path = False      # every command takes call() (``slow_path``)
        self.executing = None        # this read's reply list while its commands run
        self.read_len = 0            # bytes of the read being run (CLIENT LIST qbuf)
        self.unsent = None           # output queued for Server.flush_writes (frames)
        # ---- CLIENT PAUSE / REPLY / NO-EVICT (ops.py, commands/operators.py) ----
        self.held = None             # commands postponed by CLIENT PAUSE, in order
        self.stream = None           # a reply still streaming (commands/_randpick.py)
        self.reply_gate = None       # CLIENT REPLY: None (on), "off", "skip_next", "skip"
        self.no_evict = False
        self.in_exec = False
        # ---- blocking pops (blocking.py) ----
        self.bstate = None           # blocking.Waiter while blocked
        self.bheld = None            # commands of the read that blocked, run once served
        self.deny_blocking = False   # inside EXEC and scripts: blocking forms do not block
