"""SAVE, BGSAVE, the ``save`` rules, SHUTDOWN's save, loading at start: the Persistence object.

One :class:`Persistence` per server (``Server.persistence``), started and stopped with it.
The commands (``commands/persistence.py``) call it; the cron calls :meth:`cron`.

A save is a :class:`~.snapshot.Snapshot` whose records go to a
:class:`~.filesink.FileSink`:

* **SAVE** (and SHUTDOWN, DEBUG RELOAD) walks the whole keyspace at once and writes in the
  calling thread: no client runs meanwhile.
* **BGSAVE** walks by slices between event-loop rounds (a ``call_soon`` chain, each slice
  bounded by SLICE_BUDGET_NS) while a writer thread computes the CRC-64, writes
  ``temp-<pid>.rdb``, fsyncs it, renames it to ``dbfilename`` and fsyncs the directory.  A
  slice waits (``call_later``) while the thread has more than MAX_QUEUED_BYTES queued.

Either way the file appears under its name only complete and synced (rename), so a crash
leaves the previous file intact.  ``save`` rules (Redis serverCron): a rule ``seconds
changes`` fires when at least ``changes`` writes happened, more than ``seconds`` passed since
the last successful save, and the last background save succeeded or BGSAVE_RETRY_DELAY_S
passed since it was tried.

Complexity: SAVE O(keys + bytes); a BGSAVE slice O(budget); the cron check O(rules).
"""

from __future__ import annotations

import logging
import os
import time
import types

from ..lazy import LazyModule
from ..subsystem import Subsystem
from ..values import RList

# Imported at the first save or load, not with the server: they load numpy / numba (the
# LZF, CRC and listpack kernels), ~90 MB a server that never saves need not pay (lazy.py).
lzf = LazyModule("ferrumkv_py.lzf")
rdbfile = LazyModule("ferrumkv_py.persistence.rdbfile")
filesink = LazyModule("ferrumkv_py.persistence.filesink")
snapshot = LazyModule("ferrumkv_py.persistence.snapshot")

log = logging.getLogger("ferrumkv")

REDIS_VER = b"7.0.15"             # what AUX redis-ver claims (the version we answer as)
SLICE_BUDGET_NS = 1_000_000       # one walk slice between two event-loop rounds
BUSY_SHARE = 0.25                 # while clients run commands, the walk's share of the loop
NS_PER_S = 1_000_000_000
MAX_QUEUED_BYTES = 64 << 20       # the walk pauses while the writer holds this much
WRITER_WAIT_S = 0.001             # ... and looks again after this long
BGSAVE_RETRY_DELAY_S = 5          # Redis CONFIG_BGSAVE_RETRY_DELAY
LOAD_KEYS_PER_STEP = 10_000       # keys loaded between two event-loop rounds at start
AUX_AHE_THETA = b"ferrumkv-ahe-theta"   # AUX field: the AHE controller's logit(alpha)


def parse_save_rules(value: str) -> list:
    """``save`` as [(seconds, changes)]."""
    words = value.split()
    return [(int(words[i]), int(words[i + 1])) for i in range(0, len(words) - 1, 2)]


class Persistence(Subsystem):
    """The server's persistence state and operations (see the module docstring)."""

    def __init__(self, server):
        super().__init__(server)
        self.loading = False
        self.load_started = 0
        self.lastsave = int(time.time())      # Redis: the start counts as a save
        self.last_ok = True                   # rdb_last_bgsave_status
        self.lastbgsave_try = 0
        self.last_bgsave_time_sec = -1
        self.rdb_saves = 0
        self.last_cow_size = 0
        self.last_load_loaded = self.last_load_expired = 0
        self.dirty_base = 0                   # write calls at the last successful save
        self.dirty_at_start = 0               # ... when the running BGSAVE began
        self.bg = None                        # (Snapshot, FileSink) of the running BGSAVE
        self._served_at_slice = 0             # commands served when the last slice ran
        self.bg_started = 0.0
        self.scheduled = False
        self.rules: list = []
        self._encoding_view = types.SimpleNamespace(server=server)
        server.config.on_change("save", self._set_rules)
        server.config.on_change("stop-writes-on-bgsave-error", self._gate_config,
                                call_now=False)

    def _gate_config(self, value) -> None:
        self.server.persistence_gate_changed()

    def _set_rules(self, value: str) -> None:
        self.rules = parse_save_rules(value)
        if getattr(self.server, "persistence", None) is self:    # not during __init__
            self.server.persistence_gate_changed()

    # ---- lifecycle ----

    async def start(self) -> None:
        """The server is listening: say where data goes, load the file if there is one."""
        self.begin()

    async def stop(self) -> None:
        self.abandon()

    def begin(self) -> None:
        """Say where data goes; start loading the file when there is one."""
        cfg = self.server.config
        path = self.path()
        if self.rules:
            log.log(logging.WARNING - 5, "Data is saved to %s (RDB, save rules: %s)", path,
                    cfg["save"])
        else:
            log.log(logging.WARNING - 5, "No save rules: data is kept in memory only "
                    "(SAVE / BGSAVE write %s)", path)
        if os.path.exists(path):
            self.begin_load(path)

    def abandon(self) -> None:
        """Abandon a background save (its temp file is removed).  O(1)."""
        if self.bg is not None:
            snap, sink = self.bg[0], self.bg[1]
            snap.stop()
            sink.abort()
            self.bg = None

    def path(self) -> str:
        cfg = self.server.config
        return os.path.join(cfg["dir"], cfg["dbfilename"])

    # ---- counters ----

    def _write_calls(self) -> int:
        return sum(v[0] for spec, v in self.server.stats.cmd.items() if spec.write)

    def dirty(self) -> int:
        """rdb_changes_since_last_save: write commands run since the last save."""
        return self._write_calls() - self.dirty_base

    def writes_refused(self) -> bool:
        """stop-writes-on-bgsave-error: the last background save failed while save rules
        exist (Redis writeCommandsDeniedByDiskError)."""
        return (not self.last_ok and bool(self.rules)
                and self.server.config["stop-writes-on-bgsave-error"])

    # ---- writing ----

    def _record_fn(self):
        server, ks = self.server, self.server.ks
        pol = server.config["maxmemory-policy"]
        lru = "lru" in pol or "ahe" in pol
        lfu = "lfu" in pol or "ahe" in pol
        view = self._encoding_view
        from ..commands.introspection import value_encoding
        key_record = rdbfile.key_record

        def record(db, s):
            v = db.vals[s]
            cls = v.__class__
            enc = "" if cls is bytes or cls is RList else value_encoding(view, v).decode()
            idle = max(0, (ks.now_ms - db.lru[s]) // 1000) if lru else -1
            return key_record(db.keys[s], v, enc, db.exp[s], idle,
                              db.lfu[s] if lfu else -1)
        return record

    def _head(self) -> bytes:
        from .. import __version__
        aux = [(b"redis-ver", REDIS_VER), (b"redis-bits", b"64"),
               (b"ctime", b"%d" % int(time.time())),
               (b"used-mem", b"%d" % self.server.ks.used_memory),
               (b"aof-base", b"0"), (b"ferrumkv-ver", __version__.encode())]
        theta = self._ahe_theta()
        if theta is not None:        # our own state: redis-server skips unknown AUX fields
            aux.append((AUX_AHE_THETA, repr(theta).encode()))
        parts = [rdbfile.header(aux)]
        eng = self.server.__dict__.get("scripting")
        libs = getattr(eng, "functions", None)
        if libs is not None:
            for lib in libs.libs.values():
                parts.append(rdbfile.function_record(lib.code))
        return b"".join(parts)

    def _ahe_controller(self):
        """The AHE controller whose logit(alpha) a file carries, or None."""
        ctl = getattr(self.server.evictor, "controller", None)
        return ctl if isinstance(getattr(ctl, "theta", None), float) else None

    def _ahe_theta(self):
        ctl = self._ahe_controller()
        return None if ctl is None else ctl.theta

    def _new_save(self, threaded: bool):
        cfg = self.server.config
        sink = filesink.FileSink(cfg["dir"], cfg["dbfilename"], cfg["rdbchecksum"], threaded)
        sink.emit(self._head())
        snap = snapshot.Snapshot(self.server.ks, self._record_fn(), sink.emit)
        return snap, sink

    def save(self) -> bool:
        """SAVE: the whole file now, in this thread.  True on success.

        Complexity: O(keys + bytes)."""
        self.rdb_saves += 1
        started = self._write_calls()
        try:
            snap, sink = self._new_save(False)
        except OSError as e:
            log.warning("Failed opening the temp RDB file for saving: %s", e)
            return False
        try:
            snap.run_all()
        finally:
            snap.stop()
        sink.close()
        if sink.error is not None:
            log.warning("Write error saving DB on disk: %s", sink.error)
            return False
        log.log(logging.WARNING - 5, "DB saved on disk")
        self.dirty_base = started
        self.lastsave = int(time.time())
        self.last_ok = True
        return True

    def bgsave(self) -> bool:
        """BGSAVE: the cut now, the walk by slices.  False when the file cannot be opened.
        Complexity: O(databases) now; the walk later."""
        self.rdb_saves += 1
        self.lastbgsave_try = int(time.time())
        try:
            snap, sink = self._new_save(True)
        except OSError as e:
            log.warning("Can't save in background: %s", e)
            self.last_ok = False
            self.server.persistence_gate_changed()
            return False
        self.bg = (snap, sink)
        self.bg_started = time.monotonic()
        self.dirty_at_start = self._write_calls()
        loop = self.server.loop
        sink.on_done = lambda: loop.call_soon_threadsafe(self._bg_done, sink)
        log.log(logging.WARNING - 5, "Background saving started (forkless snapshot)")
        loop.call_soon(self._bg_step)
        return True

    def _bg_step(self) -> None:
        if self.bg is None:
            return
        snap, sink = self.bg
        if sink.queued_bytes > MAX_QUEUED_BYTES:
            self.server.loop.call_later(WRITER_WAIT_S, self._bg_step)
            return
        t0 = time.perf_counter_ns()
        done = snap.step(SLICE_BUDGET_NS)
        extra = snap.early_bytes + snap.adopted_bytes + sink.queued_bytes + sink.buf_bytes
        if extra > snap.peak_extra_bytes:
            snap.peak_extra_bytes = extra
        if done:
            sink.close()
            return
        sink.flush()
        # Clients ran commands since the last slice: leave them (1 - BUSY_SHARE) of the
        # loop (the next slice waits); an idle server walks at full speed.
        served = self.server.stats.total_commands
        if served != self._served_at_slice:
            self._served_at_slice = served
            took_s = (time.perf_counter_ns() - t0) / NS_PER_S
            self.server.loop.call_later(took_s * (1 - BUSY_SHARE) / BUSY_SHARE,
                                        self._bg_step)
        else:
            self.server.loop.call_soon(self._bg_step)

    def _bg_done(self, sink) -> None:
        if self.bg is None or self.bg[1] is not sink:
            return
        snap = self.bg[0]
        self.bg = None
        self.last_bgsave_time_sec = int(time.monotonic() - self.bg_started)
        self.last_cow_size = snap.peak_extra_bytes
        if sink.error is None:
            log.log(logging.WARNING - 5, "Background saving terminated with success")
            self.dirty_base = self.dirty_at_start
            self.lastsave = int(time.time())
            self.last_ok = True
        else:
            log.warning("Background saving error: %s", sink.error)
            self.last_ok = False
        self.server.persistence_gate_changed()

    def in_progress(self) -> bool:
        return self.bg is not None

    # ---- cron: save rules, BGSAVE SCHEDULE ----

    def cron(self) -> None:
        """Start a BGSAVE when a save rule says so (or one was scheduled).

        Complexity: O(rules)."""
        if self.bg is not None or self.loading:
            return
        if self.scheduled:
            self.scheduled = False
            self.bgsave()
            return
        if not self.rules:
            return
        now = int(time.time())
        dirty = self.dirty()
        for seconds, changes in self.rules:
            if dirty >= changes and now - self.lastsave > seconds and (
                    self.last_ok or now - self.lastbgsave_try > BGSAVE_RETRY_DELAY_S):
                log.log(logging.WARNING - 5, "%d changes in %d seconds. Saving...", changes,
                        seconds)
                self.bgsave()
                self.server.persistence_gate_changed()
                break

    # ---- shutdown ----

    def shutdown_save(self, save: bool, nosave: bool) -> bool:
        """Redis prepareForShutdown's save: with save points (or SAVE) and without NOSAVE,
        a running BGSAVE is abandoned and a synchronous save made.  False if it failed."""
        if self.bg is not None:
            log.warning("There is a child saving an .rdb. Killing it!")
            self.abandon()
        if nosave or not (save or self.rules):
            return True
        if self.loading:              # Redis: never save a half-loaded data set
            log.warning("Shutting down while loading: the RDB file is left as it is.")
            return True
        log.log(logging.WARNING - 5, "Saving the final RDB snapshot before exiting.")
        if not self.save():
            log.warning("Error trying to save the DB, can't exit.")
            return False
        return True

    # ---- loading ----

    def load_now(self, path: str) -> None:
        """Load ``path`` into the (empty) keyspace at once (DEBUG RELOAD).  Raises
        RdbFileError and then leaves the keyspace untouched."""
        loader, crc_ok = self._open(path)
        while not loader.step(1 << 62):
            pass
        self._install(loader, crc_ok)

    def _open(self, path: str):
        from ..keyspace import Keyspace
        with open(path, "rb") as f:
            data = f.read()
        ks = self.server.ks
        scratch = Keyspace(len(ks.dbs), clock=ks.clock)
        loader = rdbfile.Loader(data, scratch, ks.clock.now_ms())
        return loader, None

    def _install(self, loader, crc_future) -> None:
        stored = loader.stored_crc()
        if stored and self.server.config["rdbchecksum"]:
            # the thread summed all but the last CRC_SIZE bytes
            whole = loader.crc_at == len(loader.data) - rdbfile.CRC_SIZE
            crc = crc_future.result() if crc_future is not None and whole else \
                lzf.crc64(memoryview(loader.data)[:loader.crc_at])
            if crc != stored:
                raise rdbfile.RdbFileError("Wrong RDB checksum expected: (%x) got (%x). "
                                           "Aborting now." % (stored, crc))
        eng_codes = loader.functions
        rdbfile.install(loader.ks, self.server.ks)
        theta, ctl = loader.aux.get(AUX_AHE_THETA), self._ahe_controller()
        if theta is not None and ctl is not None:
            try:
                ctl.theta = float(theta)     # AHE's alpha survives the restart
            except ValueError:
                log.warning("Ignoring a malformed %s AUX field", AUX_AHE_THETA.decode())
        self.last_load_loaded = loader.loaded
        self.last_load_expired = loader.expired
        if eng_codes:
            self._load_functions(eng_codes)

    def _load_functions(self, codes: list) -> None:
        from ..commands.functions import libraries
        from ..scripting import engine
        view = self._encoding_view
        for code in codes:
            libraries(view).load(engine(self.server), code, True)

    def begin_load(self, path: str) -> None:
        """Load at start: by steps between event-loop rounds, clients answered -LOADING
        meanwhile; the CRC is computed in a thread alongside.  A bad file stops the server
        with the reason (Redis exits too)."""
        try:
            loader, _ = self._open(path)
        except (OSError, rdbfile.RdbFileError) as e:
            self._load_failed(e)
            return
        self.loading = True
        self.load_started = time.time()
        self.server.persistence_gate_changed()
        loop = self.server.loop
        crc_future = None
        if loader.version >= 5 and self.server.config["rdbchecksum"]:
            view = memoryview(loader.data)[:-rdbfile.CRC_SIZE]
            crc_future = loop.run_in_executor(None, lzf.crc64, view)
        log.log(logging.WARNING - 5, "Loading RDB file %s", path)

        def step() -> None:
            try:
                if not loader.step(LOAD_KEYS_PER_STEP):
                    loop.call_soon(step)
                    return
                if crc_future is not None and not crc_future.done():
                    crc_future.add_done_callback(lambda f: loop.call_soon(finish))
                    return
                finish()
            except rdbfile.RdbFileError as e:
                self._load_failed(e)

        def finish() -> None:
            try:
                self._install(loader, crc_future)
            except rdbfile.RdbFileError as e:
                self._load_failed(e)
                return
            self.loading = False
            self.server.persistence_gate_changed()
            log.log(logging.WARNING - 5, "DB loaded from disk: %.3f seconds (%d keys, %d "
                    "expired keys skipped)", time.time() - self.load_started,
                    loader.loaded, loader.expired)
        loop.call_soon(step)

    def _load_failed(self, e) -> None:
        log.warning("Fatal error loading the DB: %s. Exiting.", e)
        self.loading = False
        self.server.load_error = str(e)
        self.server.request_shutdown("Fatal error loading the DB, exiting")

    # ---- INFO persistence ----

    def info_fields(self) -> list:
        bg = self.bg
        now = time.time()
        cur_keys = bg[0].keys_processed if bg else 0
        cur_total = bg[0].keys_total if bg else 0
        cur_cow = (bg[0].early_bytes + bg[0].adopted_bytes + bg[1].queued_bytes) if bg else 0
        return [
            ("loading", int(self.loading)),
            ("async_loading", 0),
            ("current_cow_peak", bg[0].peak_extra_bytes if bg else 0),
            ("current_cow_size", cur_cow),
            ("current_cow_size_age", 0),
            ("current_fork_perc", "%.2f" % (100.0 * cur_keys / cur_total if cur_total else 0)),
            ("current_save_keys_processed", cur_keys),
            ("current_save_keys_total", cur_total),
            ("rdb_changes_since_last_save", self.dirty()),
            ("rdb_bgsave_in_progress", int(bg is not None)),
            ("rdb_last_save_time", self.lastsave),
            ("rdb_last_bgsave_status", "ok" if self.last_ok else "err"),
            ("rdb_last_bgsave_time_sec", self.last_bgsave_time_sec),
            ("rdb_current_bgsave_time_sec",
             int(time.monotonic() - self.bg_started) if bg else -1),
            ("rdb_saves", self.rdb_saves),
            ("rdb_last_cow_size", self.last_cow_size),
            ("rdb_last_load_keys_expired", self.last_load_expired),
            ("rdb_last_load_keys_loaded", self.last_load_loaded),
            ("aof_enabled", 0),
            ("aof_rewrite_in_progress", 0),
            ("aof_rewrite_scheduled", 0),
            ("aof_last_rewrite_time_sec", -1),
            ("aof_current_rewrite_time_sec", -1),
            ("aof_last_bgrewrite_status", "ok"),
            ("aof_rewrites", 0),
            ("aof_rewrites_consecutive_failures", 0),
            ("aof_last_write_status", "ok"),
            ("aof_last_cow_size", 0),
            ("module_fork_in_progress", 0),
            ("module_fork_last_cow_size", 0),
        ] + ([("loading_start_time", int(self.load_started)),
              ("loading_total_bytes", 0), ("loading_rdb_used_mem", 0),
              ("loading_loaded_bytes", 0), ("loading_loaded_perc", "0.00"),
              ("loading_eta_seconds", 1)] if self.loading else [])
