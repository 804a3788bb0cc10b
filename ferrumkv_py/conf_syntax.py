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

from .resp_reader import split_inline

_REPR = {ord("\\"): b"\\\\", ord('"'): b'\\"', ord("\n"): b"\\n", ord("\r"): b"\\r",
         ord("\t"): b"\\t", ord("\a"): b"\\a", ord("\b"): b"\\b"}
PRINTABLE_LO, PRINTABLE_HI = 0x20, 0x7E   # C isprint() in the "C" locale
CONF_TRIM = b" \t\r\n"                    # what Redis strips from each config line


class UnbalancedQuotes(ValueError):
    """sdssplitargs returned NULL."""


def split_args(line: bytes) -> list[bytes]:
    """Redis ``sdssplitargs``: the words of one line.  Raises :class:`UnbalancedQuotes`.

    The same splitter reads inline commands (``resp_reader.split_inline``, the one home of
    the rule); a config line is a C string to Redis too, so a NUL byte ends it.
    Complexity: O(len(line)).
    """
    words = split_inline(line)
    if words is None:
        raise UnbalancedQuotes()
    return words


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
