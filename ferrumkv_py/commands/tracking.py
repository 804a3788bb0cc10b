"""CLIENT TRACKING / CACHING / GETREDIR / TRACKINGINFO (client-side caching, tracking.py)."""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..registry import command
from ..resp import OK, RespSet
from ..tracking import check_enable, parse_tracking


@command("tracking", -3, "noscript loading stale", parent="client")
def client_tracking(c, argv):
    """CLIENT TRACKING <ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]
    Enables or disables server-assisted client-side caching for the connection."""
    redirect, bcast, optin, optout, noloop, prefixes = parse_tracking(c, argv)
    mode = argv[2].lower()
    if mode == b"on":
        check_enable(c, bcast, optin, optout, prefixes)
        c.server.tracking.enable(c, redirect, bcast, optin, optout, noloop, prefixes)
    elif mode == b"off":
        c.server.tracking.disable(c)
    else:
        raise CommandError(errors.SYNTAX)
    return OK


@command("caching", 3, "noscript loading stale", parent="client")
def client_caching(c, argv):
    """CLIENT CACHING <YES | NO>
    Says whether the next command's keys are tracked (OPTIN / OPTOUT modes)."""
    tr = c.tracking
    if tr is None:
        raise CommandError("CLIENT CACHING can be called only when the client is in tracking "
                           "mode with OPTIN or OPTOUT mode enabled")
    opt = argv[2].lower()
    if opt == b"yes":
        if not tr.optin:
            raise CommandError("CLIENT CACHING YES is only valid when tracking is enabled in "
                               "OPTIN mode.")
    elif opt == b"no":
        if not tr.optout:
            raise CommandError("CLIENT CACHING NO is only valid when tracking is enabled in "
                               "OPTOUT mode.")
    else:
        raise CommandError(errors.SYNTAX)
    tr.caching = True
    return OK


@command("getredir", 2, "noscript loading stale", parent="client")
def client_getredir(c, argv):
    """CLIENT GETREDIR
    Returns the client id invalidations are redirected to (0 none, -1 tracking off)."""
    return c.tracking.redirect if c.tracking is not None else -1


@command("trackinginfo", 2, "noscript loading stale", parent="client")
def client_trackinginfo(c, argv):
    """CLIENT TRACKINGINFO
    Describes the connection's tracking state: flags, redirect, prefixes."""
    tr = c.tracking
    if tr is None:
        return {b"flags": RespSet([b"off"]), b"redirect": -1, b"prefixes": []}
    flags = [b"on"]
    if tr.bcast:
        flags.append(b"bcast")
    if tr.optin:
        flags.append(b"optin")
        if tr.caching:
            flags.append(b"caching-yes")
    if tr.optout:
        flags.append(b"optout")
        if tr.caching:
            flags.append(b"caching-no")
    if tr.noloop:
        flags.append(b"noloop")
    if tr.broken:
        flags.append(b"broken_redirect")
    return {b"flags": RespSet(flags), b"redirect": tr.redirect,
            b"prefixes": sorted(tr.prefixes)}
