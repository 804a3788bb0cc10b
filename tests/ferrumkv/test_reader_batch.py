"""RequestReader.get_batch / unread: the dispatcher's batched reads give exactly what get()
gives, call after call, on every stream and chunking of test_resp.py; commands given back
with unread() are read again under the reader's rules of the moment (RESET -> unauth)."""

from __future__ import annotations

import random

import pytest

from ferrumkv_py import resp_hiredis
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


@on_random_streams
def test_batches_agree_with_get(tokens, seed):
    data = b"".join(tokens)
    expected = drive(READERS["python"], [data])
    for how, chunks in chunkings(data, seed):
        assert drive_batches(chunks) == expected, how
        assert drive_batches(chunks, random.Random(seed)) == expected, ("unread", how)


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
