"""Pub/sub: who listens to which channel or pattern, and delivery of a published message.

Three namespaces, as Redis 7.0 keeps them: channels (SUBSCRIBE), patterns (PSUBSCRIBE) and
shard channels (SSUBSCRIBE; one node, so one shard).  Each maps a name to the subscribing
clients in subscription order (a dict used as an ordered set), and every client keeps the
reverse map (``c.sub_channels``, ``c.sub_patterns``, ``c.sub_shard``) so a disconnect or
RESET drops exactly its own entries::

    channels  {b"news": {c1: None, c7: None}}        c1.sub_channels {b"news": None}
    patterns  {b"n*":   ([match], {c7: None})}      c7.sub_patterns {b"n*": None}

Delivery encodes a message once per protocol version, not once per subscriber: the
``message`` / ``pmessage`` frame body is built once, prefixed with ``*`` (RESP2) or ``>``
(RESP3 push), and the same bytes object is handed to every subscriber's
:meth:`~ferrumkv_py.client.Client.push` (which queues a client's frames until the end of
the event-loop round, so a pipelined burst of PUBLISHes costs each subscriber one write).
Channel subscribers are served first, then each matching pattern (patterns in the order they
were first subscribed; Redis iterates a hash table there, so its order is arbitrary).

Complexity: PUBLISH is O(channel subscribers + patterns * match cost + pattern subscribers);
(un)subscribing one name is O(1); a client's cleanup is O(its subscriptions).
"""

from __future__ import annotations

from .resp import bulk


class PubSub:
    """The server's subscription tables (``server.pubsub``)."""

    def __init__(self):
        self.channels: dict[bytes, dict] = {}
        self.patterns: dict[bytes, tuple] = {}   # pattern -> (match or None, clients)
        self.shard: dict[bytes, dict] = {}

    # ---- subscribing ----

    def subscribe(self, c, channel: bytes, shard: bool = False) -> bool:
        """Add ``c`` to ``channel``; False if it was already there.  O(1)."""
        mine = c.sub_shard if shard else c.sub_channels
        if channel in mine:
            return False
        mine[channel] = None
        table = self.shard if shard else self.channels
        subs = table.get(channel)
        if subs is None:
            subs = table[channel] = {}
        subs[c] = None
        return True

    def unsubscribe(self, c, channel: bytes, shard: bool = False) -> bool:
        """Remove ``c`` from ``channel``; False if it was not there.  O(1)."""
        mine = c.sub_shard if shard else c.sub_channels
        if mine.pop(channel, 1) is not None:
            return False
        table = self.shard if shard else self.channels
        subs = table[channel]
        del subs[c]
        if not subs:
            del table[channel]
        return True

    def psubscribe(self, c, pattern: bytes) -> bool:
        if pattern in c.sub_patterns:
            return False
        c.sub_patterns[pattern] = None
        ent = self.patterns.get(pattern)
        if ent is None:
            from .commands._util import glob_matcher   # (commands import this module)
            ent = self.patterns[pattern] = (glob_matcher(pattern), {})
        ent[1][c] = None
        return True

    def punsubscribe(self, c, pattern: bytes) -> bool:
        if c.sub_patterns.pop(pattern, 1) is not None:
            return False
        subs = self.patterns[pattern][1]
        del subs[c]
        if not subs:
            del self.patterns[pattern]
        return True

    def drop_client(self, c) -> None:
        """Forget every subscription of a closing client.  O(its subscriptions)."""
        for ch in list(c.sub_channels):
            self.unsubscribe(c, ch)
        for ch in list(c.sub_shard):
            self.unsubscribe(c, ch, shard=True)
        for pat in list(c.sub_patterns):
            self.punsubscribe(c, pat)

    # ---- publishing ----

    def publish(self, channel: bytes, message: bytes, shard: bool = False) -> int:
        """Deliver ``message``; returns how many clients received it (Redis's count).

        Complexity: see the module docstring; two encodings per channel and per matching
        pattern at most, whatever the number of subscribers.
        """
        n = 0
        subs = (self.shard if shard else self.channels).get(channel)
        if subs:
            n = _deliver(subs, (b"$8\r\nsmessage\r\n" if shard else b"$7\r\nmessage\r\n")
                         + bulk(channel) + bulk(message), 3)
        if shard or not self.patterns:
            return n
        tail = None
        for pat, (match, psubs) in self.patterns.items():   # push() never unsubscribes
            if match is None or match(channel):
                if tail is None:
                    tail = bulk(channel) + bulk(message)
                n += _deliver(psubs, b"$8\r\npmessage\r\n" + bulk(pat) + tail, 4)
        return n

    # ---- introspection (PUBSUB, INFO) ----

    def numpat(self) -> int:
        return len(self.patterns)


def _deliver(subs: dict, body: bytes, nparts: int) -> int:
    """Push one frame body to every client of ``subs``, encoded once per protocol."""
    f2 = b"*%d\r\n%b" % (nparts, body)
    f3 = None
    for c in subs:          # push() only queues bytes: nothing here can unsubscribe
        if c.proto == 3:
            if f3 is None:
                f3 = b">%d\r\n%b" % (nparts, body)
            c.push(f3)
        else:
            c.push(f2)
    return len(subs)
