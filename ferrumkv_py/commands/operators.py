"""Operator commands: SLOWLOG, LATENCY, MONITOR, CLIENT PAUSE / UNPAUSE / REPLY / NO-EVICT
(state and feeding: ops.py, slowlog.py, latency.py, monitor.py; the postponing and reply
gate in client.py), and the ``latencystats`` INFO section."""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..info import section
from ..latency import format_percentile, graph, histogram_reply, percentile_us
from ..registry import command, lookup
from ..resp import OK, Raw, Status, Verbatim
from ..slowlog import SLOWLOG_GET_DEFAULT
from ._util import parse_int


def _help(name: str, lines: tuple) -> list:
    """Redis's addReplyHelp: a title, the lines, then HELP."""
    return [Status(b) for b in (
        ("%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:" % name).encode(),
        *(line.encode() for line in lines), b"HELP", b"    Prints this help.")]

# ---- SLOWLOG ----

@command("slowlog", -2, "", group="server")
def slowlog_(c, argv):
    """SLOWLOG subcommand [arguments ...]
    Reads and resets the slow log."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (
        argv[1].decode("utf-8", "surrogateescape"), "SLOWLOG"))

@command("get", -2, "admin loading stale", parent="slowlog")
def slowlog_get(c, argv):
    """SLOWLOG GET [count]
    Returns the newest slow log entries (10 by default, -1 for all)."""
    if len(argv) > 3:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (
            argv[1].decode("utf-8", "surrogateescape"), "SLOWLOG"))
    count = SLOWLOG_GET_DEFAULT
    if len(argv) == 3:
        count = parse_int(argv[2], errors.SLOWLOG_COUNT)
        if count < -1:
            raise CommandError(errors.SLOWLOG_COUNT)
    return c.server.ops.slowlog.get(count)

@command("len", 2, "admin loading stale", parent="slowlog")
def slowlog_len(c, argv):
    """SLOWLOG LEN
    Returns the number of slow log entries."""
    return len(c.server.ops.slowlog.entries)

@command("reset", 2, "admin loading stale", parent="slowlog")
def slowlog_reset(c, argv):
    """SLOWLOG RESET
    Empties the slow log."""
    c.server.ops.slowlog.reset()
    return OK

@command("help", 2, "loading stale", parent="slowlog")
def slowlog_help(c, argv):
    """SLOWLOG HELP
    Lists the SLOWLOG subcommands."""
    return _help("SLOWLOG", (
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog."))

# ---- LATENCY ----

@command("latency", -2, "", group="server")
def latency_(c, argv):
    """LATENCY subcommand [arguments ...]
    Reads and resets latency samples and histograms."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (
        argv[1].decode("utf-8", "surrogateescape"), "LATENCY"))

@command("latest", 2, "admin noscript loading stale", parent="latency")
def latency_latest(c, argv):
    """LATENCY LATEST
    Returns each event's latest sample: name, time, latency in ms, all-time maximum."""
    return c.server.ops.latency.latest()

@command("history", 3, "admin noscript loading stale", parent="latency")
def latency_history(c, argv):
    """LATENCY HISTORY event
    Returns an event's samples, oldest first: [unix time, latency in ms]."""
    return c.server.ops.latency.history(argv[2].decode("utf-8", "surrogateescape"))

@command("reset", -2, "admin noscript loading stale", parent="latency")
def latency_reset(c, argv):
    """LATENCY RESET [event ...]
    Drops the samples of the named events (all by default); returns how many existed."""
    events = None if len(argv) == 2 else [a.decode("utf-8", "surrogateescape")
                                          for a in argv[2:]]
    return c.server.ops.latency.reset(events)

@command("graph", 3, "admin noscript loading stale", parent="latency")
def latency_graph(c, argv):
    """LATENCY GRAPH event
    Returns an ASCII graph of an event's samples."""
    event = argv[2].decode("utf-8", "surrogateescape")
    ts = c.server.ops.latency.events.get(event)
    if ts is None:
        raise CommandError(errors.LATENCY_NO_SAMPLES % event)
    return Verbatim(graph(event, ts, c.ks.clock.now_ms() // 1000).encode())


@command("doctor", 2, "admin noscript loading stale", parent="latency")
def latency_doctor(c, argv):
    """LATENCY DOCTOR
    Returns a human readable report of the latency events."""
    ops = c.server.ops
    return Verbatim(ops.latency.doctor(c.server.config["latency-monitor-threshold"],
                                       c.ks.clock.now_ms() // 1000).encode())

@command("histogram", -2, "admin noscript loading stale", parent="latency")
def latency_histogram(c, argv):
    """LATENCY HISTOGRAM [command ...]
    Returns each command's calls and cumulative latency histogram in microseconds."""
    ops = c.server.ops
    if c.server.stats.pending and ops.tracking:   # this read's earlier commands
        ops.track_read(c.server.stats.pending, 0)
        c.server.stats.flush(0)
    hists = ops.hists
    if len(argv) == 2:
        specs = sorted(hists, key=lambda s: s.name)
    else:
        specs = []
        for a in argv[2:]:
            spec = _lookup_full(a)
            if spec is None:
                continue
            for s in [spec, *spec.subcommands.values()]:
                if s in hists and s not in specs:
                    specs.append(s)
    return {s.name.encode(): histogram_reply(hists[s]) for s in specs if sum(hists[s])}

def _lookup_full(name: bytes):
    """A command by name, or a subcommand by ``container|sub``, in any case."""
    top, _, sub = name.lower().partition(b"|")
    spec = lookup(top)
    if spec is None or not sub:
        return spec
    return spec.subcommands.get(sub.decode("utf-8", "surrogateescape"))

@command("help", 2, "loading stale", parent="latency")
def latency_help(c, argv):
    """LATENCY HELP
    Lists the LATENCY subcommands."""
    return _help("LATENCY", (
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram "
        "for the specified command names.",
        "    If no commands are specified then all histograms are replied."))

@section("latencystats", default=False, title="Latencystats")
def _latencystats(server) -> list:
    ops = server.ops
    if server.stats.pending and ops.tracking:
        ops.track_read(server.stats.pending, 0)
        server.stats.flush(0)
    pcts = ops.percentiles()
    out = []
    for spec, counts in ops.hists.items():
        if not sum(counts):
            continue
        out.append(("latency_percentiles_usec_" + spec.name, ",".join(
            "p%s=%.3f" % (format_percentile(p), percentile_us(counts, p)) for p in pcts)))
    return out

# ---- MONITOR ----

@command("monitor", 1, "admin noscript loading stale", group="server")
def monitor(c, argv):
    """MONITOR
    Streams every command the server runs to this connection."""
    ops = c.server.ops
    if getattr(c, "in_exec", False):
        raise CommandError(errors.MONITOR_DENY_BLOCKING)
    if c in ops.monitors:
        return Raw(b"")          # Redis answers nothing to a second MONITOR
    ops.add_monitor(c)
    return OK


# ---- CLIENT PAUSE / UNPAUSE / REPLY / NO-EVICT ----

@command("pause", -3, "admin noscript loading stale", parent="client")
def client_pause(c, argv):
    """CLIENT PAUSE timeout [WRITE|ALL]
    Postpones the commands of all clients (or their writes) for timeout milliseconds."""
    if len(argv) > 4:
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (
            argv[1].decode("utf-8", "surrogateescape"), "CLIENT"))
    timeout_ms = parse_int(argv[2], errors.PAUSE_TIMEOUT_NOT_INT)
    if timeout_ms < 0:
        raise CommandError(errors.PAUSE_TIMEOUT_NEGATIVE)
    kind = "all"
    if len(argv) == 4:
        kind = argv[3].lower().decode("utf-8", "surrogateescape")
        if kind not in ("write", "all"):
            raise CommandError(errors.PAUSE_MODE)
    c.server.ops.pause(timeout_ms, kind)
    return OK


@command("unpause", 2, "admin noscript loading stale", parent="client")
def client_unpause(c, argv):
    """CLIENT UNPAUSE
    Ends a CLIENT PAUSE: the postponed commands run."""
    c.server.ops.unpause()
    return OK


@command("reply", 3, "noscript loading stale", parent="client")
def client_reply(c, argv):
    """CLIENT REPLY ON|OFF|SKIP
    Turns this connection's replies off, on, or off for the next command only."""
    mode = argv[2].lower()
    if mode == b"on":
        c.reply_gate = None
        c.update_slow_path()
        return OK
    if mode == b"off":
        c.reply_gate = "off"
    elif mode == b"skip":
        if c.reply_gate != "off":
            c.reply_gate = "skip_next"
    else:
        raise CommandError(errors.SYNTAX)
    c.slow_path = True
    return Raw(b"")


@command("no-evict", 3, "admin noscript loading stale", parent="client")
def client_no_evict(c, argv):
    """CLIENT NO-EVICT ON|OFF
    Marks the connection as exempt from client eviction (flag e in CLIENT LIST)."""
    mode = argv[2].lower()
    if mode not in (b"on", b"off"):
        raise CommandError(errors.SYNTAX)
    c.no_evict = mode == b"on"
    return OK
