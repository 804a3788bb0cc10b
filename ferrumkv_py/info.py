"""INFO: sections rendered from a table of field functions, with Redis's field names.

Each section is a function ``server -> list of (field, value)``; :func:`section` registers it.
Values print as plain decimals (floats with fixed decimals) so scrapers can parse them, and
lines end in ``\\r\\n`` as Redis's do.

Which sections a call shows: no argument or ``default`` -> the default ones; ``all`` ->
everything but ``everything``-only ones (none here besides modules); ``everything``;
otherwise each named section (several may be given; unknown names are ignored, as Redis does).
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import time
from typing import Callable

from . import __version__, memory
from .config import format_memory_human
from .scripting.engine import info_fields as scripting_info_fields

SECTIONS: dict[str, tuple[Callable, bool]] = {}   # name -> (render, in default INFO)
TITLES = {"cpu": "CPU"}                            # section headers not just capitalized
RUN_ID = os.urandom(20).hex()                      # 40 hex digits, new at every start
LRU_CLOCK_MAX = (1 << 24) - 1                      # Redis's 24-bit LRU clock, in seconds


def section(name: str, default: bool = True, title: str | None = None):
    """Register ``fn(server) -> [(field, value)]`` as INFO section ``name``."""
    def deco(fn: Callable) -> Callable:
        SECTIONS[name] = (fn, default)
        if title:
            TITLES[name] = title
        return fn
    return deco


def render(server, args: list[str]) -> str:
    """The INFO text for the given section names (lower case)."""
    names = [a.lower() for a in args] or ["default"]
    chosen: list[str] = []
    for n in names:
        if n in ("all", "everything"):
            chosen += [s for s in SECTIONS if s not in chosen]
        elif n == "default":
            chosen += [s for s, (_, d) in SECTIONS.items() if d and s not in chosen]
        elif n in SECTIONS and n not in chosen:
            chosen.append(n)
    order = [s for s in SECTIONS if s in chosen]
    parts = []
    for name in order:
        fields = SECTIONS[name][0](server)
        header = "# " + TITLES.get(name, name.capitalize())
        lines = [header] + ["%s:%s" % (k, _fmt(v)) for k, v in fields]
        parts.append("\r\n".join(lines) + "\r\n")
    return "\r\n".join(parts)


def _fmt(v) -> str:
    if isinstance(v, float):
        return "%.6f" % v if abs(v) < 1e15 else "%.0f" % v
    return str(v)


def total_system_memory() -> int:
    """The machine's memory (Redis's total_system_memory), 0 where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return 0


def client_buffer_bytes(server) -> int:
    """Bytes waiting in clients' input and output buffers.  Complexity: O(clients)."""
    total = 0
    for cl in server.clients.values():
        total += cl.reader.buffered()
        t = cl.transport
        if t is not None and not t.is_closing():
            total += t.get_write_buffer_size()
    return total


def memory_overhead(server) -> dict:
    """Redis's split of used_memory (getMemoryOverheadData) over our model.

    ``used_memory`` is the modelled data set (docs/memory.md); of it, the keyspace's
    per-key dict slots and TTL cells are the overhead, the rest is the dataset, so the two
    add up to used_memory as on Redis.  Client buffers are outside the model (Redis counts
    them in used_memory and its overhead): reported beside it, as ``clients``
    (mem_clients_normal).  ``startup`` is the model at start, 0: the interpreter's
    own RSS is not in the model but in ``baseline`` (the process's RSS when the server
    became ready), which the fragmentation ratio sets RSS against.
    Complexity: O(clients + databases)."""
    ks = server.ks
    used = ks.used_memory
    peak = server.stats.note_memory(used)
    baseline = server.startup_rss
    clients = client_buffer_bytes(server)
    dbs = []
    for db in ks.dbs:
        if len(db):
            dbs.append((db.id, len(db) * memory.KEYSPACE_DICT_SLOT,
                        db.volatile * memory.EXPIRE_COST))
    over = sum(m + e for _, m, e in dbs)
    keys = ks.total_keys()
    dataset = max(used - over, 0)
    rss = rss_bytes()
    process = used + baseline
    return {"peak": peak, "used": used, "startup": 0, "baseline": baseline,
            "clients": clients, "dbs": dbs, "overhead": over, "keys": keys,
            "per_key": used // keys if keys else 0,
            "dataset": dataset, "dataset_perc": dataset * 100.0 / used if used else 0.0,
            "peak_perc": used * 100.0 / peak if peak else 0.0, "rss": rss,
            "frag": rss / process if process else 0.0, "frag_bytes": rss - process}


def rss_bytes() -> int:
    """The process's resident set size, from /proc (0 where unavailable)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@section("server")
def _server(server) -> list:
    uptime = int(time.time() - server.start_time)
    return [
        ("redis_version", "7.0.15"),
        ("ferrumkv_version", __version__),
        ("redis_mode", "standalone"),
        ("os", "%s %s %s" % (platform.system(), platform.release(), platform.machine())),
        ("arch_bits", 64 if sys.maxsize > 2 ** 32 else 32),
        ("multiplexing_api", "asyncio"),
        ("python_version", platform.python_version()),
        ("process_id", os.getpid()),
        ("process_supervised", "no"),
        ("run_id", RUN_ID),
        ("tcp_port", server.port),
        ("server_time_usec", int(time.time() * 1_000_000)),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", server.config["hz"]),
        ("configured_hz", server.config["hz"]),
        ("lru_clock", (server.ks.now_ms // 1000) & LRU_CLOCK_MAX),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", server.config.file or ""),
        ("io_threads_active", 0),
    ]


@section("clients")
def _clients(server) -> list:
    return [
        ("connected_clients", len(server.clients)),
        ("cluster_connections", 0),
        ("maxclients", server.config["maxclients"]),
        # the largest buffers now (Redis keeps the recent maxima; O(clients) per INFO)
        ("client_recent_max_input_buffer",
         max((c.reader.buffered() for c in server.clients.values()), default=0)),
        ("client_recent_max_output_buffer",
         max((c.transport.get_write_buffer_size() for c in server.clients.values()
              if c.transport is not None and not c.transport.is_closing()), default=0)),
        # blocking commands' waiters, and clients postponed by CLIENT PAUSE: Redis blocks
        # those too (BLOCKED_POSTPONE), so its tests wait on this count for a paused write
        ("blocked_clients", server.blocking.blocked + len(server.ops.held)),
        ("tracking_clients", server.tracking.clients),
        ("clients_in_timeout_table", server.blocking.timed),
    ]


@section("memory")
def _memory(server) -> list:
    ks = server.ks
    o = memory_overhead(server)
    used, peak, rss = o["used"], o["peak"], o["rss"]
    mm = server.maxmemory
    shadow_bytes = server.shadow.memory_bytes() if server.shadow is not None else 0
    system = total_system_memory()
    fields = [
        ("used_memory", used),
        ("used_memory_human", format_memory_human(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", format_memory_human(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", format_memory_human(peak)),
        ("used_memory_peak_perc", "%.2f%%" % o["peak_perc"]),
        ("used_memory_overhead", o["overhead"]),
        # the model at start: used_memory counts the data set only, so a dashboard's
        # used_memory - used_memory_startup is the data set, as on Redis
        ("used_memory_startup", o["startup"]),
        ("used_memory_dataset", o["dataset"]),
        ("used_memory_dataset_perc", "%.2f%%" % o["dataset_perc"]),
        # ours: the process's RSS when the server became ready (interpreter, code, kernels
        # loaded at start), which used_memory does not count (docs/memory.md)
        ("rss_baseline", o["baseline"]),
        ("rss_baseline_human", format_memory_human(o["baseline"])),
        ("total_system_memory", system),
        ("total_system_memory_human", format_memory_human(system)),
    ]
    fields += scripting_info_fields(server)      # used_memory_lua ... (scripting/engine.py)
    fields += [
        ("maxmemory", mm),
        ("maxmemory_human", format_memory_human(mm)),
        ("maxmemory_policy", server.config["maxmemory-policy"]),
        ("maxmemory_samples", server.config["maxmemory-samples"]),
        # RSS over what the process should hold: the data set plus the baseline
        # (docs/memory.md "mem_fragmentation_ratio"), so 1.0 means no slack at any size
        # and Redis's alert thresholds read as intended
        ("mem_fragmentation_ratio", "%.2f" % o["frag"]),
        ("mem_fragmentation_bytes", o["frag_bytes"] if rss else 0),
        ("mem_clients_normal", o["clients"]),
        ("mem_allocator", "pymalloc"),
        # Redis's name for memory outside maxmemory's accounting: here the litehit shadow
        ("mem_not_counted_for_evict", shadow_bytes),
        ("litehit_shadow_memory", shadow_bytes),
        ("litehit_shadow_memory_human", format_memory_human(shadow_bytes)),
        ("lazyfree_pending_objects", ks.lazyfree.pending_objects),
        ("lazyfreed_objects", ks.lazyfree.freed_objects),
    ]
    fields += server.evictor.info_fields()
    fields += server.gc_stats.info_fields()
    return fields


@section("persistence")
def _persistence(server) -> list:
    return server.persistence.info_fields()     # persistence/saver.py: Redis 7.0's fields


@section("stats")
def _stats(server) -> list:
    st, ks = server.stats, server.ks
    return [
        ("total_connections_received", st.total_connections),
        ("total_commands_processed", st.total_commands),
        ("instantaneous_ops_per_sec", st.instantaneous_ops()),
        ("total_net_input_bytes", st.net_input_bytes),
        ("total_net_output_bytes", st.net_output_bytes),
        ("rejected_connections", st.rejected_connections),
        ("expired_keys", ks.expired_keys),
        ("expired_stale_perc", "%.2f" % (ks.expired_stale_perc * 100)),
        ("expired_time_cap_reached_count", ks.expired_time_cap_reached_count),
        ("evicted_keys", ks.evicted_keys),
        ("evicted_clients", 0),
        ("total_eviction_exceeded_time", 0),
        ("keyspace_hits", ks.hits),
        ("keyspace_misses", ks.misses),
        ("pubsub_channels", len(server.pubsub.channels)),
        ("pubsub_patterns", len(server.pubsub.patterns)),
        ("pubsubshard_channels", len(server.pubsub.shard)),
        ("unexpected_error_replies", 0),
        ("total_error_replies", st.total_error_replies),
        ("total_protocol_errors", st.protocol_errors),
        # Redis 7.2's names (7.0 closes such clients without counting them)
        ("client_query_buffer_limit_disconnections", st.qbuf_limit_disconnections),
        ("client_output_buffer_limit_disconnections", st.obuf_limit_disconnections),
    ] + server.tracking.info_fields()


@section("replication")
def _replication(server) -> list:
    return [("role", "master"), ("connected_slaves", 0), ("master_repl_offset", 0)]


@section("cpu")
def _cpu(server) -> list:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return [
        ("used_cpu_sys", "%.6f" % ru.ru_stime),
        ("used_cpu_user", "%.6f" % ru.ru_utime),
    ]


@section("modules")
def _modules(server) -> list:
    return []


@section("commandstats", default=False)
def _commandstats(server) -> list:
    out = []
    for spec, (calls, ns, rejected, failed) in sorted(server.stats.cmd.items(),
                                                       key=lambda kv: kv[0].name):
        usec = ns // 1000
        out.append(("cmdstat_" + spec.name,
                    "calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d"
                    % (calls, usec, usec / calls if calls else 0.0, rejected, failed)))
    return out


@section("errorstats")
def _errorstats(server) -> list:
    return [("errorstat_" + code, "count=%d" % n)
            for code, n in sorted(server.stats.errors.items())]


@section("cluster")
def _cluster(server) -> list:
    return [("cluster_enabled", 0)]


@section("keyspace")
def _keyspace(server) -> list:
    out = []
    now = server.ks.now_ms
    for db in server.ks.dbs:
        if db.nkeys:
            avg_ttl = 0
            sample = db.sample(32, volatile=True) if db.volatile else []
            exp = db.exp
            ttls = [exp[s] - now for s in sample if exp[s] > now]
            if ttls:
                avg_ttl = sum(ttls) // len(ttls)
            out.append(("db%d" % db.id, "keys=%d,expires=%d,avg_ttl=%d"
                        % (len(db), db.volatile, avg_ttl)))
    return out
