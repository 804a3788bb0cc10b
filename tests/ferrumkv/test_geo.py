"""Geo commands: the geohash maths against known Redis values, replies through redis-py and
raw bytes, and differential replays against a real redis-server 7.0 (random workloads)."""

from __future__ import annotations

import random

import pytest
import redis

from ferrumkv_py import geohash
from ferrumkv_py.commands.geo import format_coord, format_distance
from tests.ferrumkv.container_diff import assert_same_as_redis

# (lon, lat) -> score, GEOPOS text, GEOHASH, all printed by redis-server 7.0.15
KNOWN = [
    ((13.361389, 38.115556), 3479099956230698,
     (b"13.36138933897018433", b"38.11555639549629859"), b"sqc8b49rny0"),
    ((15.087269, 37.502669), 3479447370796909,
     (b"15.08726745843887329", b"37.50266842333162032"), None),
    ((1.0, 85.05112878), 6755436527093922,
     (b"0.99999994039535522", b"85.0511287799999991"), b"up0eyg04tx0"),
]


@pytest.mark.parametrize("point,score,pos,ghash", KNOWN)
def test_encode_decode_known_points(point, score, pos, ghash):
    assert geohash.score_of(*point) == score
    lon, lat = geohash.decode(score)
    assert (format_coord(lon), format_coord(lat)) == pos
    if ghash is not None:
        assert geohash.geohash_string(score) == ghash


def test_interleave_round_trip_and_cells():
    rng = random.Random(7)
    for _ in range(500):
        a, b = rng.getrandbits(26), rng.getrandbits(26)
        bits = geohash._spread(a) | (geohash._spread(b) << 1)
        assert geohash._squash(bits) == a and geohash._squash(bits >> 1) == b
    # a decoded point is the centre of its cell and re-encodes to the same score
    for _ in range(500):
        lon, lat = rng.uniform(-180, 180), rng.uniform(-85, 85)
        s = geohash.score_of(lon, lat)
        dlon, dlat = geohash.decode(s)
        assert geohash.score_of(dlon, dlat) == s
        assert abs(dlon - lon) < 360 / 2 ** 26 and abs(dlat - lat) < 171 / 2 ** 26


def test_coordinate_text_equals_long_double_printing():
    """format_coord ("%.17f" trimmed) against the exact long double printer INCRBYFLOAT uses."""
    from ferrumkv_py.commands._longdouble import format_long_double_human
    rng = random.Random(13)
    values = [-0.0, 0.0, 1e-18, -1e-18, 5e-18, 180.0, -85.05112878, 1e300]
    values += [rng.uniform(-200, 200) for _ in range(5000)]
    for _ in range(2000):
        values.extend(geohash.decode(float(rng.getrandbits(52))))
    for x in values:
        n, d = x.as_integer_ratio()
        assert format_coord(x) == format_long_double_human((n, -(d.bit_length() - 1))), x


def test_table_decode_equals_cell_centre():
    """decode()'s 16-bit-table path against the cell_area arithmetic, on every kind of score."""
    rng = random.Random(11)
    for _ in range(20000):
        s = float(rng.getrandbits(rng.choice([52, 53, 20, 64])))
        if rng.random() < 0.1:
            s = -s
        if rng.random() < 0.05:
            s += 0.5
        lon_min, lon_max, lat_min, lat_max = geohash.cell_area(geohash.score_bits(s), 26)
        lon = min(max((lon_min + lon_max) / 2, -180.0), 180.0)
        lat = min(max((lat_min + lat_max) / 2, geohash.GEO_LAT_MIN), geohash.GEO_LAT_MAX)
        assert geohash.decode(s) == (lon, lat), s


def test_prefilter_keeps_everything_inside():
    """The numpy prefilter never drops a member the exact test keeps (circles and boxes)."""
    import numpy as np
    rng = random.Random(12)
    for _ in range(60):
        lon0, lat0 = rng.uniform(-180, 180), rng.uniform(-85, 85)
        scores = np.array([float(geohash.score_of(
            max(-180, min(180, lon0 + rng.uniform(-3, 3))),
            max(-85, min(85, lat0 + rng.uniform(-3, 3))))) for _ in range(300)])
        r, w, h = rng.uniform(1, 4e5), rng.uniform(1, 6e5), rng.uniform(1, 6e5)
        keep_c = set(geohash.prefilter(scores, lon0, lat0, False, r, 0, 0).tolist())
        keep_b = set(geohash.prefilter(scores, lon0, lat0, True, 0, w, h).tolist())
        for k, s in enumerate(scores.tolist()):
            lon, lat = geohash.decode(s)
            if geohash.distance(lon0, lat0, lon, lat) <= r:
                assert k in keep_c
            if geohash.in_box(w, h, lon0, lat0, lon, lat) is not None:
                assert k in keep_b
        assert len(keep_c) < len(scores) or r > 3e5      # it does reject something


def test_neighbours_wrap_and_distance():
    step = 3
    bits = geohash.encode(0.0, 0.0, step)
    east = geohash._move(bits, step, 1, 0)
    west = geohash._move(east, step, -1, 0)
    assert west == bits
    lo_e = geohash.cell_area(east, step)
    assert lo_e[0] == geohash.cell_area(bits, step)[1]       # shares the border
    # Palermo-Catania as Redis prints it
    p = geohash.decode(3479099956230698)
    q = geohash.decode(3479447370796909)
    assert format_distance(geohash.distance(*p, *q)) == b"166274.1516"
    assert format_distance(geohash.distance(*p, *q) / 1000) == b"166.2742"
    assert format_distance(0.0) == b"0.0000"
    assert format_distance(0.00005) == b"0.0000"      # llrint ties to even: 0.5 -> 0
    assert format_distance(1.00015) == b"1.0002"
    assert geohash.estimate_step(0, 0) == 26
    assert geohash.estimate_step(5_000_000, 0) == 2
    assert geohash.estimate_step(5_000, 70) == geohash.estimate_step(5_000, 0) - 1


def test_geo_commands_redis_py(r, r2):
    assert r.geoadd("g", [13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania"]) == 2
    assert r.geodist("g", "Palermo", "Catania", "km") == 166.2742
    assert r.geohash("g", "Palermo", "nope") == [b"sqc8b49rny0", None]
    assert r.geopos("g", "Palermo", "nope")[1] is None
    assert r2.geopos("g", "Palermo")[0] == pytest.approx((13.361389, 38.115556), abs=1e-5)
    res = r.geosearch("g", longitude=15, latitude=37, radius=200, unit="km", withdist=True,
                      sort="ASC")
    assert [m for m, _ in res] == [b"Catania", b"Palermo"]
    assert r.geosearchstore("dst", "g", longitude=15, latitude=37, radius=100, unit="km") == 1
    assert r.zrange("dst", 0, -1, withscores=True) == [[b"Catania", 3479447370796909.0]]
    assert r.georadiusbymember("g", "Palermo", 10, "km") == [b"Palermo"]
    with pytest.raises(redis.ResponseError, match="invalid longitude,latitude pair 200"):
        r.geoadd("g", [200, 1, "x"])
    assert r.geoadd("g", [13.361389, 38.115556, "Palermo", 1, 1, "new"], xx=True, ch=True) == 0


def test_raw_bytes_resp3(raw):
    c = raw()
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"GEOADD g 13.361389 38.115556 Palermo\r\n")
    assert c.read_reply() == b":1\r\n"
    c.send(b"GEOSEARCH g FROMLONLAT 13 38 BYRADIUS 100 km WITHDIST WITHCOORD WITHHASH\r\n")
    assert c.read_reply() == (b"*1\r\n*4\r\n$7\r\nPalermo\r\n$7\r\n34.1601\r\n"
                              b":3479099956230698\r\n*2\r\n,13.36138933897018433\r\n"
                              b",38.11555639549629859\r\n")
    c.send(b"GEOPOS g nope\r\n")
    assert c.read_reply() == b"*1\r\n_\r\n"


ERRORS_SCRIPT = """
geoadd g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
geoadd g xx nx 1 1 a
geoadd g 1 2
geoadd g ch 1 2 3 4
geoadd g 1 a x
geoadd g nan 1 x
geoadd g 180.0000001 1 x
geoadd g 1 85.05112879 x
geoadd g 1 85.05112878 x
geoadd g -180 -85.05112878 y
geopos g x y nope
geohash g x y nope
geohash nokey a
geopos nokey a b
geodist nokey a b
geodist g Palermo Catania KM
geodist g Palermo Catania mi
geodist g Palermo Catania ft
geodist g Palermo Catania x
geodist g Palermo Catania km x
geodist g Palermo nope
geosearch g byradius 1 km asc desc
geosearch g fromlonlat 1 1 asc desc
geosearchstore d g byradius 1 km asc desc
geosearch g fromlonlat 15 37 byradius 200 km any
geosearch g frommember nope byradius 1 km any asc
geosearch nokey frommember nope byradius 1 km
geosearch nokey fromlonlat 1 1 asc desc
geosearch g fromlonlat 1 1 frommember Palermo byradius 1 km
geosearch g fromlonlat 1 1 byradius 1 km bybox 1 1 km
geosearchstore d g fromlonlat 1 1 byradius 1 km withdist
geosearchstore d g fromlonlat 1 1 byradius 1 km store x
geosearch g fromlonlat 1 1 byradius 1 km storedist
geosearch g fromlonlat 15 37 byradius -1 km
geosearch g fromlonlat 15 37 bybox 1 -1 km
geosearch g fromlonlat 15 37 bybox a 1 km
geosearch g fromlonlat 15 37 bybox 1 a km
geosearch g fromlonlat 15 37 byradius a km
geosearch g fromlonlat 15 37 byradius 1 kmx
geosearch g fromlonlat 15 37 byradius 1 km count 0
geosearch g fromlonlat 15 37 byradius 1 km count a
geosearch g fromlonlat 15 37 byradius 1 km count 1 any any
georadius g 15 37 200 km withdist store x
georadius_ro g 15 37 200 km store x
georadius g 1 1 -1 km
georadius g 1 100 1 km
georadiusbymember nokey m 1 km x
georadiusbymember g nope 1 km x
georadiusbymember nokey m 1 km store d
set s x
geoadd s 1 1 x
geosearch s frommember nope byradius 1 km
geopos s a
geodist s a b
geodist s a b x
georadius g 15 37 200 km store d
zrange d 0 -1 withscores
georadius g 15 37 200 km storedist d2 desc
zrange d2 0 -1 withscores
object encoding d2
georadius g 15 37 1 km store d2
exists d2
geosearchstore d3 g frommember Palermo bybox 400 400 km storedist
zrange d3 0 -1 withscores
zadd g 1.5 weird -3 neg
geopos g weird neg
geohash g weird neg
geodist g weird neg
"""


def test_errors_and_edges_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, ERRORS_SCRIPT)


# Infinite and huge radii / boxes (C's NaN from cos(inf)), the poles and the date line,
# zero radii, and scores that are not geohashes (negative, beyond 2**64, 2**52).
EXTREMES = """
geoadd g 13.361389 38.115556 Palermo 15.087269 37.502669 Catania -179.9 0 w 179.9 0 e
geoadd g 0 85 n 180 -85.05112878 se
geosearch g fromlonlat 0 0 byradius inf m
geosearch g fromlonlat 0 0 bybox inf 1 m
geosearch g fromlonlat 0 0 bybox 1 inf m withdist
geosearch g fromlonlat 0 0 bybox inf inf m withdist
geosearch g fromlonlat 0 0 byradius 1e308 km withdist
geosearch g fromlonlat 180 85.05112878 byradius 20000 km withdist
geosearch g fromlonlat -180 -85.05112878 bybox 40000 40000 km withdist asc
geosearch g fromlonlat -180 -85.05112878 byradius 0 km withdist asc
geosearch g frommember se byradius 0 km withdist asc
geosearch g frommember se bybox 0 0 km withdist asc
geosearch g frommember e byradius 100 km withdist withcoord withhash
geosearch g frommember n byradius 20037 km withdist count 3 any desc
geosearch g frommember n byradius 20037 km withdist count 3 desc
geodist g e w
geodist g n se
geodist g e se mi
georadius g 0 0 1e-300 m
georadius g 0 0 5e-324 m
zadd g -5 neg 1e20 huge 4503599627370496 top 0 zero
geopos g neg huge top zero
geohash g neg huge top zero
geosearch g frommember neg byradius 100 km withdist withhash withcoord
geosearch g frommember huge byradius 100 km withdist withhash withcoord
geosearch g fromlonlat 0 -85 byradius 500 km withdist withhash withcoord
geodist g neg huge
geodist g zero top
"""


def test_extremes_same_as_redis(redis_server, server):
    assert_same_as_redis(redis_server, server.port, EXTREMES)


def test_c_conversions():
    assert geohash.score_bits(1e20) == 0              # gcc: (x - 2**63) then flip bit 63
    assert geohash.score_bits(-5.0) == 2 ** 64 - 5
    assert geohash.score_bits(2.0 ** 63) == 2 ** 63
    assert format_distance(float("nan")) == b"-922337203685477.5808"
    assert geohash.distance(0.0, 0.0, 0.0, 0.0) == 0.0


def _geo_script(seed: int) -> str:
    rng = random.Random(seed)
    lines = []
    centres = [(rng.uniform(-179, 179), rng.uniform(-84, 84)) for _ in range(3)]
    centres.append((rng.uniform(-10, 10), rng.uniform(75, 84)))     # near the pole
    centres.append((179.5, rng.uniform(-20, 20)))                    # near the date line
    members = []
    for i in range(rng.choice([40, 150])):
        cx, cy = rng.choice(centres)
        spread = rng.choice([0.01, 0.5, 5])
        lon = max(-180, min(180, cx + rng.uniform(-spread, spread)))
        lat = max(-85, min(85, cy + rng.uniform(-spread, spread)))
        m = "m%d" % i
        members.append(m)
        lines.append("geoadd g %.6f %.6f %s" % (lon, lat, m))
    units = ["m", "km", "mi", "ft", "KM"]
    for _ in range(60):
        cx, cy = rng.choice(centres)
        cx = max(-180, min(180, cx + rng.uniform(-1, 1)))
        cy = max(-85, min(85, cy + rng.uniform(-1, 1)))
        unit = rng.choice(units)
        scale = {"m": 1, "km": 1000, "mi": 1609.34, "ft": 0.3048, "KM": 1000}[unit]
        radius = rng.choice([0, 50, 500, 5000, 80000, 400000, 3000000]) / scale
        opts = []
        for flag in ("withdist", "withcoord", "withhash"):
            if rng.random() < 0.4:
                opts.append(flag)
        if rng.random() < 0.5:
            opts.append(rng.choice(["asc", "desc"]))
        if rng.random() < 0.4:
            opts.append("count %d" % rng.randint(1, 30))
            if rng.random() < 0.4:
                opts.append("any")
        o = " ".join(opts)
        frm = ("frommember %s" % rng.choice(members) if rng.random() < 0.5
               else "fromlonlat %.6f %.6f" % (cx, cy))
        kind = rng.random()
        if kind < 0.35:
            lines.append("geosearch g %s byradius %r %s %s" % (frm, radius, unit, o))
        elif kind < 0.65:
            w, h = radius * rng.uniform(0.5, 3), radius * rng.uniform(0.5, 3)
            lines.append("geosearch g %s bybox %r %r %s %s" % (frm, w, h, unit, o))
        elif kind < 0.8:
            lines.append("georadius g %.6f %.6f %r %s %s" % (cx, cy, radius, unit, o))
        else:
            lines.append("georadiusbymember_ro g %s %r %s %s"
                         % (rng.choice(members), radius, unit, o))
        if rng.random() < 0.15:
            lines.append("geosearchstore dst g %s byradius %r %s %s"
                         % (frm, radius, unit, rng.choice(["", "storedist", "desc count 5"])))
            lines.append("zrange dst 0 -1 withscores")
        if rng.random() < 0.2:
            a, b = rng.choice(members), rng.choice(members)
            lines.append("geodist g %s %s %s" % (a, b, unit))
            lines.append("geopos g %s %s" % (a, b))
            lines.append("geohash g %s %s" % (a, b))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(6))
def test_random_searches_same_as_redis(redis_server, server, seed):
    assert_same_as_redis(redis_server, server.port, _geo_script(seed))


def _ties_script(seed: int) -> str:
    """Many members at a few identical points, so distances tie: COUNT windows go through
    Redis's partial quicksort, whose order among equals the replay checks."""
    rng = random.Random(seed)
    spots = [(10 + rng.uniform(-0.01, 0.01), 10 + rng.uniform(-0.01, 0.01)) for _ in range(4)]
    lines = []
    for i in range(rng.choice([12, 60, 200])):
        lon, lat = rng.choice(spots)
        lines.append("geoadd g %.6f %.6f m%d" % (lon, lat, i))
    for _ in range(25):
        count = rng.randint(1, 80)
        order = rng.choice(["", "asc", "desc"])
        lines.append("geosearch g fromlonlat 10 10 byradius 5 km count %d %s withdist"
                     % (count, order))
        lines.append("georadius g 10.001 9.999 5 km count %d %s" % (count, order))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(4))
def test_distance_ties_same_as_redis(redis_server, server, seed):
    assert_same_as_redis(redis_server, server.port, _ties_script(seed))


def _global_script(seed: int) -> str:
    """Points over the whole indexable range, many near the date line, the poles and the
    equator; radii and boxes from 10 cm to beyond the Earth's size, in metres."""
    rng = random.Random(seed)
    lines = []
    for i in range(300):
        lon = rng.choice([rng.uniform(-180, 180), rng.choice([-180, 180, 0]) + rng.uniform(-1, 1)])
        lat = rng.choice([rng.uniform(-85.05, 85.05),
                          rng.choice([-85.05, 85.05, 0]) + rng.uniform(-0.5, 0.5)])
        lon = max(-180.0, min(180.0, lon))
        lat = max(geohash.GEO_LAT_MIN, min(geohash.GEO_LAT_MAX, lat))
        lines.append("geoadd g %r %r m%d" % (lon, lat, i))
    for _ in range(60):
        lon = rng.choice([rng.uniform(-180, 180), rng.choice([-180.0, 180.0, 0.0])])
        lat = rng.choice([rng.uniform(-85, 85),
                          rng.choice([-85.05112878, 85.05112878, 0.0, 66.5, -80.5])])
        r = 10 ** rng.uniform(-1, 7.5)
        if rng.random() < 0.5:
            lines.append("geosearch g fromlonlat %r %r byradius %r m withdist withhash asc"
                         % (lon, lat, r))
        else:
            w, h = 10 ** rng.uniform(-1, 7.7), 10 ** rng.uniform(-1, 7.7)
            lines.append("geosearch g fromlonlat %r %r bybox %r %r m withcoord desc"
                         % (lon, lat, w, h))
        lines.append("geosearch g frommember m%d byradius %r km count %d"
                     % (rng.randrange(300), r / 1000, rng.randint(1, 50)))
    return "\n".join(lines)


@pytest.mark.parametrize("seed", range(2))
def test_global_searches_same_as_redis(redis_server, server, seed):
    assert_same_as_redis(redis_server, server.port, _global_script(seed))
