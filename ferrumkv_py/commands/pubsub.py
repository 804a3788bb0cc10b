"""Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

The tables and the delivery live in ``pubsub.py``; these handlers parse, update the client's
state and build the confirmation frames.  A (un)subscribe answers one frame per channel (a
RESP3 push, a RESP2 array), each carrying the client's subscription count after it: channels
plus patterns for SUBSCRIBE / PSUBSCRIBE and their UNSUBSCRIBEs, shard channels alone for
the S variants (Redis 7.0).  An UNSUBSCRIBE without arguments from a client with nothing to
drop still answers once, with a null channel and the count.
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError
from ..resp import push_frame as frame
from ..registry import command
from ..resp import Pushed, Raw, Status
from ._util import glob_matcher

_PUBSUB_FLAGS = "pubsub noscript loading stale"


def _count(c) -> int:
    return len(c.sub_channels) + len(c.sub_patterns)


def _shard_count(c) -> int:
    return len(c.sub_shard)


def _subscribe(c, argv, kind: bytes, shard: bool) -> Pushed:
    ps = c.server.pubsub
    out = []
    for ch in argv[1:]:
        ps.subscribe(c, ch, shard)
        out.append(frame(c.proto, [kind, ch, _shard_count(c) if shard else _count(c)]))
    c.update_slow_path()
    return Pushed(b"".join(out))


def _unsubscribe(c, argv, kind: bytes, shard: bool) -> Pushed:
    ps = c.server.pubsub
    count = _shard_count if shard else _count
    names = argv[1:] or list(c.sub_shard if shard else c.sub_channels)
    out = []
    for ch in names:
        ps.unsubscribe(c, ch, shard)
        out.append(frame(c.proto, [kind, ch, count(c)]))
    if not names:
        out.append(frame(c.proto, [kind, None, count(c)]))
    c.update_slow_path()
    return Pushed(b"".join(out))


@command("subscribe", -2, _PUBSUB_FLAGS, group="pubsub")
def subscribe(c, argv):
    """SUBSCRIBE channel [channel ...]
    Listens for messages published to the channels."""
    return _subscribe(c, argv, b"subscribe", False)


@command("unsubscribe", -1, _PUBSUB_FLAGS, group="pubsub")
def unsubscribe(c, argv):
    """UNSUBSCRIBE [channel [channel ...]]
    Stops listening to the channels (all of them without arguments)."""
    return _unsubscribe(c, argv, b"unsubscribe", False)


@command("ssubscribe", -2, _PUBSUB_FLAGS, first_key=1, last_key=-1, step=1, group="pubsub")
def ssubscribe(c, argv):
    """SSUBSCRIBE shardchannel [shardchannel ...]
    Listens for messages published to the shard channels."""
    return _subscribe(c, argv, b"ssubscribe", True)


@command("sunsubscribe", -1, _PUBSUB_FLAGS, first_key=1, last_key=-1, step=1,
         group="pubsub")
def sunsubscribe(c, argv):
    """SUNSUBSCRIBE [shardchannel [shardchannel ...]]
    Stops listening to the shard channels (all of them without arguments)."""
    return _unsubscribe(c, argv, b"sunsubscribe", True)


@command("psubscribe", -2, _PUBSUB_FLAGS, group="pubsub")
def psubscribe(c, argv):
    """PSUBSCRIBE pattern [pattern ...]
    Listens for messages published to channels matching the glob patterns."""
    ps = c.server.pubsub
    out = []
    for pat in argv[1:]:
        ps.psubscribe(c, pat)
        out.append(frame(c.proto, [b"psubscribe", pat, _count(c)]))
    c.update_slow_path()
    return Pushed(b"".join(out))


@command("punsubscribe", -1, _PUBSUB_FLAGS, group="pubsub")
def punsubscribe(c, argv):
    """PUNSUBSCRIBE [pattern [pattern ...]]
    Stops listening to the patterns (all of them without arguments)."""
    ps = c.server.pubsub
    names = argv[1:] or list(c.sub_patterns)
    out = []
    for pat in names:
        ps.punsubscribe(c, pat)
        out.append(frame(c.proto, [b"punsubscribe", pat, _count(c)]))
    if not names:
        out.append(frame(c.proto, [b"punsubscribe", None, _count(c)]))
    c.update_slow_path()
    return Pushed(b"".join(out))


@command("publish", 3, "pubsub loading stale fast may_replicate", group="pubsub")
def publish(c, argv):
    """PUBLISH channel message
    Posts a message to a channel; returns how many clients received it."""
    return c.server.pubsub.publish(argv[1], argv[2])


@command("spublish", 3, "pubsub loading stale fast may_replicate", first_key=1, last_key=1,
         step=1, group="pubsub")
def spublish(c, argv):
    """SPUBLISH shardchannel message
    Posts a message to a shard channel; returns how many clients received it."""
    return c.server.pubsub.publish(argv[1], argv[2], shard=True)


# ---- PUBSUB introspection ----

@command("pubsub", -2, "", group="pubsub")
def pubsub(c, argv):
    """PUBSUB subcommand [arguments ...]
    Pub/sub introspection."""
    raise CommandError(errors.UNKNOWN_SUBCOMMAND % (argv[1].decode("utf-8", "surrogateescape"),
                                                    "PUBSUB"))


def _syntax(argv) -> CommandError:
    return CommandError(errors.SUBCOMMAND_SYNTAX % (
        argv[1].decode("utf-8", "surrogateescape"), "PUBSUB"))


def _names(table: dict, argv) -> list:
    if len(argv) > 3:
        raise _syntax(argv)
    match = glob_matcher(argv[2]) if len(argv) == 3 else None
    return [ch for ch in table if match is None or match(ch)]


@command("channels", -2, "pubsub loading stale", parent="pubsub")
def pubsub_channels(c, argv):
    """PUBSUB CHANNELS [pattern]
    Lists the channels with at least one subscriber (matching the pattern)."""
    return _names(c.server.pubsub.channels, argv)


@command("shardchannels", -2, "pubsub loading stale", parent="pubsub")
def pubsub_shardchannels(c, argv):
    """PUBSUB SHARDCHANNELS [pattern]
    Lists the shard channels with at least one subscriber (matching the pattern)."""
    return _names(c.server.pubsub.shard, argv)


def _numsub(table: dict, argv) -> list:
    out = []
    for ch in argv[2:]:
        out.append(ch)
        out.append(len(table.get(ch, ())))
    return out


@command("numsub", -2, "pubsub loading stale", parent="pubsub")
def pubsub_numsub(c, argv):
    """PUBSUB NUMSUB [channel [channel ...]]
    Counts the subscribers of each channel (pattern subscribers excluded)."""
    return _numsub(c.server.pubsub.channels, argv)


@command("shardnumsub", -2, "pubsub loading stale", parent="pubsub")
def pubsub_shardnumsub(c, argv):
    """PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
    Counts the subscribers of each shard channel."""
    return _numsub(c.server.pubsub.shard, argv)


@command("numpat", 2, "pubsub loading stale", parent="pubsub")
def pubsub_numpat(c, argv):
    """PUBSUB NUMPAT
    Counts the patterns with at least one subscriber."""
    return c.server.pubsub.numpat()


@command("help", 2, "loading stale", parent="pubsub")
def pubsub_help(c, argv):
    """PUBSUB HELP
    Lists the PUBSUB subcommands."""
    return [Status(line.encode()) for line in (
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> "
        "(default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.")]
