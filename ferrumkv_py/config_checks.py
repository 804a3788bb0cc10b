"""Value checks for the Redis configs of ``config_redis.py``: each takes the parsed value and
returns what is stored, or raises ValueError with Redis's reason (the text after
``CONFIG SET failed (possibly related to argument '...') - ``).  They follow Redis 7.0's
config.c parsers (sdssplitlen on single spaces for multi-word values, strtoll / string2d,
sdstemplate for proc-title-template).  Complexity: O(len(value)) each.
"""

from __future__ import annotations

import math
import re

from .config import LLONG_MAX, parse_memory

OOM_SCORE_LIMIT = 2000             # oom-score-adj-values elements are -2000..2000
OOM_SCORE_VALUES = 3               # master, replica, background child
HOSTNAME_MAX_LEN = 255             # cluster-announce-hostname
SSIZE_MAX = LLONG_MAX


# ---- value checks (ValueError = Redis-style reason) ----

def only(keep, reason: str):
    """A switch: only ``keep`` (the value that leaves the machinery off) is accepted."""
    def check(val):
        if val != keep:
            raise ValueError("%s (only %s is accepted)" % (reason, show_value(keep)))
        return val
    return check


def refuse(keep, text: str):
    """A switch refused with Redis's own words (where Redis refuses it too)."""
    def check(val):
        if val != keep:
            raise ValueError(text)
        return val
    return check


DEFRAG_REFUSED = ("Active defragmentation cannot be enabled: it requires a Redis server "
                  "compiled with a modified Jemalloc like the one shipped by default with "
                  "the Redis source distribution")


def show_value(val) -> str:
    if val is True or val is False:
        return "yes" if val else "no"
    return '""' if val == "" else str(val)


def check_filename(name: str):
    def check(val: str) -> str:
        if "/" in val or "\\" in val:
            raise ValueError("%s can't be a path, just a filename" % name)
        return val
    return check


def check_hostname(val: str) -> str:
    """Redis isValidAnnouncedHostname."""
    if len(val) > HOSTNAME_MAX_LEN:
        raise ValueError("Hostnames must be less than 256 characters")
    if not all(ch.isascii() and (ch.isalnum() or ch in "-.") for ch in val):
        raise ValueError("Hostnames may only contain alphanumeric characters, hyphens or dots")
    return val


# Variables of proc-title-template, and whether each expands to something when Redis
# validates a template (with an empty title, standalone, no unix socket or config file).
PROC_TITLE_VARS = {"title": False, "listen-addr": True, "server-mode": False, "port": True,
                   "tls-port": True, "unixsocket": False, "config-file": False}


def check_proc_title(val: str) -> str:
    """Redis validateProcTitleTemplate over sdstemplate: ``{name}`` must be a known variable,
    ``{{`` is a literal brace (a lone ``}`` is literal too), and the template expanded with an
    empty title must not be empty."""
    bad = ValueError("template format is invalid or contains unknown variables")
    nonempty, i = False, 0
    while i < len(val):
        if val[i] != "{":
            nonempty, i = True, i + 1
        elif val[i + 1:i + 2] == "{":
            nonempty, i = True, i + 2
        else:
            end = val.find("}", i + 1)
            if end < 0 or val[i + 1:end] not in PROC_TITLE_VARS:
                raise bad
            nonempty = nonempty or PROC_TITLE_VARS[val[i + 1:end]]
            i = end + 1
    if not nonempty:
        raise bad
    return val


def split_words(val: str) -> list[str]:
    """A multi-argument CONFIG SET value as Redis splits it: on every single space."""
    return val.split(" ") if val else []


def check_oom_values(val: str) -> str:
    words = split_words(val)
    if len(words) != OOM_SCORE_VALUES:
        raise ValueError("wrong number of arguments")
    for w in words:
        n = strtoll(w)
        if n is None or not -OOM_SCORE_LIMIT <= n <= OOM_SCORE_LIMIT:
            raise ValueError("Invalid oom-score-adj-values, elements must be between "
                             "-2000 and 2000.")
    return " ".join(str(strtoll(w)) for w in words)


_STRTOLL_RE = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+\Z")


def strtoll(w: str):
    """C strtoll with the whole word consumed (leading blanks allowed; an empty word is 0,
    as strtoll reads nothing and stops at the end); None otherwise."""
    if w == "":
        return 0
    if not _STRTOLL_RE.match(w):
        return None
    return max(min(int(w.strip()), LLONG_MAX), -LLONG_MAX - 1)


_DEC_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_HEX_RE = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                     r"(?:[pP][+-]?[0-9]+)?\Z")
_SPECIAL_RE = re.compile(r"[+-]?(?:inf|infinity)\Z", re.IGNORECASE)


def string2d(w: str):
    """Redis string2d: strtod over the whole word, no surrounding blanks, not NaN."""
    if not w or w[0].isspace() or w[-1].isspace():
        return None
    if _DEC_RE.match(w) or _SPECIAL_RE.match(w):
        val = float(w)
    elif _HEX_RE.match(w):
        sign = -1.0 if w[0] == "-" else 1.0
        val = sign * float.fromhex(w.lstrip("+-"))
    else:
        return None
    return None if math.isnan(val) else val


SHUTDOWN_FLAGS = ("default", "save", "nosave", "now", "force")


def check_shutdown_flags(val: str) -> str:
    """shutdown-on-sigint / -sigterm: a set of flags, shown in table order ("default" = none)."""
    words = [w.lower() for w in split_words(val)]
    if not words or any(w not in SHUTDOWN_FLAGS for w in words):
        raise ValueError("argument(s) must be one of the following: " + ", ".join(SHUTDOWN_FLAGS))
    if "save" in words and "nosave" in words:
        raise ValueError("shutdown options SAVE and NOSAVE can't be used simultaneously")
    shown = [f for f in SHUTDOWN_FLAGS[1:] if f in words]
    return " ".join(shown) or "default"


def check_memory_or_percent(val: str) -> str:
    """maxmemory-clients: bytes (memory units) or ``N%`` of maxmemory, N at most 100."""
    if val.endswith("%"):
        digits = val[:-1]
        if not digits.isascii() or not digits.isdigit() or (digits[0] == "0" and len(digits) > 1):
            raise ValueError("argument must be a memory or percent value")
        if int(digits) > 100:
            raise ValueError("percentage argument must be less or equal to 100")
        n = int(digits)
        return "%d%%" % n if n else "0"
    n = parse_memory(val)
    if n is None:
        raise ValueError("argument must be a memory or percent value")
    if n > SSIZE_MAX:
        raise ValueError("argument must be between -100 and %d inclusive" % SSIZE_MAX)
    return str(n)


def check_maxmemory_clients(val: str) -> str:
    val = check_memory_or_percent(val)
    if val != "0":
        raise ValueError("client eviction is not supported (only 0 is accepted)")
    return val


def norm_oom_adj(val, old):
    return "yes" if val == "relative" else val
