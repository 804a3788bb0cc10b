"""RESP readers and the reply encoder.

Every reader implementation is run over the same pipelines, each fed all at once, one byte at
a time and in seeded random-size chunks, and must give the same commands and the same final
state (waiting for more bytes, or Redis's exact protocol error).  A Hypothesis test then
checks that all readers and all chunkings agree on arbitrary streams built from RESP tokens.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ferrumkv_py import resp_hiredis
from ferrumkv_py.resp import (NEED_MORE, NULL_ARRAY, OK, PyRequestReader, Raw, RequestReader,
                              ErrorReply, ProtocolError, RespSet, Status, Verbatim, encode,
                              encode_error, split_inline)
from tests.conftest import command_frame as mb

READERS = {
    "python": lambda: PyRequestReader(),
    "hiredis": lambda: RequestReader(),
    "adapter-no-hiredis": lambda: RequestReader(use_hiredis=False),
    # tiny big-argument thresholds: every bulk of 3+ bytes is collected apart, every partial
    # frame of 3+ bytes handed from hiredis to the Python reader (resp_reader BIG_ARG_BYTES)
    "python-big-args": lambda: PyRequestReader(big_arg_bytes=3),
    "hiredis-big-args": lambda: RequestReader(big_arg_bytes=3),
    "python-big-args-chunks": lambda: _chunked(PyRequestReader(big_arg_bytes=3)),
}


def _chunked(reader):
    """A reader that keeps big bulks as chunk lists (interpreters without in-place fill)."""
    reader.fill_in_place = False
    return reader
if resp_hiredis.hiredis is None:  # pragma: no cover
    READERS.pop("hiredis")
    READERS.pop("hiredis-big-args")


def chunkings(data: bytes, seed: int = 7):
    """Yield (name, chunks): all at once, 1-byte chunks, and random sizes (seeded)."""
    yield "whole", [data]
    yield "bytewise", [data[i:i + 1] for i in range(len(data))]
    rng = random.Random(seed)
    chunks, i = [], 0
    while i < len(data):
        n = rng.randint(1, 17)
        chunks.append(data[i:i + n])
        i += n
    yield "random", chunks


def get_one(reader):
    """One ``get()``: (commands read, whether to call again)."""
    argv = reader.get()
    return ([], False) if argv is NEED_MORE else ([argv], True)


def drive(make, chunks, step=get_one):
    """Feed chunks, draining commands after each with ``step(reader)`` (default: one get()
    per call; test_reader_batch passes a get_batch() step); returns (commands, final) where
    final is "more" (waiting) or ("error", message) — after an error the connection would
    close."""
    reader = make()
    got = []
    every = 1 if len(chunks) <= 5000 else 997  # _check() is O(chunks held): sample big runs
    for i, chunk in enumerate(chunks):
        reader.feed(chunk)
        if i % every == 0:
            reader._check()
        again = True
        while again:
            try:
                commands, again = step(reader)
            except ProtocolError as e:
                return got, ("error", e.msg)
            if i % every == 0:
                reader._check()
            got.extend(commands)
    return got, "more"


PIPELINES = [
    # (name, bytes, expected commands, expected final)
    ("one", mb(b"PING"), [[b"PING"]], "more"),
    ("two", mb(b"SET", b"k", b"v") + mb(b"GET", b"k"),
     [[b"SET", b"k", b"v"], [b"GET", b"k"]], "more"),
    ("binary", mb(b"SET", b"k", b"a\r\nb\x00c"), [[b"SET", b"k", b"a\r\nb\x00c"]], "more"),
    ("empty-arg", mb(b"ECHO", b""), [[b"ECHO", b""]], "more"),
    ("partial", mb(b"PING") + b"*2\r\n$4\r\nECHO\r\n$5\r\nhel", [[b"PING"]], "more"),
    ("inline", b"PING\r\nECHO hello\r\n", [[b"PING"], [b"ECHO", b"hello"]], "more"),
    ("inline-lf", b"PING\nSET a b\n", [[b"PING"], [b"SET", b"a", b"b"]], "more"),
    ("inline-then-mb", b"PING\r\n" + mb(b"GET", b"x") + b"ECHO y\r\n",
     [[b"PING"], [b"GET", b"x"], [b"ECHO", b"y"]], "more"),
    ("mb-then-inline", mb(b"GET", b"x") + b"PING\r\n", [[b"GET", b"x"], [b"PING"]], "more"),
    ("empty-lines", b"\r\n\r\n\nPING\r\n", [[b"PING"]], "more"),
    ("star-zero", b"*0\r\n*-1\r\n" + mb(b"PING"), [[b"PING"]], "more"),
    ("star-negative", b"*-10\r\n" + mb(b"PING"), [[b"PING"]], "more"),
    ("quotes", b'SET "a b" \'c d\' "\\x41\\n"\r\n', [[b"SET", b"a b", b"c d", b"A\n"]], "more"),
    ("single-quote-escape", b"ECHO 'it\\'s'\r\n", [[b"ECHO", b"it's"]], "more"),
    ("bad-hex-kept", b'ECHO "\\x4g"\r\n', [[b"ECHO", b"x4g"]], "more"),
    ("vtab-in-token", b"ECHO a\x0bb\r\n", [[b"ECHO", b"a\x0bb"]], "more"),
    ("nul-ends-line", b"ECHO a\x00b c\r\nPING\r\n", [[b"ECHO", b"a"], [b"PING"]], "more"),
    ("cr-not-crlf", b"*1\rx$4\r\nPING\r\n", [[b"PING"]], "more"),
    ("bad-trailer-kept", b"*1\r\n$4\r\nPINGxx" + mb(b"ECHO", b"z"),
     [[b"PING"], [b"ECHO", b"z"]], "more"),
    ("max-count-ok", b"*2147483647\r\n", [], "more"),
    # RESP replies to hiredis, inline commands to Redis
    ("bulk-at-frame-start", mb(b"") + b"$3\r\n", [[b""], [b"$3"]], "more"),
    ("resp3-map-at-frame-start", mb(b"PING") + b"%1\r\n~2\r\n", [[b"PING"], [b"%1"], [b"~2"]],
     "more"),
    # protocol errors (Redis 7.0 texts)
    ("bad-count", mb(b"PING") + b"*abc\r\n", [[b"PING"]], ("error", "invalid multibulk length")),
    ("count-leading-zero", b"*01\r\n$4\r\nPING\r\n", [], ("error", "invalid multibulk length")),
    ("count-plus", b"*+1\r\n$4\r\nPING\r\n", [], ("error", "invalid multibulk length")),
    ("count-over-int", b"*2147483648\r\n", [], ("error", "invalid multibulk length")),
    ("count-huge", b"*3000000000\r\n", [], ("error", "invalid multibulk length")),
    ("count-under-llong", b"*-9999999999999999999\r\n", [],
     ("error", "invalid multibulk length")),
    ("bulk-not-int", b"*1\r\n$x\r\nPING\r\n", [], ("error", "invalid bulk length")),
    ("bulk-leading-zero", b"*1\r\n$04\r\nPING\r\n", [], ("error", "invalid bulk length")),
    ("bulk-negative", b"*1\r\n$-1\r\n", [], ("error", "invalid bulk length")),
    ("bulk-too-big", mb(b"PING") + b"*1\r\n$600000000\r\n", [[b"PING"]],
     ("error", "invalid bulk length")),
    ("expected-dollar", b"*1\r\n:5\r\n", [], ("error", "expected '$', got ':'")),
    ("nested-array", b"*2\r\n*1\r\n", [], ("error", "expected '$', got '*'")),
    ("simple-string-arg", mb(b"PING") + b"*2\r\n$4\r\nECHO\r\n+OK\r\n", [[b"PING"]],
     ("error", "expected '$', got '+'")),
    ("bignum-arg", b"*1\r\n(12\r\n", [], ("error", "expected '$', got '('")),
    ("verbatim-arg", b"*1\r\n=5\r\ntxt:a\r\n", [], ("error", "expected '$', got '='")),
    ("unbalanced", mb(b"PING") + b'SET "a\r\n', [[b"PING"]],
     ("error", "unbalanced quotes in request")),
    ("quote-then-char", b'SET "a"b\r\n', [], ("error", "unbalanced quotes in request")),
    ("too-big-inline", b"x" * (64 * 1024 + 10), [], ("error", "too big inline request")),
    ("too-big-mbulk-count", b"*" + b"1" * (64 * 1024 + 10), [],
     ("error", "too big mbulk count string")),
    ("too-big-bulk-count", b"*1\r\n$" + b"1" * (64 * 1024 + 10), [],
     ("error", "too big bulk count string")),
]


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name,data,commands,final", PIPELINES, ids=[p[0] for p in PIPELINES])
def test_pipelines_in_every_chunking(reader, name, data, commands, final):
    for how, chunks in chunkings(data):
        assert drive(READERS[reader], chunks) == (commands, final), how


@pytest.mark.parametrize("reader", sorted(READERS))
def test_big_bulk_split_into_many_reads(reader):
    payload = bytes(range(256)) * 4096  # 1 MiB
    data = mb(b"SET", b"k", payload) + mb(b"GET", b"k")
    chunks = [data[i:i + 16384] for i in range(0, len(data), 16384)]
    assert drive(READERS[reader], chunks) == ([[b"SET", b"k", payload], [b"GET", b"k"]], "more")


@pytest.mark.parametrize("reader", sorted(READERS))
def test_proto_max_bulk_len_is_configurable(reader):
    make = READERS[reader]
    r = make()
    r.max_bulk_len = 10
    r.feed(b"*1\r\n$11\r\n")
    with pytest.raises(ProtocolError, match="invalid bulk length"):
        while r.get() is not NEED_MORE:
            pass


@pytest.mark.parametrize("reader", sorted(READERS))
def test_unauthenticated_limits(reader):
    """Before AUTH, Redis 7 refuses frames over 10 arguments or bulks over 16 KiB."""
    def unauth():
        r = READERS[reader]()
        r.unauth = True
        return r

    assert drive(unauth, [mb(*[b"a"] * 10)]) == ([[b"a"] * 10], "more")
    assert drive(unauth, [b"*11\r\n"]) == ([], ("error", "unauthenticated multibulk length"))
    assert drive(unauth, [mb(b"x" * 16384)]) == ([[b"x" * 16384]], "more")
    assert drive(unauth, [b"*1\r\n$16385\r\n"]) == ([], ("error", "unauthenticated bulk length"))
    assert drive(unauth, [b"*1\r\n$600000000\r\n"]) == ([], ("error", "invalid bulk length"))


def test_hiredis_adapter_returns_to_hiredis_after_inline():
    r = RequestReader()
    if resp_hiredis.hiredis is None:  # pragma: no cover
        pytest.skip("hiredis missing")
    r.feed(b"PING\r\n")
    assert r.get() == [b"PING"]
    assert r.get() is NEED_MORE
    assert r._hr is not None and r._py is None
    r.feed(mb(b"GET", b"a"))
    assert r.get() == [b"GET", b"a"]


def test_huge_count_never_reaches_hiredis():
    """hiredis would allocate the whole list for '*2000000000' (16 GB); Python reads it."""
    r = RequestReader()
    r.feed(mb(b"PING") + b"*2000000000\r\n$4\r\nPING\r\n")
    assert r.get() == [b"PING"]
    assert r.get() is NEED_MORE
    assert r._py is not None


# ---- Hypothesis: every reader and chunking agree with the Python reader read whole ----

TOKENS = st.one_of(
    st.builds(lambda args: mb(*args), st.lists(st.binary(max_size=12), min_size=1, max_size=4)),
    st.sampled_from([b"PING\r\n", b"ECHO a\r\n", b'SET "x y" z\r\n', b"\r\n", b"*0\r\n",
                     b"*-1\r\n", b"*1\r\n", b"$3\r\n", b"abc", b"\r", b"\n", b"*", b"$",
                     b"*2\r\n$1\r\na\r\n", b"*1\r\n$-1\r\n", b":1\r\n", b"'q'\r\n", b'"\r\n',
                     b"*01\r\n", b"$04\r\n", b"*1234567\r\n", b"\x00", b"x",
                     b"%1\r\n", b"~2\r\n", b"+OK\r\n", b"-ERR x\r\n", b"_\r\n", b",1.5\r\n",
                     b"#t\r\n", b">1\r\n", b"|1\r\n", b"=3\r\n", b"(12\r\n", b"!2\r\n"]),
)


def on_random_streams(test):
    """Hypothesis over (tokens, seed): streams of up to 8 RESP tokens, and the seed of the
    random chunking; deterministic, 300 examples."""
    test = given(st.lists(TOKENS, max_size=8), st.integers(0, 10_000))(test)
    return settings(max_examples=300, derandomize=True, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])(test)


@on_random_streams
def test_readers_agree_on_random_streams(tokens, seed):
    data = b"".join(tokens)
    expected = drive(READERS["python"], [data])
    for name, make in READERS.items():
        for how, chunks in chunkings(data, seed):
            assert drive(make, chunks) == expected, (name, how)


# ---- inline splitting ----

@pytest.mark.parametrize("line,args", [
    (b"", []),
    (b"   ", []),
    (b"a  b\tc", [b"a", b"b", b"c"]),
    (b'"a\\tb" \'c\\\'d\'', [b"a\tb", b"c'd"]),
    (b'ab"cd"', [b"abcd"]),
    (b'"\\x41\\x42"', [b"AB"]),
    (b'"unterminated', None),
    (b"'x'y", None),
    (b"a\x0cb", [b"a\x0cb"]),
])
def test_split_inline(line, args):
    assert split_inline(line) == args


# ---- encoder ----

ENCODINGS = [
    # (value, RESP2 bytes, RESP3 bytes)
    (b"abc", b"$3\r\nabc\r\n", b"$3\r\nabc\r\n"),
    (b"", b"$0\r\n\r\n", b"$0\r\n\r\n"),
    (bytearray(b"ab"), b"$2\r\nab\r\n", b"$2\r\nab\r\n"),
    ("hé", b"$3\r\nh\xc3\xa9\r\n", b"$3\r\nh\xc3\xa9\r\n"),
    (42, b":42\r\n", b":42\r\n"),
    (-1, b":-1\r\n", b":-1\r\n"),
    (None, b"$-1\r\n", b"_\r\n"),
    (NULL_ARRAY, b"*-1\r\n", b"_\r\n"),
    (True, b":1\r\n", b"#t\r\n"),
    (False, b":0\r\n", b"#f\r\n"),
    (1.5, b"$3\r\n1.5\r\n", b",1.5\r\n"),
    (0.1, b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n"),
    (float("inf"), b"$3\r\ninf\r\n", b",inf\r\n"),
    (float("-inf"), b"$4\r\n-inf\r\n", b",-inf\r\n"),
    ([b"a", 1, None], b"*3\r\n$1\r\na\r\n:1\r\n$-1\r\n", b"*3\r\n$1\r\na\r\n:1\r\n_\r\n"),
    ((b"a",), b"*1\r\n$1\r\na\r\n", b"*1\r\n$1\r\na\r\n"),
    ([], b"*0\r\n", b"*0\r\n"),
    ({b"k": 1}, b"*2\r\n$1\r\nk\r\n:1\r\n", b"%1\r\n$1\r\nk\r\n:1\r\n"),
    (RespSet([b"m"]), b"*1\r\n$1\r\nm\r\n", b"~1\r\n$1\r\nm\r\n"),
    (Status(b"OK"), b"+OK\r\n", b"+OK\r\n"),
    (OK, b"+OK\r\n", b"+OK\r\n"),
    (Raw(b":7\r\n"), b":7\r\n", b":7\r\n"),
    (Verbatim(b"a:1"), b"$3\r\na:1\r\n", b"=7\r\ntxt:a:1\r\n"),
    (ErrorReply("ERR x"), b"-ERR x\r\n", b"-ERR x\r\n"),
    ([ErrorReply("WRONGTYPE y"), [b"n"]], b"*2\r\n-WRONGTYPE y\r\n*1\r\n$1\r\nn\r\n",
     b"*2\r\n-WRONGTYPE y\r\n*1\r\n$1\r\nn\r\n"),
]


@pytest.mark.parametrize("value,resp2,resp3", ENCODINGS, ids=[repr(e[0])[:30] for e in ENCODINGS])
def test_encode(value, resp2, resp3):
    assert encode(value, 2) == resp2
    assert encode(value, 3) == resp3


def test_encode_rejects_unknown_types():
    with pytest.raises(TypeError):
        encode(object())


def test_encode_error_flattens_newlines():
    assert encode_error("ERR a\r\nb") == b"-ERR a  b\r\n"


def test_protocol_error_reply_text():
    assert ProtocolError("invalid bulk length").reply() == \
        b"-ERR Protocol error: invalid bulk length\r\n"
