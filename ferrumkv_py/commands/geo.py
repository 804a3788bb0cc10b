"""Geo commands on sorted sets: GEOADD GEODIST GEOHASH GEOPOS, and the argument parsing and
reply formatting the searches share (GEOSEARCH and the GEORADIUS family: ``geo_search.py``).

A geo set is a plain sorted set whose scores are 52-bit geohashes (``geohash.py`` explains
the encoding and the search cells), so every sorted-set command works on it too.  Replies
are byte-equal to redis-server's: distances with 4 decimals (Redis fixedpoint_d2string),
coordinates as Redis's "human" long double text, RESP3 doubles for coordinates but bulk
strings for distances.

Complexity: O(log n) per member.
"""

from __future__ import annotations

from .. import errors, geohash
from ..errors import CommandError
from ..registry import command
from ..resp import NULL_ARRAY, Raw
from ..zset import ZSet
from ._util import parse_double
from .zsets import _read, _zadd

# meters per unit (Redis extractUnitOrReply; the unit is matched case-insensitively)
UNIT_METERS = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}
DIST_DECIMALS = 4                      # distances are printed with 4 decimals
_DIST_SCALE = 10.0 ** DIST_DECIMALS


# ---- reply formatting ----

def format_distance(d: float) -> bytes:
    """Redis fixedpoint_d2string(d, 4): llrint(d * 10**4) (ties to even), then the integer
    part, a dot and 4 digits.  Complexity: O(1)."""
    if d == 0:
        return b"0.0000"
    x = d * _DIST_SCALE
    # llrint: ties to even; NaN and out-of-range values give LLONG_MIN on x86-64
    v = round(x) if x == x and -2.0 ** 63 <= x < 2.0 ** 63 else -(1 << 63)
    sign = b"-" if v < 0 else b""
    ip, fp = divmod(abs(v), 10 ** DIST_DECIMALS)
    return b"%s%d.%04d" % (sign, ip, fp)


def format_coord(x: float) -> bytes:
    """A coordinate as Redis addReplyHumanLongDouble sends it: "%.17Lf" of the double
    widened to long double (exact), trailing zeros and dot removed, "-0" -> "0".

    Python's "%.17f" rounds the same exact binary value correctly, as glibc's printf does,
    so it gives the same digits as longdouble.format_long_double_human (checked on 1.6M
    values) at 1 us instead of 89 us.  Complexity: O(1)."""
    t = ("%.17f" % x).rstrip("0")
    if t[-1] == ".":
        t = t[:-1]
    return b"0" if t == "-0" else t.encode()


def coord_reply(c, x: float):
    text = format_coord(x)
    if c.proto == 3:
        return Raw(b"," + text + b"\r\n")
    return text


def long_long(score: float) -> int:
    """C's ``(long long)score`` on x86-64 (WITHHASH): truncation; 2**63-overflow -> LLONG_MIN."""
    if score != score or not -2.0 ** 63 <= score < 2.0 ** 63:
        return -(1 << 63)
    return int(score)


# ---- argument parsing ----

def _unit(b: bytes) -> float:
    to_m = UNIT_METERS.get(b.lower())
    if to_m is None:
        raise CommandError(errors.GEO_UNIT)
    return to_m


def parse_lonlat(a: bytes, b: bytes) -> tuple[float, float]:
    """Redis extractLongLatOrReply: two doubles inside the indexable range."""
    lon, lat = parse_double(a), parse_double(b)
    if not geohash.in_range(lon, lat):
        raise CommandError(errors.GEO_INVALID_PAIR % (lon, lat))
    return lon, lat


def parse_radius(a: bytes, unit: bytes) -> tuple[float, float]:
    """(radius, meters per unit) of ``radius unit`` (extractDistanceOrReply)."""
    r = parse_double(a, errors.GEO_NEED_RADIUS)
    if r < 0:
        raise CommandError(errors.GEO_RADIUS_NEGATIVE)
    return r, _unit(unit)


def parse_box(w: bytes, h: bytes, unit: bytes) -> tuple[float, float, float]:
    """(width, height, meters per unit) of ``width height unit`` (extractBoxOrReply)."""
    width = parse_double(w, errors.GEO_NEED_WIDTH)
    height = parse_double(h, errors.GEO_NEED_HEIGHT)
    if height < 0 or width < 0:
        raise CommandError(errors.GEO_BOX_NEGATIVE)
    return width, height, _unit(unit)


def member_lonlat(z: ZSet, member: bytes) -> tuple[float, float]:
    score = z.score(member)
    if score is None:
        raise CommandError(errors.GEO_BAD_MEMBER)
    return geohash.decode(score)


# ---- GEOADD and the point reads ----

@command("geoadd", -5, "write denyoom", first_key=1, group="geo")
def geoadd(c, argv):
    """GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]
    Adds points to a geo set (a sorted set scored by geohash); returns how many were added.

    Complexity: O(log n) per point."""
    flags, i = set(), 2
    while i < len(argv):
        opt = argv[i].lower()
        if opt in (b"nx", b"xx", b"ch"):
            flags.add(opt.decode())
            i += 1
        else:
            break
    if (len(argv) - i) % 3 or ("nx" in flags and "xx" in flags):
        raise CommandError(errors.SYNTAX)
    args = []
    for j in range(i, len(argv), 3):
        lon, lat = parse_lonlat(argv[j], argv[j + 1])
        args.append(b"%d" % geohash.score_of(lon, lat))
        args.append(argv[j + 2])
    return _zadd(c, argv[1], flags, args)


@command("geodist", -4, "readonly", first_key=1, group="geo")
def geodist(c, argv):
    """GEODIST key member1 member2 [M | KM | FT | MI]
    Returns the distance between two members (meters by default), or null."""
    to_m = 1.0
    if len(argv) == 5:
        to_m = _unit(argv[4])
    elif len(argv) > 5:
        raise CommandError(errors.SYNTAX)
    e = _read(c, argv[1])
    if e is None:
        return None
    z = c.db.vals[e]
    s1, s2 = z.score(argv[2]), z.score(argv[3])
    if s1 is None or s2 is None:
        return None
    (x1, y1), (x2, y2) = geohash.decode(s1), geohash.decode(s2)
    return format_distance(geohash.distance(x1, y1, x2, y2) / to_m)


@command("geohash", -2, "readonly", first_key=1, group="geo")
def geohash_(c, argv):
    """GEOHASH key [member ...]
    Returns the 11-character standard geohash of each member (null where missing)."""
    e = _read(c, argv[1])
    get = c.db.vals[e].score if e is not None else (lambda m: None)
    out = []
    for m in argv[2:]:
        s = get(m)
        out.append(None if s is None else geohash.geohash_string(s))
    return out


@command("geopos", -2, "readonly", first_key=1, group="geo")
def geopos(c, argv):
    """GEOPOS key [member ...]
    Returns the [longitude, latitude] of each member (a null array where missing)."""
    e = _read(c, argv[1])
    get = c.db.vals[e].score if e is not None else (lambda m: None)
    out = []
    for m in argv[2:]:
        s = get(m)
        if s is None:
            out.append(NULL_ARRAY)
        else:
            lon, lat = geohash.decode(s)
            out.append([coord_reply(c, lon), coord_reply(c, lat)])
    return out
