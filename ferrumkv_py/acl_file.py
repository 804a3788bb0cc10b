"""The ACL file (``aclfile``) and ``user`` lines of the config file, as Redis 7.0 reads them.

:func:`save` writes one ``user <name> <rules>`` line per user (ACL LIST's text) to a
temporary file in the same directory, then renames it over the old one: a crash leaves the
old file or the new one, never half of one.  The file is opened only if it is a regular
file (``safefile.regular_opener``: no FIFO can block the event loop).

:func:`load` parses every line into fresh users and collects Redis's error texts; the
caller swaps the users in only when there is none ("nothing will be loaded and the rules
will remain exactly as they were").  Complexity: O(file size + rules).
"""

from __future__ import annotations

import os

from . import acl
from .acl import RuleError
from .safefile import regular_opener
from .subsystem import Subsystem

ACL_FILE_MAX_BYTES = 64 * 1024 * 1024   # a larger aclfile is refused, not read


def save(a: "acl.Acl", path: str) -> None:
    """Write every user (sorted by name, as Redis's radix tree) to ``path``; OSError on
    failure, with the temporary file removed."""
    text = b"".join(b"user " + n + b" " + a.users[n].describe() + b"\n"
                    for n in sorted(a.users))
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "wb", opener=regular_opener) as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(a: "acl.Acl", path: str, shown: str) -> tuple[dict, str]:
    """(users by name, error text): the error text is empty when the whole file is valid.
    ``shown`` is the file name errors quote (Redis quotes the aclfile setting)."""
    try:
        with open(path, "rb", opener=regular_opener) as f:
            data = f.read(ACL_FILE_MAX_BYTES + 1)
        if len(data) > ACL_FILE_MAX_BYTES:
            raise OSError("File too large")
    except OSError as e:
        return {}, "Error loading ACLs, opening file '%s': %s" % (shown, e.strerror or e)
    users: dict = {}
    errs = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        line = raw.strip(b" \t\r\n")
        if not line:
            continue
        argv = [w for w in line.split(b" ")]
        if argv[0] != b"user" or len(argv) < 2:
            errs.append("%s:%d should start with user keyword followed by the username. "
                        % (shown, lineno))
            continue
        name = argv[1]
        if acl._has_spaces(name):
            errs.append("'%s:%d: username '%s' contains invalid characters. "
                        % (shown, lineno, name.decode("utf-8", "surrogateescape")))
            continue
        if name in users:
            errs.append("WARNING: Duplicate user '%s' found on line %d. "
                        % (name.decode("utf-8", "surrogateescape"), lineno))
            continue
        u = users[name] = acl.User(name, a.pubsub_all)
        try:
            rules = acl.merge_selector_args(argv[2:])
        except IndexError:
            errs.append("%s:%d: Unmatched parenthesis in selector definition." % (shown, lineno))
            continue
        for op in rules:
            try:
                u.apply(op.strip(b"\t\r\n"), a.pubsub_all)
            except RuleError as e:
                errs.append("%s:%d: %s. " % (shown, lineno, e))
    if errs:
        return {}, "".join(errs) + ("WARNING: ACL errors detected, no change to the "
                                    "previously active ACL rules was performed")
    return users, ""


def load_config_users(a: "acl.Acl", lines: list) -> None:
    """``user`` lines of the config file (each a list of words after ``user``), applied at
    startup as Redis's ACLLoadConfiguredUsers: a repeated ``default`` is reset first.
    Raises ValueError with Redis's log text on a bad rule."""
    for words in lines:
        if not words:
            raise ValueError("wrong number of arguments")
        name = words[0]
        if acl._has_spaces(name):
            raise ValueError("Spaces not allowed in ACL usernames")
        u = a.users.get(name)
        if u is None:
            u = a.users[name] = acl.User(name, a.pubsub_all)
        elif u is a.default:
            u.apply(b"reset", a.pubsub_all)
        try:
            rules = acl.merge_selector_args(words[1:])
        except IndexError:
            raise ValueError("Unmatched parenthesis in selector definition") from None
        for op in rules:
            try:
                u.apply(op, a.pubsub_all)
            except RuleError as e:
                raise ValueError("Error loading ACL rule '%s' for the user named '%s': %s"
                                 % (op.decode("utf-8", "surrogateescape"),
                                    name.decode("utf-8", "surrogateescape"), e)) from None


BOTH_SOURCES = ("Configuring Redis with users defined in redis.conf and at the same setting an "
                "ACL file path is invalid. This setup is very likely to lead to configuration "
                "errors and security holes, please define either an ACL file or declare users "
                "directly in your redis.conf, but not both.")


def load_startup(a: "acl.Acl", config) -> None:
    """Redis ACLLoadUsersAtStartup: the config file's ``user`` lines or the aclfile (not
    both); ValueError with Redis's text when they cannot be loaded."""
    if config.acl_users and config["aclfile"]:
        raise ValueError(BOTH_SOURCES)
    load_config_users(a, config.acl_users)
    if config["aclfile"]:
        users, problems = load(a, os.path.join(config["dir"], config["aclfile"]),
                               config["aclfile"])
        if problems:
            raise ValueError("Aborting Redis startup because of ACL errors: " + problems)
        a.default.copy_from(users.pop(b"default", None) or a.new_default())
        users[b"default"] = a.default
        a.users = users


def check_startup(config) -> str:
    """The error text :func:`load_startup` would give, on throwaway users ("" if none)."""
    try:
        load_startup(acl.Acl(config), config)
    except ValueError as e:
        return str(e)
    return ""


class StartupUsers(Subsystem):
    """The users of the config file or ``aclfile``, loaded into ``server.acl`` when the
    server is built (after ``requirepass``, as in Redis); ``acllog-max-len`` followed; and
    CONFIG REWRITE's ``user`` lines (:meth:`rewrite_lines`).  Complexity: O(users) to load."""

    def __init__(self, server):
        super().__init__(server)
        acl_ = server.acl
        load_startup(acl_, server.config)
        server.config.on_change("acllog-max-len", acl_.trim_log, call_now=False)
        server.config.acl_rewrite = self.rewrite_lines

    def rewrite_lines(self) -> list:
        """The ``user`` lines CONFIG REWRITE writes (none when an aclfile holds them)."""
        if self.server.config["aclfile"]:
            return []
        users = self.server.acl.users
        return [b"user " + n + b" " + users[n].describe() for n in sorted(users)]
