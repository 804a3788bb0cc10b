"""Per-client limits: the query buffer, the output buffer classes, the file-descriptor budget.

No single client may grow the server without bound, as in Redis 7.0:

* ``client-query-buffer-limit`` (default 1gb): a client whose unparsed input exceeds it is
  logged and closed (the reader raises :class:`~ferrumkv_py.resp_reader.QueryBufferLimit`).
* ``client-output-buffer-limit`` (default ``normal 0 0 0 slave 268435456 67108864 60
  pubsub 33554432 8388608 60``): per client class, a *hard* limit in bytes (closed as soon as
  the unsent replies reach it) and a *soft* limit with seconds (closed once the unsent
  replies have stayed at or above it that long).  0 disables a limit.  A client's class is
  ``Client.obuf_class``: ``"normal"`` unless the pub/sub code sets ``"pubsub"``.
* ``maxclients`` is lowered at start to what ``RLIMIT_NOFILE`` allows (Redis's
  ``adjustOpenFilesLimit``, 32 descriptors kept for the server itself).

"Unsent replies" are the transport's write buffer plus the replies of the read being
answered (``client.py`` writes early once those pass the smallest limit of the class,
so one read asking for 1000 replies of 1 MB cannot build a 1 GB reply first).

Complexity: every check here is O(1) (the cron's soft-limit pass is O(paused clients)).
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger("ferrumkv")

OBUF_CLASSES = ("normal", "slave", "pubsub")     # CONFIG GET order and names, as Redis
OBUF_CLASS_ALIASES = {"normal": "normal", "slave": "slave", "replica": "slave",
                      "pubsub": "pubsub"}
OBUF_DEFAULT = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
OBUF_WRONG_ARGS = "Wrong number of arguments in buffer limit configuration."
OBUF_BAD_CLASS = "Invalid client class specified in buffer limit configuration."
OBUF_BAD_VALUE = "Error in hard, soft or soft_seconds setting in buffer limit configuration."
NO_LIMIT = 1 << 62              # "no limit" as a number the hot path can compare with
MIN_RESERVED_FDS = 32           # Redis CONFIG_MIN_RESERVED_FDS: descriptors kept for us
LLONG_MAX = 9223372036854775807
_ULL_MAX = 18446744073709551615
_MEM = re.compile(r"(\d*)(b|k|kb|m|mb|g|gb)?", re.IGNORECASE)
_MEM_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2,
              "g": 1000 ** 3, "gb": 1024 ** 3}
_STRTOLL = re.compile(r"[+-]?\d+")


def _memtoull(text: str) -> int:
    m = _MEM.fullmatch(text)
    if m is None:
        raise ValueError(OBUF_BAD_VALUE)
    digits = m.group(1)
    val = int(digits) if digits else 0
    if val > _ULL_MAX:
        raise ValueError(OBUF_BAD_VALUE)
    return (val * _MEM_UNITS[(m.group(2) or "").lower()]) & _ULL_MAX


def parse_obuf_limits(raw: str) -> dict:
    """``"normal 1mb 512kb 10 ..."`` -> ``{class: (hard, soft, soft_seconds)}`` for the
    classes named; ValueError with Redis's text when the line is wrong.  Complexity: O(len).
    """
    words = raw.split()
    if len(words) % 4:
        raise ValueError(OBUF_WRONG_ARGS)
    out = {}
    for i in range(0, len(words), 4):
        cls = OBUF_CLASS_ALIASES.get(words[i].lower())
        if cls is None:
            raise ValueError(OBUF_BAD_CLASS)
        hard = _memtoull(words[i + 1])
        soft = _memtoull(words[i + 2])
        if not _STRTOLL.fullmatch(words[i + 3]):
            raise ValueError(OBUF_BAD_VALUE)
        secs = min(int(words[i + 3]), LLONG_MAX)
        if secs < 0:
            raise ValueError(OBUF_BAD_VALUE)
        out[cls] = (hard, soft, secs)
    return out


def format_obuf_limits(limits: dict) -> str:
    """CONFIG GET's text: every class, in Redis's order and units (bytes)."""
    return " ".join("%s %d %d %d" % ((cls,) + limits[cls]) for cls in OBUF_CLASSES)


def normalize_obuf_config(raw: str, old: str) -> str:
    """The config table's normalizer: a CONFIG SET names only some classes, the others
    keep their limits; the stored value is always the full three-class line."""
    limits = parse_obuf_limits(old) if old else parse_obuf_limits(OBUF_DEFAULT)
    limits.update(parse_obuf_limits(raw))
    return format_obuf_limits(limits)


def early_write_bytes(limit: tuple) -> int:
    """The reply bytes after which a read's replies are written and checked early: the
    smallest limit of the class that is on, or NO_LIMIT."""
    on = [x for x in limit[:2] if x]
    return min(on) if on else NO_LIMIT


def check_output(client, pending_bytes: int, now: float) -> bool:
    """Is ``client`` over its class's output limits with ``pending_bytes`` unsent?  Starts or
    clears the soft-limit clock; True when it must be closed (Redis
    ``checkClientOutputBufferLimits``).  Complexity: O(1)."""
    hard, soft, secs = client.server.obuf_limits[client.obuf_class]
    if hard and pending_bytes >= hard:
        return True
    if soft and pending_bytes >= soft:
        if client.obuf_soft_since is None:
            client.obuf_soft_since = now
            return False
        return now - client.obuf_soft_since > secs
    client.obuf_soft_since = None
    return False


def close_for_output_limit(client) -> None:
    """Log and count, then drop the client (its unsent replies are discarded, as Redis)."""
    from .commands.connection import client_line
    server = client.server
    server.stats.obuf_limit_disconnections += 1
    log.warning("Client %s scheduled to be closed ASAP for overcoming of output buffer "
                "limits.", client_line(client, server.now_mono))
    client.kill()


def close_for_query_limit(client, head: bytes) -> None:
    """Redis's log line for a query buffer over client-query-buffer-limit, then the close."""
    from .commands.connection import client_line
    server = client.server
    server.stats.qbuf_limit_disconnections += 1
    log.warning("Closing client that reached max query buffer length: %s (qbuf initial "
                "bytes: %s)", client_line(client, server.now_mono), _repr(head))
    client.closing = True


def _repr(b: bytes) -> str:
    """Redis ``sdscatrepr``: a quoted C-style literal of the first bytes."""
    out = []
    for c in b:
        ch = chr(c)
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif 0x20 <= c < 0x7F:
            out.append(ch)
        else:
            out.append("\\x%02x" % c)
    return '"' + "".join(out) + '"'


def adjust_open_files_limit(maxclients: int) -> int:
    """Raise RLIMIT_NOFILE toward maxclients + MIN_RESERVED_FDS, and return the maxclients
    the descriptors allow, logging what Redis logs (``adjustOpenFilesLimit``).

    Complexity: at most two setrlimit calls.  (Redis walks down from the wanted value in
    steps of 16, which from ``CONFIG SET maxclients 2147483647`` is 134M failing calls; a
    process that cannot raise its hard limit can reach at most that limit, so we try the
    wanted value, then the hard limit, and stop.)
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return maxclients
    need = maxclients + MIN_RESERVED_FDS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return maxclients
    best = soft
    err = None
    tries = [need] if hard == resource.RLIM_INFINITY or hard >= need else [need, hard]
    for want in tries:
        if want <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)
                                                        if hard != resource.RLIM_INFINITY
                                                        else hard))
            best = want
            break
        except (ValueError, OSError) as e:
            err = e
    if best < need:
        log.warning("You requested maxclients of %d requiring at least %d max file "
                    "descriptors.", maxclients, need)
        if err is not None:
            log.warning("Server can't set maximum open files to %d because of OS error: "
                        "%s.", need, err)
        if best <= MIN_RESERVED_FDS:
            log.warning("Your current 'ulimit -n' of %d is not enough for the server to "
                        "start. Please increase your open file limit to at least %d. "
                        "Exiting.", soft, need)
            raise SystemExit(1)
        maxclients = best - MIN_RESERVED_FDS
        log.warning("Current maximum open files is %d. maxclients has been reduced to %d "
                    "to compensate for low ulimit. If you need higher maxclients increase "
                    "'ulimit -n'.", best, maxclients)
    else:
        log.log(logging.WARNING - 5, "Increased maximum number of open files to %d (it was "
                "originally set to %d).", need, soft)
    return maxclients
