"""INFO's counters: connections, errors, network bytes, ops/s and per-command stats.

One :class:`Stats` per server (``server.stats``).  The dispatcher (``client.py``) feeds it per
read and the cron (``server.py``) samples the command rate; ``info.py`` renders it, and the
admin and operator commands reset or flush it.  Nothing here knows about sockets, clients or
the keyspace.
"""

from __future__ import annotations

STATS_METRIC_SAMPLES = 16           # ops/s samples averaged for instantaneous_ops_per_sec
STATS_SAMPLE_PERIOD_MS = 100        # one sample per 100 ms of cron, as Redis


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
        self.qbuf_limit_disconnections = 0   # client-query-buffer-limit closes (7.2 INFO)
        self.obuf_limit_disconnections = 0   # client-output-buffer-limit closes (7.2 INFO)
        self.total_error_replies = 0
        self.net_input_bytes = 0
        self.net_output_bytes = 0
        self.ops_samples = [0] * STATS_METRIC_SAMPLES  # ops/s seen at the last cron ticks
        self.ops_sample_idx = 0
        self.last_sample_ms = 0
        self.last_sample_cmds = 0
        self.peak_memory = 0         # used_memory_peak: the most used_memory seen (note_memory)

    def note_memory(self, used: int) -> int:
        """Raise the peak to ``used`` if higher (the cron and INFO call this, as Redis's
        serverCron and INFO do); returns the peak.  A stat, not keyspace state."""
        if used > self.peak_memory:
            self.peak_memory = used
        return self.peak_memory

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

    def count_failed(self, spec) -> None:
        """A call counted earlier failed later (a blocked command served an error)."""
        st = self._cmd.get(spec)
        if st is None:
            st = self._cmd[spec] = [0, 0, 0, 0]
        st[3] += 1

    def count_rejected(self, spec) -> None:
        st = self._cmd.get(spec)
        if st is None:
            st = self._cmd[spec] = [0, 0, 0, 0]
        st[2] += 1

    def count_error(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1
        self.total_error_replies += 1
