"""Redis 7.0's command table as ACL sees it, derived on load from the one copy of Redis's
COMMAND data in the repo, ``data/redis_7_0_commands.json`` (``command_specs.DATA_FILE``:
the raw ``COMMAND INFO`` reply of every command, which command_specs.py also serves as COMMAND
INFO / DOCS and key specs; ``scripts/gen_command_data.py`` regenerates it from a redis-server).

The ACL engine (acl.py) works on Redis 7.0's whole command table, as Redis's acl.c works on
``server.orig_commands``: a category rule (``+@read``) switches the same commands on as in
Redis, and ACL GETUSER describes a user with the same category fit even for commands this
server does not implement.  For every command and subcommand the table holds its ACL
categories, whether it is ``no_auth`` (never refused by ACL), and the key permission its key
specs ask for (``ACLSelectorCheckKey``: ACCESS needs read, INSERT / DELETE / UPDATE need
write; the union over the command's key specs).

``TABLE`` rows, in name order: (full name, categories, no_auth, key specs, parent).  Each key
spec is (begin index, last key, key step, permission): begin 0 when the spec is not an
index + range spec; permission 1 = read, 2 = write, 3 = both, 0 = none asked (no ACCESS /
INSERT / DELETE / UPDATE flag).

Complexity: O(size of the data file), once, at import: ~25 ms more start-up than importing
the generated literal this module used to be (``python -X importtime``); the parsed replies
are not kept.
"""

from __future__ import annotations

import json

from .command_specs import DATA_FILE, parse_resp3

READ, WRITE = 1, 2                     # key permission bits of a key spec
WRITE_FLAGS = frozenset({"INSERT", "DELETE", "UPDATE"})


def _key_specs(specs) -> tuple:
    """(begin index, last key, key step, permission) per key spec; begin 0 when the spec
    does not start at a fixed index or find a range (keyword / keynum specs)."""
    out = []
    for spec in specs or ():
        d = spec if isinstance(spec, dict) else dict(zip(spec[::2], spec[1::2]))
        flags = {f.decode().upper() for f in d[b"flags"]}
        perm = (READ if "ACCESS" in flags else 0) | (WRITE if flags & WRITE_FLAGS else 0)
        bs, fk = d[b"begin_search"], d[b"find_keys"]
        begin = last = step = 0
        if bs[b"type"] == b"index" and fk[b"type"] == b"range":
            begin = bs[b"spec"][b"index"]
            last = fk[b"spec"][b"lastkey"]
            step = fk[b"spec"][b"keystep"]
        out.append((begin, last, step, perm))
    return tuple(out)


def rows_of(entries: list, parent: str = "") -> list:
    """TABLE rows of COMMAND INFO entries (as parsed replies) and their subcommands; also
    applied to a live ``COMMAND`` reply by the differential test."""
    rows = []
    for entry in entries:
        name = entry[0].decode()
        flags = {f.decode() for f in entry[2]}
        cats = tuple(c.decode().lstrip("@") for c in entry[6])
        rows.append((name, cats, "no_auth" in flags, _key_specs(entry[8]), parent))
        rows.extend(rows_of(entry[9], name))
    return rows


def load(path: str = DATA_FILE) -> tuple:
    """The table from a command data file (``scripts/gen_command_data.py``'s format)."""
    with open(path, encoding="utf-8") as f:
        info = json.load(f)["info"]
    entries = [parse_resp3(raw.encode("utf-8"))[0] for raw in info.values()]
    return tuple(sorted(rows_of(entries), key=lambda row: row[0]))


TABLE = load()
