"""The server: listener, client registry, cron, clean shutdown.

What a server is made of is listed in ``Server.__init__``: the keyspace, stats and the
dispatcher's state, then the subsystems (``subsystem.py``), each built there with its config
listeners, started by :meth:`Server.start` in that order once the listeners are up and
stopped by :meth:`Server.stop` in reverse.

The cron runs ``hz`` times a second (Redis serverCron/databasesCron): it refreshes the cached
clock, runs the active expire cycle, lets eviction catch up after ``CONFIG SET maxmemory``,
closes idle clients (``timeout``) and feeds the litehit shadow.  Nothing here parses RESP or
touches key data directly: that is ``client.py`` and ``keyspace.py``; the INFO counters
are ``stats.py``'s.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
import time

from . import commands  # noqa: F401  (registers every command)
from .acl_file import StartupUsers
from .blocking import Blocking
from .clock import SystemClock
from .config import Config
from .config_redis import EncodingThresholds
from .console import ConsoleSwitch
from .expire import active_expire_cycle
from .keyspace import Keyspace
from . import limits
from .ops import Ops
from .persistence import Persistence
from .scripting import ScriptTimeLimit
from .shadow import ShadowSwitch
from .stats import STATS_SAMPLE_PERIOD_MS, Stats

log = logging.getLogger("ferrumkv")

ACTIVE_EXPIRE_SLOW_TIME_PERC = 25   # % of CPU the slow expire cycle may use (effort 1)
LISTEN_BACKLOG = 511                # pending connections, Redis's tcp-backlog default
RSS_PER_MODEL_BYTE_MAX = 1.8         # RSS / used_memory under heavy turnover (docs/memory.md)
COMPACT_MOVES_PER_TICK = 20_000     # keys compaction may move per cron tick (~2-4 ms, slots.py)

# The dispatcher's room check: the Server attributes client.py's inline path reads to decide
# whether a denyoom command may run, and nothing else of the memory state.  It is the test of
# Evictor.room_for_write() spelt out (other callers use the method):
#
#     spec.denyoom and ks.used_memory > server.room_limit
#         and not server.evictor.make_room()          -> the command takes call() (OOM)
#
# (``ks`` is the client's, the server's keyspace.)  ``room_limit`` is written only by
# Evictor.refresh_room_limit: maxmemory less the AHE controller's memory, ROOM_UNLIMITED
# without maxmemory (from the Evictor's start: no maxmemory test is needed).  Inline because
# the call costs more than the test: +8 of 260 bytecodes per SET -P 16 under a maxmemory,
# 32-42 -> 52-81 ns per check in timeit (bench/dispatch_contracts.py).  test_hot_path.py
# checks client.py reads only these here.
ROOM_CHECK_ATTRS = ("room_limit", "evictor")

_LOGLEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.WARNING - 5,
              "warning": logging.WARNING}
logging.addLevelName(logging.WARNING - 5, "NOTICE")


class Server:
    """Owns the keyspace, the clients and the background work of one ferrumkv instance."""

    def __init__(self, config: Config | None = None, clock=None, rng=None):
        self.config = config or Config()
        self.clock = clock or SystemClock()
        self.ks = Keyspace(self.config["databases"], clock=self.clock, rng=rng)
        self.stats = Stats()
        self.clients: dict[int, object] = {}
        self._next_id = 0
        self.start_time = time.time()
        self.now_mono = time.monotonic()
        self.listeners: list = []
        self.port = self.config["port"]
        self.requirepass = ""
        self.maxmemory = 0
        self.room_limit = 0           # used_memory that makes a write call make_room (Evictor;
                                      # ROOM_CHECK_ATTRS)
        self.cron_loops = 0
        self._stopped = None
        self._cron_task = None
        self.shutdown_requested = False
        self.persistence_gate = False   # loading, or MISCONF: persistence_gate_changed()
        from .pubsub import PubSub
        from .tracking import Tracking
        from .notify import Notifier
        self.pubsub = PubSub()
        self.write_clients: list = []  # clients with unsent output (Client.unsent): flush_writes
        self.flush_due = False        # flush_writes is scheduled for the end of this round
        self.loop = None              # the event loop, once start() ran (flush_soon)
        self.tracking = Tracking(self)
        self.notifier = Notifier(self)
        from .eviction import Evictor
        self.evictor = Evictor(self)
        from .gcstats import shared as gc_stats
        self.gc_stats = gc_stats()    # collector pauses, INFO memory (gcstats.py)
        self.gc_freeze = False        # run() turns it on: the process is the server's
        self._modules_frozen = 0      # len(sys.modules) at the last freeze
        self._modules_seen = 0        # ... and at the previous cron tick
        self.busy_script = None       # a script past busy-reply-threshold (the dispatcher)
        self.blocking_due = False     # a blocked client may be served (blocking.py)
        # ---- subsystems (subsystem.py): started by start() in this order, stopped in
        # reverse by stop() ----
        self.parts: list = []
        self.shadow = None            # the litehit shadow while litehit-shadow is on
        self.console = None           # the web console while console-port is set
        self.shadow_switch = self.part(ShadowSwitch(self))     # builds server.shadow
        self.console_switch = self.part(ConsoleSwitch(self))   # runs server.console
        self.blocking = self.part(Blocking(self))        # blocked clients (blocking pops)
        self.script_time_limit = self.part(ScriptTimeLimit(self))  # lua-time-limit alias
        self.encodings = self.part(EncodingThresholds(self))  # zset-max-listpack-* -> zset.py
        from .acl import Acl
        self.acl = Acl(self.config)   # users (acl.py); requirepass is the default's password
        self.ops = self.part(Ops(self))      # slowlog, latency monitor, MONITOR
        self.config.on_change("requirepass", self._set_requirepass)
        self.config.on_change("maxmemory", self._set_maxmemory)
        self.config.on_change("loglevel", lambda v: log.setLevel(_LOGLEVELS[v]))
        self.config.on_change("proto-max-bulk-len", self._set_max_bulk_len, call_now=False)
        self.config.on_change("port", self._set_port, call_now=False)
        # ---- limits and lazy free (limits.py, lazyfree.py) ----
        self.obuf_limits: dict = {}
        self.obuf_soft_clients: set = set()   # clients over a soft output limit now
        self.config.on_change("client-output-buffer-limit", self._set_obuf_limits)
        self.config.on_change("client-query-buffer-limit", self._set_query_limit)
        for name, attr in (("lazyfree-lazy-expire", "lazy_expire"),
                           ("lazyfree-lazy-eviction", "lazy_eviction"),
                           ("lazyfree-lazy-server-del", "lazy_server_del")):
            self.config.on_change(name, lambda v, a=attr: setattr(self.ks, a, v))
        self._lazyfree_scheduled = False
        self.config.on_change("maxclients", self._set_maxclients, call_now=False)
        from .info import rss_bytes
        self.startup_rss = rss_bytes()     # the interpreter's own RSS (INFO memory)
        self.ks.lazyfree.wakeup = self._wake_lazyfree
        # config-file users / aclfile, after requirepass as in Redis
        self.startup_users = self.part(StartupUsers(self))
        # RDB files, SAVE / BGSAVE, loading at start (persistence/, docs/persistence.md):
        # started last, so clients connect to a server that answers -LOADING meanwhile
        self.persistence = self.part(Persistence(self))
        self.load_error = None        # why loading the RDB file at start failed (exit 1)

    def part(self, subsystem):
        """Register ``subsystem`` for start() and stop(); returns it.  Complexity: O(1)."""
        self.parts.append(subsystem)
        return subsystem

    def bind_hosts(self) -> list:
        """``bind`` as (host, optional) pairs (:func:`bind_addresses`)."""
        return bind_addresses(self.config["bind"])

    # ---- config listeners ----

    def _set_requirepass(self, value: str) -> None:
        self.requirepass = value
        self.acl.update_default_password(value)
        if not value:  # the default user is "nopass" again: nobody owes an AUTH (Redis)
            for c in self.clients.values():
                c.authenticated = True

    def _set_port(self, value: int) -> None:
        """CONFIG SET port: listen on the new port first, then close the old listeners.

        Existing connections stay open, as in Redis.  Raises ValueError (Redis's text) when
        the new port cannot be bound, leaving the old listeners untouched.
        """
        if not self.listeners or value == self.port:
            return
        from .client import Client
        hosts = self.bind_hosts()
        socks = []
        try:
            for host, optional in hosts:
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                try:
                    socks.append(socket.create_server((host, value), family=family,
                                                      backlog=LISTEN_BACKLOG))
                except OSError:
                    if not optional:
                        raise
                    continue
                value = value or socks[0].getsockname()[1]
            if not socks:
                raise OSError("no address to listen on")
        except OSError:
            for sock in socks:
                sock.close()
            raise ValueError("Unable to listen on this port") from None
        loop = asyncio.get_running_loop()
        for srv in self.listeners:
            srv.close()
        self.listeners = []

        async def serve(sock) -> None:
            self.listeners.append(await loop.create_server(lambda: Client(self), sock=sock))
        for sock in socks:
            loop.create_task(serve(sock))
        self.port = value
        self.config.values["port"] = value
        log.log(logging.WARNING - 5, "Ready to accept connections tcp on %s port %d",
                " ".join(h for h, _ in hosts), value)

    def _set_obuf_limits(self, value: str) -> None:
        self.obuf_limits = limits.parse_obuf_limits(value)
        for c in self.clients.values():
            c.set_obuf_class(c.obuf_class)

    def _set_maxclients(self, value: int) -> None:
        """CONFIG SET maxclients: raise RLIMIT_NOFILE to match, or refuse with Redis's text
        (updateMaxclients) when the OS does not allow it."""
        if not self.listeners:
            return                      # not started: start() adjusts it
        allowed = limits.adjust_open_files_limit(value)
        if allowed != value:
            raise ValueError("The operating system is not able to handle the specified "
                             "number of clients, try with %d" % allowed)

    def _set_query_limit(self, value: int) -> None:
        for c in self.clients.values():
            c.reader.query_limit = value

    def _wake_lazyfree(self) -> None:
        """Work was queued for lazy free: release it by slices between client reads (a
        call_soon chain), or from the cron when no loop is running (tests)."""
        if self._lazyfree_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return                      # the cron picks it up
        self._lazyfree_scheduled = True
        loop.call_soon(self._lazyfree_step)

    def _lazyfree_step(self) -> None:
        """One slice of lazy free (``lazyfree.py``); the next is scheduled while work is
        left, and memory is given back to the OS once the queue is empty."""
        self._lazyfree_scheduled = False
        if self.ks.lazyfree.release():
            self._wake_lazyfree()
        else:
            from .memory_trim import trim_after_free
            trim_after_free()

    def _set_max_bulk_len(self, value: int) -> None:
        for c in self.clients.values():
            c.reader.max_bulk_len = value

    def _set_maxmemory(self, value: int) -> None:
        """A new ``maxmemory`` (start-up, a conf file, CONFIG SET): the one place that orders
        what it changes, so that no listener depends on running before another one:

        1. ``evictor.prepare_limit(value)``: the compiled path is built, and the evictor is
           marked lagging (catch-up budget) when memory is already over the new limit;
        2. ``self.maxmemory`` is stored: make_room(), the dispatcher and INFO read it;
        3. ``evictor.refresh_room_limit()``: the dispatcher's bound, from the stored value;
        4. over the limit: the warning and, unless CLIENT PAUSE holds eviction, one pass.

        (The Evictor's own ``maxmemory`` listener runs step 1 too; it is idempotent, so the
        listeners' order does not matter: tests/ferrumkv/test_maxmemory_order.py.)
        """
        self.evictor.prepare_limit(value)
        self.maxmemory = value
        self.evictor.refresh_room_limit()
        if value and self.ks.used_memory > value:
            log.warning("WARNING: the new maxmemory value set via CONFIG SET (%d) is smaller "
                        "than the current memory usage (%d)", value, self.ks.used_memory)
            if not self.ops.paused():   # CLIENT PAUSE: no eviction until it ends (Redis)
                self.evictor.make_room()

    # ---- clients ----

    def next_client_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def add_client(self, client) -> bool:
        """Register a new connection; False (refused) beyond maxclients, as Redis counts."""
        if len(self.clients) >= self.config["maxclients"]:
            self.stats.rejected_connections += 1
            return False
        self.stats.total_connections += 1
        self.clients[client.id] = client
        return True

    def protected_mode_denies(self, peer) -> bool:
        """Protected mode refuses this peer (counted as a rejected connection)."""
        from .protected import denies
        if denies(self.config["protected-mode"], not self.acl.default.nopass, peer):
            self.stats.rejected_connections += 1
            return True
        return False

    def remove_client(self, client) -> None:
        self.clients.pop(client.id, None)
        self.obuf_soft_clients.discard(client)

    def flush_soon(self) -> None:
        """Have :meth:`flush_writes` run once this event-loop round's reads are done.

        Replies are not written by the read that made them but all together after the
        round, as Redis writes its clients' replies before it sleeps
        (``handleClientsWithPendingWrites``): a write that finds its peer asleep pays for
        waking it (an inter-processor interrupt, dear in a VM), and 50 writes spread over a
        round each found redis-benchmark asleep again.  Growing SET, -P 16 -c 50
        (``bench/full_cache.py --only grow``): 178k -> 220k/s, the kernel's wake-up path
        19% -> 3% of the server's CPU (perf), a second client's worst PING 33 -> 19 ms.
        A ``call_soon`` from inside the round's I/O callbacks runs before the loop polls
        again, so no reply waits for another round.  Without a running loop (in-process
        tests and benches) it writes at once.  Complexity: O(1).
        """
        if self.flush_due:
            return
        if self.loop is None:
            self.flush_writes()
            return
        self.flush_due = True
        self.loop.call_soon(self.flush_writes)

    def flush_writes(self) -> None:
        """Write every client's unsent output (replies, pub/sub messages, invalidations) in
        one write each, then check its output limits.

        Runs after each event-loop round with output (:meth:`flush_soon`) and at the end of
        a cron tick.  Complexity: O(clients with output + bytes).
        """
        self.flush_due = False
        tracking = self.tracking
        if tracking.bcast_dirty:
            tracking.broadcast()
        clients, self.write_clients = self.write_clients, []
        for c in clients:
            if c is None:      # Tracking's "broadcast pending" marker
                continue
            if c.closing or c.transport is None:
                c.unsent = None             # a closed client's output is dropped
            elif c.unsent:
                c.write_now(())
                if c.obuf_soft_since is not None or c.transport.get_write_buffer_size():
                    c.check_output_limits()   # a client that does not read

    # ---- lifecycle ----

    def _log_memory_plan(self) -> None:
        """One start-up line on what memory to expect: maxmemory and its policy, the
        shadow, the process's baseline RSS, and the RSS range above maxmemory that
        docs/memory.md measured (1.0-1.8x the data set under turnover)."""
        from .config import format_memory_human as human
        cfg, base = self.config, self.startup_rss
        shadow = ("litehit shadow on (outside maxmemory: INFO litehit_shadow_memory)"
                  if cfg["litehit-shadow"] else "litehit shadow off")
        if self.maxmemory:
            log.log(logging.WARNING - 5, "maxmemory %s, policy %s, %s; expect RSS about %s "
                    "(the process) + 1.0-1.8 x maxmemory = %s-%s under turnover "
                    "(docs/memory.md)", human(self.maxmemory), cfg["maxmemory-policy"],
                    shadow, human(base), human(base + self.maxmemory),
                    human(base + int(self.maxmemory * RSS_PER_MODEL_BYTE_MAX)))
        else:
            log.log(logging.WARNING - 5, "no maxmemory: the data set grows until the "
                    "machine's memory runs out; %s; the process itself is %s RSS",
                    shadow, human(base))

    async def start(self) -> None:
        """Listen on every ``bind`` address (``port 0`` picks a free port: tests), then
        start the subsystems in the order ``__init__`` built them."""
        from .client import Client
        loop = self.loop = asyncio.get_running_loop()
        self._stopped = loop.create_future()
        allowed = limits.adjust_open_files_limit(self.config["maxclients"])
        if allowed != self.config["maxclients"]:
            self.config.values["maxclients"] = allowed
        hosts = self.bind_hosts()
        port = self.config["port"]
        for host, optional in hosts:
            try:
                srv = await loop.create_server(lambda: Client(self), host, port,
                                               reuse_address=True, backlog=LISTEN_BACKLOG)
            except OSError as e:
                if not optional:   # "-addr": listen there only if the address exists
                    raise
                log.warning("Could not create server TCP listening socket %s:%d: %s",
                            host, port, e)
                continue
            self.listeners.append(srv)
            if port == 0:
                port = srv.sockets[0].getsockname()[1]
        if not self.listeners:
            raise OSError("Failed listening on port %d (tcp), aborting." % port)
        self.port = port
        self.config.values["port"] = port  # CONFIG GET port shows the real one (port 0)
        self._cron_task = loop.create_task(self._cron())
        for part in self.parts:
            await part.start()
        from .info import rss_bytes
        self.startup_rss = rss_bytes()      # INFO rss_baseline: the process, ready, no data
        self._log_memory_plan()
        log.log(logging.WARNING - 5, "Ready to accept connections tcp on %s port %d",
                " ".join(h for h, _ in hosts), port)

    async def stop(self) -> None:
        """Stop the subsystems, the last built first (after :meth:`request_shutdown`
        closed the listeners and the clients).  Complexity: O(subsystems)."""
        for part in reversed(self.parts):
            await part.stop()

    def freeze_gc(self, collect: bool = True) -> None:
        """Collect (unless told not to) and freeze what the process holds now (gcstats.py
        "Freezing")."""
        took = self.gc_stats.freeze(collect)
        self._modules_frozen = len(sys.modules)
        log.log(logging.INFO, "gc: froze in %.1f ms (%d objects at the last count)", took,
                self.gc_stats.frozen_counted)

    async def serve_forever(self) -> None:
        """Serve until :meth:`request_shutdown`, then :meth:`stop`."""
        await self._stopped
        await self.stop()

    def persistence_gate_changed(self) -> None:
        """Loading or refusing writes (MISCONF) started or ended: every client takes the
        checked path while either holds (ops.slow_all reads :attr:`persistence_gate`)."""
        self.persistence_gate = gate = (self.persistence.loading
                                        or self.persistence.writes_refused())
        for c in self.clients.values():
            if gate:
                c.slow_path = True
            else:
                c.update_slow_path()

    def shutdown(self, save: bool = False, nosave: bool = False, force: bool = False,
                 reason: str = "User requested shutdown...") -> bool:
        """SHUTDOWN and SIGTERM (Redis prepareForShutdown): the final save when save points
        exist or ``save``, unless ``nosave``; a failed save keeps the server running
        unless ``force``.  Returns False when the shutdown was aborted."""
        log.warning(reason)
        if not self.persistence.shutdown_save(save, nosave) and not force:
            return False
        self.request_shutdown("Redis is now ready to exit, bye bye...")
        return True

    def on_signal(self, name: str) -> None:
        """SIGTERM / SIGINT: SHUTDOWN with the shutdown-on-sig* flags (Redis's rules: a
        failed save keeps the server running, unless the flags say force)."""
        flags = self.config["shutdown-on-" + name.lower()].split()
        self.shutdown("save" in flags, "nosave" in flags, "force" in flags,
                      "Received %s scheduling shutdown..." % name)

    def request_shutdown(self, reason: str = "User requested shutdown...") -> None:
        """SIGTERM / SIGINT / SHUTDOWN: stop accepting, close clients, end serve_forever."""
        if self.shutdown_requested:
            return
        self.shutdown_requested = True
        log.warning(reason)
        self.persistence.abandon()    # a background save in progress is abandoned
        for srv in self.listeners:
            srv.close()
        for c in list(self.clients.values()):
            c.kill()
        if self._cron_task is not None:
            self._cron_task.cancel()
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    async def _cron(self) -> None:
        while True:
            hz = self.config["hz"]
            await asyncio.sleep(1.0 / hz)
            try:
                self.cron()
            except Exception:  # a bug in background work must not kill the server
                log.exception("cron failed")

    def cron(self) -> None:
        """One background tick.  Complexity: bounded by the expire cycle's time budget."""
        self.cron_loops += 1
        self.now_mono = time.monotonic()
        ks = self.ks
        ks.refresh_time()
        if ks.now_ms - self.stats.last_sample_ms >= STATS_SAMPLE_PERIOD_MS:
            self.stats.sample_ops(ks.now_ms)
        effort = self.config["active-expire-effort"]
        budget_us = (ACTIVE_EXPIRE_SLOW_TIME_PERC + 2 * (effort - 1)) * 1_000_000 \
            // self.config["hz"] // 100
        self.ops.check_pause()
        paused = self.ops.paused()     # CLIENT PAUSE: no active expiry or eviction (Redis)
        t_ns = time.perf_counter_ns()
        if not paused and getattr(self, "active_expire_enabled", True):   # DEBUG
            active_expire_cycle(ks, budget_us, effort)                  # SET-ACTIVE-EXPIRE 0
        self.ops.add_latency("expire-cycle", time.perf_counter_ns() - t_ns)
        ks.maintain(COMPACT_MOVES_PER_TICK)
        if self.maxmemory and ks.used_memory > self.maxmemory and not paused:
            t_ns = time.perf_counter_ns()
            self.evictor.make_room()
            self.ops.add_latency("eviction-cycle", time.perf_counter_ns() - t_ns)
        timeout = self.config["timeout"]
        if timeout:
            # Redis clientsCronHandleTimeout: idle clients are closed, inside MULTI too;
            # blocked and pub/sub clients are exempt (Client.timeout_exempt(), the hook the
            # pub/sub and blocking code set)
            limit = self.now_mono - timeout
            for c in list(self.clients.values()):
                if c.last_interaction < limit and not c.timeout_exempt():
                    log.log(logging.INFO, "Closing idle client")
                    c.kill()
        for c in list(self.obuf_soft_clients):   # over a soft output limit: time it
            c.check_output_limits()
        mods = len(sys.modules)
        if self.gc_freeze and mods != self._modules_frozen:
            # modules were loaded (a kernel): freeze them too, once the loading is over (no
            # change for a tick: a background import spans several ticks), without a full
            # collection (25-55 ms after numba; an import leaves little garbage, resp_scan)
            if mods == self._modules_seen:
                self.freeze_gc(collect=False)
        self._modules_seen = mods
        self.persistence.cron()       # save rules, BGSAVE SCHEDULE
        if self.ks.lazyfree.busy() and not self._lazyfree_scheduled:
            self._lazyfree_step()
        if self.shadow is not None:
            self.shadow.cron()
        if self.write_clients:
            self.flush_writes()
        self.stats.note_memory(ks.used_memory)


def bind_addresses(bind: str) -> list[tuple[str, bool]]:
    """``bind`` as (host, optional) pairs: ``-::1`` is optional ::1 (skipped when it cannot be
    bound), ``*`` every IPv4 address and ``::*`` every IPv6 one, as in Redis."""
    out = []
    for word in bind.split() or ["127.0.0.1"]:
        optional = word.startswith("-")
        host = word[1:] if optional else word
        out.append(({"*": "0.0.0.0", "::*": "::"}.get(host, host), optional))
    return out


def run(config: Config) -> int:
    """Run a server until it is told to stop; returns the process exit code."""
    _setup_logging(config)
    from .malloc_tuning import mmap_large_blocks
    mmap_large_blocks()               # the keyspace's columns grow without copies
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a declared dependency
        runner = asyncio.run
    server = Server(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, server.on_signal, sig.name)
        await server.start()
        server.gc_freeze = True
        server.freeze_gc()            # modules, the keyspace's lists: never walked again
        await server.serve_forever()
        await asyncio.sleep(0)  # let transports flush and close
        if server.load_error is not None:
            raise SystemExit(1)

    try:
        runner(main())
    except OSError as e:
        log.error("Could not start the server: %s", e)
        return 1
    log.log(logging.WARNING - 5, "ferrumkv is now ready to exit, bye bye...")
    return 0


# Redis's log line: "pid:role date time.ms mark message", the mark telling the level
# ('.' debug, '-' verbose, '*' notice, '#' warning), so tools that read Redis logs read ours.
_LEVEL_MARKS = {logging.DEBUG: ".", logging.INFO: "-", logging.WARNING - 5: "*",
                logging.WARNING: "#", logging.ERROR: "#", logging.CRITICAL: "#"}


class _RedisLogFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.mark = _LEVEL_MARKS.get(record.levelno, "#")
        return super().format(record)


def _setup_logging(config: Config) -> None:
    fmt = "%(process)d:M %(asctime)s.%(msecs)03d %(mark)s %(message)s"
    from .safefile import open_regular
    handler = (logging.StreamHandler(open_regular(config["logfile"], "a", encoding="utf-8"))
               if config["logfile"] else logging.StreamHandler())
    handler.setFormatter(_RedisLogFormatter(fmt, "%d %b %Y %H:%M:%S"))
    log.handlers[:] = [handler]
    log.setLevel(_LOGLEVELS[config["loglevel"]])
    log.propagate = False
    if config["dir"] and config["dir"] != ".":
        os.makedirs(config["dir"], exist_ok=True)
