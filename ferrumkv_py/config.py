"""Configuration: one table behind the config file, the ``--name value`` CLI and CONFIG.

Each :class:`ConfigSpec` row says the name, the type, the default, the bounds or choices and
whether CONFIG SET may change it at runtime.  Adding a knob is adding a row (and reading it
where it matters, usually through :meth:`Config.on_change`).

Memory sizes parse like Redis ``memtoull``: ``1k`` = 1000, ``1kb`` = 1024, ``m``/``mb``,
``g``/``gb``, case-insensitive; integers like Redis ``string2ll`` (no ``+``, spaces or leading
zeros).  ``python -m ferrumkv_py.config --conf`` renders ``conf/ferrumkv.conf`` from the
table (``conf_render.render_conf``), so the documented file cannot drift from the code.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .policies import POLICY_NAMES

from . import limits

INT_MAX = 2147483647
UINT_MAX = 4294967295
LLONG_MAX = 9223372036854775807
ULLONG_MAX = 18446744073709551615
MEMTOULL_MAX_DIGITS = 127     # Redis memtoull copies the digits into a 128-byte buffer
CONFIG_MIN_HZ, CONFIG_MAX_HZ = 1, 500   # hz is accepted from 0 and clamped, as Redis does
POLICIES = POLICY_NAMES        # maxmemory-policy's choices: the one list, policies.py


class ConfigError(Exception):
    """A bad name or value; ``msg`` is the text after ``... - `` in Redis's CONFIG SET error."""

    def __init__(self, name: str, msg: str):
        super().__init__(msg)
        self.name = name
        self.msg = msg
        self.line = ""       # the offending config-file line, when read from a file
        self.lineno = 0
        self.from_command_line = False   # the line is a --name option (numbered as Redis does)


@dataclass(frozen=True, slots=True)
class ConfigSpec:
    name: str
    type: str                 # bool | int | memory | float | enum | string
    default: Any
    mutable: bool = True
    lo: float | None = None   # inclusive bounds for int / memory / float
    hi: float | None = None
    choices: tuple = ()
    doc: str = ""
    sensitive: bool = False   # redacted nowhere, but never logged
    clamp: tuple | None = None  # (lo, hi): accepted values are silently clamped (hz)
    protected: bool = False   # CONFIG SET refused unless enable-protected-configs allows it
    check: Callable | None = None  # value -> value, or ValueError(Redis-style reason)
    multi: bool = False       # takes several words (bind, save): joined by one space
    normalize: Callable | None = None  # (value, old) -> stored value; ValueError = refused
    alias_of: str = ""        # the other name of the same setting (both kept equal)
    compat: str = ""          # config_redis.py rows: encoding | tuning | switch


LITEHIT_MAX_SLOTS = 64       # litehit-capacities: capacities reported in INFO litehit
NOT_PERSISTED = ("ferrumkv keeps data in memory only; nothing would be saved "
                 "(see docs/compatibility.md)")


SAVE_DEFAULT = "3600 1 300 100 60 10000"   # Redis 7.0's: after 1 h / 1 change, 5 min /
                                            # 100 changes, 1 min / 10000 changes


def _check_save(value: str) -> str:
    """Redis's setConfigSaveOption rules: pairs of ``seconds changes``, seconds >= 1 and
    changes >= 0 (persistence/saver.py fires them)."""
    words = value.split()
    if len(words) % 2 or any(parse_ll(w) is None or parse_ll(w) < (1 - i % 2)
                             for i, w in enumerate(words)):
        raise ValueError("Invalid save parameters")
    return " ".join(str(int(w)) for w in words)


def _check_appendonly(value: bool) -> bool:
    if value:
        raise ValueError("appendonly yes is not supported: " + NOT_PERSISTED)
    return value


def _check_capacities(value: str) -> str:
    """Space (or comma) separated block counts, each 0..LLONG_MAX, at most 64 of them."""
    words = value.replace(",", " ").split()
    if len(words) > LITEHIT_MAX_SLOTS or any(parse_ll(w) is None or parse_ll(w) < 0
                                             for w in words):
        raise ValueError("argument must be up to %d capacities in blocks, each an integer "
                         "between 0 and %d" % (LITEHIT_MAX_SLOTS, LLONG_MAX))
    return " ".join(str(int(w)) for w in words)


def _check_trace_file(value: str) -> str:
    from .safefile import check_basename
    if value and not check_basename(value):
        raise ValueError("litehit-trace-file can't be a path, just a filename")
    return value


def _check_aclfile(value: str) -> str:
    from .safefile import check_basename
    if value and not check_basename(value):
        raise ValueError("aclfile can't be a path, just a filename (kept inside dir)")
    return value


def _check_bind(value: str) -> str:
    words = value.split()
    if not words:
        raise ValueError("argument must be one or more addresses")
    return " ".join(words)


PERCENTILES_INVALID = "Invalid latency-tracking-info-percentiles parameters"
PERCENTILES_RANGE = ("latency-tracking-info-percentiles parameters should sit between "
                     "[0.0,100.0]")


def _check_percentiles(value: str) -> str:
    """Redis's setConfigLatencyTrackingInfoPercentilesOutputOption: ``""`` is no
    percentile; else words split on single spaces (so ``" 1"`` has an empty word), each a
    whole C ``strtold`` number (decimal, hex, inf; not nan, no spaces) between 0 and 100.
    Stored as CONFIG GET prints them: ``%f`` with the trailing zeros and point dropped
    (``99.9``, ``50``, ``16`` for 0x10, ``0`` for 1e-300, ``12.345679``)."""
    if value == "":
        return ""
    out = []
    for w in value.split(" "):
        p = _strtold(w)
        if p is None:
            raise ValueError(PERCENTILES_INVALID)
        if not 0.0 <= p <= 100.0:
            raise ValueError(PERCENTILES_RANGE)
        text = "%f" % p
        out.append(text.rstrip("0").rstrip(".") if "." in text else text)
    return " ".join(out)


def _strtold(w: str) -> float | None:
    """A whole word as Redis's string2ld reads it, or None (nan, junk, spaces)."""
    if _FLOAT_RE.match(w):
        return float(w)
    if _HEX_FLOAT_RE.match(w):
        sign = -1.0 if w[0] == "-" else 1.0
        body = w.lstrip("+-")
        if "p" not in body.lower():
            body += "p0"
        return sign * float.fromhex(body)
    if _INF_RE.match(w):
        return math.inf if w[0] != "-" else -math.inf
    return None


_HEX_FLOAT_RE = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                           r"(?:[pP][+-]?[0-9]+)?\Z")
_INF_RE = re.compile(r"[+-]?(?:inf|infinity)\Z", re.IGNORECASE)
S = ConfigSpec
TABLE: tuple[ConfigSpec, ...] = (
    # ---- network and clients ----
    S("bind", "string", "127.0.0.1 -::1", False, check=_check_bind, multi=True,
      doc="addresses to listen on (space separated; a leading - marks an address that may "
          "be missing)"),
    S("protected-mode", "bool", True, True,
      doc="without a password, refuse clients that are not on the loopback interface"),
    S("enable-protected-configs", "enum", "no", False, choices=("no", "yes", "local"),
      doc="may CONFIG SET change dir and other file names (local: loopback clients only)"),
    S("port", "int", 6380, True, 0, 65535, doc="TCP port (0 = pick a free one)"),
    S("maxclients", "int", 10000, True, 1, UINT_MAX, doc="connections refused beyond this"),
    S("timeout", "int", 0, True, 0, INT_MAX, doc="close idle clients after N seconds (0 = never)"),
    S("tcp-keepalive", "int", 300, True, 0, INT_MAX, doc="SO_KEEPALIVE interval, seconds"),
    S("requirepass", "string", "", True, doc="password for AUTH / HELLO AUTH (empty = none)",
      sensitive=True),
    # ---- ACL (acl.py, commands/acl.py) ----
    S("aclfile", "string", "", False, check=_check_aclfile,
      doc="ACL SAVE / LOAD file: a plain file name inside dir (empty = none)"),
    S("acllog-max-len", "int", 128, True, 0, LLONG_MAX, doc="entries kept by ACL LOG"),
    S("acl-pubsub-default", "enum", "resetchannels", True,
      choices=("allchannels", "resetchannels"),
      doc="channel permissions of new users (and of 'reset')"),
    S("proto-max-bulk-len", "memory", 512 * 1024 * 1024, True, 1024 * 1024, LLONG_MAX,
      doc="largest bulk string a client may send"),
    S("databases", "int", 16, False, 1, INT_MAX, doc="number of logical databases"),
    S("hll-sparse-max-bytes", "memory", 3000, True, 0, LLONG_MAX,
      doc="largest sparse HyperLogLog in bytes before it turns dense (as Redis)"),
    S("notify-keyspace-events", "string", "", True,
      doc="keyspace notification classes, Redis letters K E g $ l s h z x e t m d n A"),
    S("tracking-table-max-keys", "int", 1000000, True, 0, LLONG_MAX,
      doc="keys CLIENT TRACKING remembers before invalidating the oldest (0 = no limit)"),
    S("client-query-buffer-limit", "memory", 1024 ** 3, True, 1024 * 1024, LLONG_MAX,
      doc="a client with more unparsed input than this is closed"),
    S("client-output-buffer-limit", "string", limits.OBUF_DEFAULT, True,
      doc="per class (normal, replica, pubsub): hard limit, soft limit, soft seconds; a "
          "client whose unsent replies pass them is closed (0 = no limit)",
      normalize=limits.normalize_obuf_config),
    # ---- logging and files ----
    S("loglevel", "enum", "notice", True, choices=("debug", "verbose", "notice", "warning"),
      doc="log verbosity"),
    S("logfile", "string", "", False, doc="log file path (empty = stderr)"),
    S("dir", "string", ".", True, protected=True,
      doc="working directory for files the server writes"),
    S("save", "string", SAVE_DEFAULT, True, check=_check_save, multi=True,
      doc="RDB snapshot rules: \"seconds changes\" pairs; \"\" = no automatic saves"),
    S("appendonly", "bool", False, True, check=_check_appendonly,
      doc="kept for tools that read it; only no is accepted"),
    # ---- background work ----
    S("hz", "int", 10, True, 0, INT_MAX, clamp=(CONFIG_MIN_HZ, CONFIG_MAX_HZ),
      doc="cron frequency (expire cycle, eviction, shadow), clamped to 1..500"),
    S("active-expire-effort", "int", 1, True, 1, 10, doc="active expiry effort, as Redis"),
    # ---- memory and eviction ----
    S("maxmemory", "memory", 0, True, 0, ULLONG_MAX, doc="memory limit (0 = none)"),
    S("maxmemory-policy", "enum", "noeviction", True, choices=POLICIES, doc="eviction policy"),
    S("maxmemory-samples", "int", 5, True, 1, INT_MAX, doc="keys sampled per eviction"),
    S("lazyfree-lazy-eviction", "bool", False, True,
      doc="evicted keys' values are freed in the background"),
    S("lazyfree-lazy-expire", "bool", False, True,
      doc="expired keys' values are freed in the background"),
    S("lazyfree-lazy-server-del", "bool", False, True,
      doc="values the server deletes itself (overwrite, RENAME) are freed in the background"),
    S("lazyfree-lazy-user-del", "bool", False, True, doc="DEL frees like UNLINK"),
    S("lazyfree-lazy-user-flush", "bool", False, True,
      doc="FLUSHALL / FLUSHDB without SYNC or ASYNC free in the background"),
    S("maxmemory-eviction-tenacity", "int", 10, True, 0, 100,
      doc="time budget for one eviction pass"),
    S("lfu-log-factor", "int", 10, True, 0, INT_MAX, doc="Morris counter logarithm factor"),
    S("lfu-decay-time", "int", 1, True, 0, INT_MAX,
      doc="minutes per LFU counter decrement (0 = never decay)"),
    S("ahe-controller", "enum", "adaptive", True, choices=("adaptive", "spec"),
      doc="AHE alpha controller: adaptive (docs/ahe-adaptive.md) or spec (the design "
          "document as written, with ahe-feedback); re-setting it resets alpha"),
    S("ahe-probation", "bool", True, True,
      doc="adaptive AHE: new keys are on probation until their first access, and leave "
          "first once idle (one-hit wonders go early; docs/ahe-adaptive.md, Probation)"),
    S("ahe-feedback", "enum", "window", True, choices=("window", "lifetime"),
      doc="hit ratio the AHE controller follows: each window's, or the server lifetime's"),
    S("ahe-alpha-init", "float", 0.5, True, 0.05, 0.95,
      doc="initial AHE recency weight (setting it restarts alpha from this value)"),
    S("ahe-step", "float", 0.05, True, 0.0, 0.9, doc="AHE alpha change per update"),
    S("ahe-window", "int", 64, True, 1, INT_MAX, doc="evicted keys per AHE alpha update"),
    # ---- litehit shadow (exact LRU curve of the live access stream) ----
    S("litehit-shadow", "bool", False, True, doc="replay the access stream through litehit"),
    S("litehit-shadow-mode", "enum", "keys", True, choices=("keys", "prefix"),
      doc="keys: every key read is a 1-block request; prefix: an MGET is one prefix request"),
    S("litehit-block-bytes", "memory", 0, True, 0, LLONG_MAX,
      doc="bytes one key is charged to turn maxmemory into blocks (0 = average key size)"),
    S("litehit-capacities", "string", "", True, check=_check_capacities, multi=True,
      doc="extra capacities in blocks to report, space separated (INFO litehit slots)"),
    S("litehit-trace-file", "string", "", True, protected=True, check=_check_trace_file,
      doc="record the access stream as a litehit trace (JSONL) in dir (empty = off)"),
    S("litehit-shadow-sample", "float", 1.0, True, 0.0001, 1.0,
      doc="share of keys the shadow replays (SHARDS spatial sampling; 1 = every key, exact)"),
    S("litehit-shadow-maxmemory", "memory", 32 * 1024 * 1024, True, 1024 * 1024, LLONG_MAX,
      doc="bound on the shadow's own memory (outside maxmemory): kept facts give way "
          "first, then the window restarts at half the sample rate"),
    S("litehit-window-seconds", "int", 60, True, 1, 86400,
      doc="span of the shadow's windowed hit rates (INFO litehit_window_*), seconds"),
    # ---- the operator's console (web page, JSON API, Prometheus /metrics) ----
    S("console-port", "int", 0, True, 0, 65535,
      doc="HTTP port of the web console and /metrics on the bind addresses (0 = off); "
          "loopback clients only unless requirepass is set, which it then asks for"),
    # ---- Lua scripting (scripting.py) ----
    S("busy-reply-threshold", "int", 5000, True, 0, LLONG_MAX,
      doc="ms a script may run before other clients get -BUSY (alias lua-time-limit)"),
    S("lua-time-limit", "int", 5000, True, 0, LLONG_MAX, doc="alias of busy-reply-threshold"),
    # ---- operators: SLOWLOG, latency monitor, latency histograms (ops.py) ----
    S("slowlog-log-slower-than", "int", 10000, True, -1, LLONG_MAX,
      doc="log commands that ran at least this many microseconds (-1 = off, 0 = all)"),
    S("slowlog-max-len", "int", 128, True, 0, LLONG_MAX, doc="slowlog entries kept"),
    S("latency-monitor-threshold", "int", 0, True, 0, LLONG_MAX,
      doc="record latency events of at least this many milliseconds (0 = off)"),
    S("latency-tracking", "bool", True, True,
      doc="per-command latency histograms (LATENCY HISTOGRAM, INFO latencystats)"),
    S("latency-tracking-info-percentiles", "string", "50 99 99.9", True, multi=True,
      check=_check_percentiles,
      doc="percentiles INFO latencystats reports"),
)
del S

SPECS: dict[str, ConfigSpec] = {}


def register(*specs: ConfigSpec) -> None:
    """Add rows from another module (eviction, shadow) before a :class:`Config` is built."""
    for spec in specs:
        SPECS[spec.name] = spec


register(*TABLE)

_MEM_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 ** 2, "mb": 1024 ** 2,
              "g": 1000 ** 3, "gb": 1024 ** 3}


def parse_memory(text: str) -> int | None:
    """Redis ``memtoull``: ``"256mb"`` -> 268435456, ``"1k"`` -> 1000; None when invalid.

    Digits then an optional unit (b, k, kb, m, mb, g, gb in any case); no sign, no spaces,
    no fraction.  As in Redis, a bare unit (``"kb"``) reads as 0.  Complexity: O(len).
    """
    n = 0
    while n < len(text) and "0" <= text[n] <= "9":
        n += 1
    digits, unit = text[:n], text[n:].lower()
    mul = _MEM_UNITS.get(unit)
    if mul is None or len(digits) > MEMTOULL_MAX_DIGITS:
        return None
    val = min(int(digits) if digits else 0, ULLONG_MAX)  # strtoull saturates (ERANGE unread)
    return (val * mul) & ULLONG_MAX  # Redis multiplies in unsigned 64-bit


def parse_ll(text: str) -> int | None:
    """Redis ``string2ll``: a signed 64-bit decimal, no ``+``, spaces or leading zeros."""
    if not text or len(text) > 20:
        return None
    digits = text[1:] if text[0] == "-" else text
    if not digits.isascii() or not digits.isdigit() or (digits[0] == "0" and len(text) > 1):
        return None
    val = int(text)
    return val if -LLONG_MAX - 1 <= val <= LLONG_MAX else None


def format_memory_human(n: int) -> str:
    """Redis bytesToHuman: ``1.00M``, ``512B``."""
    for unit, size in (("P", 1024 ** 5), ("T", 1024 ** 4), ("G", 1024 ** 3),
                       ("M", 1024 ** 2), ("K", 1024)):
        if n >= size:
            return "%.2f%s" % (n / size, unit)
    return "%dB" % n


_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")


def _parse(spec: ConfigSpec, raw: str) -> Any:
    """The typed value of ``raw`` for ``spec``, or ConfigError with Redis's reason."""
    val = _parse_type(spec, raw)
    if spec.check is not None:
        try:
            val = spec.check(val)
        except ValueError as e:
            raise ConfigError(spec.name, str(e)) from None
    return val


def _parse_type(spec: ConfigSpec, raw: str) -> Any:
    t = spec.type
    if t == "bool":
        low = raw.lower()
        if low not in ("yes", "no"):
            raise ConfigError(spec.name, "argument must be 'yes' or 'no'")
        return low == "yes"
    if t == "enum":
        low = raw.lower()
        if low not in spec.choices:
            raise ConfigError(spec.name, "argument(s) must be one of the following: "
                              + ", ".join(spec.choices))
        return low
    if t == "string":
        if spec.name == "dir":  # Redis chdirs; we keep the absolute path (GET shows it)
            if not os.path.isdir(raw):
                raise ConfigError(spec.name, "No such file or directory")
            return os.path.abspath(raw)
        return raw
    if t == "float":   # a plain decimal as strtod reads it: no spaces, "_", inf or nan
        val = float(raw) if _FLOAT_RE.match(raw) else math.nan
        if val != val or math.isinf(val):
            raise ConfigError(spec.name, "argument couldn't be parsed into a number")
    elif t == "memory":
        val = parse_memory(raw)
        if val is None:
            raise ConfigError(spec.name, "argument must be a memory value")
    else:
        val = parse_ll(raw)
        if val is None:
            raise ConfigError(spec.name, "argument couldn't be parsed into an integer")
    if (spec.lo is not None and val < spec.lo) or (spec.hi is not None and val > spec.hi):
        fmt = "%g" if t == "float" else "%d"
        raise ConfigError(spec.name, ("argument must be between " + fmt + " and " + fmt
                                      + " inclusive") % (spec.lo, spec.hi))
    if spec.clamp is not None:
        val = min(max(val, spec.clamp[0]), spec.clamp[1])
    return val


def format_value(spec: ConfigSpec, val: Any) -> str:
    """The text CONFIG GET returns."""
    if spec.type == "bool":
        return "yes" if val else "no"
    if spec.type == "float":
        return repr(float(val)).rstrip("0").rstrip(".") if val != int(val) else str(int(val))
    return str(val)


def protected_allowed(setting: str, client_is_local: bool) -> bool:
    """Redis allowProtectedAction: ``enable-protected-configs`` yes, or local and local."""
    return setting == "yes" or (setting == "local" and client_is_local)


class Config:
    """Current values, typed, plus listeners that apply a change to the running server."""

    def __init__(self):
        self.values: dict[str, Any] = {s.name: s.default for s in SPECS.values()}
        if "dir" in self.values:
            self.values["dir"] = os.path.abspath(self.values["dir"])
        self.file: str | None = None
        self.acl_users: list = []    # words after each "user" line (acl_file.install)
        self.acl_rewrite: Callable[[], list] | None = None   # CONFIG REWRITE's user lines
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}
        for spec in SPECS.values():     # an alias and its name hold one value
            if spec.alias_of in self.values:
                self.on_change(spec.name, self._mirror(spec.alias_of), call_now=False)

    def _mirror(self, name: str) -> Callable[[Any], None]:
        """A listener that copies a value to the other name and runs that name's listeners
        (their mirror back finds the value equal and stops)."""
        def fn(value: Any) -> None:
            if self.values[name] != value:
                self.values[name] = value
                for listener in self._listeners.get(name, ()):
                    listener(value)
        return fn

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def on_change(self, name: str, fn: Callable[[Any], None], call_now: bool = True) -> None:
        """Call ``fn(value)`` whenever ``name`` changes (and once now)."""
        self._listeners.setdefault(name, []).append(fn)
        if call_now:
            fn(self.values[name])

    def set(self, name: str, raw: str, runtime: bool = False) -> None:
        """Validate and store one value; raise ConfigError with Redis's wording."""
        spec = SPECS.get(name.lower())
        if spec is None:
            raise ConfigError(name, "unknown")
        if runtime and not spec.mutable:
            raise ConfigError(spec.name, "can't set immutable config")
        self.set_many([(spec.name, raw)])

    def set_many(self, pairs: list[tuple[str, str]]) -> None:
        """Set several values, all or nothing (Redis 7 CONFIG SET).

        Every value is parsed and checked first; then each is stored and its listeners
        run, in order.  A listener may refuse with ValueError (e.g. the port is taken):
        the values stored so far are put back and their listeners run again, so the server
        ends as it was.  Complexity: O(pairs) plus the listeners.
        """
        parsed = []
        for name, raw in pairs:
            spec = SPECS[name]
            val = _parse(spec, raw)
            if spec.normalize is not None:      # (value, current) -> stored value
                try:
                    val = spec.normalize(val, self.values[spec.name])
                except ValueError as e:
                    raise ConfigError(spec.name, str(e)) from None
            parsed.append((spec, val))
        done: list[tuple[str, Any]] = []
        try:
            for spec, val in parsed:
                done.append((spec.name, self.values[spec.name]))
                self.values[spec.name] = val
                for fn in self._listeners.get(spec.name, ()):
                    fn(val)
        except ValueError as e:
            for name, old in reversed(done):
                if self.values[name] != old:
                    self.values[name] = old
                    for fn in self._listeners.get(name, ()):
                        try:
                            fn(old)
                        except ValueError:   # the old value held before: keep going
                            pass
            raise ConfigError(done[-1][0], str(e)) from None

    def get(self, patterns: list[str], match: Callable[[str, str], bool]) -> dict[str, str]:
        """CONFIG GET: the names matching any pattern, with their values.

        As Redis 7.0: a pattern without ``* ? [`` is looked up by name (any case) and the
        reply repeats it as given; a glob pattern is matched (``match(pattern, name)``,
        case-insensitive) against every name.  Each config appears once.
        """
        out: dict[str, str] = {}
        seen: set[str] = set()
        for pat in patterns:
            if not any(ch in pat for ch in "*?["):
                spec = SPECS.get(pat.lower())
                if spec is not None and spec.name not in seen:
                    seen.add(spec.name)
                    out[pat] = format_value(spec, self.values[spec.name])
                continue
            for spec in SPECS.values():
                if spec.name not in seen and match(pat, spec.name):
                    seen.add(spec.name)
                    out[spec.name] = format_value(spec, self.values[spec.name])
        return out

    # ---- files and command line (conf_file.py) ----

    def load_file(self, path: str) -> int:
        """Read a redis.conf-style file; ConfigError carries the line for the FATAL report.
        Returns the file's number of newlines (command-line options are numbered after)."""
        from .conf_file import load_file
        return load_file(self, path)

    def load_args(self, argv: list[str], first_lineno: int = 2) -> None:
        """``--name value [value...]`` pairs, as redis-server accepts them (later wins)."""
        from .conf_file import load_args
        load_args(self, argv, first_lineno)

    def rewrite(self) -> None:
        """CONFIG REWRITE: keep the file's comments and order, update or append values."""
        from .conf_file import rewrite
        rewrite(self)


from . import config_redis  # noqa: E402,F401  (registers Redis's other configs)

if __name__ == "__main__":  # pragma: no cover  (python -m ferrumkv_py.config --conf)
    from .conf_render import main
    sys.exit(main(sys.argv[1:]))
