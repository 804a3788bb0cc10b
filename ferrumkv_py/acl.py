"""ACL users, selectors and permission checks, as Redis 7.0's acl.c.

The model
---------
A :class:`User` has flags (``on``/``off``, ``nopass``, ``sanitize-payload``...), a list of
SHA-256 password hashes (64 lower-case hex digits, as Redis stores them) and a list of
:class:`Selector` objects: the first is the *root* selector (the rules written outside
parentheses); the others come from ``(...)`` rules.  A command is allowed when any selector
allows the command *and* every key *and* every channel it names.

A selector's commands are a bitmap over Redis 7.0's whole command table
(``acl_table.TABLE``: every command and subcommand, with ids in name order), kept as one
Python int.  ``+@cat`` ORs the category's mask in, ``-@cat`` clears it; a container command
(CONFIG) in a category takes its subcommands with it, as Redis's ACLChangeSelectorPerm.  The
table is Redis's, not ours, so ``+@read`` means what it means in Redis and ACL GETUSER
describes a user with the same category fit.  The bit Redis reserves for "future commands"
is :attr:`Selector.future` (set only by ``+@all`` / ``allcommands``).

Describing a bitmap back as rules (ACL GETUSER / LIST) is Redis's greedy fit, see
:func:`describe_commands`.  Example: ``-@all +@read -get`` is described as ``-@all +@read
-get``; ``+@all -@dangerous`` as ``+@all -@dangerous``.

Keys: each key position of a call gets the permission its key spec asks (read for ACCESS,
write for INSERT / DELETE / UPDATE: acl_calls.py finds them); a pattern matches only if it
has all of them (``~p`` has both, ``%R~p`` read only).  Channels: PUBLISH / SPUBLISH / SUBSCRIBE / SSUBSCRIBE test each
channel against the ``&`` patterns as globs; PSUBSCRIBE compares its patterns literally.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import deque
from itertools import islice

from . import acl_table
from .conf_syntax import UnbalancedQuotes, split_args
from .globmatch import glob_match, glob_matcher

READ, WRITE = 1, 2
ALL_PERM = READ | WRITE
HASH_HEX_LEN = 64                # SHA-256 as hex, Redis's HASH_PASSWORD_LEN
LOG_GROUPING_MS = 60000          # ACL LOG merges like entries this close (Redis)
LOG_MATCH_SCAN = 10              # ... among this many newest entries
OK, DENIED_CMD, DENIED_KEY, DENIED_AUTH, DENIED_CHANNEL = 0, 1, 2, 3, 4   # Redis's order
REASONS = {DENIED_CMD: b"command", DENIED_KEY: b"key", DENIED_CHANNEL: b"channel",
           DENIED_AUTH: b"auth"}

# Redis's ACLCommandCategories, in its order (ACL CAT and the describe fit use it).
CATEGORIES = ("keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
              "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow",
              "blocking", "dangerous", "connection", "transaction", "scripting")
USER_FLAGS = ("on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload")

# ---- error texts of ACLSetUserStringError ----
E_UNKNOWN = "Unknown command or category name in ACL"
E_SYNTAX = "Syntax error"
E_ALLKEYS = ("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and "
             "does not have any effect. Try 'resetkeys' to start with an empty list of "
             "patterns")
E_ALLCHANNELS = ("Adding a pattern after the * pattern (or the 'allchannels' flag) is not "
                 "valid and does not have any effect. Try 'resetchannels' to start with an "
                 "empty list of channels")
E_NOPASS = "The password you are trying to remove from the user does not exist"
E_BADHASH = ("The password hash must be exactly 64 characters and contain only lowercase "
             "hexadecimal characters")
E_FIRSTARG_SUB = "Allowing first-arg of a subcommand is not supported"


class RuleError(Exception):
    """A rule ACLSetUser refuses; the message is Redis's ACLSetUserStringError text."""


# ---- the command table (Redis 7.0's, from acl_table.py) ----

class _Table:
    """Ids, parents, category masks and key specs of Redis 7.0's commands."""

    def __init__(self, rows):
        self.names = [r[0] for r in rows]
        self.id = {n: i for i, n in enumerate(self.names)}
        self.cats = [frozenset(r[1]) for r in rows]
        self.noauth = [r[2] for r in rows]
        self.keyspecs = [r[3] for r in rows]
        self.parent = [self.id[r[4]] if r[4] else -1 for r in rows]
        self.subs = [[] for _ in rows]
        for i, p in enumerate(self.parent):
            if p >= 0:
                self.subs[p].append(i)
        self.all_mask = (1 << len(rows)) - 1
        self.top = [i for i in range(len(rows)) if self.parent[i] < 0]
        self.set_mask = {}      # +@cat / -@cat: containers bring their subcommands
        self.count_mask = {}    # the describe fit counts each command once
        for cat in CATEGORIES:
            sm = cm = 0
            for i, cs in enumerate(self.cats):
                if cat in cs:
                    cm |= 1 << i
                    sm |= self.cmd_mask(i)
            self.set_mask[cat], self.count_mask[cat] = sm, cm

    def cmd_mask(self, i: int) -> int:
        m = 1 << i
        for s in self.subs[i]:
            m |= 1 << s
        return m

    def lookup(self, name: str) -> int:
        """Redis lookupCommandBySdsLogic: ``cmd`` or ``container|sub``; -1 if unknown."""
        parts = name.lower().split("|")
        if len(parts) > 2:
            return -1
        i = self.id.get(parts[0], -1)
        if i < 0 or self.parent[i] >= 0 or len(parts) == 1:
            return i
        if not self.subs[i]:
            return -1
        return self.id.get(name.lower(), -1)


TABLE = _Table(acl_table.TABLE)


def hash_password(pw: bytes) -> bytes:
    return hashlib.sha256(pw).hexdigest().encode()


def _valid_hash(h: bytes) -> bool:
    return len(h) == HASH_HEX_LEN and all(48 <= c <= 57 or 97 <= c <= 102 for c in h)


def _has_spaces(b: bytes) -> bool:
    """Redis ACLStringHasSpaces: isspace() or NUL anywhere."""
    return any(c in b" \t\n\v\f\r\0" for c in b)


def _s(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


class Selector:
    """One set of command / key / channel permissions (Redis aclSelector)."""

    __slots__ = ("root", "allcommands", "allkeys", "allchannels", "future", "bits",
                 "firstargs", "patterns", "channels")

    def __init__(self, root: bool, pubsub_all: bool):
        self.root = root
        self.allcommands = self.allkeys = False
        self.allchannels = pubsub_all
        self.future = False
        self.bits = 0
        self.firstargs: dict = {}        # command id -> [first arg, ...] (+select|0)
        # insertion-ordered dicts, so a repeated rule is found in O(1) (Redis: a list walk)
        self.patterns: dict = {}         # key pattern -> READ|WRITE
        self.channels: dict = {}         # channel pattern -> None

    def copy(self) -> "Selector":
        s = Selector(self.root, self.allchannels)
        s.allcommands, s.allkeys, s.future, s.bits = (self.allcommands, self.allkeys,
                                                      self.future, self.bits)
        s.firstargs = {k: list(v) for k, v in self.firstargs.items()}
        s.patterns = dict(self.patterns)
        s.channels = dict(self.channels)
        return s

    # ---- rules (Redis ACLSetSelector) ----

    def _change(self, i: int, allow: bool) -> None:
        """ACLChangeSelectorPerm: the command, and a container's subcommands."""
        m = TABLE.cmd_mask(i)
        if allow:
            self.bits |= m
        else:
            self.bits &= ~m
            self.allcommands = False
        self.firstargs.pop(i, None)

    def apply(self, op: bytes) -> None:
        """Apply one rule; RuleError (Redis's text) when it is refused."""
        low = op.lower()
        if low in (b"allkeys", b"~*"):
            self.allkeys = True
            self.patterns = {}
        elif low == b"resetkeys":
            self.allkeys = False
            self.patterns = {}
        elif low in (b"allchannels", b"&*"):
            self.allchannels = True
            self.channels = {}
        elif low == b"resetchannels":
            self.allchannels = False
            self.channels = {}
        elif low in (b"allcommands", b"+@all"):
            self.bits = TABLE.all_mask
            self.allcommands = self.future = True
            self.firstargs = {}
        elif low in (b"nocommands", b"-@all"):
            self.bits = 0
            self.allcommands = self.future = False
            self.firstargs = {}
        elif op[:1] in (b"~", b"%"):
            self._add_key_pattern(op)
        elif op[:1] == b"&":
            if self.allchannels:
                raise RuleError(E_ALLCHANNELS)
            if _has_spaces(op[1:]):
                raise RuleError(E_SYNTAX)
            self.channels.setdefault(op[1:], None)
            self.allchannels = False
        elif op[:1] == b"+" and op[1:2] != b"@":
            self._allow(_s(op[1:]))
        elif op[:1] == b"-" and op[1:2] != b"@":
            i = TABLE.lookup(_s(op[1:]))
            if i < 0:
                raise RuleError(E_UNKNOWN)
            self._change(i, False)
        elif op[:1] in (b"+", b"-") and op[1:2] == b"@":
            cat = _s(op[2:]).lower()
            if cat not in TABLE.set_mask:
                raise RuleError(E_UNKNOWN)
            if op[:1] == b"+":
                self.bits |= TABLE.set_mask[cat]
                for i in _ids(TABLE.count_mask[cat]):
                    self.firstargs.pop(i, None)
            else:
                self._clear_category(cat)
        else:
            raise RuleError(E_SYNTAX)

    def _clear_category(self, cat: str) -> None:
        mask = TABLE.set_mask[cat]
        if mask:
            self.bits &= ~mask
            self.allcommands = False
        for i in _ids(TABLE.count_mask[cat]):
            self.firstargs.pop(i, None)

    def _add_key_pattern(self, op: bytes) -> None:
        if self.allkeys:
            raise RuleError(E_ALLKEYS)
        flags, offset = 0, 1
        if op[:1] == b"%":
            while offset < len(op):
                ch = op[offset:offset + 1].upper()
                if ch == b"R" and not flags & READ:
                    flags |= READ
                elif ch == b"W" and not flags & WRITE:
                    flags |= WRITE
                elif ch == b"~":
                    offset += 1
                    break
                else:
                    raise RuleError(E_SYNTAX)
                offset += 1
            if not flags:           # "%R" alone is the empty pattern, as in Redis 7.0
                raise RuleError(E_SYNTAX)
        else:
            flags = ALL_PERM
        pat = op[offset:]
        if _has_spaces(pat):
            raise RuleError(E_SYNTAX)
        self.patterns[pat] = self.patterns.get(pat, 0) | flags
        self.allkeys = False

    def _allow(self, name: str) -> None:
        if "|" not in name:
            i = TABLE.lookup(name)
            if i < 0:
                raise RuleError(E_UNKNOWN)
            self._change(i, True)
            return
        head, sub = name.rsplit("|", 1)
        i = TABLE.lookup(head)
        if i < 0:
            raise RuleError(E_UNKNOWN)
        if TABLE.parent[i] >= 0:
            raise RuleError(E_FIRSTARG_SUB)
        if not sub:
            raise RuleError(E_SYNTAX)
        if TABLE.subs[i]:
            j = TABLE.lookup(name)
            if j < 0:
                raise RuleError(E_UNKNOWN)
            self._change(j, True)
        else:   # +select|0: a first argument of an otherwise blocked command
            args = self.firstargs.setdefault(i, [])
            if sub.lower() not in (a.lower() for a in args):
                args.append(sub)

    # ---- checks (Redis ACLSelectorCheckCmd) ----

    def check(self, cid: int, argv: list, keys) -> tuple[int, int]:
        """(OK or DENIED_*, argument index of the refused key / channel).

        ``keys`` is a list of (argument index, permission) pairs.  Complexity: O(keys x
        patterns x pattern matching) plus O(channels x patterns) for pub/sub commands.
        """
        if not self.allcommands and not TABLE.noauth[cid] and not (self.bits >> cid) & 1:
            args = self.firstargs.get(cid)
            idx = 2 if TABLE.parent[cid] >= 0 else 1
            if not args or len(argv) <= idx:
                return DENIED_CMD, 0
            a = _s(argv[idx]).lower()
            if all(x.lower() != a for x in args):
                return DENIED_CMD, 0
        if not self.allkeys:
            for pos, need in keys:
                key = argv[pos]
                for pat, flags in self.patterns.items():
                    if flags & need == need:
                        m = glob_matcher(pat)   # compiled once (globmatch's cache)
                        if (m(key) if m is not None else len(key) > 0):
                            break
                else:
                    return DENIED_KEY, pos
        if not self.allchannels:
            name = TABLE.names[cid]
            if name in CHANNEL_COMMANDS:
                literal = name == "psubscribe"
                last = 2 if name in ("publish", "spublish") else len(argv)
                for pos in range(1, last):
                    if not channel_allowed(self.channels, argv[pos], literal):
                        return DENIED_CHANNEL, pos
        return OK, 0

    # ---- description (ACL GETUSER / LIST) ----

    def describe(self) -> bytes:
        """Redis ACLDescribeSelector: keys, channels, then the command rules."""
        out = []
        if self.allkeys:
            out.append(b"~*")
        else:
            out.extend(pattern_text(p, f) for p, f in self.patterns.items())
        if self.allchannels:
            out.append(b"&*")
        else:
            out.append(b"resetchannels")
            out.extend(b"&" + c for c in self.channels)
        out.append(describe_commands(self))
        return b" ".join(out)

    def keys_text(self) -> bytes:
        if self.allkeys:
            return b"~*"
        return b" ".join(pattern_text(p, f) for p, f in self.patterns.items())

    def channels_text(self) -> bytes:
        if self.allchannels:
            return b"&*"
        return b" ".join(b"&" + c for c in self.channels)


# the commands whose channels a user's channel rules check (the dispatcher's inline table
# leaves them out for a user with limited channels: acl_calls.dispatch_table)
CHANNEL_COMMANDS = frozenset({"publish", "spublish", "subscribe", "ssubscribe", "psubscribe"})


def channel_allowed(patterns: list, channel: bytes, literal: bool) -> bool:
    for p in patterns:
        if (p == channel) if literal else glob_match(p, channel):
            return True
    return False


def pattern_text(pat: bytes, flags: int) -> bytes:
    return (b"~", b"%R~", b"%W~", b"~")[flags] + pat


def _ids(mask: int):
    i = 0
    while mask:
        if mask & 1:
            yield i
        mask >>= 1
        i += 1


def describe_commands(sel: Selector) -> bytes:
    """Redis ACLDescribeSelectorCommandRules: rules that rebuild the selector's bitmap.

    Start from ``+@all`` (the selector may run future commands) or ``-@all``; then, greedily,
    apply the not yet used category with the fewest differences among those sharing more
    commands with the bitmap than they differ from it (ties: more in common wins), until
    none qualifies; then add / remove single commands (a container's subcommands after it)
    and list the allowed first arguments of blocked commands.  Single commands come in
    name order (Redis walks a hash table, so its order varies between runs).

    Complexity: O(categories^2 x commands / 64) for the fit, O(commands) for the rest.
    """
    additive = not sel.future
    rules = [b"-@all" if additive else b"+@all"]
    fake = 0 if additive else TABLE.all_mask
    temp = sel.bits
    applied = set()
    while True:
        best, mindiff, maxsame = None, None, 0
        for cat in CATEGORIES:
            if cat in applied:
                continue
            cm = TABLE.count_mask[cat]
            on = bin(temp & cm).count("1")
            off = bin(cm).count("1") - on
            diff, same = (off, on) if additive else (on, off)
            if same > diff and (mindiff is None or diff < mindiff
                                or (diff == mindiff and same > maxsame)):
                best, mindiff, maxsame = cat, diff, same
        if best is None:
            break
        m = TABLE.set_mask[best]
        if additive:
            fake |= m
            temp &= ~m
        else:
            fake &= ~m
            temp |= m
        rules.append(("+@" if additive else "-@").encode() + best.encode())
        applied.add(best)
    bits = sel.bits

    def walk(ids) -> None:
        nonlocal fake
        for i in ids:
            user = (bits >> i) & 1
            if user != (fake >> i) & 1:
                rules.append((b"+" if user else b"-") + TABLE.names[i].encode())
                m = TABLE.cmd_mask(i)
                fake = fake | m if user else fake & ~m
            if TABLE.subs[i]:
                walk(TABLE.subs[i])
            if not user:
                for a in sel.firstargs.get(i, ()):
                    rules.append(("+%s|%s" % (TABLE.names[i], a)).encode("utf-8",
                                                                         "surrogateescape"))
    walk(TABLE.top)
    return b" ".join(rules)


def merge_selector_args(args: list) -> list:
    """Redis ACLMergeSelectorArguments: ``(`` ... ``)`` spread over several words become one
    word; raises IndexError(index of the opening word) when a parenthesis is unmatched."""
    out, cur, start = [], [], -1
    for j, op in enumerate(args):
        if op[:1] == b"(" and op[-1:] != b")":
            cur, start = [op], j
            continue
        if start != -1:
            cur.append(op)
            if op[-1:] == b")":
                out.append(b" ".join(cur))     # one join: linear in the words' size
                start = -1
            continue
        out.append(op)
    if start != -1:
        raise IndexError(start)
    return out


class User:
    """An ACL user (Redis ``user``)."""

    __slots__ = ("name", "enabled", "nopass", "sanitize", "passwords", "selectors", "open",
                 "fast")

    def __init__(self, name: bytes, pubsub_all: bool):
        self.name = name
        self.enabled = False
        self.nopass = False
        self.sanitize = None            # None, "sanitize-payload" or "skip-sanitize-payload"
        self.passwords: dict = {}       # SHA-256 hex hash (bytes) -> None, in order
        self.selectors = [Selector(True, pubsub_all)]
        self.open = False               # may run anything: the dispatcher skips the checks
        self.fast = False               # anything but maybe some channels (+@all ~*)

    def copy_from(self, other: "User") -> None:
        self.enabled, self.nopass, self.sanitize = other.enabled, other.nopass, other.sanitize
        self.passwords = dict(other.passwords)
        self.selectors = [s.copy() for s in other.selectors]
        self.refresh()

    def clone(self, pubsub_all: bool) -> "User":
        u = User(self.name, pubsub_all)
        u.copy_from(self)
        return u

    def refresh(self) -> None:
        r = self.selectors[0]
        self.fast = r.allcommands and r.allkeys
        self.open = self.fast and r.allchannels

    def apply(self, op: bytes, pubsub_all: bool) -> None:
        """Redis ACLSetUser for one (merged) rule; RuleError when refused."""
        low = op.lower()
        if not op:
            return
        if low == b"on":
            self.enabled = True
        elif low == b"off":
            self.enabled = False
        elif low in (b"skip-sanitize-payload", b"sanitize-payload"):
            self.sanitize = _s(low)
        elif low == b"nopass":
            self.nopass = True
            self.passwords = {}
        elif low == b"resetpass":
            self.nopass = False
            self.passwords = {}
        elif op[:1] in (b">", b"#"):
            h = hash_password(op[1:]) if op[:1] == b">" else op[1:]
            if op[:1] == b"#" and not _valid_hash(h):
                raise RuleError(E_BADHASH)
            self.passwords.setdefault(h, None)
            self.nopass = False
        elif op[:1] in (b"<", b"!"):
            h = hash_password(op[1:]) if op[:1] == b"<" else op[1:]
            if op[:1] == b"!" and not _valid_hash(h):
                raise RuleError(E_BADHASH)
            if h not in self.passwords:
                raise RuleError(E_NOPASS)
            del self.passwords[h]
        elif op[:1] == b"(" and op[-1:] == b")":
            sel = Selector(False, pubsub_all)
            try:
                words = split_args(op[1:-1])
            except UnbalancedQuotes:
                words = []
            for w in words:
                sel.apply(w)
            self.selectors.append(sel)
        elif low == b"clearselectors":
            del self.selectors[1:]
        elif low == b"reset":
            for rule in (b"resetpass", b"resetkeys", b"resetchannels") + (
                    (b"allchannels",) if pubsub_all else ()) + (
                    b"off", b"sanitize-payload", b"clearselectors", b"-@all"):
                self.apply(rule, pubsub_all)
        else:
            self.selectors[0].apply(op)
        self.refresh()

    def flags(self) -> list:
        out = [b"on" if self.enabled else b"off"]
        if self.nopass:
            out.append(b"nopass")
        if self.sanitize:
            out.append(self.sanitize.encode())
        return out

    def describe(self) -> bytes:
        """Redis ACLDescribeUser: flags, #hashes, the root selector, then (selectors)."""
        parts = self.flags() + [b"#" + h for h in self.passwords]
        parts.append(self.selectors[0].describe())
        out = b" ".join(parts)
        for s in self.selectors[1:]:
            out += b" (" + s.describe() + b")"
        return out

    def check_password(self, given: bytes) -> bool:
        """Constant-time in the contents: every stored hash is compared, with
        ``hmac.compare_digest``.  Complexity: O(len(given) + passwords)."""
        if self.nopass:
            return True
        h = hash_password(given)
        ok = False
        for p in self.passwords:
            ok |= hmac.compare_digest(h, p)
        return ok

    def check(self, cid: int, argv: list, getkeys) -> tuple[int, int]:
        """Redis ACLCheckAllUserCommandPerm: OK if a selector allows the call, else the
        most relevant refusal (command < key < channel; a later argument wins)."""
        if self.open:
            return OK, 0
        keys = None
        best, best_pos = DENIED_CMD, 0
        for s in self.selectors:
            if keys is None and not s.allkeys:
                keys = getkeys()
            res, pos = s.check(cid, argv, keys or ())
            if res == OK:
                return OK, 0
            if res > best or (res == best and pos > best_pos):
                best, best_pos = res, pos
        return best, best_pos


class LogEntry:
    __slots__ = ("count", "reason", "context", "object", "username", "ctime_ms", "cinfo")


class Acl:
    """The users of one server and its ACL LOG."""

    def __init__(self, config):
        self.config = config
        self.users: dict[bytes, User] = {}
        self.log: deque = deque()   # LogEntry, newest first (O(1) to add and to trim)
        self.default = self.new_default()
        self.users[b"default"] = self.default

    @property
    def pubsub_all(self) -> bool:
        return self.config["acl-pubsub-default"] == "allchannels"

    def new_default(self) -> User:
        u = User(b"default", self.pubsub_all)
        for rule in (b"+@all", b"~*", b"&*", b"on", b"nopass"):
            u.apply(rule, False)
        return u

    def auth_required(self) -> bool:
        """Redis authRequired for a new / reset connection."""
        d = self.default
        return not d.nopass or not d.enabled

    def update_default_password(self, password: str) -> None:
        """requirepass: the default user's only password (empty: nopass)."""
        self.default.apply(b"resetpass", False)
        if password:
            self.default.apply(b">" + password.encode("utf-8", "surrogateescape"), False)
        else:
            self.default.apply(b"nopass", False)

    def authenticate(self, name: bytes, password: bytes) -> User | None:
        u = self.users.get(name)
        if u is None or not u.enabled or not u.check_password(password):
            return None
        return u

    def user_from_rules(self, name: bytes, rules: list, base: User | None = None) -> User:
        """A new User (or a copy of ``base``) with ``rules`` applied; RuleError (with the
        failing rule in ``args``) or IndexError from :func:`merge_selector_args`."""
        u = base.clone(self.pubsub_all) if base is not None else User(name, self.pubsub_all)
        for op in merge_selector_args(rules):
            try:
                u.apply(op, self.pubsub_all)
            except RuleError as e:
                raise RuleError(str(e), op) from None
        return u

    # ---- ACL LOG ----

    def add_log(self, reason: int, context: bytes, obj: bytes, username: bytes,
                cinfo: bytes, now_ms: int | None = None) -> None:
        """Redis addACLLogEntry: bump a like entry among the newest ten, else prepend and
        trim to acllog-max-len.  Complexity: O(LOG_MATCH_SCAN) plus the trim."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        for i, e in enumerate(islice(self.log, LOG_MATCH_SCAN)):
            if (e.reason == reason and e.context == context and e.object == obj
                    and e.username == username and abs(e.ctime_ms - now_ms) <= LOG_GROUPING_MS):
                e.count += 1
                e.cinfo, e.ctime_ms = cinfo, now_ms
                del self.log[i]             # i < LOG_MATCH_SCAN: O(1)
                self.log.appendleft(e)
                return
        e = LogEntry()
        e.count, e.reason, e.context, e.object = 1, reason, context, obj
        e.username, e.ctime_ms, e.cinfo = username, now_ms, cinfo
        self.log.appendleft(e)
        self.trim_log(self.config["acllog-max-len"])

    def trim_log(self, max_len: int) -> None:
        log = self.log
        while len(log) > max_len:
            log.pop()
