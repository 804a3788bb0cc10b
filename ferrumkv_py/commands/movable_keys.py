"""COMMAND GETKEYS for the movable-key commands of this family, as Redis 7.0 finds them.

Redis 7.0 answers from each command's key specs where they are complete, and from a
command-specific function where they are not:

* ZUNION ZINTER ZDIFF ZINTERCARD: ``numkeys`` at argument 1, then that many keys;
  ZUNIONSTORE ZINTERSTORE ZDIFFSTORE: the destination, then ``numkeys`` at argument 2.  A
  ``numkeys`` that is not a positive integer or runs past the arguments is refused with
  "Invalid arguments specified for command".
* GEORADIUS / GEORADIUSBYMEMBER: the key, then the argument after the first ``STORE`` and
  the one after the first ``STOREDIST`` (keyword searches from the first option).
* SORT: the key, then the argument after the *last* ``STORE`` (Redis sortGetKeys, which
  steps over the arguments of LIMIT, GET and BY).

The hook is ``CommandSpec.getkeys``; the dispatcher's own ``spec.keys`` is unchanged.
Complexity: O(len(argv)).
"""

from __future__ import annotations

import re

from .. import errors
from ..errors import CommandError
from ..registry import COMMANDS

_SORT_SKIP = ((b"limit", 2), (b"get", 1), (b"by", 1))


_ATOI = re.compile(rb"[ \t\n\v\f\r]*([+-]?[0-9]+)")
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1


def _atoi(b: bytes) -> int:
    """C atoi as Redis reads a key spec's numkeys: leading space, a sign, digits, and
    whatever follows ignored ("1.0" is 1, "0x1" is 0)."""
    m = _ATOI.match(b.split(b"\0", 1)[0])
    return max(INT_MIN, min(INT_MAX, int(m.group(1)))) if m else 0


def _numkeys(argv: list, at: int) -> list:
    """``numkeys`` at ``argv[at]``, then that many keys, which must all exist."""
    n = _atoi(argv[at]) if at < len(argv) else 0
    if n < 1 or at + n > len(argv) - 1:
        raise CommandError(errors.GETKEYS_INVALID)
    return argv[at + 1:at + 1 + n]


def numkeys_at_1(argv: list) -> list:
    return _numkeys(argv, 1)


def dest_then_numkeys(argv: list) -> list:
    return [argv[1]] + _numkeys(argv, 2)


def _keyword_key(argv: list, start: int, word: bytes) -> list:
    for i in range(start, len(argv)):
        if argv[i].lower() == word:
            return [argv[i + 1]] if i + 1 < len(argv) else []
    return []


def _georadius(start: int):
    def getkeys(argv: list) -> list:
        return ([argv[1]] + _keyword_key(argv, start, b"store")
                + _keyword_key(argv, start, b"storedist"))
    return getkeys


def sort_keys(argv: list) -> list:
    """Redis sortGetKeys: the key and the last STORE destination."""
    store = None
    i, n = 2, len(argv)
    while i < n:
        opt = argv[i].lower()
        for name, skip in _SORT_SKIP:
            if opt == name:
                i += skip
                break
            if opt == b"store" and i + 1 < n:
                store = argv[i + 1]
                break
        i += 1
    return [argv[1]] if store is None else [argv[1], store]


def _install() -> None:
    for name in (b"zunion", b"zinter", b"zdiff", b"zintercard"):
        COMMANDS[name].getkeys = numkeys_at_1
    for name in (b"zunionstore", b"zinterstore", b"zdiffstore"):
        COMMANDS[name].getkeys = dest_then_numkeys
    COMMANDS[b"georadius"].getkeys = _georadius(6)
    COMMANDS[b"georadiusbymember"].getkeys = _georadius(5)
    COMMANDS[b"sort"].getkeys = sort_keys


from . import geo_search, sort, zsetops  # noqa: E402,F401  (register the commands first)

_install()
