"""SORT and SORT_RO: sort a list, set or sorted set, optionally by external keys (BY), with
LIMIT, GET patterns, ASC/DESC, ALPHA and STORE, as Redis 7.0's sort.c does.

Patterns
--------
``BY`` and ``GET`` patterns name other keys: the first ``*`` is replaced by the element,
and ``key->field`` reads a hash field instead of a string.  ``GET #`` returns the element
itself.  A pattern without ``*`` makes BY a no-op (``BY nosort``: the native order of a
list or sorted set, LIMIT and DESC applied to it) and GET return nulls.  Patterns are read
as C strings, as Redis reads them: nothing after a NUL byte counts when looking for ``*``
or ``->``.

Ordering
--------
Numeric sorting parses each element (or its BY value) with C ``strtod`` over the text up
to the first NUL; trailing bytes, ERANGE or NaN make the whole command fail with
"One or more scores can't be converted into double".  A missing BY key sorts as 0.  Ties
are broken by the elements' bytes.  ALPHA compares bytes (C ``strcmp``, i.e. up to a NUL,
without STORE as Redis's strcoll in the C locale; binary-safe ``memcmp`` with STORE); with
a BY pattern a missing value sorts first.  A set sorted with BY nosort is sorted ALPHA
when stored (Redis does this for replication); otherwise it comes in set order (ascending
for a set Redis would keep as an intset).

The stored result is a list (deleted if empty; ``sortstore`` or ``del`` is published).  The
sort is stable, as glibc's qsort is.

Complexity: O(n log n + n * p) for n elements and p patterns (key lookups are O(1)).
"""

from __future__ import annotations

from .. import errors, memory
from ..errors import CommandError, WrongTypeError
from ..notify import NOTIFY_LIST
from ..pqsort import partial_sort
from ..registry import COMMANDS, command
from ..values import RHash, RList, RSet
from ..zset import ZSet
from .introspection import value_encoding
from ._stored import drop_notify
from ._util import EXACT_INT_DIGITS, parse_int, strtod


def _cstr(b: bytes) -> bytes:
    """The bytes a C string function sees: up to the first NUL."""
    i = b.find(b"\0")
    return b if i < 0 else b[:i]


def lookup_by_pattern(c, pattern: bytes, subst: bytes):
    """Redis lookupKeyByPattern: the string (or hash field) a pattern names for one
    element, or None.  ``#`` is the element itself.  Complexity: O(len(pattern))."""
    cpat = _cstr(pattern)
    if cpat == b"#":
        return subst
    p = cpat.find(b"*")
    if p < 0:
        return None
    f = cpat.find(b"->", p + 1)
    field = None
    fieldlen = 0
    if f >= 0 and f + 2 < len(cpat):
        field = pattern[f + 2:]
        fieldlen = len(field)
    postfixlen = len(pattern) - (p + 1) - (fieldlen + 2 if fieldlen else 0)
    key = pattern[:p] + subst + pattern[p + 1:p + 1 + postfixlen]
    e = c.db.lookup_read(key)
    if e is None:
        return None
    v = c.db.vals[e]
    if field is None:
        return v if v.__class__ is bytes else None
    if v.__class__ is not RHash:
        return None
    return v.get(field)


def _score(b: bytes):
    """A numeric sort key, or None when Redis would refuse it."""
    # plain integers of up to 15 digits are exact doubles, the same in float() and strtod
    # (SORT of 2000 integers 12.7 -> see bench/geosort_bench.py)
    digits = b[1:] if b[:1] == b"-" else b
    if digits.isdigit() and len(digits) <= EXACT_INT_DIGITS:
        return float(b)
    text = _cstr(b)
    v, n, erange = strtod(text)
    if n != len(text) or erange or v != v:
        return None
    return v


def _parse(argv: list, readonly: bool, full_read: bool = True):
    """The options, in Redis's order: (desc, alpha, start, count, store, by, gets).
    ``full_read``: the ACL user may read every key; else a BY pattern with ``*`` and any
    GET are refused (acl.unrestricted_read)."""
    desc = alpha = False
    limit_start, limit_count = 0, -1
    store = by = None
    gets = []
    j, n = 2, len(argv)
    while j < n:
        opt = argv[j].lower()
        left = n - j - 1
        if opt == b"asc":
            desc = False
        elif opt == b"desc":
            desc = True
        elif opt == b"alpha":
            alpha = True
        elif opt == b"limit" and left >= 2:
            limit_start, limit_count = parse_int(argv[j + 1]), parse_int(argv[j + 2])
            j += 2
        elif opt == b"store" and left >= 1 and not readonly:
            store = argv[j + 1]
            j += 1
        elif opt == b"by" and left >= 1:
            by = argv[j + 1]
            if not full_read and b"*" in by:
                raise CommandError(errors.SORT_BY_ACL)
            j += 1
        elif opt == b"get" and left >= 1:
            if not full_read:
                raise CommandError(errors.SORT_GET_ACL)
            gets.append(argv[j + 1])
            j += 1
        else:
            raise CommandError(errors.SYNTAX)
        j += 1
    return desc, alpha, limit_start, limit_count, store, by, gets


def _elements(c, value, dontsort: bool, desc: bool, start: int, end: int):
    """The vector Redis loads: (elements, start, end) with the window fixed up when the
    native order was windowed directly (BY nosort on a list or sorted set)."""
    if value is None:
        return [], start, end
    n = len(value)
    if dontsort and value.__class__ in (RList, ZSet):
        if end < start:
            return [], start, end
        if value.__class__ is RList:
            items = list(value)
        else:
            items = [m for _, m in value.order]
        if desc:
            items.reverse()
        windowed = (start != 0 or end != n - 1)
        if windowed:
            items = items[start:end + 1]
        return items, 0, end - start
    if value.__class__ is RList:
        return list(value), start, end
    if value.__class__ is ZSet:
        return list(value.scores), start, end
    if value_encoding(c, value) == b"intset":
        return sorted(value, key=int), start, end
    return list(value), start, end


def _sort_generic(c, argv, readonly: bool):
    from ..acl_calls import unrestricted_read
    full_read = unrestricted_read(c.user, COMMANDS[b"sort_ro" if readonly else b"sort"], argv)
    desc, alpha, limit_start, limit_count, store, by, gets = _parse(argv, readonly, full_read)
    e = c.db.lookup_read(argv[1])
    value = None if e is None else c.db.vals[e]
    if value is not None and value.__class__ not in (RList, RSet, ZSet):
        raise WrongTypeError()
    dontsort = by is not None and b"*" not in _cstr(by)
    if dontsort and value.__class__ is RSet and store is not None:
        dontsort, alpha, by = False, True, None      # sorted for replication, as Redis
    n = 0 if value is None else len(value)
    start = 0 if limit_start < 0 else limit_start
    end = n - 1 if limit_count < 0 else start + limit_count - 1
    if start >= n:
        start, end = n - 1, n - 2
    if end >= n:
        end = n - 1
    items, start, end = _elements(c, value, dontsort, desc, start, end)
    if not dontsort:
        window = (start, end) if by is not None and (start != 0 or end != len(items) - 1) \
            else None
        items = _sorted(c, items, by, alpha, desc, store is not None, window)
    window = items[start:end + 1] if end >= start else []
    if store is None:
        out = []
        for x in window:
            if not gets:
                out.append(x)
            for pat in gets:
                out.append(lookup_by_pattern(c, pat, x))
        return out
    lst = RList()
    for x in window:
        if not gets:
            lst.append(x)
        for pat in gets:
            v = lookup_by_pattern(c, pat, x)
            lst.append(b"" if v is None else v)
    if not lst:
        drop_notify(c, store)           # "del" if there was a destination
        return 0
    lst.mem = memory.recount(lst)
    c.db.set(store, lst)
    c.ks.notify(c.db, NOTIFY_LIST, b"sortstore", store)
    return len(lst)


def _sorted(c, items: list, by, alpha: bool, desc: bool, storing: bool, window) -> list:
    """Redis sortCompare as a sort key (see the module docstring): a stable full sort, as
    glibc's qsort, or with BY and a LIMIT window Redis's partial quicksort of that window."""
    if alpha:
        if by is not None:
            def key(x):
                v = lookup_by_pattern(c, by, x)
                if v is None:
                    return (0, b"")
                return (1, v if storing else _cstr(v))
        elif storing:
            def key(x):
                return x
        else:
            key = _cstr
    else:
        keys = {}
        for x in items:
            v = lookup_by_pattern(c, by, x) if by is not None else x
            s = 0.0 if v is None else _score(v)
            if s is None:
                raise CommandError(errors.SORT_NOT_DOUBLE)
            keys[x] = s

        def key(x):
            return (keys[x], x)
    decorated = [(key(x), x) for x in items]
    if window is not None:
        partial_sort(decorated, _first, window[0], window[1], desc)
    else:
        decorated.sort(key=_first, reverse=desc)
    return [x for _, x in decorated]


def _first(t):
    return t[0]


# Redis files SORT under generic but lists these ACL categories (plus write/read, slow)
SORT_ACL_CATEGORIES = ("set", "sortedset", "list", "dangerous")


@command("sort", -2, "write denyoom movablekeys", first_key=1, group="generic")
def sort(c, argv):
    """SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA] [STORE destination]
    Sorts a list, set or sorted set (numerically, or ALPHA); returns or stores the result."""
    return _sort_generic(c, argv, False)


sort.acl_categories = SORT_ACL_CATEGORIES


@command("sort_ro", -2, "readonly movablekeys", first_key=1, group="generic")
def sort_ro(c, argv):
    """SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern ...]] [ASC|DESC] [ALPHA]
    Read-only SORT (no STORE)."""
    return _sort_generic(c, argv, True)


sort_ro.acl_categories = SORT_ACL_CATEGORIES
