"""LOLWUT [VERSION version] [arguments]: Redis 7.0's computer art, deterministic here.

Redis 7.0 picks the piece from the version: 5 draws Georg Nees's *Schotter* (a grid of
squares, more disordered row after row, rendered in Braille characters, 2x4 pixels each),
6 a skyline of skyscrapers with lit windows (ANSI colour cells), anything else (and the
default, 7.0) just prints the version.  Arguments are clamped as Redis clamps them.  Redis
draws its disorder with ``rand()``; here the generator is seeded from the arguments, so the
same call gives the same picture (rows without disorder equal redis-server's exactly).

The canvas is a numpy array and every line segment of a picture is rasterized in one
vectorized pass.  Redis's largest canvas (2000 x 399,204 pixels for ``LOLWUT VERSION 5 1000
1 200``) would stall the server for seconds here, so canvases above
``LOLWUT_MAX_PIXELS`` (version 5) or ``SKYLINE_MAX_CELLS`` (version 6) are refused
(docs/compatibility.md).

Complexity: O(canvas pixels) for rendering plus O(total segment length) for drawing.
"""

from __future__ import annotations

import math
import random
import zlib

from ..first_use import NUMPY, gate_commands
from .. import errors
from ..errors import CommandError
from ..registry import command
from ..resp import Verbatim
from ._util import parse_int

REDIS_VERSION = "7.0.15"
LOLWUT_MAX_PIXELS = 1 << 24             # version 5 canvas (numpy: about 0.2 s at the cap)
SKYLINE_MAX_CELLS = 1 << 18              # version 6 cells (drawn cell by cell in Python)
UINT32_MASK = 0xFFFFFFFF
SCHOTTER_DEFAULTS = (66, 8, 12)          # columns, squares per row, squares per column
SCHOTTER_LIMITS = ((1, 1000), (1, 200), (1, 200))
SKYLINE_DEFAULTS = (80, 20)              # columns, rows
SKYLINE_LIMITS = ((1, 1000), (1, 1000))
BRAILLE_BASE = 0x2800
SQRT2 = 1.4142135623
# (dx, dy, bit) of the 8 dots of a Braille cell, as Redis's renderCanvas orders them
BRAILLE_DOTS = ((0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 0, 3), (1, 1, 4), (1, 2, 5), (0, 3, 6),
                (1, 3, 7))
SKYLINE_COLORS = ("0;30;40m", "0;90;100m", "0;37;47m", "0;97;107m")  # black, grays, white
SCHOTTER_FOOTER = "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. %s\n"
SKYLINE_FOOTER = ("\nDedicated to the 8 bit game developers of past and present.\n"
                  "Original 8 bit image from Plaguemon by hikikomori. Redis ver. %s\n")


def _args(argv: list, defaults: tuple, limits: tuple) -> list:
    out = list(defaults)
    for i, (lo, hi) in enumerate(limits):
        if len(argv) > i:
            out[i] = min(max(parse_int(argv[i]), lo), hi)
    return out


def _rng(version: int, values: list) -> random.Random:
    return random.Random(zlib.crc32(repr((version, values)).encode()))


# ---- version 5: Schotter ----

def _c_round(v):
    """C ``round``: halves away from zero (numpy's rint rounds them to even)."""
    import numpy as np
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def schotter(cols: int, per_row: int, per_col: int, rng: random.Random):
    """The canvas of Redis's lwDrawSchotter, all squares at once (C's ``float`` steps as
    float32, its ``double`` ones as float64, so undisturbed rows equal Redis's pixels).
    Complexity: O(squares + canvas pixels), vectorized."""
    import numpy as np
    f32 = np.float32
    width = cols * 2
    padding = 2 if width > 4 else 0
    side = f32(width - padding * 2) / f32(per_row)
    height = int(float(side * f32(per_col)) + padding * 2)
    if width * height > LOLWUT_MAX_PIXELS:
        raise CommandError(errors.LOLWUT_TOO_LARGE % LOLWUT_MAX_PIXELS)
    n = per_row * per_col
    ys, xs = np.divmod(np.arange(n), per_row)            # row by row, as Redis draws
    centre = side / f32(2)
    sx = (xs.astype(f32) * side + centre + f32(padding)).astype(np.int64).astype(float)
    sy = (ys.astype(f32) * side + centre + f32(padding)).astype(np.int64).astype(float)
    gen = np.random.default_rng(rng.getrandbits(64))
    r = (gen.random((n, 3)) / per_col * ys[:, None]).astype(f32)
    r = np.where(gen.integers(0, 2, (n, 3)) == 1, -r, r)
    moved = ys > 1                                        # rows 0 and 1 stay in place
    angle = np.where(moved, r[:, 0], f32(0)).astype(f32)
    sx = np.where(moved, np.trunc(sx + r[:, 1] * float(side) / 3), sx)
    sy = np.where(moved, np.trunc(sy + r[:, 2] * float(side) / 3), sy)
    size = float(_c_round(float(f32(float(side) / SQRT2))))
    k = (np.pi / 4 + angle.astype(float)).astype(f32)
    px, py = [], []
    for _ in range(4):
        kd = k.astype(float)
        px.append(_c_round(np.sin(kd) * size + sx))
        py.append(_c_round(np.cos(kd) * size + sy))
        k = (kd + np.pi / 2).astype(f32)
    px, py = np.stack(px, 1), np.stack(py, 1)             # (squares, 4 corners)
    nxt = [1, 2, 3, 0]
    segs = np.stack([px, py, px[:, nxt], py[:, nxt]], 2).reshape(-1, 4).astype(np.int64)
    canvas = np.zeros((height, width), dtype=np.uint8)
    _draw_segments(canvas, segs)
    return canvas


def _draw_segments(canvas, segments: list) -> None:
    """Rasterize every segment at once: max(|dx|, |dy|) + 1 evenly spaced rounded points
    (Bresenham's pixels for horizontal, vertical and 45-degree lines)."""
    import numpy as np
    if len(segments) == 0:
        return
    a = np.asarray(segments, dtype=np.int64).reshape(-1, 4)
    x1, y1, x2, y2 = a[:, 0], a[:, 1], a[:, 2], a[:, 3]
    steps = np.maximum(np.abs(x2 - x1), np.abs(y2 - y1))
    idx = np.repeat(np.arange(len(a)), steps + 1)
    starts = np.cumsum(steps + 1) - (steps + 1)
    t = np.arange(len(idx)) - np.repeat(starts, steps + 1)
    frac = np.where(steps[idx] > 0, t / np.maximum(steps[idx], 1), 0.0)
    xs = np.rint(x1[idx] + frac * (x2 - x1)[idx]).astype(np.int64)
    ys = np.rint(y1[idx] + frac * (y2 - y1)[idx]).astype(np.int64)
    h, w = canvas.shape
    ok = (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    canvas[ys[ok], xs[ok]] = 1


def render_braille(canvas) -> str:
    """Redis's renderCanvas for version 5: one Braille character per 2x4 block.
    Complexity: O(pixels), vectorized."""
    import numpy as np
    h, w = canvas.shape
    padded = np.zeros(((h + 3) // 4 * 4 + 4, (w + 1) // 2 * 2 + 2), dtype=np.uint16)
    padded[:h, :w] = canvas
    rows = range(0, h, 4)
    codes = np.zeros((len(rows), (w + 1) // 2), dtype=np.uint16)
    for dx, dy, bit in BRAILLE_DOTS:
        codes |= padded[dy:dy + 4 * len(rows):4, dx:dx + 2 * codes.shape[1]:2] << bit
    lines = ["".join(map(chr, (BRAILLE_BASE + codes[i]).tolist())) for i in range(len(rows))]
    out = []
    for i, y in enumerate(rows):
        out.append(lines[i])
        if y != h - 1:
            out.append("\n")
    return "".join(out)


# ---- version 6: skyline ----

def skyline(cols: int, rows: int, rng: random.Random):
    """Redis's generateSkyline: two layers of gray skyscrapers, then black ones with lit
    windows, on a white canvas.  Complexity: O(cells) Python steps."""
    import numpy as np
    canvas = np.full((rows, cols), 3, dtype=np.uint8)
    for color in (2, 1):
        offset = -10
        while offset < cols:
            offset += rng.randrange(8)
            width = 10 + rng.randrange(9)
            height = rows // 2 + rng.randrange(rows) // (2 if color == 2 else 3)
            _skyscraper(canvas, offset, width, height, color, False, rng)
            offset += width // 2 if color == 2 else width + 1
    offset = -10
    while offset < cols:
        offset += rng.randrange(8)
        width = 5 + rng.randrange(14)
        if width % 4:
            width += width % 3
        height = rows // 3 + rng.randrange(rows) // 2
        _skyscraper(canvas, offset, width, height, 0, True, rng)
        offset += width + 5
    return canvas


def _skyscraper(canvas, xoff: int, width: int, height: int, color: int, windows: bool,
                rng: random.Random) -> None:
    rows, cols = canvas.shape
    starty = rows - 1
    endy = starty - height + 1
    for y in range(starty, endy - 1, -1):
        for x in range(xoff, xoff + width):
            if y == endy and (x <= xoff + 1 or x >= xoff + width - 2):
                continue          # the roof is four pixels narrower
            c = color
            if windows and xoff + 1 < x < xoff + width - 2 and endy + 1 < y < starty - 1:
                relx, rely = x - (xoff + 1), y - (endy + 1)
                if (relx // 2) % 2 and rely % 2:
                    c = 1 + rng.randrange(2)
                    if relx % 2 and 0 <= x - 1 < cols:
                        c = int(canvas[y, x - 1])
            if 0 <= x < cols and 0 <= y < rows:
                canvas[y, x] = c


def render_ansi(canvas) -> str:
    cells = ["\033[%s \033[0m" % c for c in SKYLINE_COLORS]
    return "\n".join("".join(cells[v] for v in row.tolist()) for row in canvas)


@command("lolwut", -1, "readonly fast", group="server")
def lolwut(c, argv):
    """LOLWUT [VERSION version]
    Displays computer art and the Redis version."""
    args = argv[1:]
    version = 7
    if len(argv) >= 3 and argv[1].lower() == b"version":
        version = parse_int(argv[2]) & UINT32_MASK
        args = argv[3:]
    if version == 5:
        values = _args(args, SCHOTTER_DEFAULTS, SCHOTTER_LIMITS)
        text = render_braille(schotter(*values, _rng(5, values)))
        return Verbatim((text + SCHOTTER_FOOTER % REDIS_VERSION).encode())
    if version == 6:
        values = _args(args, SKYLINE_DEFAULTS, SKYLINE_LIMITS)
        if values[0] * values[1] > SKYLINE_MAX_CELLS:
            raise CommandError(errors.LOLWUT_TOO_LARGE % SKYLINE_MAX_CELLS)
        text = render_ansi(skyline(*values, _rng(6, values)))
        return Verbatim((text + SKYLINE_FOOTER % REDIS_VERSION).encode())
    return Verbatim(("Redis ver. %s\n" % REDIS_VERSION).encode())


# ---- first use (first_use.py): numpy loads on a thread while only the caller waits ----

gate_commands(NUMPY, ['lolwut'])
