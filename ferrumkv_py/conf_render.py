"""``conf/ferrumkv.conf``, rendered from the config table (``config.SPECS``).

``python -m ferrumkv_py.config --conf > conf/ferrumkv.conf`` regenerates it; a test checks
the committed file equals :func:`render_conf`, so the documented file cannot drift from the
code.  Sections group the knobs by name prefix; longer notes for some knobs live here.

Complexity: O(knobs).
"""

from __future__ import annotations

import sys

from .config import SPECS, ConfigSpec, format_value


CONF_SECTIONS = (  # (name prefixes, section title); first match wins
    (("bind", "port", "maxclients", "timeout", "tcp-", "requirepass", "proto-", "databases",
      "client-"),
     "NETWORK AND CLIENTS"),
    (("protected-mode", "enable-protected-configs"), "SECURITY"),
    (("loglevel", "logfile", "dir", "save", "appendonly"), "LOGGING AND FILES"),
    (("hz", "active-expire", "lazyfree-"), "BACKGROUND WORK"),
    (("maxmemory", "lfu-"), "MEMORY AND EVICTION"),
    (("ahe-",), "ADAPTIVE HYBRID EVICTION (allkeys-ahe / volatile-ahe)"),
    (("litehit-",), "LITEHIT SHADOW"),
    (("busy-reply-threshold", "lua-time-limit"), "LUA SCRIPTING"),
)
COMPAT_SECTION = "OTHER REDIS 7.0 CONFIGS (config_redis.py; see docs/compatibility.md)"

CONF_NOTES = {
    "maxmemory-policy": """\
What to do when a write needs memory above maxmemory:
  volatile-lru / allkeys-lru    least recently used, among keys with a TTL / all keys
  volatile-lfu / allkeys-lfu    least frequently used (Morris counter, see lfu-log-factor)
  volatile-random / allkeys-random
  volatile-ttl                  the key whose TTL ends soonest
  volatile-ahe / allkeys-ahe    adaptive hybrid of recency and frequency (ferrumkv only)
  noeviction                    refuse the write: -OOM command not allowed ...
Reads are always served.""",
    "maxmemory-samples": "More samples approximate exact LRU/LFU better and cost more CPU.",
    "lfu-log-factor": """\
How slowly the 8-bit access counter grows: a hit at counter c increments it with
probability 1 / ((c - 5) * factor + 1) (counters up to 5 always grow).  Counter after
N hits, by factor (from Redis's measurements):
  factor |  100 hits | 1K hits | 100K hits | 1M hits | 10M hits
  -------+-----------+---------+-----------+---------+---------
       0 |       104 |     255 |       255 |     255 |      255
       1 |        18 |      49 |       255 |     255 |      255
      10 |        10 |      18 |       142 |     255 |      255
     100 |         8 |      11 |        49 |     143 |      255""",
    "lfu-decay-time": "The counter loses one per this many idle minutes (as Redis 7.0 does).",
    "requirepass": "When set, clients must AUTH <password> or HELLO 3 AUTH default <password>.",
    "proto-max-bulk-len": "A longer bulk in a request is a protocol error that closes the client.",
    "save": "RDB snapshots (docs/persistence.md): BGSAVE when a rule's seconds have passed\n"
            "and its number of changes happened; SHUTDOWN and SIGTERM save when rules exist.\n"
            "appendonly yes is refused: AOF is not written yet.",
    "bind": "The default listens on the loopback interface only (::1 when IPv6 is there).",
    "protected-mode": "With protected-mode yes and no requirepass, a client from any address\n"
                      "but 127.x.x.x or ::1 gets Redis's -DENIED error and is disconnected.",
    "enable-protected-configs": "no: CONFIG SET refuses dir and litehit-trace-file; yes: "
                                "allowed;\nlocal: allowed from loopback clients only.",
}


def _section_of(name: str) -> str:
    for prefixes, title in CONF_SECTIONS:
        if name.startswith(prefixes):
            return title
    return "OTHER"


def _conf_default(spec: ConfigSpec) -> str:
    """The default as CONFIG REWRITE would write it (memory in the largest exact unit,
    strings quoted)."""
    from .conf_file import conf_value
    return conf_value(spec, spec.default).decode("ascii")


def render_conf() -> str:
    """The text of ``conf/ferrumkv.conf``: every knob in the table, documented, at its default.

    Complexity: O(rows).
    """
    out = [
        "# ferrumkv_py configuration file.",
        "#",
        "# Generated from the table in ferrumkv_py/config.py; regenerate it with",
        "#     python -m ferrumkv_py.config --conf > conf/ferrumkv.conf",
        "# (tests/ferrumkv/test_config.py fails when this file and the table disagree).",
        "#",
        "# Start the server with it, and override any directive on the command line:",
        "#     ferrumkv-server conf/ferrumkv.conf --port 7777 --maxmemory 256mb",
        "#",
        "# Every directive below is shown at its default.  Memory sizes take units:",
        "#     1k = 1000 bytes, 1kb = 1024 bytes, 1m = 1000000, 1mb = 1048576,",
        "#     1g = 1000000000, 1gb = 1073741824 (case-insensitive).",
        "# Directives marked 'runtime' can also be changed with CONFIG SET.",
    ]
    by_section: dict[str, list[ConfigSpec]] = {}
    for spec in SPECS.values():
        title = COMPAT_SECTION if spec.compat else _section_of(spec.name)
        by_section.setdefault(title, []).append(spec)
    titles = [t for _, t in CONF_SECTIONS] + ["OTHER", COMPAT_SECTION]
    for title in titles:
        specs = by_section.get(title)
        if not specs:
            continue
        out += ["", "#" * 8 + " " + title + " " + "#" * max(4, 70 - len(title)), ""]
        for spec in specs:
            if spec.compat:     # one line of comment each: there are many
                out.append("# %s: %s%s." % (spec.name, spec.doc or "alias of " + spec.alias_of,
                                            "" if spec.mutable else " (startup only)"))
                out.append("%s %s" % (spec.name, _conf_default(spec)))
                continue
            out.append("# " + spec.name + ": " + spec.doc + ".")
            out += ["# " + line if line else "#" for line in
                    CONF_NOTES.get(spec.name, "").splitlines()]
            facts = [spec.type + ("" if spec.mutable else ", startup only")
                     + (", runtime" if spec.mutable else "")
                     + (" if enable-protected-configs allows" if spec.protected else "")]
            if spec.choices:
                facts.append("one of: " + ", ".join(spec.choices))
            elif spec.lo is not None:
                facts.append("range %s..%s" % (format_value(spec, spec.lo),
                                               format_value(spec, spec.hi)))
            out.append("# (" + "; ".join(facts) + ")")
            out.append("%s %s" % (spec.name, _conf_default(spec)))
            out.append("")
        if out[-1] == "":
            out.pop()
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if argv == ["--conf"]:
        sys.stdout.write(render_conf())
        return 0
    sys.stderr.write("usage: python -m ferrumkv_py.config --conf > conf/ferrumkv.conf\n")
    return 2
