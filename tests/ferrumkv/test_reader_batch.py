"""RequestReader.get_batch / unread: the dispatcher's batched reads give exactly what get()
gives, call after call, on every stream and chunking of test_resp.py; commands given back
with unread() are read again under the reader's rules of the moment (RESET -> unauth)."""

from __future__ import annotations

import contextlib
import random

import pytest

from ferrumkv_py import resp_hiredis, resp_scan
from ferrumkv_py.resp import ProtocolError, RequestReader

from tests.ferrumkv.test_resp import READERS, chunkings, drive, mb, on_random_streams

pytestmark = pytest.mark.skipif(resp_hiredis.hiredis is None, reason="hiredis missing")


def drive_batches(chunks, rng=None):
    """Like test_resp.drive, through get_batch; with ``rng``, run only a random prefix of
    each batch (at least one command, as the dispatcher does) and unread() the rest."""
    def step(reader):
        batch = reader.get_batch()
        if not batch:
            return [], False
        reader._check()
        k = rng.randint(1, len(batch)) if rng is not None else len(batch)
        if k < len(batch):
            reader.unread(batch[k:])
        return batch[:k], reader.more  # as the dispatcher: stop when the reader says so
    return drive(RequestReader, chunks, step)


def drive_fused(chunks, rng=None):
    """Like drive_batches, but each chunk goes in through ``get_batch(chunk)`` (the
    dispatcher's form: feed and first batch in one call), not through feed()."""
    reader = RequestReader()
    got = []
    for chunk in chunks:
        data = chunk
        while True:
            try:
                batch = reader.get_batch(data)
            except ProtocolError as e:
                return got, ("error", e.msg)
            data = None
            reader._check()
            k = rng.randint(1, len(batch)) if rng is not None and batch else len(batch)
            if k < len(batch):
                reader.unread(batch[k:])
                reader._check()
            got.extend(batch[:k])
            if not batch or not reader.more:
                break
    return got, "more"


@contextlib.contextmanager
def scan_threshold(n):
    """Reads of ``n`` bytes or more go through resp_scan first (0: all, None: none)."""
    saved = resp_hiredis.SCAN_MIN_BYTES
    resp_hiredis.SCAN_MIN_BYTES = 1 << 62 if n is None else n
    try:
        yield
    finally:
        resp_hiredis.SCAN_MIN_BYTES = saved


resp_scan.load_now()    # the scanner is loaded on demand; these tests run it from the start
SCAN_SETTINGS = (0, None, resp_hiredis.SCAN_MIN_BYTES)   # scanner always, never, as shipped


@on_random_streams
def test_batches_agree_with_get(tokens, seed):
    data = b"".join(tokens)
    expected = drive(READERS["python"], [data])
    for how, chunks in chunkings(data, seed):
        assert drive_batches(chunks) == expected, how
        assert drive_batches(chunks, random.Random(seed)) == expected, ("unread", how)
        for scan in SCAN_SETTINGS:
            with scan_threshold(scan):
                assert drive_fused(chunks) == expected, ("fused", how, scan)
                assert drive_fused(chunks, random.Random(seed)) == expected, (
                    "fused unread", how, scan)


@pytest.mark.parametrize("scan", SCAN_SETTINGS)
def test_fused_fast_case_keeps_nothing(scan):
    """A read of whole canonical frames leaves the reader holding no bytes; a read that
    ends inside a frame is kept exactly as feed() keeps it."""
    with scan_threshold(scan):
        _fused_fast_case_keeps_nothing()


def _fused_fast_case_keeps_nothing():
    reader = RequestReader()
    assert reader.get_batch(mb(b"SET", b"k", b"v") + mb(b"GET", b"k")) == [
        [b"SET", b"k", b"v"], [b"GET", b"k"]]
    assert not reader.more and reader._pending == [] and reader._fed == 0
    reader._check()
    whole, part = mb(b"GET", b"a"), mb(b"GET", b"bb")
    assert reader.get_batch(whole + part[:7]) == [[b"GET", b"a"]]
    fed = RequestReader()
    fed.feed(whole + part[:7])
    assert fed.get_batch() == [[b"GET", b"a"]]

    def state(r):
        return r._pending, r._fed, r._used, r._done, r._tail, r.more
    assert state(reader) == state(fed) and reader._pending == [part[:7]]
    reader._check()
    assert reader.get_batch(part[7:]) == [[b"GET", b"bb"]]
    assert reader._pending == [] and reader._fed == 0
    # frames past the header tables (a 70000-byte value) take the exact slow check
    big = mb(b"SET", b"k", b"x" * 70000)
    assert reader.get_batch(big + mb(b"PING")) == [[b"SET", b"k", b"x" * 70000], [b"PING"]]
    assert reader._pending == []
    # an odd frame after good ones: the good ones now, the Python reader judges the rest
    assert reader.get_batch(mb(b"PING") + b"*1\r\n+PING\r\n") == [[b"PING"]]
    with pytest.raises(ProtocolError, match="expected '\\$', got '\\+'"):
        reader.get_batch()


@pytest.mark.parametrize("tail", [b"", b"*3\r\n$1\r\na"])
def test_unread_applies_the_unauthenticated_limits(tail):
    """RESET (with requirepass) runs first; the frames after it are read as before AUTH."""
    reader = RequestReader()
    reader.feed(mb(b"RESET") + mb(*[b"a"] * 11) + tail)
    batch = reader.get_batch()
    assert batch == [[b"RESET"], [b"a"] * 11]
    reader.unauth = True
    reader.unread(batch[1:])
    reader._check()
    with pytest.raises(ProtocolError, match="unauthenticated multibulk length"):
        reader.get_batch()


def test_reset_in_a_pipeline_makes_the_rest_owe_auth(make_server):
    """Through the dispatcher: the frame after RESET meets the unauthenticated limits."""
    from tests.conftest import RawConn
    s = make_server(requirepass="pw")
    conn = RawConn(s.port)
    conn.send(mb(b"AUTH", b"pw"))
    assert conn.read_reply() == b"+OK\r\n"
    conn.send(mb(b"PING") + mb(b"RESET") + mb(b"PING") + mb(b"ECHO", *[b"a"] * 10))
    assert conn.read_reply() == b"+PONG\r\n"
    assert conn.read_reply() == b"+RESET\r\n"
    assert conn.read_reply().startswith(b"-NOAUTH")
    assert conn.read_reply() == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
    assert conn.closed()


@pytest.mark.parametrize("scan", SCAN_SETTINGS)
def test_fused_huge_count_never_reaches_hiredis(scan):
    """After frames the scanner vouched for, a '*2000000000' still goes to the Python
    reader (hiredis would allocate the 16 GB list up front)."""
    with scan_threshold(scan):
        reader = RequestReader()
        assert reader.get_batch(mb(b"PING") + b"*2000000000\r\n$4\r\nPING\r\n") == [[b"PING"]]
        assert reader._py is not None
