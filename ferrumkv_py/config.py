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

import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

INT_MAX = 2147483647
UINT_MAX = 4294967295
LLONG_MAX = 9223372036854775807
ULLONG_MAX = 18446744073709551615
MEMTOULL_MAX_DIGITS = 127     # Redis memtoull copies the digits into a 128-byte buffer
CONFIG_MIN_HZ, CONFIG_MAX_HZ = 1, 500   # hz is accepted from 0 and clamped, as Redis does

POLICIES = ("volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl",
            "allkeys-lru", "allkeys-lfu", "allkeys-random", "noeviction",
            "allkeys-ahe", "volatile-ahe")


class ConfigError(Exception):
    """A bad name or value; ``msg`` is the text after ``... - `` in Redis's CONFIG SET error."""

    def __init__(self, name: str, msg: str):
        super().__init__(msg)
        self.name = name
        self.msg = msg
        self.line = ""       # the offending config-file line, when read from a file
        self.lineno = 0


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


S = ConfigSpec
TABLE: tuple[ConfigSpec, ...] = (
    # ---- network and clients ----
    S("bind", "string", "127.0.0.1", False, doc="addresses to listen on (space separated)"),
    S("port", "int", 6380, True, 0, 65535, doc="TCP port (0 = pick a free one)"),
    S("maxclients", "int", 10000, True, 1, UINT_MAX, doc="connections refused beyond this"),
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
    S("hz", "int", 10, True, 0, INT_MAX, clamp=(CONFIG_MIN_HZ, CONFIG_MAX_HZ),
      doc="cron frequency (expire cycle, eviction, shadow), clamped to 1..500"),
    S("active-expire-effort", "int", 1, True, 1, 10, doc="active expiry effort, as Redis"),
    # ---- memory and eviction ----
    S("maxmemory", "memory", 0, True, 0, ULLONG_MAX, doc="memory limit (0 = none)"),
    S("maxmemory-policy", "enum", "noeviction", True, choices=POLICIES, doc="eviction policy"),
    S("maxmemory-samples", "int", 5, True, 1, INT_MAX, doc="keys sampled per eviction"),
    S("maxmemory-eviction-tenacity", "int", 10, True, 0, 100,
      doc="time budget for one eviction pass"),
    S("lfu-log-factor", "int", 10, True, 0, INT_MAX, doc="Morris counter logarithm factor"),
    S("lfu-decay-time", "int", 1, True, 0, INT_MAX,
      doc="minutes per LFU counter decrement (0 = never decay)"),
    S("ahe-controller", "enum", "adaptive", True, choices=("adaptive", "spec"),
      doc="AHE alpha controller: adaptive (docs/ahe-adaptive.md) or spec (the design "
          "document as written, with ahe-feedback); re-setting it resets alpha"),
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
    S("litehit-capacities", "string", "", True,
      doc="extra capacities in blocks to report, space separated (INFO litehit slots)"),
    S("litehit-trace-file", "string", "", True,
      doc="record the access stream as a litehit trace (JSONL) in dir (empty = off)"),
    S("litehit-shadow-sample", "float", 1.0, True, 0.0001, 1.0,
      doc="share of keys the shadow replays (SHARDS spatial sampling; 1 = every key, exact)"),
    # ---- Lua scripting (scripting.py) ----
    S("busy-reply-threshold", "int", 5000, True, 0, LLONG_MAX,
      doc="ms a script may run before other clients get -BUSY (alias lua-time-limit)"),
    S("lua-time-limit", "int", 5000, True, 0, LLONG_MAX, doc="alias of busy-reply-threshold"),
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
    val = int(digits) if digits else 0
    if val > ULLONG_MAX:
        return None
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
        if spec.name == "dir":  # Redis chdirs; we keep the absolute path (GET shows it)
            if not os.path.isdir(raw):
                raise ConfigError(spec.name, "No such file or directory")
            return os.path.abspath(raw)
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
        if "dir" in self.values:
            self.values["dir"] = os.path.abspath(self.values["dir"])
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

    # ---- files and command line ----

    def load_file(self, path: str) -> None:
        """Read ``name value`` lines (``#`` comments, quoted values allowed).

        A bad line raises :class:`ConfigError` whose ``line``/``lineno`` say where, for the
        ``*** FATAL CONFIG FILE ERROR ***`` report the command line prints.
        """
        self.file = os.path.abspath(path)
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                words = _split_conf_line(line)
                if not words:
                    continue
                name, args = words[0].lower(), words[1:]
                try:
                    if name not in SPECS:
                        raise ConfigError(name, "Bad directive or wrong number of arguments")
                    self.set(name, " ".join(args))
                except ConfigError as e:
                    e.line, e.lineno = line.strip(), lineno
                    raise

    def load_args(self, argv: list[str]) -> None:
        """``--name value [value...]`` pairs, as redis-server accepts them (later wins)."""
        i = 0
        while i < len(argv):
            arg = argv[i]
            j = i + 1
            vals = []
            while j < len(argv) and not argv[j].startswith("--"):
                vals.append(argv[j])
                j += 1
            name = arg[2:].lower() if arg.startswith("--") else arg
            try:
                if not arg.startswith("--") or name not in SPECS:
                    raise ConfigError(name, "Bad directive or wrong number of arguments")
                self.set(name, " ".join(vals))
            except ConfigError as e:
                e.line = " ".join([name] + vals)
                raise
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


if __name__ == "__main__":  # pragma: no cover  (python -m ferrumkv_py.config --conf)
    from .conf_render import main
    sys.exit(main(sys.argv[1:]))
