"""The operator's view of command execution: SLOWLOG, the latency monitor, per-command
latency histograms and MONITOR, fed from one hook in the dispatcher.

What the dispatcher does (client.py), and what it costs:

- the inline path (a read's common commands) reads the clock once after each command
  (``perf_counter_ns``) and compares the time since the previous reading with
  :attr:`Ops.slow_ns`, the smallest duration anything here wants to hear about
  (``slowlog-log-slower-than``, ``latency-monitor-threshold``); only then it calls
  :meth:`Ops.after_command`.  The clock starts after the read is parsed, so a command's
  measured time is its dispatch, execution and reply encoding.
- :meth:`Client.run` (everything else: MULTI/EXEC's commands, subcommands, errors, pub/sub
  and tracking clients, and every command while a MONITOR is connected) times the handler
  alone with two clock readings, and feeds MONITOR.
- latency histograms (``latency-tracking``) are fed per read, like INFO commandstats
  (stats.Stats): a read's measured time is shared among its commands, so
  ``track_read`` is O(1) for a pipeline of one command kind.

Complexity: O(1) per command unless it is slow or a monitor is connected.
"""

from __future__ import annotations

import asyncio

from .latency import HIST_MAX_NS, LatencyMonitor, bucket_of, new_histogram
from .monitor import monitor_line
from .slowlog import SlowLog, redact
from .subsystem import Subsystem

NS_PER_US = 1000
NS_PER_MS = 1_000_000
MS_PER_S = 1000
PAUSE_TIMER_MAX_S = 86400           # longest single timer of a CLIENT PAUSE
NEVER_NS = 1 << 62                  # a duration nothing reaches: the feature is off
LUA_PEER = "lua"                    # MONITOR's peer for a script's commands
LUA_SLOWLOG_PEER = "?:0"            # what Redis's slowlog shows for the Lua client


class Ops(Subsystem):
    """SLOWLOG, latency monitor, histograms and monitors of one server (``server.ops``)."""

    def __init__(self, server):
        super().__init__(server)
        cfg = server.config
        self.slowlog = SlowLog(cfg["slowlog-max-len"])
        self.latency = LatencyMonitor()
        self.hists: dict = {}               # CommandSpec -> bucket counts (latency.py)
        self.monitors: list = []            # clients in MONITOR mode, in arrival order
        self.slowlog_ns = self.latency_ns = NEVER_NS
        self.slow_ns = NEVER_NS             # min of the two: the dispatcher's one test
        self.tracking = True
        # ---- CLIENT PAUSE ----
        self.pause_type = None              # None, "write" or "all"
        self.pause_end_ms = 0               # wall-clock ms the pause ends
        self.held: list = []                # clients with postponed commands, in order
        self._pause_timer = None
        cfg.on_change("slowlog-log-slower-than", self._set_slowlog_threshold)
        cfg.on_change("latency-monitor-threshold", self._set_latency_threshold)
        cfg.on_change("slowlog-max-len", self.slowlog.set_max_len)
        cfg.on_change("latency-tracking", self._set_tracking)

    # ---- configuration ----

    def _set_slowlog_threshold(self, us: int) -> None:
        self.slowlog_ns = NEVER_NS if us < 0 else us * NS_PER_US
        self.slow_ns = min(self.slowlog_ns, self.latency_ns)

    def _set_latency_threshold(self, ms: int) -> None:
        self.latency_ns = ms * NS_PER_MS if ms > 0 else NEVER_NS
        self.slow_ns = min(self.slowlog_ns, self.latency_ns)

    def _set_tracking(self, on: bool) -> None:
        self.tracking = on

    def percentiles(self) -> list[float]:
        return [float(w) for w in self.server.config["latency-tracking-info-percentiles"]
                .split()]

    # ---- feeding ----

    def after_command(self, c, spec, argv: list, ns: int, peer: str | None = None) -> None:
        """A command took ``ns``: the slowlog and the latency monitor decide.  O(32*128)."""
        if ns >= self.slowlog_ns and "skip_slowlog" not in spec.flags:
            self.slowlog.push(redact(spec, argv), self.server.ks.now_ms // 1000,
                              ns // NS_PER_US, peer or c.addr, c.name)
        if ns >= self.latency_ns and "skip_slowlog" not in spec.flags:
            self.add_latency("fast-command" if "fast" in spec.flags else "command", ns)

    def add_latency(self, event: str, ns: int) -> None:
        """A latency sample for ``event`` if it reached latency-monitor-threshold."""
        if ns >= self.latency_ns:
            self.latency.add(event, ns // NS_PER_MS, self.server.ks.clock.now_ms() // 1000)

    def track_read(self, pending: list, elapsed_ns: int) -> None:
        """Record the calls of one read (``Stats.pending``) in the histograms, each with
        its share of the read's time.  O(1) for one command kind, else O(calls)."""
        n = len(pending)
        hists = self.hists
        first = pending[0]
        if n == 1 or pending.count(first) == n:
            h = hists.get(first)
            if h is None:
                h = hists[first] = new_histogram()
            d = elapsed_ns // n     # bucket_of() inline: one call fewer per read
            h[(d if d < HIST_MAX_NS else HIST_MAX_NS).bit_length()] += n
            return
        b = bucket_of(elapsed_ns // n)
        for spec in pending:
            h = hists.get(spec)
            if h is None:
                h = hists[spec] = new_histogram()
            h[b] += 1

    def feed_monitors(self, c, spec, argv: list, peer: str | None = None) -> None:
        """Send the call to every monitor (not admin commands, not to the caller)."""
        if "admin" in spec.flags:
            return
        line = monitor_line(self.server.clock.now_us(), c.db.id,
                            peer or _peer(c), redact(spec, argv))
        for m in self.monitors:
            if m is not c and not m.closing:
                m.push(line)

    def script_call(self, fake, spec, argv: list, ns: int) -> None:
        """A command a script ran (scripting.py's redis.call)."""
        if ns >= self.slow_ns:
            self.after_command(fake, spec, argv, ns, LUA_SLOWLOG_PEER)
        if self.monitors:
            self.feed_monitors(fake, spec, argv, LUA_PEER)

    # ---- MONITOR ----

    @property
    def slow_all(self) -> bool:
        """Every command must take the dispatcher's checked path (Client.call)."""
        return (bool(self.monitors) or self.pause_type is not None
                or self.server.persistence_gate)   # -LOADING / -MISCONF (persistence/)

    def add_monitor(self, c) -> None:
        self.monitors.append(c)
        for x in self.server.clients.values():  # the dispatcher's inline path skips no feed
            x.slow_path = True

    def drop_monitor(self, c) -> None:
        if c in self.monitors:
            self.monitors.remove(c)
            if not self.monitors:
                for x in self.server.clients.values():
                    x.update_slow_path()

    # ---- CLIENT PAUSE (Redis pauseClients / processCommand's postponing) ----

    def pause(self, timeout_ms: int, kind: str) -> None:
        """Start or extend a pause: the later end and the stricter kind win, as Redis
        merges two CLIENT PAUSEs.  Complexity: O(clients)."""
        end = self.server.clock.now_ms() + timeout_ms
        self.server.ks.expire_frozen = True       # reads leave expired keys (keyspace.py)
        if self.pause_type is None:
            self.pause_type, self.pause_end_ms = kind, end
        else:
            self.pause_end_ms = max(self.pause_end_ms, end)
            if kind == "all":
                self.pause_type = "all"
        for x in self.server.clients.values():
            x.slow_path = True
        self._arm_timer()

    def _arm_timer(self) -> None:
        if self._pause_timer is not None:
            self._pause_timer.cancel()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._pause_timer = None        # no loop (in-process tests): the cron checks
            return
        delay_s = min(max(0, self.pause_end_ms - self.server.clock.now_ms()) / MS_PER_S,
                      PAUSE_TIMER_MAX_S)      # a longer pause re-arms when this fires
        self._pause_timer = loop.call_later(delay_s, self._on_timer)

    def _on_timer(self) -> None:
        self._pause_timer = None
        self.check_pause()

    def check_pause(self) -> None:
        """End the pause if its time has come (the timer and the cron call this)."""
        if self.pause_type is None:
            return
        if self.server.clock.now_ms() >= self.pause_end_ms:
            self.unpause()
        elif self._pause_timer is None:
            self._arm_timer()

    def unpause(self) -> None:
        """CLIENT UNPAUSE / the end of the timeout: the postponed clients run their
        commands, in the order they were postponed.  Complexity: O(clients + commands)."""
        if self._pause_timer is not None:
            self._pause_timer.cancel()
            self._pause_timer = None
        self.pause_type = None
        self.server.ks.expire_frozen = False
        for x in self.server.clients.values():
            x.update_slow_path()
        held, self.held = self.held, []
        for c in held:
            c.resume_held()

    def paused(self) -> bool:
        """A pause is on: the cron runs no active expiry and no eviction (Redis keeps the
        data set still during a pause)."""
        return self.pause_type is not None

    def holds(self, c, spec, argv: list) -> bool:
        """Is this call postponed?  ALL: every command; WRITE: write and may_replicate
        commands (EVAL, PUBLISH, PFCOUNT ...) and an EXEC whose queue has one (Redis 7.0
        processCommand).  A script command's flags are its script's, as Redis's
        getCommandFlags reads them: EVAL of a ``#!lua flags=no-writes`` body, EVALSHA of
        such a cached script and FCALL of a no-writes function run during a WRITE pause
        (the handler's ``may_write(c, argv)``, commands/scripting.py and functions.py).
        Monitors are never paused (Redis: replicas)."""
        if c in self.monitors:
            return False
        if self.pause_type == "all":
            return True
        if spec.name == "exec" and c.multi:
            return any(_may_replicate(c, s, a) for s, a in c.multi)
        return _may_replicate(c, spec, argv)


def _may_replicate(c, spec, argv: list) -> bool:
    if not (spec.write or "may_replicate" in spec.flags):
        return False
    may_write = getattr(spec.handler, "may_write", None)
    return may_write is None or may_write(c, argv)


def _peer(c) -> str:
    """MONITOR's peer: ``ip:port``, or ``unix:<path>`` for a Unix socket client."""
    addr = c.addr
    if addr.startswith("/"):
        return "unix:" + addr.rsplit(":", 1)[0]
    return addr

