"""Big requests: a large bulk arriving in many reads is held once and costs O(1) per read.

Before this, the connection's reader joined every byte of an unfinished frame again on each
read (quadratic: a 64 MB SET in 16 KB pieces took ~4 s of server CPU) and held the frame
three times (hiredis's buffer, the chunk list, the shadow reader).  These tests measure
allocations with tracemalloc, never time: the allocation made by one more read while
megabytes are pending is what the quadratic join showed.
"""

from __future__ import annotations

import os
import socket
import tracemalloc

import pytest

from ferrumkv_py import resp_reader
from ferrumkv_py.resp import NEED_MORE, PyRequestReader, RequestReader
from ferrumkv_py.resp_reader import BIG_ARG_BYTES

MB = 1024 * 1024
PIECE_BYTES = 16 * 1024
READERS = {
    "python": lambda: PyRequestReader(),
    "hiredis": lambda: RequestReader(),
    "adapter-no-hiredis": lambda: RequestReader(use_hiredis=False),
}


def set_frame(size: int) -> tuple[bytes, bytes]:
    payload = bytes(range(256)) * (size // 256)
    return b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % len(payload) + payload + b"\r\n", payload


def take(reader) -> list:
    """Every command buffered now (get_batch where the reader has it)."""
    if isinstance(reader, RequestReader):
        out = []
        while True:
            got = reader.get_batch()
            out += got
            if not got or not reader.more:
                return out
    out = []
    while (argv := reader.get()) is not NEED_MORE:
        out.append(argv)
    return out


@pytest.fixture(params=["in-place", "chunks"])
def fill_mode(request, monkeypatch):
    """Big bulks filled in place (CPython) or kept as chunk lists (the fallback)."""
    if request.param == "chunks":
        monkeypatch.setattr(resp_reader, "_new_bytes", None)
    elif resp_reader._new_bytes is None:  # pragma: no cover
        pytest.skip("no in-place fill on this interpreter")
    return request.param


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("name", ["python", "hiredis"])
def test_big_bulk_in_place_touches_only_what_arrived(name):
    """In place, the argument is allocated whole at its header, but only the pages the
    payload reached are resident: half of a 64 MB bulk costs ~32 MB of RSS (the old reader
    held the unfinished frame three times: ~96 MB)."""
    if resp_reader._new_bytes is None or not os.path.exists("/proc/self/statm"):
        pytest.skip("needs CPython's in-place fill and /proc")
    frame, payload = set_frame(64 * MB)
    half = len(frame) // 2
    reader = READERS[name]()
    base = rss_bytes()
    for i in range(0, half, PIECE_BYTES):
        reader.feed(frame[i:min(i + PIECE_BYTES, half)])
        assert take(reader) == []
    grew = rss_bytes() - base
    assert grew < 0.75 * len(payload), grew / MB
    reader.feed(frame[half:])
    assert take(reader) == [[b"SET", b"k", payload]]


@pytest.mark.parametrize("name", sorted(READERS))
def test_big_bulk_in_pieces_is_held_once(name, fill_mode):
    """Half of a 4 MB bulk fed in 16 KB pieces: the reader holds ~2 MB as chunks (or the
    4 MB argument allocated, half touched, in place), not the old three copies; the next
    read allocates one read's worth, not a join of all that is held; once the command is
    out, nothing but the argument itself remains (no stale joined buffer)."""
    frame, payload = set_frame(4 * MB)
    half = len(frame) // 2
    reader = READERS[name]()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(0, half, PIECE_BYTES):
            reader.feed(frame[i:min(i + PIECE_BYTES, half)])
            assert take(reader) == []
        held = tracemalloc.get_traced_memory()[0] - base
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        reader.feed(frame[half:half + 1])      # a trickle: one more byte
        assert take(reader) == []
        grew = tracemalloc.get_traced_memory()[1] - before
        rest = frame[half + 1:]
        reader.feed(rest)
        del rest
        got = take(reader)
        after = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < (half * 1.25 if fill_mode == "chunks" else len(payload) * 1.05), held
    assert grew < PIECE_BYTES, grew            # O(1) per read: no rejoin of 2 MB
    assert got == [[b"SET", b"k", payload]]
    assert after < len(payload) * 1.25, (after, len(payload))
    if isinstance(reader, RequestReader):
        assert reader.buffered() == 0
    reader.feed(b"*1\r\n$4\r\nPING\r\n")
    assert take(reader) == [[b"PING"]]


@pytest.mark.parametrize("name", sorted(READERS))
def test_trickle_one_byte_per_read(name, fill_mode):
    """100 KB of a bulk one byte per read, each read followed by a parse as on a
    connection: every read allocates O(1) (the old reader rejoined all held bytes)."""
    frame, payload = set_frame(128 * 1024)
    reader = READERS[name]()
    cut = 100 * 1024
    for i in range(cut):
        if i % 8192 == 8191 and i > 2 * BIG_ARG_BYTES:
            tracemalloc.start()
            try:
                reader.feed(frame[i:i + 1])
                assert take(reader) == []
                grew = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert grew < 4096, (i, grew)
        else:
            reader.feed(frame[i:i + 1])
            assert take(reader) == []
    reader.feed(frame[cut:])
    assert take(reader) == [[b"SET", b"k", payload]]


@pytest.mark.parametrize("name", ["python", "hiredis"])
def test_big_bulk_with_split_crlf_and_pipeline(name):
    """The CRLF after a big payload split across reads, then pipelined commands."""
    frame, payload = set_frame(64 * 1024)
    stream = frame + b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" + frame
    for cut in (len(frame) - 2, len(frame) - 1, len(frame), 40, 41):
        reader = READERS[name]()
        reader.feed(stream[:cut])
        got = take(reader)
        reader.feed(stream[cut:])
        got += take(reader)
        assert got == [[b"SET", b"k", payload], [b"GET", b"k"], [b"SET", b"k", payload]]


def test_big_bulk_still_refused_past_proto_max_bulk_len():
    reader = RequestReader(max_bulk_len=1 * MB)
    reader.feed(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n" % (MB + 1) + b"x" * 40000)
    with pytest.raises(Exception, match="invalid bulk length"):
        take(reader)


def test_server_big_set_in_pieces(server):
    """A 4 MB SET sent in 16 KB pieces over a socket, then read back."""
    frame, payload = set_frame(4 * MB)
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        for i in range(0, len(frame), PIECE_BYTES):
            s.sendall(frame[i:i + PIECE_BYTES])
        s.sendall(b"*2\r\n$6\r\nSTRLEN\r\n$1\r\nk\r\n")
        buf = b""
        while buf.count(b"\r\n") < 2:
            buf += s.recv(65536)
    assert buf == b"+OK\r\n:%d\r\n" % len(payload)
