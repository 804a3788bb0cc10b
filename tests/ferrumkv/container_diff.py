"""Replay one script of commands on ferrumkv and on a real redis-server 7.0; compare replies.

Used by the container command tests (lists, hashes, sets, sorted sets).  A script is one
command per line, split like a shell line (``shlex``); ``#`` starts a comment line.  Replies
are compared as raw RESP bytes, over a RESP2 and a RESP3 connection, so error texts, null
kinds (``$-1`` / ``*-1`` / ``_``), doubles and set/map types must all match.  A line that
starts with ``~`` compares its top-level elements as a multiset: Redis does not promise an
order for set members (nor do we), so SMEMBERS-like replies are checked that way.
"""

from __future__ import annotations

import shlex

from tests.conftest import RawConn


def encode_command(args: list) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode("latin-1") if isinstance(a, str) else a
        out.append(b"$%d\r\n%b\r\n" % (len(a), a))
    return b"".join(out)


def _skip(raw: bytes, pos: int) -> int:
    """Position just after the RESP value starting at ``pos``."""
    end = raw.index(b"\r\n", pos)
    t, head = raw[pos:pos + 1], raw[pos + 1:end]
    pos = end + 2
    if t in (b"$", b"=", b"!"):
        n = int(head)
        return pos if n < 0 else pos + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(head)
        for _ in range(max(n, 0) * (2 if t in (b"%", b"|") else 1)):
            pos = _skip(raw, pos)
    return pos


def split_elements(raw: bytes) -> tuple[bytes, list]:
    """(header line, raw bytes of each top-level element) of an aggregate reply."""
    end = raw.index(b"\r\n") + 2
    items, pos = [], end
    while pos < len(raw):
        nxt = _skip(raw, pos)
        items.append(raw[pos:nxt])
        pos = nxt
    return raw[:end], items


def _parse_script(script: str) -> list:
    lines = []
    for line in script.strip().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        unordered = line.startswith("~")
        lines.append((unordered, shlex.split(line.lstrip("~ "))))
    return lines


def _run(port: int, proto: int, lines: list) -> list:
    conn = RawConn(port)
    try:
        if proto == 3:
            conn.send(encode_command(["HELLO", "3"]))
            conn.read_reply()
        conn.send(encode_command(["FLUSHALL"]))
        conn.read_reply()
        out = []
        for unordered, args in lines:
            conn.send(encode_command(args))
            reply = conn.read_reply()
            if unordered and reply[:1] in (b"*", b"~"):
                head, items = split_elements(reply)
                reply = (head, sorted(items))
            out.append(reply)
        return out
    finally:
        conn.close()


def assert_same_as_redis(redis_port: int, our_port: int, script: str) -> int:
    """Run ``script`` on both servers in RESP2 and RESP3; fail listing every difference.

    Returns the number of replies compared.
    """
    lines = _parse_script(script)
    diffs = []
    for proto in (2, 3):
        want, got = _run(redis_port, proto, lines), _run(our_port, proto, lines)
        for (_, args), w, g in zip(lines, want, got):
            if w != g:
                diffs.append("RESP%d %s\n  redis:    %r\n  ferrumkv: %r"
                             % (proto, " ".join(args)[:80], w, g))
    assert not diffs, "%d replies differ:\n%s" % (len(diffs), "\n".join(diffs))
    return 2 * len(lines)
