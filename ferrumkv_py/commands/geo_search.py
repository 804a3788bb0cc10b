"""Geo searches: GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER and their _RO forms.

A search (Redis georadiusGeneric) scans the score ranges of up to nine geohash cells in
Redis's order (``geohash.search_cells``), keeps the members inside the circle or box, then
sorts by distance when asked (or when COUNT is given without ANY, which implies ASC).
COUNT n ANY stops scanning once n members matched.  Arguments are parsed, and errors
raised, in Redis's order; replies are formatted by ``geo.py``.

Complexity: O(log n + m) to scan m members in the cells (numpy rejects most non-matches),
plus O(k log k) to sort k matches; as in Redis, m is bounded only by the set.
"""

from __future__ import annotations

import math

from ..first_use import NUMPY, gate_commands
from .. import errors, geohash
from ..errors import CommandError
from ..pqsort import partial_sort
from ..registry import command
from ..zset import ScoreRange, ZSet
from .geo import (coord_reply, format_distance, long_long, member_lonlat, parse_box,
                  parse_lonlat, parse_radius)
from ._util import parse_int
from ._stored import drop_notify
from .zsetops import store_built
from .zsets import _read


# ---- searches ----

# kinds of search, as Redis's flags
_BY_COORDS, _BY_MEMBER, _SEARCH, _SEARCH_STORE = 1, 2, 3, 4


class _Shape:
    __slots__ = ("lon", "lat", "box", "radius", "width", "height", "to_m")

    def __init__(self):
        self.lon = self.lat = 0.0
        self.box = False
        self.radius = self.width = self.height = 0.0
        self.to_m = 1.0

    def set_radius(self, r: float, to_m: float) -> None:
        self.box, self.radius, self.to_m = False, r, to_m

    def set_box(self, w: float, h: float, to_m: float) -> None:
        self.box, self.width, self.height, self.to_m = True, w, h, to_m


SCAN_CHUNK = 1024     # members read from the sorted set at a time during a search


def _candidates(order, a: int, b: int, sh: _Shape, radius_m: float):
    """The (score, member) pairs at positions a..b-1 that may be inside the shape, lazily
    in chunks (COUNT ANY stops early without reading the rest); numpy rejects the clearly
    outside ones, the caller tests the rest exactly."""
    for start in range(a, b, SCAN_CHUNK):
        pairs = list(order.islice(start, min(start + SCAN_CHUNK, b)))
        if len(pairs) >= geohash.PREFILTER_MIN:
            import numpy as np
            scores = np.fromiter((p[0] for p in pairs), np.float64, len(pairs))
            keep = geohash.prefilter(scores, sh.lon, sh.lat, sh.box, radius_m,
                                     sh.width * sh.to_m, sh.height * sh.to_m)
            pairs = [pairs[k] for k in keep.tolist()]
        yield from pairs


def _collect(z: ZSet, sh: _Shape, limit: int) -> list:
    """[score, member, lon, lat, dist_m] of the members inside the shape, in scan order;
    stops after ``limit`` matches when limit > 0 (COUNT ANY).  Complexity: O(log n + m)."""
    to_m = sh.to_m
    if sh.box:
        half_w, half_h = to_m * (sh.width / 2), to_m * (sh.height / 2)
        radius_m = math.sqrt((sh.width / 2) * (sh.width / 2)
                             + (sh.height / 2) * (sh.height / 2)) * to_m
        w_m, h_m = sh.width * to_m, sh.height * to_m
    else:
        half_w = half_h = to_m * sh.radius
        radius_m = sh.radius * to_m
    found = []
    order = z.order
    distance, in_box, decode = geohash.distance, geohash.in_box, geohash.decode
    for lo, hi in geohash.search_cells(sh.lon, sh.lat, radius_m, half_w, half_h):
        if found and limit and len(found) >= limit:
            break
        a, b = z.score_span(ScoreRange(float(lo), float(hi), False, True))
        for score, member in _candidates(order, a, b, sh, radius_m):
            lon, lat = decode(score)
            if sh.box:
                d = in_box(w_m, h_m, sh.lon, sh.lat, lon, lat)
                if d is None:
                    continue
            else:
                d = distance(sh.lon, sh.lat, lon, lat)
                if d > radius_m:
                    continue
            found.append((score, member, lon, lat, d))
            if limit and len(found) >= limit:
                break
    return found


class _Opts:
    """The parsed options of one search (Redis georadiusGeneric's locals)."""

    __slots__ = ("withdist", "withhash", "withcoord", "any", "storedist", "sort", "count",
                 "store", "frommember", "fromloc", "byradius", "bybox")

    def __init__(self, store):
        self.withdist = self.withhash = self.withcoord = self.any = self.storedist = False
        self.frommember = self.fromloc = self.byradius = self.bybox = False
        self.sort = None
        self.count = 0
        self.store = store


def _parse_options(argv, i: int, kind: int, nostore: bool, z, sh: _Shape, o: _Opts) -> None:
    """The options from ``argv[i]`` on, in Redis's order: each one is checked (and a
    FROMMEMBER / FROMLONLAT / BYRADIUS / BYBOX read) when met, so errors come in its order."""
    search = kind in (_SEARCH, _SEARCH_STORE)
    n = len(argv)
    while i < n:
        arg = argv[i].lower()
        left = n - i - 1
        if arg in _FLAG_OPTS:
            setattr(o, _FLAG_OPTS[arg], True)
        elif arg in (b"asc", b"desc"):
            o.sort = arg.decode()
        elif arg == b"count" and left >= 1:
            o.count = parse_int(argv[i + 1])
            if o.count <= 0:
                raise CommandError(errors.GEO_COUNT)
            i += 1
        elif arg in (b"store", b"storedist") and left >= 1 and not nostore and not search:
            o.store, o.storedist = argv[i + 1], arg == b"storedist"
            i += 1
        elif arg == b"storedist" and kind == _SEARCH_STORE:
            o.storedist = True
        elif arg == b"frommember" and left >= 1 and search and not o.fromloc:
            if z is not None:
                sh.lon, sh.lat = member_lonlat(z, argv[i + 1])
            o.frommember = True
            i += 1
        elif arg == b"fromlonlat" and left >= 2 and search and not o.frommember:
            sh.lon, sh.lat = parse_lonlat(argv[i + 1], argv[i + 2])
            o.fromloc = True
            i += 2
        elif arg == b"byradius" and left >= 2 and search and not o.bybox:
            sh.set_radius(*parse_radius(argv[i + 1], argv[i + 2]))
            o.byradius = True
            i += 2
        elif arg == b"bybox" and left >= 3 and search and not o.byradius:
            sh.set_box(*parse_box(argv[i + 1], argv[i + 2], argv[i + 3]))
            o.bybox = True
            i += 3
        else:
            raise CommandError(errors.SYNTAX)
        i += 1


_FLAG_OPTS = {b"withdist": "withdist", b"withhash": "withhash", b"withcoord": "withcoord",
              b"any": "any"}


def _check_options(argv, kind: int, o: _Opts) -> None:
    """The combination checks Redis makes once every option is read."""
    name = argv[0].decode("utf-8", "replace")
    search = kind in (_SEARCH, _SEARCH_STORE)
    if o.store is not None and (o.withdist or o.withhash or o.withcoord):
        raise CommandError(errors.GEO_STORE_WITH % (
            "GEOSEARCHSTORE" if kind == _SEARCH_STORE else "STORE option in GEORADIUS"))
    if search and not (o.frommember or o.fromloc):
        raise CommandError(errors.GEO_NEED_FROM % name)
    if search and not (o.byradius or o.bybox):
        raise CommandError(errors.GEO_NEED_BY % name)
    if o.any and not o.count:
        raise CommandError(errors.GEO_ANY_NEEDS_COUNT)


def _search(c, argv, src: int, kind: int, nostore: bool = False):
    """Redis georadiusGeneric: the source key (WRONGTYPE first), the fixed arguments of the
    GEORADIUS forms, the options, then search and reply or store."""
    e = _read(c, argv[src])
    z = c.db.vals[e] if e is not None else None
    sh = _Shape()
    if kind == _BY_COORDS:
        base = 6
        sh.lon, sh.lat = parse_lonlat(argv[2], argv[3])
        sh.set_radius(*parse_radius(argv[4], argv[5]))
    elif kind == _BY_MEMBER:
        base = 5
        if z is not None:
            sh.lon, sh.lat = member_lonlat(z, argv[2])
            sh.set_radius(*parse_radius(argv[3], argv[4]))
    else:
        base = 2 if kind == _SEARCH else 3
    o = _Opts(argv[1] if kind == _SEARCH_STORE else None)
    _parse_options(argv, base, kind, nostore, z, sh, o)
    _check_options(argv, kind, o)
    if z is None:
        if o.store is not None:
            drop_notify(c, o.store)     # a missing source empties the destination: "del"
            return 0
        return []
    if o.count and o.sort is None and not o.any:
        o.sort = "asc"       # COUNT without ANY returns the nearest ones
    found = _collect(z, sh, o.count if o.any else 0)
    if o.sort is not None:
        desc = o.sort == "desc"
        if o.count and o.count < len(found):
            # Redis sorts only the first COUNT (its pqsort): equal distances keep its order
            partial_sort(found, _dist, 0, o.count - 1, desc)
        else:
            # Redis qsorts by distance (glibc's qsort is a stable merge sort here)
            found.sort(key=_dist, reverse=desc)
    if o.count:
        del found[o.count:]
    return _reply(c, found, sh.to_m, o,
                  b"geosearchstore" if kind == _SEARCH_STORE else b"georadiusstore")


def _dist(p) -> float:
    return p[4]


def _reply(c, found: list, to_m: float, o: _Opts, event: bytes):
    """The search result: stored (geohash or distance scores; ``event`` is published, or
    ``del`` for an empty result), names, or [name, extras]."""
    if o.store is not None:
        return store_built(c, o.store,
                           [((p[4] / to_m) if o.storedist else p[0], p[1]) for p in found],
                           event)
    if not (o.withdist or o.withhash or o.withcoord):
        return [p[1] for p in found]
    out = []
    for score, member, lon, lat, d in found:
        item = [member]
        if o.withdist:
            item.append(format_distance(d / to_m))
        if o.withhash:
            item.append(long_long(score))
        if o.withcoord:
            item.append([coord_reply(c, lon), coord_reply(c, lat)])
        out.append(item)
    return out


@command("georadius", -6, "write denyoom movablekeys", first_key=1, group="geo")
def georadius(c, argv):
    """GEORADIUS key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key] [STOREDIST key]
    Members within a radius of a point (superseded by GEOSEARCH)."""
    return _search(c, argv, 1, _BY_COORDS)


@command("georadius_ro", -6, "readonly", first_key=1, group="geo")
def georadius_ro(c, argv):
    """GEORADIUS_RO key longitude latitude radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
    Read-only GEORADIUS (no STORE)."""
    return _search(c, argv, 1, _BY_COORDS, nostore=True)


@command("georadiusbymember", -5, "write denyoom movablekeys", first_key=1, group="geo")
def georadiusbymember(c, argv):
    """GEORADIUSBYMEMBER key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC] [STORE key] [STOREDIST key]
    Members within a radius of a member (superseded by GEOSEARCH)."""
    return _search(c, argv, 1, _BY_MEMBER)


@command("georadiusbymember_ro", -5, "readonly", first_key=1, group="geo")
def georadiusbymember_ro(c, argv):
    """GEORADIUSBYMEMBER_RO key member radius <M | KM | FT | MI> [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]
    Read-only GEORADIUSBYMEMBER (no STORE)."""
    return _search(c, argv, 1, _BY_MEMBER, nostore=True)


@command("geosearch", -7, "readonly", first_key=1, group="geo")
def geosearch(c, argv):
    """GEOSEARCH key <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
    Members inside a circle or box around a member or a point."""
    return _search(c, argv, 1, _SEARCH)


@command("geosearchstore", -8, "write denyoom", first_key=1, last_key=2, group="geo")
def geosearchstore(c, argv):
    """GEOSEARCHSTORE destination source <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius <M | KM | FT | MI> | BYBOX width height <M | KM | FT | MI>> [ASC | DESC] [COUNT count [ANY]] [STOREDIST]
    GEOSEARCH, storing the result as a sorted set (scores: geohashes, or distances)."""
    return _search(c, argv, 2, _SEARCH_STORE)


# ---- first use (first_use.py): numpy loads on a thread while only the caller waits ----

gate_commands(NUMPY, ['georadius', 'georadius_ro', 'georadiusbymember', 'georadiusbymember_ro', 'geosearch', 'geosearchstore'])
