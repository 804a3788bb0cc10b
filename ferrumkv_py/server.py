"""The server: listener, client registry, cron, statistics, clean shutdown.

The cron runs ``hz`` times a second (Redis serverCron/databasesCron): it refreshes the cached
clock, runs the active expire cycle, lets eviction catch up after ``CONFIG SET maxmemory``,
closes idle clients (``timeout``) and feeds the litehit shadow.  Nothing here parses RESP or
touches key data directly: that is ``connection.py`` and ``keyspace.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time

from . import commands  # noqa: F401  (registers every command)
from .clock import SystemClock
from .config import Config
from .expire import active_expire_cycle
from .keyspace import Keyspace

log = logging.getLogger("ferrumkv")

ACTIVE_EXPIRE_SLOW_TIME_PERC = 25   # % of CPU the slow expire cycle may use (effort 1)
LISTEN_BACKLOG = 511                # pending connections, Redis's tcp-backlog default
STATS_METRIC_SAMPLES = 16           # ops/s samples averaged for instantaneous_ops_per_sec
STATS_SAMPLE_PERIOD_MS = 100        # one sample per 100 ms of cron, as Redis

_LOGLEVELS = {"debug": logging.DEBUG, "verbose": logging.INFO, "notice": logging.WARNING - 5,
              "warning": logging.WARNING}
logging.addLevelName(logging.WARNING - 5, "NOTICE")


class Stats:
    """Counters INFO reports; per-command stats keyed by CommandSpec.

    Per-command calls and time are kept in batches, not per call: the dispatcher appends
    each executed command's spec to ``pending`` (one list append) and, once the read that
    carried them is answered, :meth:`flush` adds the calls and splits the read's measured
    time among them (``usec`` thus covers parsing, dispatch, execution and encoding, not just
    the handler as in Redis).  Reading ``cmd`` or ``total_commands`` flushes first, so INFO
    inside a pipeline still counts the commands before it.  Timing each call with two
    ``perf_counter_ns`` reads and a method call cost ~0.26 us per command, 11% of GET -P 16
    (bench/server_bench.py ``--parts dispatch``); the append costs ~0.02 us.
    Complexity: O(1) amortised per command.
    """

    def __init__(self):
        self.pending: list = []      # specs run since the last flush; cleared, never replaced
        self.reset()

    def reset(self) -> None:
        self.pending.clear()
        self._cmd: dict = {}         # spec -> [calls, usec_ns, rejected, failed]
        self.errors: dict = {}       # error code -> count
        self._total_commands = 0
        self.total_connections = 0
        self.rejected_connections = 0
        self.protocol_errors = 0
        self.total_error_replies = 0
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        self.ops_samples = [0] * STATS_METRIC_SAMPLES  # ops/s seen at the last cron ticks
        self.ops_sample_idx = 0
        self.last_sample_ms = 0
        self.last_sample_cmds = 0

    @property
    def cmd(self) -> dict:
        """spec -> [calls, usec_ns, rejected, failed], pending calls included."""
        if self.pending:
            self.flush(0)
        return self._cmd

    @property
    def total_commands(self) -> int:
        if self.pending:
            self.flush(0)
        return self._total_commands

    def flush(self, elapsed_ns: int) -> None:
        """Count the pending calls and share ``elapsed_ns`` among them.

        Complexity: O(1) for a batch of one command kind (a pipeline), else O(batch).
        """
        pending = self.pending
        n = len(pending)
        if not n:
            return
        self._total_commands += n
        first = pending[0]
        if n == 1 or pending.count(first) == n:
            st = self._cmd.get(first)
            if st is None:
                st = self._cmd[first] = [0, 0, 0, 0]
            st[0] += n
            st[1] += elapsed_ns
        else:
            cmd = self._cmd
            share = elapsed_ns // n
            for spec in pending:
                st = cmd.get(spec)
                if st is None:
                    st = cmd[spec] = [0, 0, 0, 0]
                st[0] += 1
                st[1] += share
        pending.clear()

    def sample_ops(self, now_ms: int) -> None:
        """Record the command rate since the previous sample (Redis trackInstantaneousMetric).

        Complexity: O(1).
        """
        elapsed_ms = now_ms - self.last_sample_ms
        if self.last_sample_ms and elapsed_ms > 0:
            ops = (self.total_commands - self.last_sample_cmds) * 1000 // elapsed_ms
            self.ops_samples[self.ops_sample_idx] = ops
            self.ops_sample_idx = (self.ops_sample_idx + 1) % STATS_METRIC_SAMPLES
        self.last_sample_ms = now_ms
        self.last_sample_cmds = self.total_commands

    def instantaneous_ops(self) -> int:
        """The mean of the recent samples, as INFO instantaneous_ops_per_sec."""
        return sum(self.ops_samples) // STATS_METRIC_SAMPLES

    def count_call(self, spec, ns: int, failed: bool = False) -> None:
        """Count one call now (the failure path; successful calls go through ``pending``)."""
        st = self._cmd.get(spec)
        if st is None:
            st = self._cmd[spec] = [0, 0, 0, 0]
        st[0] += 1
        st[1] += ns
        if failed:
            st[3] += 1
        self._total_commands += 1

    def count_rejected(self, spec) -> None:
        st = self._cmd.get(spec)
        if st is None:
            st = self._cmd[spec] = [0, 0, 0, 0]
        st[2] += 1

    def count_error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1
        self.total_error_replies += 1


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
        self.room_limit = 0           # used_memory that makes a write call make_room (Evictor)
        self.shadow = None            # litehit shadow, when litehit-shadow is on
        self.cron_loops = 0
        self._stopped = None
        self._cron_task = None
        self.shutdown_requested = False
        from .eviction import Evictor
        self.evictor = Evictor(self)
        from .shadow import install as install_shadow
        install_shadow(self)
        from .scripting import install as install_scripting
        install_scripting(self)   # busy_script (read by the dispatcher), lua-time-limit alias
        self.config.on_change("requirepass", self._set_requirepass)
        self.config.on_change("maxmemory", self._set_maxmemory)
        self.config.on_change("loglevel", lambda v: log.setLevel(_LOGLEVELS[v]))
        self.config.on_change("proto-max-bulk-len", self._set_max_bulk_len, call_now=False)
        self.config.on_change("port", self._set_port, call_now=False)

    # ---- config listeners ----

    def _set_requirepass(self, value: str) -> None:
        self.requirepass = value
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
        from .connection import Client
        hosts = self.config["bind"].split() or ["127.0.0.1"]
        socks = []
        try:
            for host in hosts:
                socks.append(socket.create_server((host, value), backlog=LISTEN_BACKLOG))
                value = value or socks[0].getsockname()[1]
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
                " ".join(hosts), value)

    def _set_max_bulk_len(self, value: int) -> None:
        for c in self.clients.values():
            c.reader.max_bulk_len = value

    def _set_maxmemory(self, value: int) -> None:
        self.maxmemory = value
        self.evictor.refresh_room_limit()
        if value and self.ks.used_memory > value:
            log.warning("WARNING: the new maxmemory value set via CONFIG SET (%d) is smaller "
                        "than the current memory usage (%d)", value, self.ks.used_memory)
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

    def remove_client(self, client) -> None:
        self.clients.pop(client.id, None)

    # ---- lifecycle ----

    async def start(self) -> None:
        """Listen on every ``bind`` address; ``port 0`` picks a free port (tests)."""
        from .connection import Client
        loop = asyncio.get_running_loop()
        self._stopped = loop.create_future()
        hosts = self.config["bind"].split() or ["127.0.0.1"]
        port = self.config["port"]
        for host in hosts:
            srv = await loop.create_server(lambda: Client(self), host, port,
                                           reuse_address=True, backlog=LISTEN_BACKLOG)
            self.listeners.append(srv)
            if port == 0:
                port = srv.sockets[0].getsockname()[1]
        self.port = port
        self.config.values["port"] = port  # CONFIG GET port shows the real one (port 0)
        self._cron_task = loop.create_task(self._cron())
        log.log(logging.WARNING - 5, "Ready to accept connections tcp on %s port %d",
                " ".join(hosts), port)

    async def serve_forever(self) -> None:
        await self._stopped

    def request_shutdown(self, reason: str = "User requested shutdown...") -> None:
        """SIGTERM / SIGINT / SHUTDOWN: stop accepting, close clients, end serve_forever."""
        if self.shutdown_requested:
            return
        self.shutdown_requested = True
        log.warning(reason)
        for srv in self.listeners:
            srv.close()
        for c in list(self.clients.values()):
            c.kill()
        if self._cron_task is not None:
            self._cron_task.cancel()
        if self.shadow is not None:
            self.shadow.close()
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
        active_expire_cycle(ks, budget_us, effort)
        if self.maxmemory and ks.used_memory > self.maxmemory:
            self.evictor.make_room()
        timeout = self.config["timeout"]
        if timeout:
            limit = self.now_mono - timeout
            for c in list(self.clients.values()):
                if c.last_interaction < limit and c.multi is None:
                    c.kill()
        if self.shadow is not None:
            self.shadow.cron()
        ks.peak_memory = max(getattr(ks, "peak_memory", 0), ks.used_memory)


def run(config: Config) -> int:
    """Run a server until it is told to stop; returns the process exit code."""
    _setup_logging(config)
    try:
        import uvloop
        runner = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a declared dependency
        runner = asyncio.run
    server = Server(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, server.request_shutdown,
                                    "Received %s scheduling shutdown..." % sig.name)
        await server.start()
        await server.serve_forever()
        await asyncio.sleep(0)  # let transports flush and close

    try:
        runner(main())
    except OSError as e:
        log.error("Could not start the server: %s", e)
        return 1
    log.log(logging.WARNING - 5, "ferrumkv is now ready to exit, bye bye...")
    return 0


def _setup_logging(config: Config) -> None:
    fmt = "%(process)d:M %(asctime)s.%(msecs)03d %(levelname)s %(message)s"
    handler = (logging.FileHandler(config["logfile"]) if config["logfile"]
               else logging.StreamHandler())
    handler.setFormatter(logging.Formatter(fmt, "%d %b %Y %H:%M:%S"))
    log.handlers[:] = [handler]
    log.setLevel(_LOGLEVELS[config["loglevel"]])
    log.propagate = False
    if config["dir"] and config["dir"] != ".":
        os.makedirs(config["dir"], exist_ok=True)
