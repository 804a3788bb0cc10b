"""LITEHIT: the shadow's exact LRU curve (RESET, CURVE, SAVE, HELP)."""

from __future__ import annotations

from ..errors import CommandError
from ..registry import command
from ..resp import OK, Status
from ..shadow import CURVE_DEFAULT_POINTS
from .util import parse_int

SHADOW_OFF = "litehit shadow is off (CONFIG SET litehit-shadow yes)"


def _shadow(c):
    shadow = c.server.shadow
    if shadow is None:
        raise CommandError(SHADOW_OFF)
    return shadow


@command("litehit", -2, "admin", group="server")
def litehit(c, argv):
    """LITEHIT subcommand [arguments ...]
    The litehit shadow: exact LRU hit rates of the live access stream."""
    raise CommandError("unknown subcommand '%s'. Try LITEHIT HELP." % argv[1].decode())


@command("reset", 2, "admin", parent="litehit")
def litehit_reset(c, argv):
    """LITEHIT RESET
    Forgets the recorded window and starts a new one."""
    _shadow(c).reset()
    return OK


@command("curve", -2, "admin", parent="litehit")
def litehit_curve(c, argv):
    """LITEHIT CURVE [points]
    Returns [capacity in blocks, exact LRU hit rate] pairs on a log scale.

    With ``litehit-shadow-sample`` R < 1 the capacities are blocks of the full stream, the
    rates are the sampled stream's at floor(capacity * R) (SHARDS estimates), and one more
    pair closes the reply: ``["sample_rate", R]``."""
    points = CURVE_DEFAULT_POINTS
    if len(argv) > 3:
        raise CommandError("syntax error")
    if len(argv) == 3:
        points = parse_int(argv[2])
        if not 2 <= points <= 10000:
            raise CommandError("points must be between 2 and 10000")
    shadow = _shadow(c)
    shadow.consume()
    out = [[cap, ("%.6f" % rate).encode()] for cap, rate in shadow.curve(points)]
    if not shadow.keep_all:
        out.append([b"sample_rate", ("%.6g" % shadow.sample_rate).encode()])
    return out


@command("save", 2, "admin", parent="litehit")
def litehit_save(c, argv):
    """LITEHIT SAVE
    Publishes the recorded window's facts as litehit_facts.csv in the configured dir."""
    try:
        return _shadow(c).save().encode()
    except OSError as e:
        raise CommandError("Failed writing litehit facts: %s" % e.strerror) from None


@command("help", 2, "loading stale", parent="litehit")
def litehit_help(c, argv):
    """LITEHIT HELP
    Lists the LITEHIT subcommands."""
    return [Status(s.encode()) for s in (
        "LITEHIT <subcommand> [<arg> ...]. Subcommands are:",
        "RESET", "    Forget the recorded window (LRU state, counters, facts).",
        "CURVE [<points>]", "    Exact LRU hit rate at capacities on a log scale (sampled:",
        "    estimates, closed by a sample_rate pair).",
        "SAVE", "    Write the window's facts to <dir>/litehit_facts.csv atomically.",
        "HELP", "    Print this help.")]
