"""Client-side caching: CLIENT TRACKING's tables and invalidation messages (Redis 7.0).

Default mode: every key a tracking client reads (a ``readonly`` command's keys) is
remembered in ``table``, key -> {client id: None}.  When the key changes (any write, an
expiry, an eviction: everything that calls ``Keyspace.signal``) each remembered client gets
one ``invalidate`` message and the key leaves the table, so it is announced once until read
again.  Keys are global (not per database), as in Redis.

BCAST mode: nothing is remembered; a client registers prefixes (``b""`` = every key) and a
changed key matching one is collected in that prefix's ``keys`` (key -> the client that
changed it, for NOLOOP); the collected keys go out as one message per prefix when the read
or cron tick ends (``Server.flush_writes``), as Redis sends them before sleeping.

Messages: a RESP3 client gets a push ``>2 invalidate [keys]``; a client with ``REDIRECT id``
has them sent to that connection instead: a push if it speaks RESP3, else, if it is
subscribed (to anything), a ``message`` on ``__redis__:invalidate``.  A flush sends a null
instead of the keys.  A missing redirect target marks the client broken
(``tracking-redir-broken`` push to RESP3 clients).  Invalidations a command causes for the
client running it go out after its reply (Redis's ``tracking_pending_keys``), and after the
whole EXEC inside a transaction.

Hook: while any client tracks, ``Keyspace.watched`` holds :data:`TRACKING_MARK` so the
write paths' ``if ks.watched: ks.signal(...)`` tests call ``signal``, which calls
:meth:`Tracking.invalidate_key` through ``ks.invalidate``.

Complexity: remembering O(keys read); an invalidation O(clients remembered for the key) plus
O(prefixes) in BCAST mode; ``tracking-table-max-keys`` bounds the table (oldest keys first).
"""

from __future__ import annotations

from . import errors
from .errors import CommandError
from .resp import bulk_array

TRACKING_MARK = (-1, b"")          # a WATCH table key no client uses: "call signal()"
INVALIDATE_CHANNEL = b"__redis__:invalidate"
_INVALIDATE_HEAD = {3: b">2\r\n$10\r\ninvalidate\r\n",
                    2: b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n"}
_NULL = {2: b"$-1\r\n", 3: b"_\r\n"}


class ClientTracking:
    """One client's CLIENT TRACKING options (``c.tracking``; None when off)."""

    __slots__ = ("redirect", "bcast", "optin", "optout", "noloop", "caching", "prefixes",
                 "broken", "pending")

    def __init__(self, redirect: int, bcast: bool, optin: bool, optout: bool, noloop: bool):
        self.redirect = redirect
        self.bcast = bcast
        self.optin = optin
        self.optout = optout
        self.noloop = noloop
        self.caching = False       # CLIENT CACHING yes/no given for the next command
        self.prefixes: dict = {}   # BCAST prefixes, bytes -> None
        self.broken = False        # the redirect target went away
        self.pending: list = []    # frames for this client, sent after its running command

    def flag_chars(self) -> str:
        """CLIENT LIST flags: t, then R (broken redirect), B (broadcast)."""
        return "t" + ("R" if self.broken else "") + ("B" if self.bcast else "")


def _keys_array(keys) -> bytes:
    return bulk_array(keys)


SCRIPT_READS = frozenset({"eval_ro", "evalsha_ro", "fcall_ro"})   # see Tracking.remember


class Tracking:
    """The server's tracking tables (``server.tracking``)."""

    def __init__(self, server):
        self.server = server
        self.table: dict[bytes, dict] = {}        # key -> {client id: None}
        self.prefixes: dict[bytes, list] = {}     # prefix -> [clients {c: None}, keys {k: c}]
        self.clients = 0                          # clients with tracking on
        self.items = 0                            # client ids stored across the table
        self.current = None                       # the tracking client running a command
        self.bcast_dirty = False
        self.flushing = False
        self.max_keys = 0
        server.config.on_change("tracking-table-max-keys", self._set_max_keys)

    def _set_max_keys(self, value: int) -> None:
        self.max_keys = value

    # ---- enabling ----

    def enable(self, c, redirect: int, bcast: bool, optin: bool, optout: bool,
               noloop: bool, prefixes: list) -> None:
        """CLIENT TRACKING ON (options already validated)."""
        tr = c.tracking
        if tr is None:
            self.clients += 1
            if self.clients == 1:
                ks = self.server.ks
                ks.watched[TRACKING_MARK] = set()
                ks.invalidate = self.invalidate_key
            tr = c.tracking = ClientTracking(redirect, bcast, optin, optout, noloop)
        else:   # ON again: options replaced, BCAST prefixes added to (Redis enableTracking)
            tr.redirect, tr.bcast, tr.optin, tr.optout, tr.noloop = (
                redirect, bcast, optin, optout, noloop)
            tr.broken = False
        if bcast:
            for p in prefixes or [b""]:
                ent = self.prefixes.get(p)
                if ent is None:
                    ent = self.prefixes[p] = [{}, {}]
                ent[0][c] = None
                tr.prefixes[p] = None
        c.update_slow_path()

    def disable(self, c) -> None:
        """CLIENT TRACKING OFF, RESET, disconnect.  Table entries go lazily, as in Redis."""
        tr = c.tracking
        if tr is None:
            return
        for p in tr.prefixes:
            ent = self.prefixes[p]
            ent[0].pop(c, None)
            if not ent[0]:
                del self.prefixes[p]
        c.tracking = None
        self.clients -= 1
        if not self.clients:
            ks = self.server.ks
            ks.watched.pop(TRACKING_MARK, None)
            ks.invalidate = None
            self.table.clear()
            self.items = 0
            self.prefixes.clear()
        c.update_slow_path()

    # ---- the dispatcher's side ----

    def call(self, c, spec, argv) -> bytes:
        """Run a command of a tracking client: remembered keys, CACHING reset, and the
        invalidations it caused for itself after its reply.  Complexity: the command's."""
        prev, self.current = self.current, c
        try:
            out = c.run(spec, argv)
        finally:
            self.current = prev
        if not out:         # POSTPONED (client.py): not run yet, nothing to settle
            return out
        tr = c.tracking
        if tr is not None:
            if c.multi is None and not spec.name.startswith("client"):
                tr.caching = False
            if tr.pending:
                out += b"".join(tr.pending)
                tr.pending = []
        return out

    def remember(self, c, spec, argv) -> None:
        """After a readonly command: remember its keys for ``c`` (not in BCAST mode).
        The read-only script commands remember nothing themselves: their scripts' reads
        do (Engine.call -> :meth:`remember_keys`), as Redis's call() leaves EVAL_RO,
        EVALSHA_RO and FCALL_RO out.

        Complexity: O(keys) plus the table's bound.
        """
        if spec.name in SCRIPT_READS:
            return
        keys = spec.keys(argv)
        if not keys and spec.getkeys is not None:   # movable keys (XREAD, ZUNION ...), as
            try:                                    # Redis's getKeysFromCommand finds them
                keys = spec.getkeys(argv)
            except Exception:
                keys = []
        self.remember_keys(c, keys)

    def remember_keys(self, c, keys) -> None:
        """Remember ``keys`` for ``c``'s tracking (not in BCAST mode, and as OPTIN /
        OPTOUT with CACHING decide).  Complexity: O(keys) plus the table's bound."""
        tr = c.tracking
        if tr.bcast or (tr.optin and not tr.caching) or (tr.optout and tr.caching):
            return
        table = self.table
        cid = c.id
        for key in keys:
            ids = table.get(key)
            if ids is None:
                ids = table[key] = {}
            if cid not in ids:
                ids[cid] = None
                self.items += 1
        if self.max_keys and len(table) > self.max_keys:
            for key in list(table)[:len(table) - self.max_keys]:   # oldest first
                self.invalidate_key(key, bcast=False)

    # ---- invalidation ----

    def invalidate_key(self, key: bytes, bcast: bool = True) -> None:
        """A key changed: tell the clients that may cache it (see the module docstring).

        ``bcast=False`` (the table's size limit) skips the BCAST prefixes: the key did not
        change.  Complexity: O(clients remembered for the key + BCAST prefixes).
        """
        if self.flushing:
            return
        if bcast and self.prefixes:
            for p, ent in self.prefixes.items():
                if key.startswith(p):
                    ent[1][key] = self.current
                    if not self.bcast_dirty:
                        self.bcast_dirty = True
                        self.server.write_clients.append(None)
        ids = self.table.pop(key, None)
        if ids is None:
            return
        self.items -= len(ids)
        clients = self.server.clients
        for cid in ids:
            target = clients.get(cid)
            if target is None:
                continue
            tr = target.tracking
            if tr is None or tr.bcast:
                continue
            if target is self.current:
                if tr.noloop:
                    continue
                self._send(target, _keys_array((key,)), defer=True)
            else:
                self._send(target, _keys_array((key,)))

    def flush(self, c) -> None:
        """FLUSHDB / FLUSHALL: a null invalidation to every tracking client, table freed.

        Call :meth:`flush_done` after the keys are gone.  Complexity: O(clients).
        """
        if self.clients:
            for target in list(self.server.clients.values()):
                if target.tracking is not None:
                    self._send(target, _NULL[3 if target.proto == 3 else 2],
                               defer=target is c)
        self.table.clear()
        self.items = 0
        self.flushing = True

    def flush_done(self) -> None:
        self.flushing = False

    def broadcast(self) -> None:
        """Send each BCAST prefix's collected keys (one message per prefix and client).

        Prefixes and keys go in byte order, as Redis walks its radix trees.
        Complexity: O(P log P + K log K + K * clients in NOLOOP mode) for P prefixes and K
        collected keys.
        """
        self.bcast_dirty = False
        for _, (clients, keys) in sorted(self.prefixes.items()):  # Redis: radix-tree order
            if not keys:
                continue
            ordered = sorted(keys)
            common = _keys_array(ordered)
            for c in list(clients):
                if c.tracking is not None and c.tracking.noloop:
                    mine = [k for k in ordered if keys[k] is not c]
                    if mine:
                        self._send(c, _keys_array(mine))
                else:
                    self._send(c, common)
            keys.clear()

    def _send(self, c, payload: bytes, defer: bool = False) -> None:
        """Redis sendTrackingMessage: ``payload`` is the encoded keys array (or null)."""
        tr = c.tracking
        target = c
        if tr.redirect:
            target = self.server.clients.get(tr.redirect)
            if target is None or target.closing:
                tr.broken = True
                if c.proto == 3:
                    msg = b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % tr.redirect
                    tr.pending.append(msg) if defer else c.push(msg)
                return
        if target.proto == 3:
            msg = _INVALIDATE_HEAD[3] + payload
        elif target is not c and target.obuf_class == "pubsub":
            msg = _INVALIDATE_HEAD[2] + payload
        else:
            return    # RESP2 without a subscribed redirect target: nowhere to send it
        if defer and target is c:
            tr.pending.append(msg)
        else:
            target.push(msg)

    # ---- introspection ----

    def info_fields(self) -> list:
        return [("tracking_total_keys", len(self.table)),
                ("tracking_total_items", self.items),
                ("tracking_total_prefixes", len(self.prefixes))]


def parse_tracking(c, argv) -> tuple:
    """CLIENT TRACKING's options, validated in Redis 7.0's order; raises its errors."""
    redirect = 0
    bcast = optin = optout = noloop = False
    prefixes: list = []
    i = 3
    n = len(argv)
    while i < n:
        opt = argv[i].lower()
        more = n - 1 - i
        if opt == b"redirect" and more:
            i += 1
            if redirect:
                raise CommandError("A client can only redirect to a single other client")
            from .commands._util import parse_int
            redirect = parse_int(argv[i])
            if redirect not in c.server.clients:
                raise CommandError("The client ID you want redirect to does not exist")
        elif opt == b"bcast":
            bcast = True
        elif opt == b"optin":
            optin = True
        elif opt == b"optout":
            optout = True
        elif opt == b"noloop":
            noloop = True
        elif opt == b"prefix" and more:
            i += 1
            prefixes.append(argv[i])
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return redirect, bcast, optin, optout, noloop, prefixes


def check_enable(c, bcast: bool, optin: bool, optout: bool, prefixes: list) -> None:
    """The compatibility checks of CLIENT TRACKING ON (Redis 7.0 texts and order)."""
    if not bcast and prefixes:
        raise CommandError("PREFIX option requires BCAST mode to be enabled")
    tr = c.tracking
    if tr is not None and tr.bcast != bcast:
        raise CommandError("You can't switch BCAST mode on/off before disabling tracking for "
                           "this client, and then re-enabling it with a different mode.")
    if bcast and (optin or optout):
        raise CommandError("OPTIN and OPTOUT are not compatible with BCAST")
    if optin and optout:
        raise CommandError("You can't specify both OPTIN mode and OPTOUT mode")
    if tr is not None and ((optin and tr.optout) or (optout and tr.optin)):
        raise CommandError("You can't switch OPTIN/OPTOUT mode before disabling tracking for "
                           "this client, and then re-enabling it with a different mode.")
    existing = _trie(tr.prefixes if tr is not None else ())
    later = _later_clashes(prefixes)
    for i, p in enumerate(prefixes):     # Redis's order: prefix i against the existing
        old = _first_overlap(existing, p)   # ones, then against the later given ones
        if old is not None:
            raise CommandError(
                "Prefix '%s' overlaps with an existing prefix '%s'. Prefixes for a "
                "single client must not overlap." % (_s(p), _s(old)))
        if later[i] is not None:
            raise CommandError(
                "Prefix '%s' overlaps with another provided prefix '%s'. Prefixes for "
                "a single client must not overlap." % (_s(p), _s(prefixes[later[i]])))


def _trie(words) -> dict:
    """A byte trie of ``words``: nested dicts keyed by byte value, ``_END`` marks a word.
    Complexity: O(total length)."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[_END] = w
    return root


def _first_overlap(trie: dict, p: bytes):
    """The lexicographically first word of ``trie`` that overlaps ``p`` (one starts with
    the other), or None: the shortest word on p's path, else the smallest word below p.
    Complexity: O(len(p) + the depth below p)."""
    node = trie
    for ch in p:
        if _END in node:
            return node[_END]
        node = node.get(ch)
        if node is None:
            return None
    if not node:                         # an empty trie
        return None
    while _END not in node:              # every leaf ends a word, so this stops
        node = node[min(k for k in node if k >= 0)]
    return node[_END]


def _later_clashes(prefixes: list) -> list:
    """For each prefix i, the first j > i whose prefix overlaps it (or None).

    Walks the prefixes from the last one back, inserting each into a trie whose nodes keep
    the smallest index below them and whose ends keep their index; for prefix i the trie
    then answers both "a later prefix starts with p_i" (the node at p_i) and "a later
    prefix is a prefix of p_i" (the ends on p_i's path).  Complexity: O(total length)
    (Redis's pairwise check is quadratic in C; a quadratic loop in Python would stall the
    server on a few thousand prefixes).
    """
    root: dict = {}
    best_j = [None] * len(prefixes)
    for i in range(len(prefixes) - 1, -1, -1):
        p = prefixes[i]
        node, j = root, None
        for ch in p:                       # later prefixes that p_i extends
            end = node.get(_END)
            if end is not None and (j is None or end < j):
                j = end
            node = node.get(ch)
            if node is None:
                break
        else:
            end, low = node.get(_END), node.get(_MIN)   # p_i itself / prefixes under it
            for cand in (end, low):
                if cand is not None and (j is None or cand < j):
                    j = cand
        best_j[i] = j
        node = root
        for ch in p:                       # insert p_i; i is the smallest index so far
            node[_MIN] = i
            node = node.setdefault(ch, {})
        node[_MIN] = i
        node[_END] = i
    return best_j


_END = -1      # trie keys: bytes iterate as ints >= 0, so negative ints are free markers
_MIN = -2


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")
