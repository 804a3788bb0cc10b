"""DEBUG: the subcommands test suites use, gated by ``enable-debug-command`` as in Redis 7.0.

``enable-debug-command`` (startup only) is ``no`` by default: every DEBUG call is then refused
with Redis's text; ``local`` allows loopback clients, ``yes`` everyone.  Subcommands:

* SLEEP (blocks the server, as Redis does), OBJECT (Redis's line, with the quicklist fields
  for lists), SET-ACTIVE-EXPIRE, QUICKLIST-PACKED-THRESHOLD, STRINGMATCH-TEST, CHANGE-REPL-ID,
  PROTOCOL (every RESP type, RESP2 fallbacks as Redis), DIGEST / DIGEST-VALUE (``digest.py``,
  equal to redis-server's for equal data), LISTPACK / QUICKLIST (the layout is written to
  the server log), POPULATE, LOG, HELP;
* RELOAD [NOSAVE] saves the RDB file, empties the keyspace and loads the file
  (``persistence/``; MERGE and NOFLUSH are refused with a reason); LOADAOF is refused (no
  AOF yet); Redis 7.0 has no JMAP, so it is an unknown subcommand there and here.

Not provided (C-level or crash tools): SEGFAULT, PANIC, OOM, ASSERT, CRASH-AND-RECOVER,
RESTART, LEAK, SDSLEN, HTSTATS, HTSTATS-KEY, MALLCTL, STRUCTSIZE, REPLICATE, PAUSE-CRON,
REPLYBUFFER, CLIENT-EVICTION, CLUSTERLINK, AOF-FLUSH-SLEEP, SET-SKIP-CHECKSUM-VALIDATION,
CONFIG-REWRITE-FORCE-ALL, DROP-CLUSTER-PACKET-FILTER: they answer as unknown subcommands.
"""

from __future__ import annotations

import logging
import os
import random
import re
import time

from ..first_use import gate_commands
from .. import digest, errors, memory
from ..config import parse_memory, protected_allowed
from ..errors import CommandError
from ..globmatch import glob_match
from ..registry import command
from ..resp import OK, Raw, RespSet, Status, Verbatim
from . import introspection, keys as keys_cmds
from ._util import parse_int
from .dump import KERNELS as RDB_KERNELS

log = logging.getLogger("ferrumkv")

US_PER_S = 1_000_000
LRU_CLOCK_MAX = (1 << 24) - 1            # Redis's 24-bit LRU clock, seconds
PACKED_THRESHOLD_DEFAULT = 1 << 30       # bytes: 1gb, DEBUG QUICKLIST-PACKED-THRESHOLD 0
PACKED_THRESHOLD_MAX = (1 << 32) - (1 << 20)
STRINGMATCH_FUZZ_ROUNDS = 2000           # random pattern / subject pairs per call
STRINGMATCH_MAX_LEN = 32                 # bytes of each random pattern and subject
LP_HEADER_BYTES = 6                      # listpack total-bytes + count
REPL_ID_BYTES = 20                       # 40 hex digits
_STRTOD_PREFIX = re.compile(rb"\s*[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?"
                            rb"|inf(?:inity)?|nan)", re.IGNORECASE)


def _strtod(b: bytes) -> float:
    """C strtod on the longest valid prefix (``"1.5x"`` -> 1.5, ``"x"`` -> 0), as
    DEBUG SLEEP reads its argument."""
    m = _STRTOD_PREFIX.match(b)
    return float(m.group().strip()) if m else 0.0


class _Quiet:
    """Restore the keyspace hit/miss counters a helper lookup counted (DEBUG looks keys up
    as Redis's dictFind: no stats)."""

    def __init__(self, c):
        self.ks = c.ks

    def __enter__(self):
        self.saved = (self.ks.hits, self.ks.misses)

    def __exit__(self, *exc):
        self.ks.hits, self.ks.misses = self.saved
        return False


def _ttl_ms(c, db, key: bytes) -> int:
    """PTTL of ``key`` in ``db`` through the TTL command's own code (-1 none, -2 missing)."""
    saved = c.db
    c.db = db
    try:
        with _Quiet(c):
            return keys_cmds._ttl(c, [b"pttl", key], True, False)
    finally:
        c.db = saved


def _value(c, key: bytes):
    h = c.db.lookup_notouch(key)
    if h is None:
        raise CommandError(errors.NO_SUCH_KEY)
    return c.db.vals[h]


@command("debug", -2, "admin noscript loading stale", group="server")
def debug(c, argv):
    """DEBUG subcommand [arguments ...]
    A container for debugging commands (refused unless enable-debug-command allows it)."""
    refused = _gate(c)
    if refused is not None:
        raise CommandError(refused)
    sub = argv[1].lower().decode("utf-8", "surrogateescape")
    entry = SUBCOMMANDS.get(sub)
    if entry is None or not entry[0](len(argv)):
        raise CommandError(errors.SUBCOMMAND_SYNTAX % (
            argv[1].decode("utf-8", "surrogateescape")[:128], "DEBUG"))
    return entry[1](c, argv)


def _gate(c):
    """Redis's enable-debug-command check: the error text, or None when allowed."""
    if protected_allowed(c.server.config["enable-debug-command"], c.is_local()):
        return None
    return "ERR " + errors.DEBUG_NOT_ALLOWED


debug.queue_check = _gate      # the dispatcher asks it before queueing inside MULTI


# ---- the subcommands ----

def _sleep(c, argv):
    utime = int(_strtod(argv[2]) * US_PER_S)
    if utime > 0:
        time.sleep(utime / US_PER_S)
    return OK


def _object(c, argv):
    key = argv[2]
    value = _value(c, key)
    enc = introspection.value_encoding(c, value).decode()
    with _Quiet(c):
        refcount = introspection.object_refcount(c, [b"object", b"refcount", key])
        try:
            idle = introspection.object_idletime(c, [b"object", b"idletime", key])
        except CommandError:          # an LFU policy keeps no access time
            idle = 0
    lru = ((c.ks.now_ms // 1000) - idle) & LRU_CLOCK_MAX
    from .. import rdb     # imported on use: rdb's kernels load numba
    serialized = len(rdb.dump(value, enc)) - rdb_overhead()
    extra = ""
    if enc == "quicklist":
        nodes = rdb._list_nodes(list(value))
        extra = (" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d "
                 "ql_uncompressed_size:%d" % (
                     len(nodes), len(value) / len(nodes) if nodes else 0.0,
                     c.server.config["list-max-listpack-size"],
                     int(c.server.config["list-compress-depth"] != 0),
                     sum(len(n) for n in nodes)))
    return Status(("Value at:0x%x refcount:%d encoding:%s serializedlength:%d lru:%d "
                   "lru_seconds_idle:%d%s" % (id(value), refcount, enc, serialized, lru,
                                              idle, extra)).encode())


def rdb_overhead() -> int:
    """DUMP bytes that are not the object's serialization: type byte, version, CRC."""
    from .. import rdb
    return len(rdb.dump(b"", "embstr")) - 1


def _set_active_expire(c, argv):
    try:
        on = int(_strtod(argv[2]))     # atoi: "x" is 0
    except (OverflowError, ValueError):
        on = 0
    c.server.active_expire_enabled = bool(on)
    return OK


def _packed_threshold(c, argv):
    size = parse_memory(argv[2].decode("latin-1"))
    if size is None or size > PACKED_THRESHOLD_MAX:
        raise CommandError(errors.DEBUG_PACKED_THRESHOLD)
    c.server.quicklist_packed_threshold = size or PACKED_THRESHOLD_DEFAULT
    return OK


def _stringmatch_test(c, argv):
    """A bounded fuzz run of the glob matcher (Redis: stringmatchlen_fuzz_test)."""
    rng = random.Random(os.urandom(8))
    alphabet = b"ab*?[]^-\\"
    for _ in range(STRINGMATCH_FUZZ_ROUNDS):
        pat = bytes(rng.choice(alphabet) for _ in range(rng.randrange(STRINGMATCH_MAX_LEN)))
        subject = bytes(rng.choice(b"ab-]") for _ in range(rng.randrange(STRINGMATCH_MAX_LEN)))
        glob_match(pat, subject, nocase=bool(rng.getrandbits(1)))
    return Status(b"Apparently Redis did not crash: test passed")


def _change_repl_id(c, argv):
    c.server.replid = os.urandom(REPL_ID_BYTES).hex()
    return OK


BIGNUM = b"1234567999999999999999999999999999999"


def _protocol(c, argv):
    name = argv[2].lower()
    resp3 = c.proto == 3
    if name == b"string":
        return b"Hello World"
    if name == b"integer":
        return 12345
    if name == b"double":
        return Raw(b",3.141\r\n") if resp3 else b"3.141"
    if name == b"bignum":
        return Raw(b"(%s\r\n" % BIGNUM) if resp3 else BIGNUM
    if name == b"null":
        return None
    if name == b"array":
        return [0, 1, 2]
    if name == b"set":
        return RespSet([0, 1, 2])
    if name == b"map":
        return {0: False, 1: True, 2: False}
    if name == b"attrib":
        reply = b"Some real reply following the attribute"
        if not resp3:
            return reply
        return Raw(b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n"
                   b"$%d\r\n%s\r\n" % (len(reply), reply))
    if name == b"push":
        if not resp3:
            raise CommandError(errors.DEBUG_PUSH_RESP2)
        reply = b"Some real reply following the push reply"
        return Raw(b">2\r\n$16\r\nserver-cpu-usage\r\n:42\r\n$%d\r\n%s\r\n" % (len(reply), reply))
    if name == b"verbatim":
        return Verbatim(b"This is a verbatim\nstring")
    if name in (b"true", b"false"):
        return name == b"true"
    raise CommandError(errors.DEBUG_PROTOCOL_TYPE)


def _digest(c, argv):
    dbs = []
    for db in c.ks.dbs:
        if len(db):
            dbs.append((db.id, _db_items(c, db)))
    return Status(digest.dataset_digest(dbs).hex().encode())


def _db_items(c, db):
    for key in [k for k, _ in db.items()]:
        h = db.lookup_notouch(key)
        if h is not None:
            yield key, db.vals[h], _ttl_ms(c, db, key) >= 0


def _digest_value(c, argv):
    out = []
    for key in argv[2:]:
        h = c.db.lookup_notouch(key)
        d = bytearray(digest.DIGEST_BYTES)
        if h is not None:
            digest.value_digest(d, c.db.vals[h], _ttl_ms(c, c.db, key) >= 0)
        out.append(Status(bytes(d).hex().encode()))
    return out


def _listpack(c, argv):
    value = _value(c, argv[2])
    enc = introspection.value_encoding(c, value)
    if enc != b"listpack":
        raise CommandError(errors.DEBUG_NOT_LISTPACK)
    kind = memory.type_name(value)
    pairs = value.items() if kind == "hash" else value.scores.items()
    entries = [x if isinstance(x, bytes) else rdb_score(x) for p in pairs for x in p]
    log.warning("{listpack of %s %r: %d entries, about %d bytes}\n%s", kind, argv[2],
                len(entries), LP_HEADER_BYTES + 1 + sum(len(e) + 2 for e in entries),
                "\n".join("  {%d: %r}" % (i, e) for i, e in enumerate(entries)))
    return Status(b"Listpack structure printed on stdout")


def rdb_score(score: float) -> bytes:
    return b"%.17g" % score


def _quicklist(c, argv):
    value = _value(c, argv[2])
    if introspection.value_encoding(c, value) != b"quicklist":
        raise CommandError(errors.DEBUG_NOT_QUICKLIST)
    full = len(argv) == 4 and argv[3] != b"0"
    from .. import rdb
    nodes = rdb._list_nodes(list(value))
    lines = ["{quicklist of %r: %d elements, %d nodes, fill %d, compress %d}" % (
        argv[2], len(value), len(nodes), c.server.config["list-max-listpack-size"],
        c.server.config["list-compress-depth"])]
    start = 0
    for i, node in enumerate(nodes):
        count = node[4] | node[5] << 8       # the listpack header's element count
        lines.append("  {node %d: %d elements, %d bytes}" % (i, count, len(node)))
        if full:
            lines += ["    %r" % e for e in list(value)[start:start + count]]
        start += count
    log.warning("\n".join(lines))
    return Status(b"Quicklist structure printed on stdout")


def _populate(c, argv):
    count = parse_int(argv[2], errors.NOT_POSITIVE)
    if count < 0:
        raise CommandError(errors.NOT_POSITIVE)
    prefix = argv[3] if len(argv) > 3 else b"key"
    size = 0
    if len(argv) > 4:
        size = parse_int(argv[4], errors.NOT_POSITIVE)
        if size < 0:
            raise CommandError(errors.NOT_POSITIVE)
    db = c.db
    for j in range(count):
        key = b"%s:%d" % (prefix, j)
        if db.lookup_write(key) is not None:
            continue
        val = b"value:%d" % j
        if size:
            val = val[:size].ljust(size, b"\0")
        db.add(key, val)
    return OK


def _log(c, argv):
    log.warning("DEBUG LOG: %s", argv[2].decode("utf-8", "replace"))
    return OK


def _refused(name: str):
    def fn(c, argv):
        raise CommandError(errors.DEBUG_NO_PERSISTENCE % name)
    return fn


def _reload(c, argv):
    """DEBUG RELOAD [NOSAVE]: save, empty, load (Redis debug.c's order and texts)."""
    from ..persistence.rdbfile import RdbFileError
    opts = [a.lower() for a in argv[2:]]
    for o in opts:
        if o not in (b"merge", b"noflush", b"nosave"):
            raise CommandError("DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE "
                               "options.")
        if o != b"nosave":
            raise CommandError("DEBUG RELOAD %s is not supported (a load always starts from "
                               "an empty keyspace here)" % o.decode().upper())
    p = c.server.persistence
    if b"nosave" not in opts:
        if p.in_progress():
            p.stop()
        if not p.save():
            raise CommandError("Error trying to save the DB")
    c.ks.flushall()
    try:
        p.load_now(p.path())
    except (OSError, RdbFileError) as e:
        log.warning("DEBUG RELOAD: %s", e)
        raise CommandError("Error trying to load the RDB dump") from None
    log.warning("DB reloaded by DEBUG RELOAD")
    return OK


def _help(c, argv):
    return [Status(s.encode()) for s in HELP_LINES]


HELP_LINES = (
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "LISTPACK <key>",
    "    Show low level info about the listpack encoding of <key>.",
    "LOG <message>",
    "    Write <message> to the server log.",
    "OBJECT <key>",
    "    Show low level info about `key` and associated value.",
    "POPULATE <count> [<prefix>] [<size>]",
    "    Create <count> string keys named key:<num>. If <prefix> is specified then",
    "    it is used instead of the 'key' prefix.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "QUICKLIST <key> [<0|1>]",
    "    Show low level info about the quicklist encoding of <key>.",
    "    The optional argument (0 by default) sets the level of detail",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "RELOAD / LOADAOF",
    "    Refused: ferrumkv keeps data in memory only.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "STRINGMATCH-TEST",
    "    Run a fuzz tester against the glob matcher.",
    "HELP",
    "    Prints this help.",
)


def _n(k: int):
    return lambda n: n == k


SUBCOMMANDS = {   # lower-case name -> (accepted argc, handler), Redis 7.0's argc rules
    "help": (_n(2), _help),
    "sleep": (_n(3), _sleep),
    "object": (_n(3), _object),
    "set-active-expire": (_n(3), _set_active_expire),
    "quicklist-packed-threshold": (_n(3), _packed_threshold),
    "stringmatch-test": (_n(2), _stringmatch_test),
    "change-repl-id": (_n(2), _change_repl_id),
    "protocol": (_n(3), _protocol),
    "digest": (_n(2), _digest),
    "digest-value": (lambda n: n >= 2, _digest_value),
    "listpack": (_n(3), _listpack),
    "quicklist": (lambda n: n in (3, 4), _quicklist),
    "populate": (lambda n: 3 <= n <= 5, _populate),
    "log": (_n(3), _log),
    "reload": (lambda n: n >= 2, _reload),
    "loadaof": (_n(2), _refused("LOADAOF")),
}


# ---- first use (first_use.py): DEBUG OBJECT / QUICKLIST-PACKED-THRESHOLD ... use rdb's
# kernels: loaded on a thread at the first DEBUG while only the caller waits ----

gate_commands(RDB_KERNELS, ["debug"])
