"""resp_scan.whole_frames: the leading whole canonical frames of a read, against an oracle
built from the Python reader (a frame counts when re-encoding what it read gives the bytes
on the wire), compiled and interpreted alike."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrumkv_py import resp_scan
from ferrumkv_py.resp_hiredis import _encode_request
from ferrumkv_py.resp_reader import NEED_MORE, ProtocolError, PyRequestReader

from tests.ferrumkv.test_resp import TOKENS, mb

pytestmark = pytest.mark.skipif(resp_scan.load_now() is None, reason="numba missing")


def oracle(buf: bytes, max_len: int):
    """(frames, end) by Redis's own reading: frames while each is canonical on the wire."""
    r = PyRequestReader(max_len)
    r.feed(buf)
    k = p = 0
    while True:
        try:
            argv = r.get()
        except ProtocolError:
            break
        if argv is NEED_MORE or len(argv) > resp_scan.MAX_FRAME_ARGS:
            break
        wire = _encode_request(argv)
        if buf[p:p + len(wire)] != wire:
            break
        p += len(wire)
        k += 1
    return k, p


def both(buf: bytes, max_len: int = 512):
    got = resp_scan.whole_frames(buf, max_len)
    assert resp_scan._whole_frames(buf, max_len) == got   # the compiled code is the source
    return got


GET = mb(b"GET", b"k")


@pytest.mark.parametrize("buf,expected", [
    (b"", (0, 0)),
    (GET, (1, len(GET))),
    (GET * 3, (3, 3 * len(GET))),
    (GET + GET[:-1], (1, len(GET))),                          # partial second frame
    (GET + b"PING\r\n", (1, len(GET))),                       # inline after a frame
    (b"*2\r\n+GET\r\n$1\r\nk\r\n", (0, 0)),                   # '+' element
    (b"*02\r\n$3\r\nGET\r\n$1\r\nk\r\n", (0, 0)),             # leading zero in the count
    (b"*2\r\n$03\r\nGET\r\n$1\r\nk\r\n", (0, 0)),             # leading zero in a length
    (b"*1\r\n$-1\r\n", (0, 0)),
    (b"*0\r\n" + GET, (0, 0)),                                # Redis's no-op frame: reader's
    (b"*1\r\n*1\r\n$1\r\na\r\n", (0, 0)),                     # nested array
    (b"*1\r\n$0\r\n\r\n", (1, 10)),                           # empty argument
    (b"*1\r\n$2\r\nabc\r\n", (0, 0)),                         # payload longer than said
    (b"*1\r\n$99999999999999999999999\r\n", (0, 0)),          # no overflow
    (b"*100000\r\n", (0, 0)),                                 # 6 digits: _BIG_COUNT's case
    (mb(b"x" * 513), (0, 0)),                                 # over max_len (512 here)
    (mb(b"*1\r\n$1\r\n$", b"\r\n*"), (1, len(mb(b"*1\r\n$1\r\n$", b"\r\n*")))),
])
def test_cases(buf, expected):
    assert both(buf) == expected == oracle(buf, 512)


@settings(max_examples=400, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=10), st.integers(0, 40), st.sampled_from([4, 12, 512]))
def test_agrees_with_the_python_reader(tokens, cut, max_len):
    buf = b"".join(tokens)
    for b in (buf, buf[:max(0, len(buf) - cut)]):
        assert both(b, max_len) == oracle(b, max_len)


def test_many_arguments():
    frame = mb(*[b"%d" % i for i in range(3000)])
    assert both(frame * 2, 1 << 20) == (2, 2 * len(frame))


def test_the_largest_proto_max_bulk_len():
    """CONFIG allows proto-max-bulk-len up to LLONG_MAX: the compiled call takes it."""
    assert both(GET * 2, 2 ** 63 - 1) == (2, 2 * len(GET))
