"""HyperLogLog commands (Redis 7.0): PFADD PFCOUNT PFMERGE PFDEBUG PFSELFTEST.

The values are Redis's own HyperLogLog strings (``hll.py`` has the format), so a value
copied with GET / SET to or from a redis-server keeps working on both sides.  A string that
is not a HyperLogLog is refused with ``WRONGTYPE Key is not a valid HyperLogLog string
value.``; one with a valid header but broken sparse opcodes with ``INVALIDOBJ Corrupted HLL
object detected``.

Keyspace lookups follow Redis: PFCOUNT and the PFMERGE sources are counted reads, PFADD,
the PFMERGE destination and PFDEBUG write lookups.  PFCOUNT of one key stores the estimate
back into the value's cache bytes, which changes the value (WATCH sees it, as in Redis).

Keyspace notifications (class ``$``): PFADD publishes ``pfadd`` when it created the key or
changed a register, PFMERGE always publishes ``pfadd``; PFCOUNT's cache rewrite and PFDEBUG
publish nothing, as in Redis 7.0.
"""

from __future__ import annotations

from .. import errors
from ..first_use import Kernels, gate_commands
from ..lazy import LazyModule
from ..errors import CommandError, WrongTypeError
from ..notify import NOTIFY_STRING
from ..registry import command
from ..resp import OK, Status

np = LazyModule("numpy")               # loaded at the first HyperLogLog command
hll = LazyModule("ferrumkv_py.hll")

SELFTEST_REGISTER_CYCLES = 1000        # Redis HLL_TEST_CYCLES
SELFTEST_ELEMENTS = 10_000_000         # unique elements added in the error test
SELFTEST_BATCH = 1 << 20               # elements hashed per numpy batch
SELFTEST_REL_ERR_SIGMAS = 6            # allowed error: 6 standard errors (1.04 / sqrt(m))


def _hll_value(db, e: int):
    """The value in slot ``e`` of ``db``, which must hold a HyperLogLog (isHLLObjectOrReply)."""
    v = db.vals[e]
    if v.__class__ is not bytes:
        raise WrongTypeError()
    if not hll.is_hll(v):
        raise CommandError(errors.HLL_WRONGTYPE)
    return v


def _corrupt():
    return CommandError(errors.HLL_INVALID)


def _max_bytes(c) -> int:
    return c.server.config["hll-sparse-max-bytes"]


@command("pfadd", -2, "write denyoom fast", first_key=1, group="hyperloglog")
def pfadd(c, argv):
    """PFADD key [element [element ...]]
    Adds elements to a HyperLogLog (creating it); 1 if its estimate may have changed."""
    db = c.db
    e = db.lookup_write(argv[1])
    if e is None:
        value, _ = hll.add(hll.new_sparse(), argv[2:], _max_bytes(c))
        db.add(argv[1], hll.mark_stale(value))    # created counts as updated, as Redis
        if c.ks.notify_flags:
            c.ks.notify(db, NOTIFY_STRING, b"pfadd", argv[1])
        return 1
    try:
        value, updated = hll.add(_hll_value(db, e), argv[2:], _max_bytes(c))
    except hll.HLLCorrupt:
        raise _corrupt() from None
    if updated:
        db.set_value(e, value)
        if c.ks.notify_flags:
            c.ks.notify(db, NOTIFY_STRING, b"pfadd", argv[1])
    return 1 if updated else 0


@command("pfcount", -2, "readonly may_replicate", first_key=1, last_key=-1, group="hyperloglog")
def pfcount(c, argv):
    """PFCOUNT key [key ...]
    Returns the estimated cardinality of a HyperLogLog, or of the union of several."""
    db = c.db
    if len(argv) > 2:
        merged = np.zeros(hll.HLL_REGISTERS, np.uint8)
        for key in argv[1:]:
            e = db.lookup_read(key)
            if e is None:
                continue
            try:
                np.maximum(merged, hll.registers(_hll_value(db, e)), out=merged)
            except hll.HLLCorrupt:
                raise _corrupt() from None
        return hll.count_registers(merged)
    e = db.lookup_read(argv[1])
    if e is None:
        return 0
    value = _hll_value(db, e)
    card = hll.cached_card(value)
    if card is None:
        try:
            card = hll.count(value)
        except hll.HLLCorrupt:
            raise _corrupt() from None
        db.set_value(e, hll.with_card(value, card))
    return card


@command("pfmerge", -2, "write denyoom", first_key=1, last_key=-1, group="hyperloglog")
def pfmerge(c, argv):
    """PFMERGE destkey [sourcekey [sourcekey ...]]
    Merges HyperLogLogs into the destination (which is also a source if it exists)."""
    db = c.db
    merged = np.zeros(hll.HLL_REGISTERS, np.uint8)
    use_dense = False
    for key in argv[1:]:
        e = db.lookup_read(key)
        if e is None:
            continue
        value = _hll_value(db, e)
        use_dense = use_dense or hll.encoding(value) == hll.DENSE
        try:
            np.maximum(merged, hll.registers(value), out=merged)
        except hll.HLLCorrupt:
            raise _corrupt() from None
    e = db.lookup_write(argv[1])
    value = hll.new_sparse() if e is None else db.vals[e]
    try:
        if use_dense:
            value = hll.to_dense(value)
        idxs = np.flatnonzero(merged)
        value, _ = hll.set_registers(value, idxs, merged[idxs].astype(np.int64),
                                     _max_bytes(c))
    except hll.HLLCorrupt:
        raise _corrupt() from None
    value = hll.mark_stale(value)
    if e is None:
        db.add(argv[1], value)
    else:
        db.set_value(e, value)
    # Redis publishes "pfadd" (a merge is a mass add), changed or not
    c.ks.notify(db, NOTIFY_STRING, b"pfadd", argv[1])
    return OK


@command("pfdebug", 3, "write denyoom admin", first_key=2, group="hyperloglog")
def pfdebug(c, argv):
    """PFDEBUG subcommand key
    Internal commands for debugging HyperLogLog values: GETREG, DECODE, ENCODING, TODENSE."""
    db = c.db
    e = db.lookup_write(argv[2])
    if e is None:
        raise CommandError(errors.PFDEBUG_NO_KEY)
    value = _hll_value(db, e)
    sub = argv[1].lower()
    sparse = hll.encoding(value) == hll.SPARSE
    try:
        if sub == b"getreg":
            if sparse:
                value = hll.to_dense(value)
                db.set_value(e, value)
            return hll.registers(value).tolist()
        if sub == b"decode":
            if not sparse:
                raise CommandError(errors.PFDEBUG_NOT_SPARSE)
            return hll.decode_sparse(value).encode()
        if sub == b"encoding":
            return Status(b"sparse" if sparse else b"dense")
        if sub == b"todense":
            if sparse:
                db.set_value(e, hll.to_dense(value))
            return 1 if sparse else 0
    except hll.HLLCorrupt:
        raise _corrupt() from None
    nul = argv[1].find(b"\x00")
    name = argv[1] if nul < 0 else argv[1][:nul]
    raise CommandError(errors.PFDEBUG_UNKNOWN % name.decode("utf-8", "surrogateescape"))


def _selftest_registers(rng) -> None:
    """Test 1: every dense register keeps what was written and leaves its neighbours."""
    header = hll.new_sparse()[:hll.HDR_SIZE]
    for _ in range(SELFTEST_REGISTER_CYCLES):
        want = np.frombuffer(rng.randbytes(hll.HLL_REGISTERS), np.uint8) & hll.HLL_REGISTER_MAX
        buf = np.frombuffer(hll.pack_dense(header, np.zeros(hll.HLL_REGISTERS, np.uint8)),
                            np.uint8).copy()
        idxs = np.arange(hll.HLL_REGISTERS, dtype=np.int64)
        hll._dense_add_all(buf, idxs, want.astype(np.int64), 0)
        got = hll.registers(buf.tobytes())
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            raise CommandError(errors.PFSELFTEST_REGISTER % (i, want[i], got[i]))


def _selftest_error(rng, max_bytes: int) -> None:
    """Test 2: unique elements into a dense and a sparse HLL; at 1, 10, 100 ... the two
    agree, the sparse one is still sparse while small, and the error stays within bounds."""
    dense = hll.to_dense(hll.new_sparse())
    sparse = hll.new_sparse()
    seed = np.uint64(rng.getrandbits(64))
    rel_err = 1.04 / np.sqrt(hll.HLL_REGISTERS)
    done = 0
    checkpoint = 1
    while done < SELFTEST_ELEMENTS:
        hi = min(checkpoint, done + SELFTEST_BATCH, SELFTEST_ELEMENTS)
        elements = np.arange(done + 1, hi + 1, dtype=np.uint64) ^ seed
        data = elements.astype("<u8").view(np.uint8)
        offsets = np.arange(0, len(data) + 1, 8, dtype=np.int64)
        idxs = np.empty(len(elements), np.int64)
        cnts = np.empty(len(elements), np.int64)
        hll._hash_all(data, offsets, idxs, cnts)
        dense, _ = hll.set_registers(dense, idxs, cnts, max_bytes)
        sparse, _ = hll.set_registers(sparse, idxs, cnts, max_bytes)
        done = hi
        if done != checkpoint:
            continue
        if done < max_bytes / 2 and hll.encoding(sparse) != hll.SPARSE:
            raise CommandError(errors.PFSELFTEST_NOT_SPARSE)
        card = hll.count(dense)
        if card != hll.count(sparse):
            raise CommandError(errors.PFSELFTEST_DISAGREE)
        max_err = 1 if done == 10 else int(np.ceil(rel_err * SELFTEST_REL_ERR_SIGMAS * done))
        if abs(done - card) > max_err:
            raise CommandError(errors.PFSELFTEST_ERROR % (done, abs(done - card)))
        checkpoint *= 10


@command("pfselftest", 1, "admin", group="hyperloglog")
def pfselftest(c, argv):
    """PFSELFTEST
    An internal command for testing HyperLogLog values (registers, encodings, error)."""
    rng = c.ks.rng
    _selftest_registers(rng)
    _selftest_error(rng, _max_bytes(c))
    return Status(b"OK")


# ---- first use (first_use.py): the kernels load on a thread while only the caller waits ----

KERNELS = Kernels("hyperloglog", ("ferrumkv_py.hll",))
gate_commands(KERNELS, ['pfadd', 'pfcount', 'pfmerge', 'pfdebug', 'pfselftest'])
