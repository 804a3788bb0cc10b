"""DEBUG DIGEST / DIGEST-VALUE: Redis 7.0's order-independent SHA1 signature of a data set.

Two primitives over a 20-byte digest ``d`` (debug.c)::

    xor(d, bytes):  d ^= SHA1(bytes)                  (order does not matter)
    mix(d, bytes):  d = SHA1(d ^ SHA1(bytes))         (order matters)

One key: ``k = 0; mix(k, key); mix(k, type code as a big-endian uint32)``, then the value:
a string is mixed; list elements are mixed head to tail; set members are xored; each hash
field (and sorted-set member) gets its own digest ``e = 0; mix(e, field); mix(e, value or
score as %.17g)`` xored into ``k``; a key with a TTL xors ``"!!expire!!"``.  The data set:
``d = 0``; for each non-empty database ``mix(d, db id as a big-endian uint32)`` then every
key's ``k`` is xored in, so the key order inside a database does not matter.  An empty data
set is 40 zeros.  Equal data gives the same hex string as redis-server 7.0.

Complexity: O(total bytes) for DIGEST, O(value bytes) per key for DIGEST-VALUE.
"""

from __future__ import annotations

import hashlib
import struct

from . import memory

DIGEST_BYTES = 20
TYPE_CODES = {"string": 0, "list": 1, "set": 2, "zset": 3, "hash": 4,   # Redis OBJ_*
              "stream": 6}
EXPIRE_MARK = b"!!expire!!"
ZERO = bytes(DIGEST_BYTES)


def _sha1(data: bytes) -> bytes:
    return hashlib.sha1(data).digest()


def xor_into(d: bytearray, data: bytes) -> None:
    h = _sha1(data)
    for i in range(DIGEST_BYTES):
        d[i] ^= h[i]


def mix_into(d: bytearray, data: bytes) -> None:
    xor_into(d, data)
    d[:] = _sha1(bytes(d))


def _score_text(score: float) -> bytes:
    return b"%.17g" % score


def value_digest(d: bytearray, value, has_ttl: bool) -> None:
    """Mix one value (and its TTL mark) into a key's digest ``d``.
    Complexity: O(value bytes), one SHA1 per element (two per field or member)."""
    kind = memory.type_name(value)
    mix_into(d, struct.pack(">I", TYPE_CODES[kind]))
    if kind == "string":
        mix_into(d, value)
    elif kind == "list":
        for elem in value:
            mix_into(d, elem)
    elif kind == "set":
        for member in value:
            xor_into(d, member)
    elif kind == "stream":      # live entries in ID order: "ms.seq", then each pair
        for i, fv in value.range(0, (1 << 128) - 1):
            mix_into(d, b"%d.%d" % (i >> 64, i & ((1 << 64) - 1)))
            for x in fv:
                mix_into(d, x)
    elif kind == "hash":
        for field, val in value.items():
            e = bytearray(DIGEST_BYTES)
            mix_into(e, field)
            mix_into(e, val)
            xor_into(d, bytes(e))
    else:
        for member, score in value.scores.items():
            e = bytearray(DIGEST_BYTES)
            mix_into(e, member)
            mix_into(e, _score_text(score))
            xor_into(d, bytes(e))
    if has_ttl:
        xor_into(d, EXPIRE_MARK)


def key_digest(key: bytes, value, has_ttl: bool) -> bytes:
    d = bytearray(DIGEST_BYTES)
    mix_into(d, key)
    value_digest(d, value, has_ttl)
    return bytes(d)


def dataset_digest(dbs) -> bytes:
    """``dbs``: (db id, iterable of (key, value, has_ttl)) for every non-empty database.
    Complexity: O(total bytes of the data set)."""
    final = bytearray(DIGEST_BYTES)
    for db_id, items in dbs:
        mix_into(final, struct.pack(">I", db_id))
        for key, value, has_ttl in items:
            xor_into(final, key_digest(key, value, has_ttl))
    return bytes(final)

