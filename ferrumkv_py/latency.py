"""The latency monitor (LATENCY LATEST / HISTORY / RESET / DOCTOR) and per-command latency
histograms (LATENCY HISTOGRAM, INFO latencystats).

Latency monitor (Redis latency.c): an event (``command``, ``fast-command``,
``expire-cycle`` ...) that took at least ``latency-monitor-threshold`` ms (0 = off) adds a
sample ``(unix second, ms)`` to that event's series; a sample in the same second as the
previous one only raises it; a series keeps the last ``LATENCY_TS_LEN`` samples and the
all-time maximum.

Histograms (Redis keeps an HdrHistogram per command): here one counter per power of two
of nanoseconds, ``counts[d.bit_length()]``, so recording is one index and one add.
LATENCY HISTOGRAM reports them on Redis's bucket edges (1024 ns doubling: 1, 2, 4, 8, 16,
33, 66 ... us, as Redis's ``hdr_iter_log_init(1024, 2)`` prints them) with cumulative
counts, skipping buckets that add nothing; INFO latencystats reports percentiles as the
upper edge of the bucket holding them.

Complexity: O(1) per sample and per recorded call; O(events) or O(buckets) per report.
"""

from __future__ import annotations

import math

LATENCY_TS_LEN = 160              # samples kept per event (Redis LATENCY_TS_LEN)
HIST_BUCKETS = 64                 # bit lengths of a nanosecond duration
HIST_FIRST_NS = 1024              # Redis's first reported bucket (hdr_iter_log_init)
HIST_FIRST_BITS = 10              # log2(HIST_FIRST_NS)
HIST_MAX_NS = 1_000_000_000       # Redis's LATENCY_HISTOGRAM_MAX_VALUE: longer calls clamp
NS_PER_US = 1000


class Series:
    __slots__ = ("samples", "max")

    def __init__(self):
        self.samples: list = []   # [unix_s, ms], oldest first, at most LATENCY_TS_LEN
        self.max = 0


class LatencyMonitor:
    """Event series of the latency monitor.  Complexity: O(1) per sample."""

    def __init__(self):
        self.events: dict[str, Series] = {}

    def add(self, event: str, ms: int, unix_s: int) -> None:
        ts = self.events.get(event)
        if ts is None:
            ts = self.events[event] = Series()
        if ms > ts.max:
            ts.max = ms
        s = ts.samples
        if s and s[-1][0] == unix_s:
            if ms > s[-1][1]:
                s[-1][1] = ms
            return
        s.append([unix_s, ms])
        if len(s) > LATENCY_TS_LEN:
            del s[0]

    def latest(self) -> list:
        return [[name.encode(), ts.samples[-1][0], ts.samples[-1][1], ts.max]
                for name, ts in self.events.items()]

    def history(self, event: str) -> list:
        ts = self.events.get(event)
        return [] if ts is None else [list(s) for s in ts.samples]

    def reset(self, events: list | None) -> int:
        """Drop the named series (all when ``events`` is None); how many existed."""
        if events is None:
            n = len(self.events)
            self.events.clear()
            return n
        n = 0
        for e in events:
            if self.events.pop(e, None) is not None:
                n += 1
        return n

    def doctor(self, threshold_ms: int, now_s: int) -> str:
        """A human report in the spirit of Redis's LATENCY DOCTOR: per event its spikes,
        average, mean deviation, period and worst case (Redis adds tuning advice)."""
        if not threshold_ms and not self.events:
            return ("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in "
                    "this Redis instance. You may use \"CONFIG SET latency-monitor-threshold "
                    "<milliseconds>.\" in order to enable it. If we weren't in a deep space "
                    "mission I'd suggest to take a look at https://redis.io/topics/"
                    "latency-monitor.\n")
        if not self.events:
            return ("Dave, no latency spike was observed during the lifetime of this Redis "
                    "instance, not in the slightest bit. I honestly think you ought to "
                    "sleep tonight.\n")
        out = ["Dave, I have observed latency spikes in this Redis instance. You don't "
               "mind talking about it, do you Dave?\n\n"]
        for i, (name, ts) in enumerate(self.events.items(), 1):
            lat = [s[1] for s in ts.samples]
            avg = sum(lat) / len(lat)
            mad = sum(abs(x - avg) for x in lat) / len(lat)
            # Redis: seconds from the first sample to now, per sample (at least 1)
            period = (now_s - ts.samples[0][0]) / len(lat) or 1
            out.append("%d. %s: %d latency spikes (average %dms, mean deviation %dms, "
                       "period %.2f sec). Worst all time event %dms.\n"
                       % (i, name, len(lat), avg, mad, period, ts.max))
        return "".join(out)


# ---- LATENCY GRAPH: Redis's sparkline.c ----

LATENCY_GRAPH_COLS = 80           # columns of a LATENCY GRAPH (Redis LATENCY_GRAPH_COLS)
GRAPH_ROWS = 4                    # sparkline rows
SPARK_FILL = "_o#"                # Redis's charset_fill: 3 steps per row
LABEL_MARGIN_TOP = 1              # blank rows between the sparkline and the labels


def _age_label(elapsed_s: int) -> str:
    if elapsed_s < 60:
        return "%ds" % elapsed_s
    if elapsed_s < 3600:
        return "%dm" % (elapsed_s // 60)
    if elapsed_s < 86400:
        return "%dh" % (elapsed_s // 3600)
    return "%dd" % (elapsed_s // 86400)


def graph(event: str, ts: Series, now_s: int) -> str:
    """LATENCY GRAPH's text: a header, a rule, then the samples as a filled sparkline of
    ``GRAPH_ROWS`` rows, 80 columns a block, each column labelled (vertically) with how
    long ago it was.  Redis's latencyCommandGenSparkeline and sparklineRender, step for
    step.  Complexity: O(samples * (rows + label length))."""
    values = [s[1] for s in ts.samples]
    labels = [_age_label(now_s - s[0]) for s in ts.samples]
    lo, hi = min(values), max(values)
    out = ["%s - high %d ms, low %d ms (all time high %d ms)\n" % (event, hi, lo, ts.max),
           "-" * LATENCY_GRAPH_COLS + "\n"]
    for start in range(0, len(values), LATENCY_GRAPH_COLS):
        if start:
            out.append("\n")
        out.append(_spark_range(values[start:start + LATENCY_GRAPH_COLS],
                                labels[start:start + LATENCY_GRAPH_COLS], lo, hi))
    return "".join(out)


def _spark_range(values: list, labels: list, lo: int, hi: int) -> str:
    """One block of columns (sparklineRenderRange with SPARKLINE_FILL)."""
    relmax = (hi - lo) or 1
    steps = len(SPARK_FILL) * GRAPH_ROWS
    rows = []
    row = 0
    while True:
        chars = [" "] * len(values)
        more = False
        for j, v in enumerate(values):
            step = min(max(int(int((v - lo) * steps) / relmax), 0), steps - 1)
            if row < GRAPH_ROWS:
                more = True
                idx = step - (GRAPH_ROWS - row - 1) * len(SPARK_FILL)
                if 0 <= idx < len(SPARK_FILL):
                    chars[j] = SPARK_FILL[idx]
                elif idx >= len(SPARK_FILL):
                    chars[j] = "|"
            else:
                if row - GRAPH_ROWS < LABEL_MARGIN_TOP:
                    more = True
                    break
                k = row - GRAPH_ROWS - LABEL_MARGIN_TOP
                if len(labels[j]) > k:
                    more = True
                    chars[j] = labels[j][k]
        if not more:
            break
        row += 1
        rows.append("".join(chars) + "\n")
    return "".join(rows)


def new_histogram() -> list:
    return [0] * (HIST_BUCKETS + 1)


def bucket_of(ns: int) -> int:
    """Histogram index of a duration (its bit length, clamped at 1 s).  O(1)."""
    return (ns if ns < HIST_MAX_NS else HIST_MAX_NS).bit_length()


def _edge_us(k: int) -> int:
    """Redis's k-th reported bucket value in us: the top of HdrHistogram's (2 significant
    digits) equivalence range at 1024 * 2**k ns, as ``highest_equivalent_value / 1000``."""
    return ((HIST_FIRST_NS << k) + (1 << (k + 3)) - 1) // NS_PER_US


def histogram_reply(counts: list) -> dict:
    """``{calls, histogram_usec: {edge_us: cumulative}}`` as LATENCY HISTOGRAM replies.

    A duration of bit length b (< 2**b ns) is counted at Redis's first edge that covers
    it: edge 0 for b <= 10, else edge b - 10.  Complexity: O(HIST_BUCKETS)."""
    total = sum(counts)
    hist = {}
    cum = prev = 0
    last = max((b for b, n in enumerate(counts) if n), default=0)
    for b in range(last + 1):
        cum += counts[b]
        if b < HIST_FIRST_BITS:
            continue
        if cum > prev:
            hist[_edge_us(b - HIST_FIRST_BITS)] = cum
        prev = cum
    return {b"calls": total, b"histogram_usec": hist}


def percentile_us(counts: list, pct: float) -> float:
    """The upper edge in us of the bucket holding the ``pct`` percentile (0 when empty)."""
    total = sum(counts)
    if not total:
        return 0.0
    want = max(1, math.ceil(total * pct / 100.0))
    cum = 0
    for b, n in enumerate(counts):
        cum += n
        if cum >= want:
            return ((1 << b) - 1) / NS_PER_US
    return 0.0


def format_percentile(p: float) -> str:
    """``50`` -> ``50``, ``99.9`` -> ``99.9`` (Redis prints %f without trailing zeros)."""
    s = "%f" % p
    return s.rstrip("0").rstrip(".") if "." in s else s
