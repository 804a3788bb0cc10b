"""Every other config Redis 7.0 documents, so CONFIG GET/SET and config files know them all.

ferrumkv's own knobs (and the Redis ones it acts on) are rows of ``config.TABLE``; this module
adds the rest of redis-server 7.0.15's ``CONFIG GET *`` with Redis's type, default, bounds,
choices and aliases, so tools that read or set them get Redis's replies and error texts.
A row registers only when no other module has the name already, so a module that
implements a knob (SLOWLOG, ACL, ...) owns its row.

Three kinds of rows (``compat`` says which, docs/compatibility.md lists them):

* encoding thresholds (``hash-max-listpack-*``, ``set-max-intset-entries``,
  ``zset-max-listpack-*``, ``list-max-listpack-size``, ``list-compress-depth``): they drive
  OBJECT ENCODING and DEBUG LISTPACK/QUICKLIST (``commands/introspection.py``, ``debug.py``);
* tuning of machinery ferrumkv does not have (replication, cluster, AOF/RDB files, TLS
  sessions, defrag, threads): accepted and stored, as on a Redis that is not using that
  machinery, where setting them is harmless;
* switches that would turn such machinery on (``tls-port``, ``cluster-enabled``,
  ``daemonize``, ``min-replicas-to-write`` ...): refused with a reason unless the value is
  the one that keeps it off.  Type and bounds errors come first, with Redis's texts.

An alias (``slave-read-only``) is its own row, mirrored both ways by ``Config`` (both names
appear in ``CONFIG GET *``, as in Redis 7.0).
"""

from __future__ import annotations

from .config import INT_MAX, LLONG_MAX, SPECS, ULLONG_MAX, ConfigSpec, register
from .config_checks import (DEFRAG_REFUSED, SHUTDOWN_FLAGS, check_filename, check_hostname,
                            check_maxmemory_clients, check_oom_values,
                            check_proc_title, check_shutdown_flags, norm_oom_adj, only,
                            refuse)
from .subsystem import Subsystem
from . import zset

INT_MIN = -INT_MAX - 1
LONG_MAX = LLONG_MAX               # LP64: long is 64 bits
OCTAL_MODE_MAX = 0o777             # unixsocketperm
REPL_BACKLOG_MIN_BYTES = 16 * 1024  # Redis raises a smaller repl-backlog-size to this

ENCODING = "encoding"              # compat kinds (rendered into conf and docs)
TUNING = "tuning"
SWITCH = "switch"

NO_REPLICATION = "ferrumkv has no replication"
NO_CLUSTER = "ferrumkv has no cluster mode"
NO_TLS = "ferrumkv has no TLS listener"
NO_FILES = "AOF is not written yet (RDB only: docs/persistence.md)"


# ---- the rows ----

ALIAS_NAMES: set[str] = set()     # the second names (slave-read-only ...): not rewritten


def _rows() -> list[ConfigSpec]:
    rows: list[ConfigSpec] = []

    def add(name, type_, default, mutable=True, lo=None, hi=None, choices=(), alias="",
            compat=TUNING, doc="", **kw):
        if alias:
            ALIAS_NAMES.add(alias)
        for n in (name, alias) if alias else (name,):
            rows.append(ConfigSpec(n, type_, default, mutable, lo, hi, choices, doc=doc,
                                   alias_of=(alias if n == name else name) if alias else "",
                                   compat=compat, **kw))

    def b(name, default, mutable=True, alias="", doc="", **kw):
        add(name, "bool", default, mutable, alias=alias, doc=doc, **kw)

    def i(name, default, lo, hi, mutable=True, alias="", doc="", **kw):
        add(name, "int", default, mutable, lo, hi, alias=alias, doc=doc, **kw)

    def m(name, default, lo, hi, mutable=True, alias="", doc="", **kw):
        add(name, "memory", default, mutable, lo, hi, alias=alias, doc=doc, **kw)

    def s(name, default="", mutable=True, doc="", **kw):
        add(name, "string", default, mutable, doc=doc, **kw)

    def e(name, default, choices, mutable=True, doc="", **kw):
        add(name, "enum", default, mutable, choices=choices, doc=doc, **kw)

    # -- encodings (read by OBJECT ENCODING, DEBUG LISTPACK / QUICKLIST) --
    enc = dict(compat=ENCODING)
    i("hash-max-listpack-entries", 512, 0, LONG_MAX, alias="hash-max-ziplist-entries",
      doc="a hash with more fields is a hashtable", **enc)
    m("hash-max-listpack-value", 64, 0, LONG_MAX, alias="hash-max-ziplist-value",
      doc="a hash with a longer field or value is a hashtable", **enc)
    i("set-max-intset-entries", 512, 0, LONG_MAX,
      doc="a set of integers with more members is a hashtable", **enc)
    i("zset-max-listpack-entries", 128, 0, LONG_MAX, alias="zset-max-ziplist-entries",
      doc="a sorted set with more members is a skiplist", **enc)
    m("zset-max-listpack-value", 64, 0, LONG_MAX, alias="zset-max-ziplist-value",
      doc="a sorted set with a longer member is a skiplist", **enc)
    i("list-max-listpack-size", -2, INT_MIN, INT_MAX, alias="list-max-ziplist-size",
      doc="quicklist node size: entries per node (> 0) or -1..-5 for 4kb..64kb nodes", **enc)
    i("list-compress-depth", 0, 0, INT_MAX,
      doc="quicklist nodes kept uncompressed at each end (0 = none compressed)", **enc)
    m("stream-node-max-bytes", 4096, 0, LONG_MAX, doc="stream node listpack bytes (stream.py)")
    i("stream-node-max-entries", 100, 0, LLONG_MAX, doc="stream node entries (stream.py)")

    # -- general server --
    e("enable-debug-command", "no", ("no", "yes", "local"), False,
      doc="may clients run DEBUG (local: loopback clients only)", compat="")
    e("enable-module-command", "no", ("no", "yes", "local"), False,
      doc="ferrumkv has no modules and no MODULE command")
    b("daemonize", False, False, check=only(False, "ferrumkv does not fork into the "
                                             "background: run it under a supervisor"),
      compat=SWITCH, doc="refused: ferrumkv does not daemonize")
    e("supervised", "no", ("upstart", "systemd", "auto", "no"), False,
      doc="accepted; no supervisor notifications are sent")
    s("pidfile", "", False, check=only("", "ferrumkv writes no pid file"), compat=SWITCH,
      doc="refused: no pid file is written")
    s("unixsocket", "", False, check=only("", "ferrumkv listens on TCP only"),
      compat=SWITCH, doc="refused: TCP only")
    i("unixsocketperm", 0, 0, OCTAL_MODE_MAX, False, doc="unix socket mode (no unix socket)")
    i("tcp-backlog", 511, 0, INT_MAX, False, doc="listen backlog (asyncio's default is used)")
    i("socket-mark-id", 0, 0, 4294967295, False, doc="SO_MARK of sockets (not set)")
    b("always-show-logo", False, False, doc="no logo is shown")
    b("set-proc-title", True, False, doc="the process title is not changed")
    s("proc-title-template", "{title} {listen-addr} {server-mode}", check=check_proc_title,
      doc="process title template (validated, not applied)")
    b("syslog-enabled", False, False, check=only(False, "ferrumkv logs to stderr or "
                                                  "logfile only"), compat=SWITCH,
      doc="refused: no syslog")
    s("syslog-ident", "redis", False, doc="syslog identity (no syslog)")
    e("syslog-facility", "local0", ("user",) + tuple("local%d" % n for n in range(8)), False,
      doc="syslog facility (no syslog)")
    b("crash-log-enabled", True, doc="crash report on a fatal signal (Python's traceback)")
    b("crash-memcheck-enabled", True, doc="memory test after a crash (none)")
    b("disable-thp", True, False, doc="transparent huge pages are left as they are")
    b("dynamic-hz", True, doc="hz is not scaled by the number of clients")
    b("activerehashing", True, doc="Python dicts rehash by themselves")
    b("jemalloc-bg-thread", True, doc="no jemalloc (Python's allocator)")
    i("io-threads", 1, 1, 128, False, doc="one event loop thread")
    b("io-threads-do-reads", False, False, doc="one event loop thread")
    for name in ("server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist"):
        s(name, "", False, doc="CPU affinity (not applied)")
    s("ignore-warnings", "", doc="startup warnings to silence (none are issued)")
    e("oom-score-adj", "no", ("no", "yes", "relative", "absolute"),
      normalize=norm_oom_adj, doc="Linux OOM score adjustment (not applied)")
    s("oom-score-adj-values", "0 200 800", check=check_oom_values, multi=True,
      doc="OOM scores of master, replica and child (not applied)")
    for sig in ("sigint", "sigterm"):
        s("shutdown-on-" + sig, "default", check=check_shutdown_flags, multi=True,
          doc="SHUTDOWN flags on %s (save, nosave, now, force)" % sig.upper())
    i("shutdown-timeout", 10, 0, INT_MAX, doc="seconds SHUTDOWN waits for replicas (none)")
    e("sanitize-dump-payload", "no", ("no", "yes", "clients"),
      doc="deep check of RESTORE payloads (ferrumkv always checks them fully)")
    e("propagation-error-behavior", "ignore", ("ignore", "panic", "panic-on-replicas"),
      doc="what a replica does with a failing propagated command (no replicas)")
    s("maxmemory-clients", "0", check=check_maxmemory_clients, compat=SWITCH,
      doc="refused unless 0: no client eviction (the output buffer limits apply)")
    # -- defrag, latency, slowlog, ACL (rows the features' modules may own) --
    b("activedefrag", False, check=refuse(False, DEFRAG_REFUSED),
      doc="refused: no active defragmentation (Python's allocator)", compat=SWITCH)
    i("active-defrag-cycle-min", 1, 1, 99, doc="defrag CPU percent (no defrag)")
    i("active-defrag-cycle-max", 25, 1, 99, doc="defrag CPU percent (no defrag)")
    i("active-defrag-threshold-lower", 10, 0, 1000, doc="defrag threshold (no defrag)")
    i("active-defrag-threshold-upper", 100, 0, 1000, doc="defrag threshold (no defrag)")
    m("active-defrag-ignore-bytes", 100 * 1024 * 1024, 1, LLONG_MAX,
      doc="defrag threshold (no defrag)")
    i("active-defrag-max-scan-fields", 1000, 1, LONG_MAX, doc="defrag batch (no defrag)")
    s("aclfile", "", False, doc="ACL users file")
    i("acllog-max-len", 128, 0, LONG_MAX, doc="ACL LOG entries kept")
    e("acl-pubsub-default", "resetchannels", ("allchannels", "resetchannels"),
      doc="channel permissions of new ACL users")

    # -- persistence files (RDB: persistence/; AOF not written yet) --
    rdbdoc = {"rdbchecksum": "RDB files end with a CRC-64 (checked when loading)",
              "rdbcompression": "kept for tools (strings over 20 bytes are always LZF-"
                                "compressed when it saves space, as DUMP does)",
              "rdb-del-sync-files": "kept for tools (no replication: no sync files)",
              "stop-writes-on-bgsave-error": "after a failed background save, writes get "
                                             "-MISCONF while save rules exist",
              "dbfilename": "the RDB file's name inside dir"}
    for name in ("rdbchecksum", "rdbcompression", "rdb-del-sync-files",
                 "stop-writes-on-bgsave-error"):
        b(name, name != "rdb-del-sync-files", name != "rdbchecksum", doc=rdbdoc[name])
    s("dbfilename", "dump.rdb", protected=True, check=check_filename("dbfilename"),
      doc=rdbdoc["dbfilename"])
    per = dict(doc="persistence tuning; " + NO_FILES)
    for name, val in (("rdb-save-incremental-fsync", True),
                      ("aof-rewrite-incremental-fsync", True),
                      ("no-appendfsync-on-rewrite", False), ("aof-load-truncated", True),
                      ("aof-use-rdb-preamble", True), ("aof-timestamp-enabled", False),
                      ("aof-disable-auto-gc", False)):
        b(name, val, **per)
    s("appendfilename", "appendonly.aof", False, **per)
    s("appenddirname", "appendonlydir", False, **per)
    e("appendfsync", "everysec", ("everysec", "always", "no"), **per)
    i("auto-aof-rewrite-percentage", 100, 0, INT_MAX, **per)
    m("auto-aof-rewrite-min-size", 64 * 1024 * 1024, 0, LLONG_MAX, **per)

    # -- replication (ferrumkv is always a master without replicas) --
    rep = dict(doc="replication tuning; " + NO_REPLICATION)
    s("replicaof", "", False, alias="slaveof", multi=True, compat=SWITCH,
      check=only("", NO_REPLICATION), doc="refused: " + NO_REPLICATION)
    s("masterauth", "", sensitive=True, **rep)
    s("masteruser", "", sensitive=True, **rep)
    b("replica-lazy-flush", False, alias="slave-lazy-flush", **rep)
    b("replica-serve-stale-data", True, alias="slave-serve-stale-data", **rep)
    b("replica-read-only", True, alias="slave-read-only", **rep)
    b("replica-ignore-maxmemory", True, alias="slave-ignore-maxmemory", **rep)
    b("replica-announced", True, **rep)
    b("replica-ignore-disk-write-errors", False, **rep)
    s("replica-announce-ip", "", alias="slave-announce-ip", **rep)
    i("replica-announce-port", 0, 0, 65535, alias="slave-announce-port", **rep)
    i("replica-priority", 100, 0, INT_MAX, alias="slave-priority", **rep)
    b("repl-disable-tcp-nodelay", False, **rep)
    b("repl-diskless-sync", True, **rep)
    i("repl-diskless-sync-delay", 5, 0, INT_MAX, **rep)
    i("repl-diskless-sync-max-replicas", 0, 0, INT_MAX, **rep)
    e("repl-diskless-load", "disabled", ("disabled", "on-empty-db", "swapdb"), **rep)
    i("repl-timeout", 60, 1, INT_MAX, **rep)
    i("repl-ping-replica-period", 10, 1, INT_MAX, alias="repl-ping-slave-period", **rep)
    m("repl-backlog-size", 1024 * 1024, 1, LLONG_MAX, clamp=(REPL_BACKLOG_MIN_BYTES, LLONG_MAX),
      **rep)
    i("repl-backlog-ttl", 3600, 0, LONG_MAX, **rep)
    i("min-replicas-to-write", 0, 0, INT_MAX, alias="min-slaves-to-write", compat=SWITCH,
      check=only(0, NO_REPLICATION + ": every write would be refused"),
      doc="refused unless 0: " + NO_REPLICATION)
    i("min-replicas-max-lag", 10, 0, INT_MAX, alias="min-slaves-max-lag", **rep)
    s("bind-source-addr", "", **rep)

    # -- cluster --
    clu = dict(doc="cluster tuning; " + NO_CLUSTER)
    b("cluster-enabled", False, False, check=only(False, NO_CLUSTER), compat=SWITCH,
      doc="refused: " + NO_CLUSTER)
    s("cluster-config-file", "nodes.conf", False, **clu)
    i("cluster-port", 0, 0, 65535, False, **clu)
    i("cluster-node-timeout", 15000, 0, LLONG_MAX, **clu)
    i("cluster-replica-validity-factor", 10, 0, INT_MAX,
      alias="cluster-slave-validity-factor", **clu)
    b("cluster-replica-no-failover", False, alias="cluster-slave-no-failover", **clu)
    i("cluster-migration-barrier", 1, 0, INT_MAX, **clu)
    b("cluster-require-full-coverage", True, **clu)
    b("cluster-allow-reads-when-down", False, **clu)
    b("cluster-allow-pubsubshard-when-down", True, **clu)
    b("cluster-allow-replica-migration", True, **clu)
    s("cluster-announce-ip", "", **clu)
    s("cluster-announce-hostname", "", check=check_hostname, **clu)
    for name in ("cluster-announce-port", "cluster-announce-bus-port",
                 "cluster-announce-tls-port"):
        i(name, 0, 0, 65535, **clu)
    e("cluster-preferred-endpoint-type", "ip", ("ip", "hostname", "unknown-endpoint"), **clu)
    m("cluster-link-sendbuf-limit", 0, 0, ULLONG_MAX, **clu)

    # -- TLS --
    tls = dict(doc="TLS tuning; " + NO_TLS)
    i("tls-port", 0, 0, 65535, check=only(0, NO_TLS), compat=SWITCH,
      doc="refused unless 0: " + NO_TLS)
    for name in ("tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file",
                 "tls-client-key-file", "tls-client-key-file-pass", "tls-dh-params-file",
                 "tls-ca-cert-file", "tls-ca-cert-dir", "tls-protocols", "tls-ciphers",
                 "tls-ciphersuites"):
        s(name, "", check=only("", NO_TLS), compat=SWITCH,
          doc="refused unless empty: " + NO_TLS)
    for name in ("tls-cluster", "tls-replication"):
        b(name, False, check=only(False, NO_TLS), compat=SWITCH, doc="refused: " + NO_TLS)
    b("tls-prefer-server-ciphers", False, **tls)
    b("tls-session-caching", True, **tls)
    e("tls-auth-clients", "yes", ("no", "yes", "optional"), **tls)
    i("tls-session-cache-size", 20480, 0, INT_MAX, **tls)
    i("tls-session-cache-timeout", 300, 0, INT_MAX, **tls)
    return rows


def _register() -> None:
    """Add the rows whose names no other module has registered (aliases with their name)."""
    for spec in _rows():
        if spec.name not in SPECS and (not spec.alias_of or spec.alias_of not in SPECS
                                       or SPECS[spec.alias_of].compat):
            register(spec)


_register()


class EncodingThresholds(Subsystem):
    """The sorted-set thresholds follow their configs.

    ``zset.py`` reads two module constants on every insert; they are process-wide, so the
    server that last set them (at start or by CONFIG SET) decides for the process.  Hash and
    set encodings read the server's config directly (commands/introspection.py).
    Complexity: O(1) per change.
    """

    def __init__(self, server):
        super().__init__(server)
        cfg = server.config
        cfg.on_change("zset-max-listpack-entries",
                      lambda v: setattr(zset, "ZSET_MAX_LISTPACK_ENTRIES", v))
        cfg.on_change("zset-max-listpack-value",
                      lambda v: setattr(zset, "ZSET_MAX_LISTPACK_VALUE", v))
