"""LITEHIT: the shadow's exact LRU curve (RESET, CURVE, SAVE, HELP)."""

from __future__ import annotations

from ..errors import CommandError
from ..registry import command
from ..resp import OK, Status
from ..shadow import CURVE_DEFAULT_POINTS
from ._util import parse_float, parse_int

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


def _value(v):
    """A reply value: floats as fixed-decimal strings (INFO's style), the rest as is."""
    if isinstance(v, float):
        return ("%.6f" % v).encode()
    if isinstance(v, bool):
        return int(v)
    return v


@command("curve", -2, "admin", parent="litehit")
def litehit_curve(c, argv):
    """LITEHIT CURVE [points]
    Returns the exact LRU hit curve as labelled points, on a log scale of capacities.

    A map (a flat list in RESP2): ``block_bytes``, ``sample_rate``, ``capacity_keys`` (today's
    capacity: maxmemory / block bytes, -1 without maxmemory) and ``points``, a list of maps
    ``capacity_keys``, ``capacity_bytes``, ``exact_hit_rate``.  With
    ``litehit-shadow-sample`` R < 1 the capacities are keys of the full stream and the rates
    the sampled stream's at floor(capacity * R) (SHARDS estimates)."""
    points = CURVE_DEFAULT_POINTS
    if len(argv) > 3:
        raise CommandError("syntax error")
    if len(argv) == 3:
        points = parse_int(argv[2])
        if not 2 <= points <= 10000:
            raise CommandError("points must be between 2 and 10000")
    shadow = _shadow(c)
    shadow.consume()
    bb = shadow.block_bytes()
    return {b"block_bytes": bb,
            b"sample_rate": ("%.6g" % shadow.sample_rate).encode(),
            b"capacity_keys": shadow.capacity_blocks(),
            b"points": [{b"capacity_keys": cap, b"capacity_bytes": cap * bb,
                         b"exact_hit_rate": _value(rate)}
                        for cap, rate in shadow.curve(points)]}


@command("advise", -2, "admin", parent="litehit")
def litehit_advise(c, argv):
    """LITEHIT ADVISE [target-hit-rate]
    Returns capacity advice from the exact LRU curve: memory for a target hit rate, the hit rate at 0.5x/2x/4x of today's maxmemory, and the policy against exact LRU.

    Rates are fractions (0.8 = 80 %); ``policy_vs_exact_lru_points`` compares the server's
    hits with an exact LRU's on the same reuses (percentage points, positive = the policy
    beats LRU).  With a target: ``policy_meets_target`` (the running policy's own hit rate
    against it), ``target_maxmemory`` (the exact LRU's need plus headroom, in Redis's
    units), and ``action``, the one line to act on; ``window_age_seconds`` and
    ``first_use_share`` say how young the window is and the ceiling its first uses set."""
    if len(argv) > 3:
        raise CommandError("syntax error")
    target = None
    if len(argv) == 3:
        target = parse_float(argv[2])
        if not 0.0 <= target <= 1.0:
            raise CommandError("target hit rate must be between 0 and 1")
    shadow = _shadow(c)
    shadow.consume()
    return {k.encode(): _value(v) for k, v in shadow.advice(target).items()}


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
        "CURVE [<points>]", "    Exact LRU hit rate at capacities on a log scale, as labelled",
        "    points (keys, bytes, rate); sampled shadows give estimates.",
        "ADVISE [<target-hit-rate>]", "    Memory needed for a target hit rate, hit rates at",
        "    0.5x/2x/4x of maxmemory, and the policy against exact LRU on the same reuses.",
        "SAVE", "    Write the window's facts to <dir>/litehit_facts.csv atomically.",
        "HELP", "    Print this help.")]
