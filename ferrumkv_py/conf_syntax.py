"""Config-file syntax as Redis reads and writes it: ``sdssplitargs`` and ``sdscatrepr``.

A config line is words separated by blanks.  A word may be quoted: ``"..."`` reads the
escapes ``\\n \\r \\t \\b \\a \\\\ \\"`` and ``\\xHH`` (any other ``\\c`` is ``c``); ``'...'`` reads
only ``\\'``.  A closing quote must end the word (``"a"b`` is an error), and an unclosed
quote makes the whole line an error ("Unbalanced quotes in configuration line").
:func:`repr_arg` writes a value the way ``CONFIG REWRITE`` does (Redis ``sdscatrepr``):
always double-quoted, printable ASCII as is, ``\\`` and ``"`` escaped, ``\\n \\r \\t \\a \\b``
by name and every other byte as ``\\xHH``, so any byte string reads back as itself on one
line.  Values are handled as bytes; :mod:`config` keeps them as ``str`` decoded with
``surrogateescape`` so non-UTF-8 bytes survive the round trip.

Complexity: O(len(line)) for both directions.
"""

from __future__ import annotations

_BLANKS = b" \n\r\t\v\f\0"   # isspace() plus the NUL that ends a C string
_ESCAPES = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b",
            ord("a"): b"\a"}
_HEX = b"0123456789abcdefABCDEF"
_REPR = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\r"): b"\\r",
         ord("\t"): b"\\t", ord("\a"): b"\\a", ord("\b"): b"\\b"}
PRINTABLE_LO, PRINTABLE_HI = 0x20, 0x7E   # C isprint() in the "C" locale
CONF_TRIM = b" \t\r\n"                    # what Redis strips from each config line


class UnbalancedQuotes(ValueError):
    """sdssplitargs returned NULL."""


def split_args(line: bytes) -> list[bytes]:
    """Redis ``sdssplitargs``: the words of one line.  Raises :class:`UnbalancedQuotes`.

    Complexity: O(len(line)).
    """
    out: list[bytes] = []
    n, i = len(line), 0
    while True:
        while i < n and line[i] in _BLANKS:
            i += 1
        if i >= n:
            return out
        cur = bytearray()
        inq = insq = False
        while True:
            c = line[i] if i < n else 0
            if inq:
                if c == 0x5C and i + 3 < n and line[i + 1] == 0x78 \
                        and line[i + 2] in _HEX and line[i + 3] in _HEX:   # \xHH
                    cur.append(int(line[i + 2:i + 4], 16))
                    i += 3
                elif c == 0x5C and i + 1 < n:
                    i += 1
                    cur += _ESCAPES.get(line[i], line[i:i + 1])
                elif c == 0x22:                                            # closing "
                    if i + 1 < n and line[i + 1] not in _BLANKS:
                        raise UnbalancedQuotes()
                    i += 1
                    break
                elif i >= n:
                    raise UnbalancedQuotes()
                else:
                    cur.append(c)
            elif insq:
                if c == 0x5C and i + 1 < n and line[i + 1] == 0x27:        # \'
                    i += 1
                    cur.append(0x27)
                elif c == 0x27:                                            # closing '
                    if i + 1 < n and line[i + 1] not in _BLANKS:
                        raise UnbalancedQuotes()
                    i += 1
                    break
                elif i >= n:
                    raise UnbalancedQuotes()
                else:
                    cur.append(c)
            else:
                if i >= n or c in b" \n\r\t\0":
                    break
                if c == 0x22:
                    inq = True
                elif c == 0x27:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        out.append(bytes(cur))


def repr_arg(value: bytes) -> bytes:
    """Redis ``sdscatrepr``: ``b'a "b"\\n'`` -> ``b'"a \\\\"b\\\\"\\\\n"'``.  Complexity: O(len)."""
    out = bytearray(b'"')
    for c in value:
        esc = _REPR.get(c)
        if esc is not None:
            out += esc
        elif PRINTABLE_LO <= c <= PRINTABLE_HI:
            out.append(c)
        else:
            out += b"\\x%02x" % c
    out.append(0x22)
    return bytes(out)


def needs_quotes(value: bytes) -> bool:
    """True unless ``value`` reads back as itself unquoted (a plain non-empty word)."""
    return (not value or any(c in _REPR or not PRINTABLE_LO < c <= PRINTABLE_HI
                             for c in value) or value[:1] in (b"'", b"#"))


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def to_str(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")
