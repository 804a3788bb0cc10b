"""LOLWUT (commands/lolwut.py): the version switch, argument clamping and every picture
without disorder equal to redis-server's byte for byte; the disordered ones deterministic."""

from __future__ import annotations

import pytest
import redis

from ferrumkv_py.commands import lolwut as lw

from .conftest import err

EXACT = [  # no randomness in Redis for these (rows 0 and 1 of Schotter are not disordered;
    # "VERSION 5 0" keeps the default 6 rows, so Redis draws its rand() there: not listed)
    [], ["VERSION", "7"], ["VERSION", "-1"], ["VERSION", "4"], ["5"], ["x", "y"], ["VERSION"],
    ["VERSION", "5", "3", "1", "1"], ["VERSION", "5", "5", "2", "2"],
    ["VERSION", "5", "66", "8", "2"], ["VERSION", "5", "1", "1", "1"],
    ["VERSION", "5", "7", "3", "1"], ["VERSION", "5", "40", "5", "2"],
    ["VERSION", "5", "100", "20", "2"], ["VERSION", "5", "13", "7", "2"],
    ["VERSION", "5", "999", "200", "2"], ["VERSION", "5", "77", "3", "2"],
    ["VERSION", "5", "500", "9", "1"], ["VERSION", "5", "4", "4", "2"],
    ["VERSION", "5", "-5", "-5", "-5"], ["VERSION", "5", "2000", "999", "1"],
    ["VERSION", "4294967301", "3", "1", "1"],              # (unsigned) 5, as Redis casts it
    ["VERSION", "x"], ["VERSION", "5", "x"], ["VERSION", "6", "x"], ["VERSION", "5", "1", "2", "y"],
]


def _call(client, args):
    try:
        return client.execute_command("LOLWUT", *args)
    except redis.ResponseError as e:
        return str(e)


@pytest.mark.needs_redis
def test_matches_redis_server(r2, redis_server):
    theirs = redis.Redis(port=redis_server, protocol=2)
    try:
        for args in EXACT:
            assert _call(r2, args) == _call(theirs, args), args
    finally:
        theirs.close()


def test_pictures_are_deterministic_and_shaped(r2, r):
    five = r2.execute_command("LOLWUT", "VERSION", "5")
    assert five == r2.execute_command("LOLWUT", "VERSION", "5")
    text = five.decode()
    assert text.endswith("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. 7.0.15\n")
    rows = text.split("\n\n")[0].split("\n")
    assert all(len(row) == 66 for row in rows) and len(rows) == (12 * 16 + 4 + 3) // 4
    assert all(0x2800 <= ord(ch) <= 0x28FF for ch in rows[5])
    six = r2.execute_command("LOLWUT", "VERSION", "6", "30", "10").decode()
    grid = six.split("\nDedicated")[0].split("\n")
    assert len(grid) == 10 and all(row.count("\033[0m") == 30 for row in grid)
    assert "0;30;40m" in six and "0;97;107m" in six
    assert six == r2.execute_command("LOLWUT", "VERSION", "6", "30", "10").decode()
    assert r.execute_command("LOLWUT") == b"Redis ver. 7.0.15\n"    # RESP3 verbatim


def test_huge_canvas_refused(r2):
    assert err(r2, "LOLWUT", "VERSION", "5", "1000", "1", "200") == \
        lw.errors.LOLWUT_TOO_LARGE % lw.LOLWUT_MAX_PIXELS
    assert err(r2, "LOLWUT", "VERSION", "6", "1000", "1000") == \
        lw.errors.LOLWUT_TOO_LARGE % lw.SKYLINE_MAX_CELLS
    assert r2.ping()


def test_segment_rasterizer_draws_straight_lines():
    import numpy as np
    canvas = np.zeros((5, 5), dtype=np.uint8)
    lw._draw_segments(canvas, [((0, 0), (4, 0)), ((2, -3), (2, 9)), ((0, 4), (4, 0))])
    assert canvas[0].tolist() == [1, 1, 1, 1, 1] and canvas[:, 2].tolist() == [1] * 5
    assert [canvas[4 - i, i] for i in range(5)] == [1] * 5
