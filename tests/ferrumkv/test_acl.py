"""ACL (acl.py, acl_file.py, commands/acl.py): rules, describe, checks, the wire side."""

from __future__ import annotations

import random

import pytest
import redis

from ferrumkv_py import acl, acl_calls, errors
from ferrumkv_py.acl import RuleError, Selector, TABLE, User
from ferrumkv_py.acl_file import check_startup, load_startup
from ferrumkv_py.config import Config, ConfigError
from tests.conftest import RawConn
from tests.ferrumkv.conftest import err


def _user(*rules: bytes) -> User:
    u = User(b"u", False)
    for r in rules:
        u.apply(r, False)
    return u


def _sel(*rules: str) -> Selector:
    s = Selector(True, False)
    for r in rules:
        s.apply(r.encode())
    return s


# ---- rules and describe (unit) ----

def test_describe_rebuilds_the_same_bitmap_seeded():
    """Redis panics when its description does not rebuild the bitmap; we check it on
    random rule sets: describe -> apply to a fresh selector -> same bits, same future bit."""
    rng = random.Random(18)
    names = [n for n in TABLE.names]
    cats = list(acl.CATEGORIES)
    for _ in range(300):
        rules = [rng.choice(["+@all", "-@all", "allcommands", "nocommands"])]
        for _ in range(rng.randrange(1, 8)):
            kind = rng.random()
            sign = rng.choice("+-")
            rules.append(sign + "@" + rng.choice(cats) if kind < 0.5
                         else sign + rng.choice(names))
        s = _sel(*rules)
        text = acl.describe_commands(s)
        t = _sel(*text.decode().split())
        assert (t.bits, t.future) == (s.bits, s.future), (rules, text)


def test_describe_examples():
    assert acl.describe_commands(_sel("-@all", "+@read", "-get")) == b"-@all +@read -get"
    assert acl.describe_commands(_sel("+@all", "-@dangerous")) == b"+@all -@dangerous"
    assert acl.describe_commands(_sel("-@all", "+select|0", "+get")) == b"-@all +get +select|0"
    assert acl.describe_commands(_sel("-@all", "+config|get")) == b"-@all +config|get"


def test_container_rules_take_their_subcommands():
    s = _sel("-@all", "+config")
    assert all((s.bits >> i) & 1 for i in TABLE.subs[TABLE.id["config"]])
    s.apply(b"-config|set")
    assert not (s.bits >> TABLE.id["config|set"]) & 1
    assert (s.bits >> TABLE.id["config|get"]) & 1


@pytest.mark.parametrize("rule, text", [
    (b"+nope", acl.E_UNKNOWN), (b"-@nope", acl.E_UNKNOWN), (b"+get|", acl.E_SYNTAX),
    (b"+config|get|x", acl.E_FIRSTARG_SUB), (b"+config|nope", acl.E_UNKNOWN),
    (b"-get|x", acl.E_UNKNOWN), (b"%~x", acl.E_SYNTAX), (b"%RR~x", acl.E_SYNTAX),
    (b"%X~x", acl.E_SYNTAX), (b"~a b", acl.E_SYNTAX), (b"&a\x00", acl.E_SYNTAX),
    (b"bogus", acl.E_SYNTAX), (b"#abc", acl.E_BADHASH), (b"!" + b"A" * 64, acl.E_BADHASH),
    (b"<nope", acl.E_NOPASS), (b"(+get on)", acl.E_SYNTAX), (b"(>pw)", acl.E_SYNTAX)])
def test_bad_rules_are_refused_with_redis_text(rule, text):
    with pytest.raises(RuleError) as info:
        _user(rule)
    assert str(info.value) == text


def test_pattern_after_star_is_refused():
    with pytest.raises(RuleError, match="allkeys"):
        _user(b"allkeys", b"~x")
    with pytest.raises(RuleError, match="allchannels"):
        _user(b"&*", b"&x")


def test_key_patterns_merge_and_print():
    u = _user(b"%R~a", b"%W~a", b"%R~b", b"%W~c", b"%R~", b"~d")
    assert u.selectors[0].keys_text() == b"~a %R~b %W~c %R~ ~d"


def test_passwords_hashes_and_flags():
    u = _user(b"on", b">pw", b">pw", b"#" + acl.hash_password(b"x"))
    assert list(u.passwords) == [acl.hash_password(b"pw"), acl.hash_password(b"x")]
    assert u.check_password(b"pw") and u.check_password(b"x") and not u.check_password(b"y")
    u.apply(b"<pw", False)
    assert not u.check_password(b"pw")
    u.apply(b"nopass", False)
    assert not u.passwords and u.check_password(b"anything")
    u.apply(b"reset", False)
    assert u.flags() == [b"off", b"sanitize-payload"] and not u.nopass
    assert u.describe() == b"off sanitize-payload resetchannels -@all"


def test_merge_selector_args():
    assert acl.merge_selector_args([b"on", b"(+get", b"~x)", b"(~y)"]) == [
        b"on", b"(+get ~x)", b"(~y)"]
    with pytest.raises(IndexError) as info:
        acl.merge_selector_args([b"on", b"(+get", b"~x"])
    assert info.value.args[0] == 1


def test_key_positions_use_each_key_spec():
    from ferrumkv_py.registry import lookup
    import ferrumkv_py.commands  # noqa: F401
    sp = lookup(b"sdiffstore")
    assert acl_calls.key_positions(sp, [b"sdiffstore", b"d", b"s1", b"s2"]) == [
        (1, acl.WRITE), (2, acl.READ), (3, acl.READ)]
    assert acl_calls.key_positions(lookup(b"lmove"), [b"lmove", b"a", b"b", b"left", b"left"]) == [
        (1, acl.ALL_PERM), (2, acl.WRITE)]
    ev = lookup(b"eval")
    assert acl_calls.key_positions(ev, [b"eval", b"s", b"2", b"k1", b"k2", b"a"]) == [
        (3, acl.ALL_PERM), (4, acl.ALL_PERM)]
    assert acl_calls.key_positions(lookup(b"zunionstore"),
                             [b"zunionstore", b"d", b"2", b"a", b"b"]) == [
        (1, acl.WRITE), (3, acl.READ), (4, acl.READ)]


# ---- startup: config-file users, aclfile ----

def test_config_file_user_lines(tmp_path):
    conf = tmp_path / "f.conf"
    conf.write_bytes(b"user alice on >pw ~* +@all\nuser default on nopass +@all -flushall ~* &*\n")
    config = Config()
    config.load_file(str(conf))
    a = acl.Acl(config)
    load_startup(a, config)
    assert a.users[b"alice"].check_password(b"pw")
    # a repeated default is reset first (Redis): sanitize-payload comes with the reset
    assert a.default.describe() == b"on nopass sanitize-payload ~* &* +@all -flushall"
    assert not a.default.open


def test_config_file_bad_user_line(tmp_path):
    conf = tmp_path / "f.conf"
    conf.write_bytes(b"user alice on +nope\n")
    config = Config()
    config.load_file(str(conf))
    assert check_startup(config) == ("Error loading ACL rule '+nope' for the user named "
                                      "'alice': " + acl.E_UNKNOWN)
    config.set("aclfile", "users.acl")
    assert check_startup(config).startswith("Configuring Redis with users defined")


def test_aclfile_must_stay_in_dir():
    config = Config()
    with pytest.raises(ConfigError):
        config.set("aclfile", "../etc/users.acl")


# ---- the wire: AUTH, NOPERM, LOG ----

def _client(server, user=None, password=None, protocol=2):
    return redis.Redis(port=server.port, protocol=protocol, username=user, password=password,
                       socket_timeout=10)


def test_auth_whoami_and_wrongpass_logged(server, r2):
    r2.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~*", "+@all")
    c = _client(server, "alice", "pw")
    assert c.execute_command("ACL", "WHOAMI") == b"alice"
    assert b"user=alice" in c.execute_command("CLIENT", "INFO")
    raw = RawConn(server.port)
    raw.send(b"AUTH alice nope\r\n")
    assert raw.read_reply() == b"-" + errors.WRONGPASS.encode() + b"\r\n"
    raw.send(b"HELLO 3 AUTH alice pw\r\n")
    assert raw.read_reply().startswith(b"%7\r\n")
    raw.send(b"ACL WHOAMI\r\n")
    assert raw.read_reply() == b"$5\r\nalice\r\n"
    raw.send(b"RESET\r\n")
    assert raw.read_reply() == b"+RESET\r\n"
    raw.send(b"ACL WHOAMI\r\n")
    assert raw.read_reply() == b"$7\r\ndefault\r\n"
    raw.close()
    entry = r2.execute_command("ACL", "LOG", "1")[0]
    e = dict(zip(entry[::2], entry[1::2]))
    assert (e[b"reason"], e[b"context"], e[b"object"], e[b"username"], e[b"count"]) == (
        b"auth", b"toplevel", b"AUTH", b"alice", 1)
    r2.execute_command("ACL", "SETUSER", "alice", "off")
    with pytest.raises(redis.AuthenticationError):
        _client(server, "alice", "pw").ping()


def test_noperm_command_key_channel(server, r2):
    r2.execute_command("ACL", "SETUSER", "bob", "on", "nopass", "-@all", "+get", "+set",
                       "+publish", "+subscribe", "+psubscribe", "%R~r*", "%W~w*", "~k*",
                       "&news.*")
    raw = RawConn(server.port)
    raw.send(b"AUTH bob x\r\n")
    assert raw.read_reply() == b"+OK\r\n"
    for cmd, reply in (
            (b"DEL k1", errors.NOPERM_CMD % "del"),
            (b"GET x", errors.NOPERM_KEY), (b"GET w1", errors.NOPERM_KEY),
            (b"SET r1 v", errors.NOPERM_KEY),
            (b"SET w1 v GET", errors.NOPERM_KEY), (b"PUBLISH other m", errors.NOPERM_CHANNEL),
            (b"SUBSCRIBE news.a other", errors.NOPERM_CHANNEL),
            (b"PSUBSCRIBE news.*x", errors.NOPERM_CHANNEL),
            (b"CONFIG GET maxmemory", errors.NOPERM_CMD % "config|get")):
        raw.send(cmd + b"\r\n")
        assert raw.read_reply() == b"-" + reply.encode() + b"\r\n", cmd
    for cmd, reply in ((b"GET r1", b"$-1\r\n"), (b"SET w1 v", b"+OK\r\n"),
                       (b"SET k1 v", b"+OK\r\n"), (b"GET k1", b"$1\r\nv\r\n"),
                       (b"PUBLISH news.x m", b":0\r\n")):
        raw.send(cmd + b"\r\n")
        assert raw.read_reply() == reply, cmd
    raw.send(b"PSUBSCRIBE news.*\r\n")       # the pattern itself, compared literally
    assert raw.read_reply().startswith(b"*3\r\n$10\r\npsubscribe")
    raw.close()
    log = [dict(zip(e[::2], e[1::2])) for e in r2.execute_command("ACL", "LOG")]
    assert [(e[b"reason"], e[b"object"]) for e in log[:4]] == [
        (b"command", b"config|get"), (b"channel", b"news.*x"), (b"channel", b"other"),
        (b"key", b"w1")]
    assert log[2][b"count"] == 2        # PUBLISH and SUBSCRIBE "other": one entry
    assert log[0][b"username"] == b"bob" and b"user=bob" in log[0][b"client-info"]
    assert r2.execute_command("ACL", "LOG", "RESET") == b"OK"
    assert r2.execute_command("ACL", "LOG") == []


def test_log_groups_like_entries_and_trims(server, r2):
    r2.execute_command("ACL", "SETUSER", "c", "on", "nopass", "-@all")
    c = _client(server, "c", "x")
    for _ in range(3):
        with pytest.raises(redis.ResponseError):
            c.execute_command("GET", "k")
    log = [dict(zip(e[::2], e[1::2])) for e in r2.execute_command("ACL", "LOG")]
    assert [e[b"count"] for e in log if e[b"object"] == b"get"] == [3]
    r2.config_set("acllog-max-len", "0")
    assert r2.execute_command("ACL", "LOG") == []


def test_selectors_any_may_allow(server, r2):
    r2.execute_command("ACL", "SETUSER", "d", "on", "nopass", "+get", "~a", "(+set ~b)")
    c = _client(server, "d", "x")
    assert c.set("b", "1") and c.get("a") is None
    # the root refuses the command, the selector the key: the key is the error (Redis)
    assert err(c, "SET", "a", "1") == errors.NOPERM_KEY[7:]
    assert err(c, "GET", "b") == errors.NOPERM_KEY[7:]
    assert r2.execute_command("ACL", "DRYRUN", "d", "get", "b") == (
        b"This user has no permissions to access the 'b' key")


def test_multi_queue_check_and_exec_recheck(server, r2):
    r2.execute_command("ACL", "SETUSER", "m", "on", "nopass", "~*", "+@all", "-flushall")
    c = RawConn(server.port)
    c.send(b"AUTH m x\r\nMULTI\r\nFLUSHALL\r\nEXEC\r\n")
    assert c.read_reply() == b"+OK\r\n" and c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"-" + (errors.NOPERM_CMD % "flushall").encode() + b"\r\n"
    assert c.read_reply() == b"-" + errors.EXECABORT.encode() + b"\r\n"
    c.send(b"MULTI\r\nSET k v\r\n")
    assert c.read_reply() == b"+OK\r\n" and c.read_reply() == b"+QUEUED\r\n"
    r2.execute_command("ACL", "SETUSER", "m", "-set")
    c.send(b"EXEC\r\n")
    assert c.read_reply() == (b"*1\r\n-" + (errors.NOPERM_EXEC % errors.EXEC_REASON_CMD)
                              .encode() + b"\r\n")
    c.close()
    e = r2.execute_command("ACL", "LOG", "1")[0]
    assert dict(zip(e[::2], e[1::2]))[b"context"] == b"multi"


def test_scripts_check_the_callers_permissions(server, r2):
    r2.execute_command("ACL", "SETUSER", "s", "on", "nopass", "-@all", "+eval", "+get",
                       "+publish", "~k*", "resetchannels")
    c = _client(server, "s", "x")
    assert c.eval("return redis.call('get', 'k1')", 0) is None
    msg = err(c, "EVAL", "return redis.call('set', 'k1', 'v')", "0")
    assert msg.startswith(errors.SCRIPT_NOPERM_CMD[4:] + " script:")
    msg = err(c, "EVAL", "return redis.call('get', 'x')", "0")
    assert msg.startswith(errors.SCRIPT_NOPERM_KEY[4:] + " script:")
    msg = err(c, "EVAL", "return redis.call('publish', 'ch', 'm')", "0")
    assert msg.startswith(errors.SCRIPT_NOPERM_CHANNEL[4:] + " script:")
    assert c.eval("return redis.acl_check_cmd('get', 'k1')", 0) == 1
    assert c.eval("return redis.acl_check_cmd('get', 'x')", 0) is None
    assert c.eval("return redis.acl_check_cmd('set', 'k1', 'v')", 0) is None
    e = r2.execute_command("ACL", "LOG", "1")[0]
    e = dict(zip(e[::2], e[1::2]))
    assert (e[b"context"], e[b"reason"], e[b"object"]) == (b"lua", b"channel", b"ch")
    assert b"cmd=eval" in e[b"client-info"]


def test_deluser_and_narrowed_channels_disconnect(server, r2):
    r2.execute_command("ACL", "SETUSER", "e", "on", "nopass", "+@all", "~*", "&a", "&b")
    c = RawConn(server.port)
    c.send(b"AUTH e x\r\n")
    assert c.read_reply() == b"+OK\r\n"
    sub = RawConn(server.port)
    sub.send(b"AUTH e x\r\nSUBSCRIBE b\r\n")
    assert sub.read_reply() == b"+OK\r\n" and sub.read_reply().startswith(b"*3")
    r2.execute_command("ACL", "SETUSER", "e", "&c")       # a superset: nobody dropped
    assert not sub.closed(0.2)
    r2.execute_command("ACL", "SETUSER", "e", "resetchannels", "&a")
    assert sub.closed()
    c.send(b"PING\r\n")
    assert c.read_reply() == b"+PONG\r\n"                # not subscribed: kept
    assert err(r2, "CLIENT", "KILL", "USER", "nobody") == "No such user 'nobody'"
    assert r2.execute_command("ACL", "DELUSER", "e", "nobody") == 1
    assert c.closed()
    assert "cannot be removed" in err(r2, "ACL", "DELUSER", "default")


def test_default_user_rules_apply_to_open_clients(server, r2):
    c = _client(server)
    assert c.ping()
    assert not server.call(lambda: any(x.slow_path for x in server.server.clients.values()))
    r2.execute_command("ACL", "SETUSER", "default", "-flushall")
    assert err(c, "FLUSHALL") == errors.NOPERM_CMD[7:] % "flushall"
    r2.execute_command("ACL", "SETUSER", "default", "+@all")
    assert c.flushall()
    assert not server.call(lambda: any(x.slow_path for x in server.server.clients.values()))


def test_requirepass_is_the_default_password(server, r2):
    r2.config_set("requirepass", "pw")
    u = r2.execute_command("ACL", "GETUSER", "default")
    d = dict(zip(u[::2], u[1::2]))
    assert d[b"passwords"] == [acl.hash_password(b"pw")] and d[b"flags"] == [b"on"]
    raw = RawConn(server.port)
    raw.send(b"GET k\r\n")
    assert raw.read_reply() == b"-" + errors.NOAUTH.encode() + b"\r\n"
    raw.send(b"AUTH default pw\r\nGET k\r\n")
    assert raw.read_reply() == b"+OK\r\n" and raw.read_reply() == b"$-1\r\n"
    raw.close()
    r2.execute_command("ACL", "SETUSER", "default", "nopass")
    raw = RawConn(server.port)
    raw.send(b"GET k\r\n")
    assert raw.read_reply() == b"$-1\r\n"
    raw.close()


def test_getuser_resp3_shape(server):
    c = RawConn(server.port)
    c.send(b"HELLO 3\r\n")
    c.read_reply()
    c.send(b"ACL SETUSER g on >p ~a &c -@all +get (+set ~b)\r\nACL GETUSER g\r\n")
    assert c.read_reply() == b"+OK\r\n"
    h = acl.hash_password(b"p")
    assert c.read_reply() == (
        b"%6\r\n$5\r\nflags\r\n~1\r\n$2\r\non\r\n$9\r\npasswords\r\n*1\r\n$64\r\n" + h +
        b"\r\n$8\r\ncommands\r\n$10\r\n-@all +get\r\n$4\r\nkeys\r\n$2\r\n~a\r\n"
        b"$8\r\nchannels\r\n$2\r\n&c\r\n$9\r\nselectors\r\n*1\r\n%3\r\n$8\r\ncommands\r\n"
        b"$10\r\n-@all +set\r\n$4\r\nkeys\r\n$2\r\n~b\r\n$8\r\nchannels\r\n$0\r\n\r\n")
    c.send(b"ACL GETUSER nobody\r\n")
    assert c.read_reply() == b"_\r\n"
    c.close()


def test_cat_genpass_users(r2):
    cats = r2.execute_command("ACL", "CAT")
    assert cats[:3] == [b"keyspace", b"read", b"write"] and len(cats) == 21
    hll = r2.execute_command("ACL", "CAT", "hyperloglog")
    assert hll == sorted(hll) and b"pfadd" in hll and b"get" not in hll
    assert err(r2, "ACL", "CAT", "nope") == "Unknown category 'nope'"
    p = r2.execute_command("ACL", "GENPASS")
    assert len(p) == 64 and int(p, 16) >= 0
    assert len(r2.execute_command("ACL", "GENPASS", "5")) == 2
    assert "up to 4096" in err(r2, "ACL", "GENPASS", "4097")
    r2.execute_command("ACL", "SETUSER", "zed")
    assert r2.execute_command("ACL", "USERS") == [b"default", b"zed"]


def test_save_and_load(make_server, tmp_path):
    (tmp_path / "users.acl").write_bytes(b"")     # Redis refuses to start without it
    srv = make_server(dir=str(tmp_path), aclfile="users.acl")
    c = _client(srv)
    c.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~k*", "-@all", "+get")
    assert c.execute_command("ACL", "SAVE") == b"OK"
    text = (tmp_path / "users.acl").read_bytes()
    assert text == (b"user alice on #" + acl.hash_password(b"pw") +
                    b" ~k* resetchannels -@all +get\nuser default on nopass ~* &* +@all\n")
    alice = RawConn(srv.port)
    alice.send(b"AUTH alice pw\r\nGET k1\r\n")
    assert alice.read_reply() == b"+OK\r\n" and alice.read_reply() == b"$-1\r\n"
    c.execute_command("ACL", "SETUSER", "bob", "on")
    (tmp_path / "users.acl").write_bytes(text + b"bogus line\n")
    msg = err(c, "ACL", "LOAD")
    assert msg == ("users.acl:3 should start with user keyword followed by the username. "
                   "WARNING: ACL errors detected, no change to the previously active ACL "
                   "rules was performed")
    assert b"bob" in c.execute_command("ACL", "USERS")
    (tmp_path / "users.acl").write_bytes(text)
    assert c.execute_command("ACL", "LOAD") == b"OK"
    assert c.execute_command("ACL", "USERS") == [b"alice", b"default"]
    assert alice.closed()               # the old users' clients are closed, as in Redis


def test_save_load_need_an_aclfile(r2):
    assert err(r2, "ACL", "SAVE") == errors.ACL_NO_FILE
    assert err(r2, "ACL", "LOAD") == errors.ACL_NO_FILE


def test_acl_pubsub_default_allchannels(r2):
    r2.config_set("acl-pubsub-default", "allchannels")
    r2.execute_command("ACL", "SETUSER", "p1")
    assert "Try 'resetchannels'" in err(r2, "ACL", "SETUSER", "p2", "&x")   # after &*
    r2.execute_command("ACL", "SETUSER", "p2", "resetchannels", "&x", "reset")
    r2.config_set("acl-pubsub-default", "resetchannels")
    r2.execute_command("ACL", "SETUSER", "p3")
    assert r2.execute_command("ACL", "LIST")[1:] == [
        b"user p1 off &* -@all", b"user p2 off sanitize-payload &* -@all",
        b"user p3 off resetchannels -@all"]
    assert err(r2, "CONFIG", "SET", "acl-pubsub-default", "x") == (
        "CONFIG SET failed (possibly related to argument 'acl-pubsub-default') - argument(s) "
        "must be one of the following: allchannels, resetchannels")


def test_config_rewrite_writes_users(server, r2, tmp_path):
    conf = tmp_path / "f.conf"
    conf.write_bytes(b"# top\nuser gone on\n# keep\nuser gone2 on\n")
    server.call(lambda: setattr(server.server.config, "file", str(conf)))
    r2.execute_command("ACL", "SETUSER", "alice", "on", ">pw", "~k*", "+get")
    assert r2.config_rewrite()
    # the users where the first "user" line was, the other user lines dropped
    assert conf.read_bytes().startswith(   # (then the changed configs: port, dir ...)
        b"# top\nuser alice on #" + acl.hash_password(b"pw") + b" ~k* resetchannels -@all +get"
        b"\nuser default on nopass ~* &* +@all\n# keep\n")
    assert b"gone" not in conf.read_bytes()
    config = Config()
    config.load_file(str(conf))             # the file reads back: same users
    a = acl.Acl(config)
    load_startup(a, config)
    assert sorted(a.users) == [b"alice", b"default"]
    assert a.users[b"alice"].check_password(b"pw")


def test_deleting_own_user_closes_after_the_reply(server, r2):
    r2.execute_command("ACL", "SETUSER", "self", "on", "nopass", "+@all", "~*")
    c = RawConn(server.port)
    c.send(b"AUTH self x\r\nACL DELUSER self\r\nPING\r\n")
    assert c.read_reply() == b"+OK\r\n" and c.read_reply() == b":1\r\n"
    assert c.closed()


def test_hello_auth_failure_is_logged(server, r2):
    c = RawConn(server.port)
    c.send(b"HELLO 3 AUTH nobody pw\r\n")
    assert c.read_reply() == b"-" + errors.WRONGPASS.encode() + b"\r\n"
    c.close()
    e = r2.execute_command("ACL", "LOG", "1")[0]
    e = dict(zip(e[::2], e[1::2]))
    assert (e[b"reason"], e[b"object"], e[b"username"]) == (b"auth", b"HELLO", b"nobody")


def test_startup_refuses_bad_users(tmp_path):
    from ferrumkv_py.cli import StartupError, build_config
    conf = tmp_path / "f.conf"
    conf.write_bytes(b"user alice on ~a b\n")
    with pytest.raises(StartupError, match="Error loading ACL rule 'b' for the user named"):
        build_config([str(conf)])
    (tmp_path / "u.acl").write_bytes(b"user bob on +nope\n")
    with pytest.raises(StartupError, match="u.acl:1: Unknown command or category name in ACL"):
        build_config(["--dir", str(tmp_path), "--aclfile", "u.acl"])


def test_plus_all_user_limited_channels_stays_inline(server, r2):
    """``~* +@all`` with resetchannels: only channel commands are checked (the others stay
    on the inline path), and those are refused as for any user."""
    r2.execute_command("ACL", "SETUSER", "f", "on", "nopass", "~*", "+@all", "&news.*")
    c = RawConn(server.port)
    c.send(b"AUTH f x\r\nSET k v\r\nGET k\r\n")
    assert c.read_reply() == b"+OK\r\n" and c.read_reply() == b"+OK\r\n"
    assert c.read_reply() == b"$1\r\nv\r\n"
    flags = server.call(lambda: [(x.slow_path, len(x.commands) < len(acl_calls_commands()))
                                 for x in server.server.clients.values()
                                 if x.user.name == b"f"])
    assert flags == [(False, True)]
    for cmd in (b"PUBLISH other m", b"publish other m", b"SUBSCRIBE news.a other",
                b"SPUBLISH other m", b"PSUBSCRIBE *"):
        c.send(cmd + b"\r\n")
        assert c.read_reply() == b"-" + errors.NOPERM_CHANNEL.encode() + b"\r\n", cmd
    c.send(b"PUBLISH news.x m\r\n")
    assert c.read_reply() == b":0\r\n"
    r2.execute_command("ACL", "SETUSER", "f", "-get")     # no longer fast: all checked
    c.send(b"GET k\r\n")
    assert c.read_reply() == b"-" + (errors.NOPERM_CMD % "get").encode() + b"\r\n"
    c.close()


def acl_calls_commands():
    from ferrumkv_py.registry import COMMANDS
    return COMMANDS
