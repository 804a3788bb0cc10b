"""``GET /metrics``: the INFO snapshot in Prometheus text format (prometheus_client).

Redis fields keep the names redis_exporter gives them, so existing dashboards and alerts
work unchanged (``redis_memory_used_bytes``, ``redis_keyspace_hits_total``,
``redis_db_keys{db="db0"}`` ...); ours are ``ferrumkv_ahe_*`` and ``ferrumkv_litehit_*``.
Counters are INFO's cumulative counters (Prometheus takes the rates); a field a section does
not have (the shadow off, a non-AHE policy) is simply not exported.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .snapshot import info_snapshot

# (INFO section, field, metric name, kind, help); counters get "_total" from the client
# library.  Names follow redis_exporter's.
REDIS_FIELDS = (
    ("server", "uptime_in_seconds", "redis_uptime_in_seconds", "gauge", "Server uptime"),
    ("clients", "connected_clients", "redis_connected_clients", "gauge", "Connected clients"),
    ("clients", "blocked_clients", "redis_blocked_clients", "gauge", "Blocked clients"),
    ("memory", "used_memory", "redis_memory_used_bytes", "gauge", "used_memory"),
    ("memory", "used_memory_rss", "redis_memory_used_rss_bytes", "gauge", "used_memory_rss"),
    ("memory", "used_memory_peak", "redis_memory_used_peak_bytes", "gauge", "Peak used_memory"),
    ("memory", "maxmemory", "redis_memory_max_bytes", "gauge", "maxmemory (0 = none)"),
    ("memory", "mem_fragmentation_ratio", "redis_mem_fragmentation_ratio", "gauge",
     "RSS / used_memory"),
    ("memory", "mem_not_counted_for_evict", "redis_mem_not_counted_for_eviction_bytes",
     "gauge", "Memory outside maxmemory's accounting (the litehit shadow)"),
    ("stats", "total_connections_received", "redis_connections_received", "counter",
     "Connections accepted"),
    ("stats", "total_commands_processed", "redis_commands_processed", "counter",
     "Commands processed"),
    ("stats", "instantaneous_ops_per_sec", "redis_instantaneous_ops_per_sec", "gauge",
     "Commands per second, sampled"),
    ("stats", "total_net_input_bytes", "redis_net_input_bytes", "counter", "Bytes read"),
    ("stats", "total_net_output_bytes", "redis_net_output_bytes", "counter", "Bytes written"),
    ("stats", "rejected_connections", "redis_rejected_connections", "counter",
     "Connections refused (maxclients)"),
    ("stats", "expired_keys", "redis_expired_keys", "counter", "Keys expired"),
    ("stats", "evicted_keys", "redis_evicted_keys", "counter", "Keys evicted"),
    ("stats", "keyspace_hits", "redis_keyspace_hits", "counter", "Key lookups that hit"),
    ("stats", "keyspace_misses", "redis_keyspace_misses", "counter", "Key lookups that missed"),
)
OUR_FIELDS = (
    ("memory", "ahe_alpha", "ferrumkv_ahe_alpha", "gauge",
     "AHE recency weight: 1 = recency (LRU-like), 0 = frequency (LFU-like)"),
    ("memory", "ahe_last_hit_ratio", "ferrumkv_ahe_last_hit_ratio", "gauge",
     "AHE controller's last window hit ratio"),
    ("memory", "ahe_duels_recency_won", "ferrumkv_ahe_duels_recency_won", "counter",
     "AHE duels decided for recency"),
    ("memory", "ahe_duels_frequency_won", "ferrumkv_ahe_duels_frequency_won", "counter",
     "AHE duels decided for frequency"),
    ("memory", "ahe_probation_evicted", "ferrumkv_ahe_probation_evicted", "counter",
     "AHE victims evicted while on probation (one-hit wonders leaving first)"),
    ("memory", "litehit_shadow_memory", "ferrumkv_litehit_shadow_memory_bytes", "gauge",
     "Memory of the litehit shadow"),
    ("litehit", "litehit_blocks", "ferrumkv_litehit_read_blocks", "counter",
     "Keys read since the shadow's window opened"),
    ("litehit", "litehit_real_hits", "ferrumkv_litehit_real_hits", "counter",
     "Of those, hits in the server"),
    ("litehit", "litehit_exact_hits", "ferrumkv_litehit_exact_hits", "gauge",
     "Of those, hits of an exact LRU of maxmemory (recomputed at today's capacity)"),
    ("litehit", "litehit_reuse_blocks", "ferrumkv_litehit_reuse_blocks", "counter",
     "Reads of keys the shadow had seen in its window"),
    ("litehit", "litehit_reuse_real_hits", "ferrumkv_litehit_reuse_real_hits", "counter",
     "Of those, hits in the server"),
    ("litehit", "litehit_capacity_blocks", "ferrumkv_litehit_capacity_keys", "gauge",
     "maxmemory / block bytes: the exact LRU's size in keys"),
    ("litehit", "litehit_window_real_hit_rate", "ferrumkv_litehit_window_real_hit_rate",
     "gauge", "Server hit rate over the last litehit-window-seconds"),
    ("litehit", "litehit_window_exact_hit_rate", "ferrumkv_litehit_window_exact_hit_rate",
     "gauge", "Exact LRU hit rate over the last litehit-window-seconds"),
    ("litehit", "litehit_window_reuse_real_hit_rate",
     "ferrumkv_litehit_window_reuse_real_hit_rate", "gauge",
     "Server hit rate on reuses, last litehit-window-seconds"),
    ("litehit", "litehit_window_reuse_exact_hit_rate",
     "ferrumkv_litehit_window_reuse_exact_hit_rate", "gauge",
     "Exact LRU hit rate on reuses, last litehit-window-seconds"),
)


class InfoCollector:
    """A prometheus_client collector over one INFO snapshot."""

    def __init__(self, snap: dict):
        self.snap = snap

    def collect(self):
        snap = self.snap
        yield GaugeMetricFamily("redis_up", "1 while the server answers", value=1)
        for section, field, name, kind, doc in REDIS_FIELDS + OUR_FIELDS:
            value = snap.get(section, {}).get(field)
            if not isinstance(value, (int, float)):
                continue
            family = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            yield family(name, doc, value=value)
        keys = GaugeMetricFamily("redis_db_keys", "Keys per database", labels=["db"])
        expiring = GaugeMetricFamily("redis_db_keys_expiring", "Keys with a TTL per database",
                                     labels=["db"])
        for db, fields in sorted(snap.get("keyspace", {}).items()):
            if isinstance(fields, dict):
                keys.add_metric([db], fields.get("keys", 0))
                expiring.add_metric([db], fields.get("expires", 0))
        yield keys
        yield expiring
        calls = CounterMetricFamily("redis_commands", "Calls per command", labels=["cmd"])
        usec = CounterMetricFamily("redis_commands_duration_seconds",
                                   "Time spent per command", labels=["cmd"])
        for field, fields in sorted(snap.get("commandstats", {}).items()):
            if isinstance(fields, dict) and field.startswith("cmdstat_"):
                cmd = field[len("cmdstat_"):]
                calls.add_metric([cmd], fields.get("calls", 0))
                usec.add_metric([cmd], fields.get("usec", 0) / 1e6)
        yield calls
        yield usec


def render_metrics(server) -> tuple[bytes, str]:
    """The exposition body and its content type.  Complexity: one INFO render."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(InfoCollector(info_snapshot(server)))
    return generate_latest(registry), CONTENT_TYPE_LATEST
