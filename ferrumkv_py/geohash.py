"""Redis's 52-bit geohash: the sorted-set scores of GEOADD and the cells GEOSEARCH scans.

Encoding
--------
A point is stored as the score of a sorted-set member.  Longitude (-180..180) and latitude
(-85.05112878..85.05112878, the Web-Mercator limits Redis uses) are each scaled to a 26-bit
integer cell index, and the two indexes are interleaved bit by bit, latitude in the even
bits and longitude in the odd bits::

    lon index  1 0 1         lat index  0 1 1
    hash       1 0  0 1  1 1    (lon bit, lat bit) pairs, most significant first

The resulting 52-bit integer is exact as a double, and nearby points share long prefixes,
so a geohash cell of ``step`` bits per axis is one contiguous score range
``[bits << (52 - 2 step), (bits + 1) << (52 - 2 step))``.

Decoding returns the centre of the 26-bit cell, not the point that was added (GEOPOS shows
``13.36138933897018433`` for ``13.361389``).  All arithmetic below is the same sequence of
IEEE double operations as Redis's geohash.c / geohash_helper.c, so scores, decoded
coordinates, distances and the set of scanned cells match redis-server to the bit.

Searching
---------
A radius or box search picks a cell size (``step``) from the radius, takes the cell of the
centre and its 8 neighbours, drops neighbours the bounding box cannot reach, and scans each
cell's score range, keeping members inside the shape (``search_cells``).  The order of
cells (centre, N, S, E, W, NE, NW, SE, SW) is the order of unsorted results.

Complexity: encode / decode O(1); ``search_cells`` O(1).
"""

from __future__ import annotations

import math

GEO_STEP_MAX = 26                      # bits per axis of a stored point
GEO_LONG_MIN, GEO_LONG_MAX = -180.0, 180.0
GEO_LAT_MIN, GEO_LAT_MAX = -85.05112878, 85.05112878
EARTH_RADIUS_M = 6372797.560856        # Redis's quadratic mean radius for WGS-84
MERCATOR_MAX_M = 20037726.37           # half the Mercator world width, metres
D_R = math.pi / 180.0                  # degrees -> radians factor
POLAR_LAT_1, POLAR_LAT_2 = 66.0, 80.0  # beyond these, cells are one / two steps larger

# GEOHASH prints standard geohashes: latitude range -90..90, base-32 alphabet, 11 chars.
GEOHASH_ALPHABET = b"0123456789bcdefghjkmnpqrstuvwxyz"
GEOHASH_CHARS = 11
STD_LAT_MIN, STD_LAT_MAX = -90.0, 90.0

_NAN = float("nan")


# C's libm returns NaN outside a function's domain (cos(inf), asin(1.0000000000000002));
# Python raises.  Searches with an infinite radius or box, and distances of nearly antipodal
# points, go through these so they compute what redis-server computes.
def _sin(x: float) -> float:
    return math.sin(x) if math.isfinite(x) else _NAN


def _cos(x: float) -> float:
    return math.cos(x) if math.isfinite(x) else _NAN


def _asin(x: float) -> float:
    return math.asin(x) if -1.0 <= x <= 1.0 else _NAN


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0.0 else _NAN


_EVEN = 0x5555555555555555
_ODD = 0xAAAAAAAAAAAAAAAA
_MASK64 = (1 << 64) - 1


def _spread(v: int) -> int:
    """Put the 32 low bits of ``v`` in the even bit positions of a 64-bit integer."""
    v &= 0xFFFFFFFF
    v = (v | (v << 16)) & 0x0000FFFF0000FFFF
    v = (v | (v << 8)) & 0x00FF00FF00FF00FF
    v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v << 2)) & 0x3333333333333333
    v = (v | (v << 1)) & _EVEN
    return v


def _squash(v: int) -> int:
    """Inverse of :func:`_spread`: the even bits of ``v`` packed into 32 bits."""
    v &= _EVEN
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    v = (v | (v >> 16)) & 0x00000000FFFFFFFF
    return v


def in_range(lon: float, lat: float) -> bool:
    """True if Redis can index the point (GEOADD's "invalid longitude,latitude pair")."""
    return GEO_LONG_MIN <= lon <= GEO_LONG_MAX and GEO_LAT_MIN <= lat <= GEO_LAT_MAX


def encode(lon: float, lat: float, step: int = GEO_STEP_MAX,
           lat_min: float = GEO_LAT_MIN, lat_max: float = GEO_LAT_MAX) -> int:
    """The ``2 * step``-bit interleaved hash of a point (Redis geohashEncode).

    Offsets are scaled in doubles and truncated to integers as C's conversion to uint32
    does.  Complexity: O(1).
    """
    lat_off = (lat - lat_min) / (lat_max - lat_min) * float(1 << step)
    lon_off = (lon - GEO_LONG_MIN) / (GEO_LONG_MAX - GEO_LONG_MIN) * float(1 << step)
    return _spread(int(lat_off)) | (_spread(int(lon_off)) << 1)


def score_of(lon: float, lat: float) -> int:
    """The sorted-set score GEOADD stores: the 52-bit hash.  Complexity: O(1)."""
    return encode(lon, lat) << (52 - 2 * GEO_STEP_MAX)


def cell_area(bits: int, step: int) -> tuple[float, float, float, float]:
    """(lon_min, lon_max, lat_min, lat_max) of one cell (Redis geohashDecode)."""
    ilat = _squash(bits)
    ilon = _squash(bits >> 1)          # uint32 indexes: "+ 1" wraps as in C
    lat_scale = GEO_LAT_MAX - GEO_LAT_MIN
    lon_scale = GEO_LONG_MAX - GEO_LONG_MIN
    div = float(1 << step)
    return (GEO_LONG_MIN + (ilon * 1.0 / div) * lon_scale,
            GEO_LONG_MIN + (((ilon + 1) & 0xFFFFFFFF) * 1.0 / div) * lon_scale,
            GEO_LAT_MIN + (ilat * 1.0 / div) * lat_scale,
            GEO_LAT_MIN + (((ilat + 1) & 0xFFFFFFFF) * 1.0 / div) * lat_scale)


def _cvttsd2si(x: float) -> int:
    """x86-64 double -> int64 truncation, as 64 unsigned bits; the "integer indefinite"
    0x8000000000000000 for NaN and out-of-range values."""
    if x == x and -2.0 ** 63 <= x < 2.0 ** 63:
        return int(x) & _MASK64
    return 1 << 63


def score_bits(score: float) -> int:
    """C's ``(uint64_t)score`` as gcc compiles it for x86-64: below 2**63 a signed
    conversion (negatives wrap), above it a conversion of ``score - 2**63`` with the top
    bit flipped (so 1e20 gives 0)."""
    if not score >= 2.0 ** 63:
        return _cvttsd2si(score)
    return _cvttsd2si(score - 2.0 ** 63) ^ (1 << 63)


def _squash_table() -> bytes:
    """The even bits of every 16-bit value, packed into 8 bits (for :func:`decode`)."""
    sq8 = [_squash(i) for i in range(1 << 8)]
    return bytes(sq8[i & 0xFF] | sq8[i >> 8] << 4 for i in range(1 << 16))


_SQ16 = _squash_table()
_DIV26 = float(1 << GEO_STEP_MAX)
_LAT_SCALE = GEO_LAT_MAX - GEO_LAT_MIN
_LON_SCALE = GEO_LONG_MAX - GEO_LONG_MIN
_EXACT_INT_MAX = 2.0 ** 53


def decode(score: float) -> tuple[float, float]:
    """The (lon, lat) centre of a stored score's cell, clamped to the valid range (Redis
    decodeGeohash; any score decodes, since the step is never zero).

    Same arithmetic as :func:`cell_area` at step 26, with the de-interleaving done by a
    16-bit table: 6.3 -> 3.1 us a call (timeit), the per-result cost of a search.
    Complexity: O(1).
    """
    b = int(score) if 0.0 <= score < _EXACT_INT_MAX else score_bits(score)
    sq = _SQ16
    ilat = (sq[b & 0xFFFF] | sq[(b >> 16) & 0xFFFF] << 8 | sq[(b >> 32) & 0xFFFF] << 16
            | sq[(b >> 48) & 0xFFFF] << 24)
    b >>= 1
    ilon = (sq[b & 0xFFFF] | sq[(b >> 16) & 0xFFFF] << 8 | sq[(b >> 32) & 0xFFFF] << 16
            | sq[(b >> 48) & 0xFFFF] << 24)
    lat = ((GEO_LAT_MIN + (ilat / _DIV26) * _LAT_SCALE)
           + (GEO_LAT_MIN + (((ilat + 1) & 0xFFFFFFFF) / _DIV26) * _LAT_SCALE)) / 2
    lon = ((GEO_LONG_MIN + (ilon / _DIV26) * _LON_SCALE)
           + (GEO_LONG_MIN + (((ilon + 1) & 0xFFFFFFFF) / _DIV26) * _LON_SCALE)) / 2
    if lon > GEO_LONG_MAX:
        lon = GEO_LONG_MAX
    elif lon < GEO_LONG_MIN:
        lon = GEO_LONG_MIN
    if lat > GEO_LAT_MAX:
        lat = GEO_LAT_MAX
    elif lat < GEO_LAT_MIN:
        lat = GEO_LAT_MIN
    return lon, lat


def geohash_string(score: float) -> bytes:
    """GEOHASH's 11-character standard geohash of a stored score.

    The point is decoded, then re-encoded with the standard latitude range -90..90; the
    52 bits give ten 5-bit characters and the 11th is ``0``, as Redis prints it.
    Complexity: O(1).
    """
    lon, lat = decode(score)
    h = encode(lon, lat, GEO_STEP_MAX, STD_LAT_MIN, STD_LAT_MAX)
    out = bytearray()
    for i in range(GEOHASH_CHARS):
        idx = 0 if i == GEOHASH_CHARS - 1 else (h >> (52 - (i + 1) * 5)) & 0x1F
        out.append(GEOHASH_ALPHABET[idx])
    return bytes(out)


# ---- distances ----

def lat_distance(lat1: float, lat2: float) -> float:
    """Metres between two latitudes on one meridian (Redis geohashGetLatDistance)."""
    return EARTH_RADIUS_M * abs(lat2 * D_R - lat1 * D_R)


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """Haversine great-circle distance in metres (Redis 7.0 geohashGetDistance).

    Complexity: O(1).
    """
    v = _sin((lon2 * D_R - lon1 * D_R) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r, lat2r = lat1 * D_R, lat2 * D_R
    u = _sin((lat2r - lat1r) / 2)
    a = u * u + _cos(lat1r) * _cos(lat2r) * v * v
    return 2.0 * EARTH_RADIUS_M * _asin(_sqrt(a))


def in_box(width_m: float, height_m: float, lon1: float, lat1: float, lon2: float,
           lat2: float):
    """Distance from the box centre (lon1, lat1) to a point inside an axis-aligned box,
    or None outside it (Redis geohashGetDistanceIfInRectangle)."""
    if lat_distance(lat2, lat1) > height_m / 2:
        return None
    if distance(lon2, lat2, lon1, lat2) > width_m / 2:
        return None
    return distance(lon1, lat1, lon2, lat2)


# ---- the cells of a search ----

def estimate_step(radius_m: float, lat: float) -> int:
    """Bits per axis of the cells a search of this radius scans (geohashEstimateStepsByRadius)."""
    if radius_m == 0:
        return GEO_STEP_MAX
    step = 1
    while radius_m < MERCATOR_MAX_M:
        radius_m *= 2
        step += 1
    step -= 2
    if lat > POLAR_LAT_1 or lat < -POLAR_LAT_1:
        step -= 1
        if lat > POLAR_LAT_2 or lat < -POLAR_LAT_2:
            step -= 1
    return min(max(step, 1), GEO_STEP_MAX)


def _move(bits: int, step: int, dx: int, dy: int) -> int:
    """The neighbouring cell ``dx`` east / ``dy`` north (wrapping), as geohash_move_x/y."""
    shift = 64 - step * 2
    if dx:
        x = bits & _ODD
        y = bits & _EVEN
        zz = _EVEN >> shift
        if dx > 0:
            x = x + (zz + 1)
        else:
            x = (x | zz) - (zz + 1)
        bits = (x & (_ODD >> shift) & _MASK64) | y
    if dy:
        x = bits & _ODD
        y = bits & _EVEN
        zz = _ODD >> shift
        if dy > 0:
            y = y + (zz + 1)
        else:
            y = (y | zz) - (zz + 1)
        bits = x | (y & (_EVEN >> shift) & _MASK64)
    return bits & _MASK64


# Scan order of the nine cells: centre, N, S, E, W, NE, NW, SE, SW, as (dx, dy).
_CELL_ORDER = ((0, 0), (0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))


def _div(a: float, b: float) -> float:
    """IEEE division (x / 0.0 is +-inf or NaN, as in C)."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return _NAN
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def bounding_box(lon: float, lat: float, half_w_m: float, half_h_m: float):
    """(lon_min, lat_min, lon_max, lat_max) around a centre (Redis geohashBoundingBox)."""
    lat_delta = (half_h_m / EARTH_RADIUS_M) / D_R
    long_delta_top = (_div(half_w_m / EARTH_RADIUS_M, _cos((lat + lat_delta) * D_R))) / D_R
    long_delta_bottom = (_div(half_w_m / EARTH_RADIUS_M, _cos((lat - lat_delta) * D_R))) / D_R
    south = lat < 0
    d = long_delta_bottom if south else long_delta_top
    return lon - d, lat - lat_delta, lon + d, lat + lat_delta


def search_cells(lon: float, lat: float, radius_m: float, half_w_m: float,
                 half_h_m: float) -> list:
    """The score ranges ``[lo, hi)`` a search scans, in Redis's order and with its rules.

    ``radius_m`` sizes the cells (the radius, or the half-diagonal of a box); ``half_w_m``
    / ``half_h_m`` give the bounding box (both the radius for a circle).  The step is
    lowered once when a N/S/E/W neighbour does not reach the bounding box, neighbours
    entirely beyond it are dropped (steps >= 2), and a cell equal to the last scanned one
    is skipped (huge radii wrap around).  Complexity: O(1) (at most 9 ranges).
    """
    min_lon, min_lat, max_lon, max_lat = bounding_box(lon, lat, half_w_m, half_h_m)
    step = estimate_step(radius_m, lat)
    bits = encode(lon, lat, step)
    n = _move(bits, step, 0, 1)
    s = _move(bits, step, 0, -1)
    e = _move(bits, step, 1, 0)
    w = _move(bits, step, -1, 0)
    if (cell_area(n, step)[3] < max_lat or cell_area(s, step)[2] > min_lat
            or cell_area(e, step)[1] < max_lon or cell_area(w, step)[0] > min_lon):
        if step > 1:
            step -= 1
            bits = encode(lon, lat, step)
    area = cell_area(bits, step)
    cells = [(_move(bits, step, dx, dy), (dx, dy)) for dx, dy in _CELL_ORDER]
    dropped = set()
    if step >= 2:
        if area[2] < min_lat:
            dropped.update(((0, -1), (-1, -1), (1, -1)))
        if area[3] > max_lat:
            dropped.update(((0, 1), (1, 1), (-1, 1)))
        if area[0] < min_lon:
            dropped.update(((-1, 0), (-1, -1), (-1, 1)))
        if area[1] > max_lon:
            dropped.update(((1, 0), (1, -1), (1, 1)))
    shift = 52 - step * 2
    out = []
    last = None
    for i, (cell, d) in enumerate(cells):
        if d in dropped:
            continue
        if last is not None and cell == last:
            continue
        out.append((cell << shift, (cell + 1) << shift))
        if i > 0:
            last = cell
    return out


# ---- vectorised prefilter (numpy): most candidates of a search are rejected here ----

PREFILTER_MIN = 32              # candidates in one cell before the vectorised path pays
PREFILTER_MARGIN_M = 1.0        # metres of slack: numpy's sin/cos/arcsin may differ from
PREFILTER_MARGIN_REL = 1e-9     # libm in the last bits; nothing this close is rejected


def _np_squash(v):
    import numpy as np
    u = np.uint64
    v = v & u(_EVEN)
    v = (v | (v >> u(1))) & u(0x3333333333333333)
    v = (v | (v >> u(2))) & u(0x0F0F0F0F0F0F0F0F)
    v = (v | (v >> u(4))) & u(0x00FF00FF00FF00FF)
    v = (v | (v >> u(8))) & u(0x0000FFFF0000FFFF)
    v = (v | (v >> u(16))) & u(0x00000000FFFFFFFF)
    return v


def prefilter(scores, lon0: float, lat0: float, box: bool, radius_m: float, w_m: float,
              h_m: float):
    """Indexes (ascending) of the scores that may lie inside the search shape.

    Decodes every score with numpy and rejects those whose approximate distance (circle)
    or approximate offsets (box) exceed the limit by more than a margin; everything else,
    including scores that are not 52-bit geohashes and NaN results, is kept for the exact
    scalar test, so the result is the same as testing every score exactly.
    Complexity: O(k) vectorised for k scores.
    """
    import numpy as np
    ok = (scores >= 0) & (scores < 2.0 ** 63)
    bits = np.where(ok, scores, 0).astype(np.uint64)
    div = float(1 << GEO_STEP_MAX)
    ilat = _np_squash(bits).astype(np.float64)
    ilon = _np_squash(bits >> np.uint64(1)).astype(np.float64)
    lat = GEO_LAT_MIN + ((ilat + 0.5) / div) * (GEO_LAT_MAX - GEO_LAT_MIN)
    lon = GEO_LONG_MIN + ((ilon + 0.5) / div) * (GEO_LONG_MAX - GEO_LONG_MIN)
    with np.errstate(all="ignore"):
        lat1r, lat2r = lat0 * D_R, lat * D_R
        if box:
            lat_d = EARTH_RADIUS_M * np.abs(lat2r - lat1r)
            v = np.sin((lon0 * D_R - lon * D_R) / 2)
            a = np.cos(lat2r) ** 2 * v * v
            lon_d = 2.0 * EARTH_RADIUS_M * np.arcsin(np.sqrt(a))
            far = ((lat_d > h_m / 2 + PREFILTER_MARGIN_M + h_m * PREFILTER_MARGIN_REL)
                   | (lon_d > w_m / 2 + PREFILTER_MARGIN_M + w_m * PREFILTER_MARGIN_REL))
        else:
            u = np.sin((lat2r - lat1r) / 2)
            v = np.sin((lon * D_R - lon0 * D_R) / 2)
            a = u * u + math.cos(lat1r) * np.cos(lat2r) * v * v
            d = 2.0 * EARTH_RADIUS_M * np.arcsin(np.sqrt(a))
            far = d > radius_m + PREFILTER_MARGIN_M + radius_m * PREFILTER_MARGIN_REL
    return np.nonzero(~far | ~ok)[0]
