"""Configuration: one table behind the config file, the ``--name value`` CLI and CONFIG.

Each :class:`ConfigSpec` row says the name, the type, the default, the bounds or choices and
whether CONFIG SET may change it at runtime.  Adding a knob is adding a row (and reading it
where it matters, usually through :meth:`Config.on_change`).

Memory sizes parse like Redis ``memtoull``: ``1k`` = 1000, ``1kb`` = 1024, ``m``/``mb``,
``g``/``gb``, case-insensitive.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from typing import Any, Callable

INT_MAX = 2147483647
LLONG_MAX = 9223372036854775807

POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
            "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction",
            "allkeys-ahe", "volatile-ahe")


class ConfigError(Exception):
    """A bad name or value; ``msg`` is the text after ``... - `` in Redis's CONFIG SET error."""

    def __init__(self, name: str, msg: str):
        super().__init__(msg)
        self.name = name
        self.msg = msg


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


S = ConfigSpec
TABLE: tuple[ConfigSpec, ...] = (
    # ---- network and clients ----
    S("bind", "string", "127.0.0.1", False, doc="addresses to listen on (space separated)"),
    S("port", "int", 6380, False, 0, 65535, doc="TCP port (0 = pick a free one)"),
    S("maxclients", "int", 10000, True, 1, INT_MAX, doc="connections refused beyond this"),
    S("timeout", "int", 0, True, 0, INT_MAX, doc="close idle clients after N seconds (0 = never)"),
    S("tcp-keepalive", "int", 300, True, 0, INT_MAX, doc="SO_KEEPALIVE interval, seconds"),
    S("requirepass", "string", "", True, doc="password for AUTH / HELLO AUTH (empty = none)",
      sensitive=True),
    S("proto-max-bulk-len", "memory", 512 * 1024 * 1024, True, 1024 * 1024, LLONG_MAX,
      doc="largest bulk string a client may send"),
    S("databases", "int", 16, False, 1, INT_MAX, doc="number of logical databases"),
    # ---- logging and files ----
    S("loglevel", "enum", "notice", True, choices=("debug", "verbose", "notice", "warning"),
      doc="log verbosity"),
    S("logfile", "string", "", False, doc="log file path (empty = stderr)"),
    S("dir", "string", ".", True, doc="working directory for files the server writes"),
    S("save", "string", "", True, doc="kept for tools that read it; nothing is persisted"),
    S("appendonly", "bool", False, True, doc="kept for tools that read it; no AOF is written"),
    # ---- background work ----
    S("hz", "int", 10, True, 1, 500, doc="cron frequency (expire cycle, eviction, shadow)"),
    S("active-expire-effort", "int", 1, True, 1, 10, doc="active expiry effort, as Redis"),
    # ---- memory and eviction ----
    S("maxmemory", "memory", 0, True, 0, LLONG_MAX, doc="memory limit (0 = none)"),
    S("maxmemory-policy", "enum", "noeviction", True, choices=POLICIES, doc="eviction policy"),
    S("maxmemory-samples", "int", 5, True, 1, INT_MAX, doc="keys sampled per eviction"),
    S("maxmemory-eviction-tenacity", "int", 10, True, 0, 100,
      doc="time budget for one eviction pass"),
    S("lfu-log-factor", "int", 10, True, 0, INT_MAX, doc="Morris counter logarithm factor"),
    S("lfu-decay-time", "int", 1, True, 0, INT_MAX,
      doc="minutes per LFU counter decrement (0 = never decay)"),
)
del S

SPECS: dict[str, ConfigSpec] = {}


def register(*specs: ConfigSpec) -> None:
    """Add rows from another module (eviction, shadow) before a :class:`Config` is built."""
    for spec in specs:
        SPECS[spec.name] = spec


register(*TABLE)

_MEM_UNITS = (("gb", 1024 ** 3), ("mb", 1024 ** 2), ("kb", 1024),
              ("g", 1000 ** 3), ("m", 1000 ** 2), ("k", 1000), ("b", 1))


def parse_memory(text: str) -> int | None:
    """``"256mb"`` -> 268435456; ``"1k"`` -> 1000; None when not a memory value."""
    s = text.strip().lower()
    mul = 1
    for suffix, factor in _MEM_UNITS:
        if s.endswith(suffix):
            s, mul = s[: -len(suffix)], factor
            break
    if not s or not (s.isdigit() or (s[0] == "-" and s[1:].isdigit())):
        return None
    return int(s) * mul


def format_memory_human(n: int) -> str:
    """Redis bytesToHuman: ``1.00M``, ``512B``."""
    for unit, size in (("P", 1024 ** 5), ("T", 1024 ** 4), ("G", 1024 ** 3),
                       ("M", 1024 ** 2), ("K", 1024)):
        if n >= size:
            return "%.2f%s" % (n / size, unit)
    return "%dB" % n


def _parse(spec: ConfigSpec, raw: str) -> Any:
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
        return raw
    if t == "float":
        try:
            val = float(raw)
        except ValueError:
            raise ConfigError(spec.name, "argument couldn't be parsed into a number") from None
        if val != val:
            raise ConfigError(spec.name, "argument couldn't be parsed into a number")
    elif t == "memory":
        val = parse_memory(raw)
        if val is None:
            raise ConfigError(spec.name, "argument must be a memory value")
    else:
        try:
            val = int(raw, 10)
        except ValueError:
            raise ConfigError(spec.name, "argument couldn't be parsed into an integer") from None
    if (spec.lo is not None and val < spec.lo) or (spec.hi is not None and val > spec.hi):
        fmt = "%g" if t == "float" else "%d"
        raise ConfigError(spec.name, ("argument must be between " + fmt + " and " + fmt
                                      + " inclusive") % (spec.lo, spec.hi))
    return val


def format_value(spec: ConfigSpec, val: Any) -> str:
    """The text CONFIG GET returns and CONFIG REWRITE writes."""
    if spec.type == "bool":
        return "yes" if val else "no"
    if spec.type == "float":
        return repr(float(val)).rstrip("0").rstrip(".") if val != int(val) else str(int(val))
    return str(val)


class Config:
    """Current values, typed, plus listeners that apply a change to the running server."""

    def __init__(self):
        self.values: dict[str, Any] = {s.name: s.default for s in SPECS.values()}
        self.file: str | None = None
        self._listeners: dict[str, list[Callable[[Any], None]]] = {}

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
        val = _parse(spec, raw)
        old = self.values[spec.name]
        self.values[spec.name] = val
        try:
            for fn in self._listeners.get(spec.name, ()):
                fn(val)
        except ValueError as e:
            self.values[spec.name] = old
            raise ConfigError(spec.name, str(e)) from None

    def get(self, patterns: list[str]) -> dict[str, str]:
        """CONFIG GET: every name matching any glob pattern (case-insensitive), in table order."""
        pats = [p.lower() for p in patterns]
        out = {}
        for spec in SPECS.values():
            if any(p == spec.name or fnmatch.fnmatchcase(spec.name, p) for p in pats):
                out[spec.name] = format_value(spec, self.values[spec.name])
        return out

    # ---- files and command line ----

    def load_file(self, path: str) -> None:
        """Read ``name value`` lines (``#`` comments, quoted values allowed)."""
        self.file = os.path.abspath(path)
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                words = _split_conf_line(line)
                if not words:
                    continue
                name, args = words[0].lower(), words[1:]
                if name not in SPECS:
                    raise ConfigError(name, "line %d: unknown directive '%s'" % (lineno, name))
                try:
                    self.set(name, " ".join(args))
                except ConfigError as e:
                    raise ConfigError(name, "line %d: '%s': %s" % (lineno, name, e.msg)) from None

    def load_args(self, argv: list[str]) -> None:
        """``--name value [value...]`` pairs, as redis-server accepts them."""
        i = 0
        while i < len(argv):
            arg = argv[i]
            if not arg.startswith("--"):
                raise ConfigError(arg, "expected --name value, got '%s'" % arg)
            name = arg[2:].lower()
            if name not in SPECS:
                raise ConfigError(name, "unknown option '--%s'" % name)
            j = i + 1
            vals = []
            while j < len(argv) and not argv[j].startswith("--"):
                vals.append(argv[j])
                j += 1
            self.set(name, " ".join(vals))
            i = j

    def rewrite(self) -> None:
        """CONFIG REWRITE: keep the file's comments and order, update or append values."""
        if not self.file:
            raise ConfigError("", "The server is running without a config file")
        with open(self.file, encoding="utf-8") as f:
            lines = f.read().splitlines()
        seen = set()
        out = []
        for line in lines:
            words = _split_conf_line(line)
            name = words[0].lower() if words else None
            if name in SPECS:
                if name in seen:
                    continue
                seen.add(name)
                out.append(self._conf_line(SPECS[name]))
            else:
                out.append(line)
        changed = [s for s in SPECS.values()
                   if s.name not in seen and self.values[s.name] != s.default]
        if changed:
            out.append("# Generated by CONFIG REWRITE")
            out.extend(self._conf_line(s) for s in changed)
        tmp = self.file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        os.replace(tmp, self.file)

    def _conf_line(self, spec: ConfigSpec) -> str:
        val = format_value(spec, self.values[spec.name])
        if val == "" or any(c in val for c in " \"'#"):
            val = '"' + val.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return "%s %s" % (spec.name, val)


def _split_conf_line(line: str) -> list[str]:
    line = line.strip()
    if not line or line.startswith("#"):
        return []
    words, cur, quote, i = [], None, None, 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and i + 1 < len(line):
                i += 1
                cur += line[i]
            elif c == quote:
                quote = None
            else:
                cur += c
        elif c in "\"'":
            quote = c
            cur = cur or ""
        elif c.isspace():
            if cur is not None:
                words.append(cur)
                cur = None
        else:
            cur = (cur or "") + c
        i += 1
    if cur is not None:
        words.append(cur)
    return words
