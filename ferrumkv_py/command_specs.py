"""Redis 7.0's own command metadata: COMMAND DOCS entries, key specs and tips, and the key
extraction Redis derives from key specs (COMMAND GETKEYS / GETKEYSANDFLAGS).

``data/redis_7_0_commands.json`` (regenerate with ``scripts/gen_command_data.py`` against a
redis-server 7.0) holds, for every top-level command, the raw RESP3 replies of ``COMMAND
INFO name`` and ``COMMAND DOCS name``.  :func:`parse_resp3` turns them into reply values
(``dict`` map, ``RespSet`` set, ``Status`` simple string ...), so the RESP2 and RESP3 shapes
the encoder makes from them are Redis's.

Key specs (Redis's ``getKeysUsingKeySpecs``): each spec finds where its keys begin, by a fixed
index or after a keyword searched from ``startfrom`` (backwards when negative), then which
words are keys: a ``range`` (``lastkey`` relative to the start, negative = from the end, or
``limit`` dividing what is left), or a ``keynum`` (a count word, then the keys).  A spec that
points outside the call makes the whole extraction invalid.  Commands with their own key
finder (``CommandSpec.getkeys``, commands/movable_keys.py: SORT, the z*STORE family,
GEORADIUS) use it, each key taking the flags of the spec at its position (the last spec's
for the rest).

Complexity: O(arguments) per extraction; the data file is parsed once, on first use.
"""

from __future__ import annotations

import functools
import json
import os

from .resp import RespSet, Status

ATOI_INT_MIN, ATOI_INT_MAX = -(2 ** 31), 2 ** 31 - 1

DATA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                         "redis_7_0_commands.json")
NOT_KEY = b"not_key"


class InvalidKeys(Exception):
    """The call's key arguments do not fit the key specs (Redis: invalid_spec)."""


# ---- the data file ----

def parse_resp3(data: bytes):
    """One RESP3 value from ``data`` (as redis-server sent it).  Complexity: O(len)."""
    value, _ = _parse(data, 0)
    return value


def _parse(data: bytes, i: int):
    end = data.index(b"\r\n", i)
    t, body = data[i:i + 1], data[i + 1:end]
    i = end + 2
    if t in (b"$", b"=", b"!"):
        n = int(body)
        if n < 0:
            return None, i
        return data[i:i + n], i + n + 2
    if t in (b"*", b"~", b"%"):
        n = int(body)
        items = []
        for _ in range(n * 2 if t == b"%" else n):
            v, i = _parse(data, i)
            items.append(v)
        if t == b"%":
            return dict(zip(items[::2], items[1::2])), i
        return (RespSet(items) if t == b"~" else items), i
    if t == b"+":
        return Status(body), i
    if t == b":":
        return int(body), i
    if t == b",":
        return float(body), i
    if t == b"#":
        return body == b"t", i
    return None, i              # "_" null


@functools.lru_cache(maxsize=1)
def _data() -> dict:
    with open(DATA_FILE, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=None)
def info_entry(fullname: str):
    """Redis's COMMAND INFO entry (10 elements) of ``get`` or ``config|get``; None if
    redis-server 7.0 has no such command."""
    top, _, sub = fullname.partition("|")
    raw = _data()["info"].get(top)
    if raw is None:
        return None
    entry = parse_resp3(raw.encode("utf-8"))[0]
    if not sub:
        return entry
    for s in entry[9]:
        if s[0] == fullname.encode():
            return s
    return None


@functools.lru_cache(maxsize=None)
def docs_entry(fullname: str):
    """Redis's COMMAND DOCS map of one command or subcommand; None if Redis has none."""
    top, _, sub = fullname.partition("|")
    raw = _data()["docs"].get(top)
    if raw is None:
        return None
    doc = parse_resp3(raw.encode("utf-8")).get(top.encode())
    if doc is not None and sub:
        doc = doc.get(b"subcommands", {}).get(fullname.encode())
    return doc


def redis_version() -> str:
    return _data()["redis_version"]


# ---- key specs ----

def _atoi(word: bytes) -> int:
    """C atoi, as Redis 7.0 reads a key spec's numkeys ("1.0" is 1, "x" is 0)."""
    s = word.split(b"\0", 1)[0].lstrip(b" \t\n\v\f\r")
    n = 0
    while n < len(s) and (s[n:n + 1].isdigit() or (n == 0 and s[:1] in (b"+", b"-"))):
        n += 1
    try:
        return max(ATOI_INT_MIN, min(ATOI_INT_MAX, int(s[:n])))
    except ValueError:
        return 0


def key_specs(spec) -> list:
    """The key specs COMMAND INFO shows for a registry entry: Redis's when it has the
    command, else one made from the legacy first/last/step (ferrumkv's own commands)."""
    entry = info_entry(spec.name)
    if entry is not None:
        return entry[8]
    if spec.first_key <= 0:
        return []
    flags = [Status(b"RW"), Status(b"update")] if spec.write else \
        [Status(b"RO"), Status(b"access")]
    last = spec.last_key - spec.first_key if spec.last_key >= 0 else spec.last_key
    return [{b"flags": RespSet(flags),
             b"begin_search": {b"type": b"index", b"spec": {b"index": spec.first_key}},
             b"find_keys": {b"type": b"range", b"spec": {
                 b"lastkey": last, b"keystep": spec.step or 1, b"limit": 0}}}]


def _flag_set(kspec) -> set:
    return {bytes(f) for f in kspec[b"flags"]}


def _first_key(kspec, argv: list) -> int:
    bs = kspec[b"begin_search"]
    if bs[b"type"] == b"index":
        return bs[b"spec"][b"index"]
    keyword = bs[b"spec"][b"keyword"].lower()
    start = bs[b"spec"][b"startfrom"]
    argc = len(argv)
    i = start if start > 0 else argc + start
    end = argc - 1 if start > 0 else 1
    while 1 <= i < argc:
        if argv[i].lower() == keyword:
            return i + 1
        if i == end:
            break
        i += 1 if i <= end else -1
    return 0


def _spec_positions(kspec, argv: list) -> list:
    """Key positions one spec gives for ``argv`` ([] when its keyword is absent)."""
    first = _first_key(kspec, argv)
    if not first:
        return []
    fk, argc = kspec[b"find_keys"], len(argv)
    if fk[b"type"] == b"range":
        s = fk[b"spec"]
        step, lastkey, limit = s[b"keystep"], s[b"lastkey"], s[b"limit"]
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:
            last = first + ((argc - first) // limit + lastkey)
    elif fk[b"type"] == b"keynum":
        s = fk[b"spec"]
        step = s[b"keystep"]
        if first + s[b"keynumidx"] >= argc:
            raise InvalidKeys
        numkeys = _atoi(argv[first + s[b"keynumidx"]])
        if numkeys < 0:
            raise InvalidKeys
        first += s[b"firstkey"]
        last = first + numkeys - 1
    else:
        raise InvalidKeys
    if last >= argc or last < first or first >= argc:
        if fk[b"type"] == b"keynum" and last == first - 1:
            return []                        # numkeys 0
        raise InvalidKeys
    return [i for i in range(first, last + 1, max(step, 1)) if i < argc]


def _flags(*names: bytes) -> RespSet:
    return RespSet([Status(n) for n in names])


def _set_flags(argv: list) -> RespSet:
    """Redis setGetKeys: SET ... GET reads the old value (RW access update), else OW."""
    if any(a.lower() == b"get" for a in argv[3:]):
        return _flags(b"RW", b"access", b"update")
    return _flags(b"OW", b"update")


def _bitfield_flags(argv: list) -> RespSet:
    """Redis bitfieldGetKeys: read-only unless a SET / INCRBY (or a syntax error) appears."""
    i, argc = 2, len(argv)
    while i < argc:
        arg, rem = argv[i].lower(), argc - i - 1
        if arg == b"get" and rem >= 2:
            i += 3
        elif arg == b"overflow" and rem >= 1:
            i += 2
        else:
            return _flags(b"RW", b"access", b"update")
    return _flags(b"RO", b"access")


VARIABLE_FLAG_KEYS = {"set": _set_flags, "bitfield": _bitfield_flags}  # key at argv[1]
PROC_ONLY_FLAGS = {b"incomplete", b"variable_flags"}


def keys_with_flags(spec, argv: list) -> list:
    """(position, flags) of every key of one call (``argv[0]`` is the command name), as
    Redis's getKeysFromCommandWithSpecs: the key specs where they are complete, else the
    command's own key finder.  Raises InvalidKeys.  Complexity: O(len(argv) * specs)."""
    if spec.name in VARIABLE_FLAG_KEYS:
        return [(1, VARIABLE_FLAG_KEYS[spec.name](argv))] if len(argv) > 1 else []
    all_specs = key_specs(spec)
    if spec.getkeys is None:
        out = []
        for kspec in all_specs:
            flags = _flag_set(kspec)
            if NOT_KEY in flags or kspec[b"begin_search"][b"type"] == b"unknown":
                continue     # Redis's own finders return what the known specs give
            out += [(i, kspec[b"flags"]) for i in _spec_positions(kspec, argv)]
        return out
    # the command's own key finder (movable_keys.py): the first key takes the first spec's
    # flags, the others the last spec's (SORT's STORE, the sources of ZUNIONSTORE ...)
    found = spec.getkeys(argv)
    all_specs = all_specs or [{b"flags": RespSet()}]
    out, used = [], set()
    for n, key in enumerate(found):
        pos = next((i for i in range(1, len(argv)) if argv[i] is key and i not in used),
                   None)
        if pos is None:
            pos = next(i for i in range(1, len(argv)) if argv[i] == key and i not in used)
        used.add(pos)
        flags = all_specs[0 if n == 0 else -1][b"flags"]
        out.append((pos, RespSet(f for f in flags if bytes(f) not in PROC_ONLY_FLAGS)))
    return out


def has_keys(spec) -> bool:
    """Redis doesCommandHaveKeys: a key finder or a key spec that is not ``not_key``."""
    return spec.getkeys is not None or any(NOT_KEY not in _flag_set(k)
                                           for k in key_specs(spec))
