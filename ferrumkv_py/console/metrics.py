"""``GET /metrics``: the INFO snapshot in Prometheus text format (prometheus_client).

Redis's fields are exported under the names, types and labels redis_exporter gives them
(checked against Debian's prometheus-redis-exporter scraping this server:
``tests/ferrumkv/test_metrics_exporter.py``), so dashboards and alerts built on it apply
unchanged; ours are ``ferrumkv_ahe_*`` and ``ferrumkv_litehit_*``.  Four kinds of source:

- scalar INFO fields, one row each in SCALARS (``used_memory`` -> ``redis_memory_used_bytes``);
  INFO's ``ok`` / ``err`` status fields read as 1 / 0, ``*_usec`` fields become seconds;
- the per-key sections: Keyspace (``redis_db_*{db}``), Commandstats (``redis_commands_*{cmd}``),
  Latencystats (the ``redis_latency_percentiles_usec{cmd}`` summary), Errorstats
  (``redis_errors_total{err}``), and Server's ``redis_instance_info`` labels;
- what redis_exporter reads with other commands, read here from the same places those
  commands read: CONFIG GET maxclients / maxmemory / io-threads, SLOWLOG LEN and the
  newest entry;
- ``redis_up``.

Counters are INFO's cumulative counters (Prometheus takes the rates); a field INFO does not
print (the shadow off, a non-AHE policy, a field of a later wave) is simply not exported.
Complexity: one INFO render plus O(commands + errors + databases).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    SummaryMetricFamily)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .snapshot import info_snapshot

GAUGE, COUNTER = "gauge", "counter"
# redis_exporter exports some counters without the "_total" suffix (the 0.0.4 text format
# allows it); prometheus_client adds _total to every counter, so these are built as gauges
# and render_metrics sets their TYPE line to counter: the samples are the exporter's.
BARE_COUNTER = "bare counter"
US_PER_S = 1_000_000
STATUS_OK = {"ok": 1, "err": 0}         # rdb_last_bgsave_status and friends

# (INFO section, field, metric name, kind): redis_exporter's names; counters get "_total"
# from the client library, so a counter's name here has none.
SCALARS = (
    ("server", "uptime_in_seconds", "redis_uptime_in_seconds", GAUGE),
    ("server", "process_id", "redis_process_id", GAUGE),
    ("server", "io_threads_active", "redis_io_threads_active", GAUGE),
    ("clients", "connected_clients", "redis_connected_clients", GAUGE),
    ("clients", "blocked_clients", "redis_blocked_clients", GAUGE),
    ("clients", "tracking_clients", "redis_tracking_clients", GAUGE),
    ("clients", "clients_in_timeout_table", "redis_clients_in_timeout_table", GAUGE),
    ("clients", "cluster_connections", "redis_cluster_connections", GAUGE),
    ("clients", "client_recent_max_input_buffer",
     "redis_client_recent_max_input_buffer_bytes", GAUGE),
    ("clients", "client_recent_max_output_buffer",
     "redis_client_recent_max_output_buffer_bytes", GAUGE),
    ("memory", "used_memory", "redis_memory_used_bytes", GAUGE),
    ("memory", "used_memory_rss", "redis_memory_used_rss_bytes", GAUGE),
    ("memory", "used_memory_peak", "redis_memory_used_peak_bytes", GAUGE),
    ("memory", "used_memory_startup", "redis_memory_used_startup_bytes", GAUGE),
    ("memory", "used_memory_dataset", "redis_memory_used_dataset_bytes", GAUGE),
    ("memory", "used_memory_overhead", "redis_memory_used_overhead_bytes", GAUGE),
    ("memory", "used_memory_lua", "redis_memory_used_lua_bytes", GAUGE),
    ("memory", "used_memory_scripts", "redis_memory_used_scripts_bytes", GAUGE),
    ("memory", "number_of_cached_scripts", "redis_number_of_cached_scripts", GAUGE),
    ("memory", "total_system_memory", "redis_total_system_memory_bytes", GAUGE),
    ("memory", "maxmemory", "redis_memory_max_bytes", GAUGE),
    ("memory", "mem_fragmentation_ratio", "redis_mem_fragmentation_ratio", GAUGE),
    ("memory", "mem_fragmentation_bytes", "redis_mem_fragmentation_bytes", GAUGE),
    ("memory", "mem_not_counted_for_evict", "redis_mem_not_counted_for_eviction_bytes",
     GAUGE),
    ("memory", "mem_clients_normal", "redis_mem_clients_normal", GAUGE),
    ("memory", "mem_clients_slaves", "redis_mem_clients_slaves", GAUGE),
    ("memory", "lazyfree_pending_objects", "redis_lazyfree_pending_objects", GAUGE),
    ("persistence", "loading", "redis_loading_dump_file", GAUGE),
    ("persistence", "rdb_changes_since_last_save", "redis_rdb_changes_since_last_save",
     GAUGE),
    ("persistence", "rdb_bgsave_in_progress", "redis_rdb_bgsave_in_progress", GAUGE),
    ("persistence", "rdb_last_save_time", "redis_rdb_last_save_timestamp_seconds", GAUGE),
    ("persistence", "rdb_last_bgsave_status", "redis_rdb_last_bgsave_status", GAUGE),
    ("persistence", "rdb_last_bgsave_time_sec", "redis_rdb_last_bgsave_duration_sec", GAUGE),
    ("persistence", "rdb_current_bgsave_time_sec", "redis_rdb_current_bgsave_duration_sec",
     GAUGE),
    ("persistence", "rdb_last_cow_size", "redis_rdb_last_cow_size_bytes", GAUGE),
    ("persistence", "aof_enabled", "redis_aof_enabled", GAUGE),
    ("persistence", "aof_rewrite_in_progress", "redis_aof_rewrite_in_progress", GAUGE),
    ("persistence", "aof_rewrite_scheduled", "redis_aof_rewrite_scheduled", GAUGE),
    ("persistence", "aof_last_rewrite_time_sec", "redis_aof_last_rewrite_duration_sec",
     GAUGE),
    ("persistence", "aof_current_rewrite_time_sec", "redis_aof_current_rewrite_duration_sec",
     GAUGE),
    ("persistence", "aof_last_cow_size", "redis_aof_last_cow_size_bytes", GAUGE),
    ("persistence", "aof_last_bgrewrite_status", "redis_aof_last_bgrewrite_status", GAUGE),
    ("persistence", "aof_last_write_status", "redis_aof_last_write_status", GAUGE),
    ("persistence", "module_fork_in_progress", "redis_module_fork_in_progress", GAUGE),
    ("persistence", "module_fork_last_cow_size", "redis_module_fork_last_cow_size", GAUGE),
    ("stats", "total_connections_received", "redis_connections_received", COUNTER),
    ("stats", "total_commands_processed", "redis_commands_processed", COUNTER),
    ("stats", "instantaneous_ops_per_sec", "redis_instantaneous_ops_per_sec", GAUGE),
    ("stats", "total_net_input_bytes", "redis_net_input_bytes", COUNTER),
    ("stats", "total_net_output_bytes", "redis_net_output_bytes", COUNTER),
    ("stats", "rejected_connections", "redis_rejected_connections", COUNTER),
    ("stats", "expired_keys", "redis_expired_keys", COUNTER),
    ("stats", "expired_stale_perc", "redis_expired_stale_percentage", GAUGE),
    ("stats", "expired_time_cap_reached_count", "redis_expired_time_cap_reached_total", GAUGE),
    ("stats", "evicted_keys", "redis_evicted_keys", COUNTER),
    ("stats", "keyspace_hits", "redis_keyspace_hits", COUNTER),
    ("stats", "keyspace_misses", "redis_keyspace_misses", COUNTER),
    ("stats", "pubsub_channels", "redis_pubsub_channels", GAUGE),
    ("stats", "pubsub_patterns", "redis_pubsub_patterns", GAUGE),
    ("stats", "latest_fork_usec", "redis_latest_fork_seconds", GAUGE),
    ("stats", "migrate_cached_sockets", "redis_migrate_cached_sockets_total", GAUGE),
    ("stats", "slave_expires_tracked_keys", "redis_slave_expires_tracked_keys", GAUGE),
    ("stats", "tracking_total_keys", "redis_tracking_total_keys", GAUGE),
    ("stats", "tracking_total_items", "redis_tracking_total_items", GAUGE),
    ("stats", "tracking_total_prefixes", "redis_tracking_total_prefixes", GAUGE),
    ("stats", "unexpected_error_replies", "redis_unexpected_error_replies", BARE_COUNTER),
    ("stats", "total_error_replies", "redis_total_error_replies", BARE_COUNTER),
    ("stats", "dump_payload_sanitizations", "redis_dump_payload_sanitizations", BARE_COUNTER),
    ("stats", "total_reads_processed", "redis_total_reads_processed", BARE_COUNTER),
    ("stats", "total_writes_processed", "redis_total_writes_processed", BARE_COUNTER),
    ("stats", "io_threaded_reads_processed", "redis_io_threaded_reads_processed", BARE_COUNTER),
    ("stats", "io_threaded_writes_processed", "redis_io_threaded_writes_processed", BARE_COUNTER),
    ("stats", "sync_full", "redis_replica_resyncs_full", GAUGE),
    ("stats", "sync_partial_ok", "redis_replica_partial_resync_accepted", GAUGE),
    ("stats", "sync_partial_err", "redis_replica_partial_resync_denied", GAUGE),
    ("replication", "connected_slaves", "redis_connected_slaves", GAUGE),
    ("replication", "master_repl_offset", "redis_master_repl_offset", GAUGE),
    ("replication", "second_repl_offset", "redis_second_repl_offset", GAUGE),
    ("replication", "repl_backlog_active", "redis_repl_backlog_is_active", GAUGE),
    ("replication", "repl_backlog_size", "redis_replication_backlog_bytes", GAUGE),
    ("replication", "repl_backlog_first_byte_offset", "redis_repl_backlog_first_byte_offset",
     GAUGE),
    ("replication", "repl_backlog_histlen", "redis_repl_backlog_history_bytes", GAUGE),
    ("cpu", "used_cpu_sys", "redis_cpu_sys_seconds", COUNTER),
    ("cpu", "used_cpu_user", "redis_cpu_user_seconds", COUNTER),
    ("cpu", "used_cpu_sys_children", "redis_cpu_sys_children_seconds", COUNTER),
    ("cpu", "used_cpu_user_children", "redis_cpu_user_children_seconds", COUNTER),
    ("cpu", "used_cpu_sys_main_thread", "redis_cpu_sys_main_thread_seconds", COUNTER),
    ("cpu", "used_cpu_user_main_thread", "redis_cpu_user_main_thread_seconds", COUNTER),
    ("cluster", "cluster_enabled", "redis_cluster_enabled", GAUGE),
) + (
    ("memory", "ahe_alpha", "ferrumkv_ahe_alpha", GAUGE),
    ("memory", "ahe_last_hit_ratio", "ferrumkv_ahe_last_hit_ratio", GAUGE),
    ("memory", "ahe_duels_recency_won", "ferrumkv_ahe_duels_recency_won", COUNTER),
    ("memory", "ahe_duels_frequency_won", "ferrumkv_ahe_duels_frequency_won", COUNTER),
    ("memory", "ahe_probation_evicted", "ferrumkv_ahe_probation_evicted", COUNTER),
    ("memory", "litehit_shadow_memory", "ferrumkv_litehit_shadow_memory_bytes", GAUGE),
    ("litehit", "litehit_blocks", "ferrumkv_litehit_read_blocks", COUNTER),
    ("litehit", "litehit_real_hits", "ferrumkv_litehit_real_hits", COUNTER),
    ("litehit", "litehit_exact_hits", "ferrumkv_litehit_exact_hits", GAUGE),
    ("litehit", "litehit_reuse_blocks", "ferrumkv_litehit_reuse_blocks", COUNTER),
    ("litehit", "litehit_reuse_real_hits", "ferrumkv_litehit_reuse_real_hits", COUNTER),
    ("litehit", "litehit_capacity_blocks", "ferrumkv_litehit_capacity_keys", GAUGE),
    ("litehit", "litehit_window_real_hit_rate", "ferrumkv_litehit_window_real_hit_rate", GAUGE),
    ("litehit", "litehit_window_exact_hit_rate", "ferrumkv_litehit_window_exact_hit_rate",
     GAUGE),
    ("litehit", "litehit_window_reuse_real_hit_rate",
     "ferrumkv_litehit_window_reuse_real_hit_rate", GAUGE),
    ("litehit", "litehit_window_reuse_exact_hit_rate",
     "ferrumkv_litehit_window_reuse_exact_hit_rate", GAUGE),
)
# INFO server fields that label redis_instance_info, as redis_exporter's
INSTANCE_LABELS = ("maxmemory_policy", "os", "process_id", "redis_build_id", "redis_mode",
                   "redis_version", "role", "run_id", "tcp_port")
LATENCY_QUANTILES = ("50", "99", "99.9")   # latencystats' p50 / p99 / p99.9


def _value(field: str, value):
    """An INFO value as a sample: numbers as they are, ok / err as 1 / 0, usec as seconds;
    None for text that is not a number."""
    if isinstance(value, str):
        return STATUS_OK.get(value)
    if isinstance(value, (int, float)):
        return value / US_PER_S if field.endswith("_usec") else value
    return None


def _family(kind: str, name: str, doc: str, labels=None):
    cls = CounterMetricFamily if kind == COUNTER else GaugeMetricFamily   # BARE_COUNTER too
    return cls(name, doc, labels=labels)


def _scalars(snap: dict):
    for section, field, name, kind in SCALARS:
        value = _value(field, snap.get(section, {}).get(field))
        if value is not None:
            family = _family(kind, name, "INFO %s" % field)
            family.add_metric([], value)
            yield family


def _instance_info(snap: dict):
    fields = {**snap.get("server", {}), **snap.get("memory", {}), **snap.get("replication", {})}
    family = GaugeMetricFamily("redis_instance_info", "Information about the Redis instance",
                               labels=list(INSTANCE_LABELS))
    family.add_metric([str(fields.get(k, "")) for k in INSTANCE_LABELS], 1)
    yield family
    uptime = snap.get("server", {}).get("uptime_in_seconds")
    now_us = snap.get("server", {}).get("server_time_usec")
    if isinstance(uptime, int) and isinstance(now_us, int):
        start = GaugeMetricFamily("redis_start_time_seconds", "Start time of the instance "
                                  "since unix epoch in seconds.")
        start.add_metric([], now_us // US_PER_S - uptime)
        yield start


def _keyspace(snap: dict):
    keys = GaugeMetricFamily("redis_db_keys", "Total number of keys by DB", labels=["db"])
    expiring = GaugeMetricFamily("redis_db_keys_expiring", "Total number of expiring keys "
                                 "by DB", labels=["db"])
    avg_ttl = GaugeMetricFamily("redis_db_avg_ttl_seconds", "Avg TTL in seconds",
                                labels=["db"])
    dbs = {db: fields for db, fields in snap.get("keyspace", {}).items()
           if isinstance(fields, dict)}
    for n in range(snap.get("_databases", 0)):        # redis_exporter lists empty dbs too
        dbs.setdefault("db%d" % n, {})
    for db in sorted(dbs):
        fields = dbs[db]
        keys.add_metric([db], fields.get("keys", 0))
        expiring.add_metric([db], fields.get("expires", 0))
        if fields.get("keys"):
            avg_ttl.add_metric([db], fields.get("avg_ttl", 0) / 1000)
    yield keys
    yield expiring
    yield avg_ttl


def _commands(snap: dict):
    names = ("redis_commands", "redis_commands_duration_seconds",
             "redis_commands_rejected_calls", "redis_commands_failed_calls")
    docs = ("Total number of calls per command", "Total amount of time in seconds spent "
            "per command", "Total number of errors prior command execution per command",
            "Total number of errors within command execution per command")
    families = [CounterMetricFamily(n, d, labels=["cmd"]) for n, d in zip(names, docs)]
    latency = SummaryMetricFamily("redis_latency_percentiles_usec", "A summary of latency "
                                  "percentile distribution per command", labels=["cmd"])
    stats = snap.get("commandstats", {})
    for field, fields in sorted(stats.items()):
        if not (isinstance(fields, dict) and field.startswith("cmdstat_")):
            continue
        cmd = field[len("cmdstat_"):]
        for family, key, scale in zip(families, ("calls", "usec", "rejected_calls",
                                                 "failed_calls"), (1, US_PER_S, 1, 1)):
            family.add_metric([cmd], fields.get(key, 0) / scale if scale > 1 else
                              fields.get(key, 0))
        pct = snap.get("latencystats", {}).get("latency_percentiles_usec_" + cmd)
        if isinstance(pct, dict):
            latency.add_sample("redis_latency_percentiles_usec_sum", {"cmd": cmd},
                               fields.get("usec", 0))
            latency.add_sample("redis_latency_percentiles_usec_count", {"cmd": cmd},
                               fields.get("calls", 0))
            for q in LATENCY_QUANTILES:
                if isinstance(pct.get("p" + q), (int, float)):
                    latency.add_sample("redis_latency_percentiles_usec",
                                       {"cmd": cmd, "quantile": q}, pct["p" + q])
    yield from families
    yield latency
    errors = CounterMetricFamily("redis_errors", "Total number of errors per error type",
                                 labels=["err"])
    for field, fields in sorted(snap.get("errorstats", {}).items()):
        if isinstance(fields, dict) and field.startswith("errorstat_"):
            errors.add_metric([field[len("errorstat_"):]], fields.get("count", 0))
    yield errors


def _config_and_slowlog(server):
    config = server.config
    for name, key in (("redis_config_maxclients", "maxclients"),
                      ("redis_config_maxmemory", "maxmemory"),
                      ("redis_config_io_threads", "io-threads")):
        try:
            value = config[key]
        except KeyError:
            continue
        family = GaugeMetricFamily(name, "config %s" % key)
        family.add_metric([], int(value))
        yield family
    ops = getattr(server, "ops", None)          # the slowlog's owner (ops.py)
    if ops is not None:
        entries = ops.slowlog.entries           # newest first: [id, unix_s, usec, ...]
        length = GaugeMetricFamily("redis_slowlog_length", "Total slowlog")
        length.add_metric([], len(entries))
        last_id = GaugeMetricFamily("redis_slowlog_last_id", "Last id of slowlog")
        last = GaugeMetricFamily("redis_last_slow_execution_duration_seconds",
                                 "The amount of time needed for last slow execution, in "
                                 "seconds")
        newest = entries[0] if entries else None
        last_id.add_metric([], newest[0] if newest is not None else 0)
        last.add_metric([], newest[2] / US_PER_S if newest is not None else 0)
        yield length
        yield last_id
        yield last


class InfoCollector:
    """A prometheus_client collector over one INFO snapshot of ``server``."""

    def __init__(self, server, snap: dict):
        self.server = server
        self.snap = snap

    def collect(self):
        up = GaugeMetricFamily("redis_up", "Information about the Redis instance")
        up.add_metric([], 1)
        yield up
        yield from _scalars(self.snap)
        yield from _instance_info(self.snap)
        yield from _keyspace(self.snap)
        yield from _commands(self.snap)
        yield from _config_and_slowlog(self.server)


def render_metrics(server) -> tuple[bytes, str]:
    """The exposition body and its content type.  Complexity: one INFO render."""
    snap = info_snapshot(server)
    snap["_databases"] = server.config["databases"]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(InfoCollector(server, snap))
    body = generate_latest(registry)
    for _section, _field, name, kind in SCALARS:
        if kind == BARE_COUNTER:
            body = body.replace(b"# TYPE %s gauge\n" % name.encode(),
                                b"# TYPE %s counter\n" % name.encode())
    return body, CONTENT_TYPE_LATEST
