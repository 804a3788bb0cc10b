"""What the console shows, read the way a client would read it.

- :func:`info_snapshot` parses the INFO text itself, so every number on the page and in
  /metrics is the number INFO prints (one home for each field: ``info.py``).
- :func:`decode_reply` turns an encoded RESP3 reply into JSON values.
- :func:`browse_keys` pages through a database for the key browser without touching the
  keys: no LRU/LFU update and nothing recorded by the litehit shadow (OBJECT FREQ /
  IDLETIME count a keyspace hit per key shown, as Redis's OBJECT does).
"""

from __future__ import annotations

import hiredis

from .. import info, memory

def _number(text: str):
    """INFO's values: integers and decimals become numbers, the rest stays text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_info(text: str) -> dict:
    """INFO text -> {section: {field: value}}; ``db0:keys=1,expires=0`` -> a dict too.
    Complexity: O(len(text))."""
    out: dict = {}
    section: dict = {}
    for line in text.split("\r\n"):
        if line.startswith("# "):
            section = out.setdefault(line[2:].strip().lower(), {})
        elif ":" in line:
            k, _, v = line.partition(":")
            if "=" in v and ("," in v or v.startswith("keys=") or k.startswith("errorstat_")):
                section[k] = {a: _number(b) for a, _, b in
                              (kv.partition("=") for kv in v.split(","))}
            else:
                section[k] = _number(v)
    return out


def info_snapshot(server) -> dict:
    """Every INFO section (``INFO everything``) parsed, plus the clock it was read at."""
    snap = parse_info(info.render(server, ["everything"]))
    snap["time_ms"] = server.ks.clock.now_ms()
    return snap


def to_json(value):
    """A hiredis-parsed reply as JSON: bytes -> text, maps -> objects, errors -> {"error"}."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(to_json(k)): to_json(v) for k, v in value.items()}
    if isinstance(value, hiredis.ReplyError):
        return {"error": str(value)}
    return value


def decode_reply(data: bytes):
    """One encoded RESP3 reply (the dispatcher's output) as JSON values."""
    reader = hiredis.Reader()
    reader.feed(data)
    return to_json(reader.gets())


def browse_keys(server, db_id: int, cursor: bytes, match: bytes, count: int) -> dict:
    """One page of the key browser: SCAN's cursor and keys, each with type, TTL (ms, -1 =
    none), modelled size, and the LFU counter or idle seconds the policy keeps.

    SCAN runs through its own handler (same cursor rules and pattern matcher as the
    command); the metadata is read without a touch.  Complexity: O(count)."""
    from ..commands.introspection import object_freq, object_idletime
    from ..commands.keys import scan as scan_handler
    from ..client import Client
    from ..errors import CommandError
    c = Client(server)
    c.authenticated = True
    c.db = db = server.ks.dbs[db_id]
    cursor_out, keys = scan_handler(c, [b"SCAN", cursor, b"MATCH", match,
                                        b"COUNT", b"%d" % count])
    now = server.ks.now_ms
    rows = []
    for key in keys:
        e = db.lookup_notouch(key)
        if e is None:
            continue
        row = {"key": key.decode("utf-8", "backslashreplace"),
               "type": memory.type_name(db.vals[e]),
               "ttl_ms": db.exp[e] - now if db.exp[e] > 0 else -1,
               "bytes": memory.entry_cost(db.keys[e], db.vals[e])}
        # OBJECT FREQ / IDLETIME as the commands answer them (each refuses the policy
        # that does not keep its number)
        for name, handler in (("freq", object_freq), ("idle_s", object_idletime)):
            try:
                row[name] = handler(c, [b"OBJECT", name.encode(), key])
            except CommandError:
                pass
        rows.append(row)
    return {"cursor": cursor_out.decode(), "db": db_id, "keys": rows}
