"""/metrics against redis_exporter itself (Debian's prometheus-redis-exporter, which
.ci/run installs): the families, types and label names a dashboard built on redis_exporter
reads must be the ones the console serves.

1. redis_exporter scraping *this* server, and our /metrics: every family the exporter
   makes of our INFO, CONFIG and SLOWLOG is served by /metrics with the same type and label
   names (the exporter's own bookkeeping families aside).
2. redis_exporter scraping redis-server 7.0.15 and scraping us: what Redis gives it and we
   do not is exactly ABSENT, each with its reason, so a missing field is a decision.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.request

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port

EXPORTER = shutil.which("prometheus-redis-exporter") or shutil.which("redis_exporter")
SCRAPE_TRIES = 50
SCRAPE_WAIT_S = 0.1

# The exporter's families about itself and its scrape, not about the server.
EXPORTER_OWN = {"redis_exporter_build_info", "redis_exporter_last_scrape_connect_time_seconds",
                "redis_exporter_last_scrape_duration_seconds",
                "redis_exporter_last_scrape_error", "redis_exporter_scrape_duration_seconds",
                "redis_exporter_scrapes_total", "redis_target_scrape_request_errors_total",
                "redis_last_key_groups_scrape_duration_milliseconds"}

# Families redis_exporter makes of redis-server 7.0.15's INFO that it cannot make of ours.
ALLOCATOR = "jemalloc's allocator statistics: the process runs on pymalloc"
DEFRAG = "active defragmentation is jemalloc's; there is none here"
REPLICATION = "replication is issue 29: these arrive with it"
ABSENT = {
    "redis_allocator_active_bytes": ALLOCATOR, "redis_allocator_allocated_bytes": ALLOCATOR,
    "redis_allocator_frag_bytes": ALLOCATOR, "redis_allocator_frag_ratio": ALLOCATOR,
    "redis_allocator_resident_bytes": ALLOCATOR, "redis_allocator_rss_bytes": ALLOCATOR,
    "redis_allocator_rss_ratio": ALLOCATOR,
    "redis_active_defrag_running": DEFRAG, "redis_defrag_hits": DEFRAG,
    "redis_defrag_misses": DEFRAG, "redis_defrag_key_hits": DEFRAG,
    "redis_defrag_key_misses": DEFRAG,
    "redis_repl_backlog_first_byte_offset": REPLICATION,
    "redis_repl_backlog_history_bytes": REPLICATION,
    "redis_repl_backlog_is_active": REPLICATION, "redis_replication_backlog_bytes": REPLICATION,
    "redis_second_repl_offset": REPLICATION, "redis_replica_resyncs_full": REPLICATION,
    "redis_replica_partial_resync_accepted": REPLICATION,
    "redis_replica_partial_resync_denied": REPLICATION,
    "redis_slave_expires_tracked_keys": REPLICATION,
    "redis_mem_clients_slaves": REPLICATION,
    "redis_latest_fork_seconds": "nothing forks here (snapshots are made in the process)",
    "redis_migrate_cached_sockets_total": "MIGRATE is issue 30 (cluster)",
    "redis_io_threaded_reads_processed": "one event loop: no I/O threads",
    "redis_io_threaded_writes_processed": "one event loop: no I/O threads",
    "redis_cpu_sys_children_seconds_total": "no child processes (no fork)",
    "redis_cpu_user_children_seconds_total": "no child processes (no fork)",
    "redis_cpu_sys_main_thread_seconds_total": "INFO cpu has the process's times only",
    "redis_cpu_user_main_thread_seconds_total": "INFO cpu has the process's times only",
    "redis_dump_payload_sanitizations": "INFO stats field not kept yet",
    "redis_total_reads_processed": "INFO stats field not kept yet",
    "redis_total_writes_processed": "INFO stats field not kept yet",
}

pytestmark = pytest.mark.skipif(EXPORTER is None, reason="prometheus-redis-exporter missing")


def _families(text: str) -> dict:
    """{family: (type, sorted label names)} read off the exposition text as a dashboard
    sees it: the name on the ``# TYPE`` line, which is the samples' name (a counter's with
    or without ``_total``, as its exporter wrote it), and the labels of its samples.  The
    text must also parse with Prometheus's own parser."""
    assert list(text_string_to_metric_families(text))
    types, labels = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            types[name] = kind
            labels[name] = set()
        elif line and not line.startswith("#"):
            name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
            if name not in types:
                name = re.sub(r"_(sum|count|bucket)$", "", name)
            labels[name] |= set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', line))
    return {name: (kind, sorted(labels[name] - {"quantile", "le"}))
            for name, kind in types.items()}


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


def _scrape_with_exporter(redis_port: int) -> dict:
    """Run redis_exporter against 127.0.0.1:redis_port, scrape it once, stop it by PID."""
    port = free_port()
    proc = subprocess.Popen([EXPORTER, "-redis.addr", "redis://127.0.0.1:%d" % redis_port,
                             "-web.listen-address", "127.0.0.1:%d" % port,
                             "-include-system-metrics"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(SCRAPE_TRIES):
            try:
                text = _get("http://127.0.0.1:%d/metrics" % port)
                break
            except OSError:
                time.sleep(SCRAPE_WAIT_S)
        else:
            raise AssertionError("redis_exporter did not answer")
    finally:
        proc.kill()
        proc.wait()
    families = _families(text)
    assert "redis_up" in families
    assert "redis_exporter_last_scrape_error" in families
    up = [line for line in text.splitlines() if line.startswith("redis_up ")]
    assert up == ["redis_up 1"], up
    return {name: kind for name, kind in families.items()       # go_*, process_*: its own
            if name.startswith("redis_") and name not in EXPORTER_OWN}


def _load(port: int) -> None:
    r = redis.Redis(port=port, socket_timeout=10)
    r.config_set("slowlog-log-slower-than", "0")
    for i in range(50):
        r.set("k%d" % i, "v", ex=100 if i % 2 else None)
        r.get("k%d" % i)
    with pytest.raises(redis.ResponseError):
        r.execute_command("NOSUCHCOMMAND")           # an errorstats row
    r.close()


@pytest.fixture
def ours(make_server):
    console = free_port()
    s = make_server(console_port=str(console))
    _load(s.port)
    return s.port, console


def test_metrics_serve_every_family_redis_exporter_makes_of_us(ours):
    port, console = ours
    exported = _scrape_with_exporter(port)
    served = _families(_get("http://127.0.0.1:%d/metrics" % console))
    missing = {n: k for n, k in exported.items() if n not in served}
    assert not missing, missing
    differ = {n: (k, served[n]) for n, k in exported.items() if served[n] != k}
    assert not differ, differ
    for name in ("redis_errors_total", "redis_latency_percentiles_usec",
                 "redis_slowlog_length", "redis_instance_info", "redis_cpu_sys_seconds_total",
                 "redis_config_maxclients", "redis_start_time_seconds"):
        assert name in served, name


def test_what_redis_server_gives_the_exporter_and_we_do_not_is_listed(ours, redis_server):
    _load(redis_server)
    theirs = _scrape_with_exporter(redis_server)
    mine = _scrape_with_exporter(ours[0])
    absent = {n for n in theirs if n not in mine}
    assert absent - set(ABSENT) == set(), "absent and not listed: %s" % (absent - set(ABSENT))
    assert set(ABSENT) - absent == set(), "listed but present now: %s" % (set(ABSENT) - absent)
    differ = {n: (theirs[n], mine[n]) for n in theirs if n in mine and theirs[n] != mine[n]}
    assert not differ, differ
