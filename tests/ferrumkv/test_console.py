"""The operator's console: its API against INFO, /metrics through Prometheus's parser, who
may connect (loopback, Host header, password, the command box's header), CONFIG SET
console-port at runtime, and the page in a real headless browser."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest
import redis

from ferrumkv_py.acl import Acl
from ferrumkv_py.config import Config
from ferrumkv_py.console import Console, _host_allowed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path, method="GET", body=None, headers=None, password=None):
    """(status, body bytes) of one request to the console."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=body, headers=headers or {})
    if password is not None:
        token = base64.b64encode(b"default:" + password.encode()).decode()
        req.add_header("Authorization", "Basic " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def command(port, argv, db=0, header=True, password=None):
    headers = {"Content-Type": "application/json"}
    if header:
        headers["X-Ferrumkv-Console"] = "1"
    return http(port, "/api/command", "POST", json.dumps({"argv": argv, "db": db}).encode(),
                headers, password)


@pytest.fixture
def console(make_server):
    port = free_port()
    s = make_server(console_port=str(port), maxmemory="1mb", maxmemory_policy="allkeys-ahe",
                    litehit_shadow="yes")
    r = redis.Redis(port=s.port, protocol=2)
    for i in range(300):
        r.set("k%d" % i, "v" * 20)
        r.get("k%d" % (i // 2))
    return SimpleNamespace(server=s, port=port, r=r)


def test_off_by_default(server):
    assert server.server.console is None


def test_snapshot_is_info(console):
    status, body = http(console.port, "/api/snapshot")
    snap = json.loads(body)
    info = console.r.info("everything")
    assert status == 200
    assert snap["keyspace"]["db0"]["keys"] == info["db0"]["keys"] == 300
    assert snap["memory"]["maxmemory_policy"] == info["maxmemory_policy"] == "allkeys-ahe"
    assert snap["memory"]["ahe_alpha"] == info["ahe_alpha"]
    assert snap["litehit"]["litehit_requests"] == info["litehit_requests"] == 300
    assert snap["memory"]["used_memory"] == info["used_memory"]


def test_metrics_parse_with_prometheus(console):
    from prometheus_client.parser import text_string_to_metric_families
    status, body = http(console.port, "/metrics")
    assert status == 200
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    info = console.r.info("everything")
    assert samples[("redis_up", ())] == 1
    assert samples[("redis_keyspace_hits_total", ())] == info["keyspace_hits"]
    assert samples[("redis_memory_max_bytes", ())] == 1024 * 1024
    assert samples[("redis_db_keys", (("db", "db0"),))] == 300
    assert samples[("ferrumkv_ahe_alpha", ())] == info["ahe_alpha"]
    assert samples[("ferrumkv_ahe_probation_evicted_total", ())] == \
        info["ahe_probation_evicted"]
    assert samples[("ferrumkv_litehit_read_blocks_total", ())] == info["litehit_blocks"]
    assert samples[("redis_commands_total", (("cmd", "set"),))] == 300


def test_curve_advise_and_keys(console):
    status, body = http(console.port, "/api/curve?points=8")
    curve = json.loads(body)
    assert status == 200 and curve["capacity_keys"] > 0 and len(curve["points"]) >= 8
    status, body = http(console.port, "/api/advise?target=0.3")
    assert status == 200 and json.loads(body)["target_hit_rate"] == "0.300000"
    assert http(console.port, "/api/curve?points=abc")[0] == 400
    assert http(console.port, "/api/curve?points=100000")[0] == 400
    before = console.r.info("litehit")["litehit_requests"]
    status, body = http(console.port, "/api/keys?match=k1*&count=1000")
    page = json.loads(body)
    assert status == 200 and page["keys"]
    assert all(k["key"].startswith("k1") and k["type"] == "string" for k in page["keys"])
    assert all("freq" in k and "idle_s" in k for k in page["keys"])   # AHE keeps both
    # browsing is no access: the shadow recorded nothing
    assert console.r.info("litehit")["litehit_requests"] == before
    assert http(console.port, "/api/keys?db=99")[0] == 400


def test_command_box(console):
    status, body = command(console.port, ["GET", "k1"])
    assert status == 200 and json.loads(body) == {"reply": "v" * 20}
    status, body = command(console.port, ["HSET", "h", "f", "1"], db=3)
    assert json.loads(body) == {"reply": 1}
    assert redis.Redis(port=console.server.port, db=3).hget("h", "f") == b"1"
    status, body = command(console.port, ["NOSUCH"])
    assert json.loads(body)["reply"]["error"].startswith("ERR unknown command 'NOSUCH'")
    status, body = command(console.port, ["SUBSCRIBE", "x"])
    assert "not available in the console" in json.loads(body)["reply"]["error"]
    assert command(console.port, ["GET", "k1"], header=False)[0] == 403   # CSRF guard
    assert http(console.port, "/api/command", "POST", b"not json",
                {"X-Ferrumkv-Console": "1"})[0] == 400
    assert command(console.port, [])[0] == 400
    assert command(console.port, ["GET", "k1"], db=16)[0] == 400


def test_password_and_host_rules(make_server):
    port = free_port()
    s = make_server(console_port=str(port), requirepass="s3cret")
    assert http(port, "/api/snapshot")[0] == 401
    assert http(port, "/", password="wrong")[0] == 401
    assert http(port, "/metrics", password="s3cret")[0] == 200
    status, body = http(port, "/", password="s3cret")
    assert status == 200 and b"ferrumkv" in body
    # without a password: a rebinding host name is refused, IP literals are fine
    s.call(s.server.config.set, "requirepass", "")
    assert http(port, "/api/snapshot", headers={"Host": "evil.example"})[0] == 403
    assert http(port, "/api/snapshot", headers={"Host": "localhost:%d" % port})[0] == 200


@pytest.mark.parametrize("host,ok", [("127.0.0.1:80", True), ("[::1]:6380", True),
                                     ("localhost", True), ("10.0.0.7", True),
                                     ("evil.example:80", False), ("", False)])
def test_host_header_rule(host, ok):
    assert _host_allowed(host) is ok


def test_non_loopback_peers_need_a_password():
    """The decision itself, on a fake request (no traffic to any non-loopback address)."""
    acl = Acl(Config())
    con = Console(SimpleNamespace(acl=acl))
    far = SimpleNamespace(remote="192.0.2.10", headers={"Host": "192.0.2.1"})
    near = SimpleNamespace(remote="127.0.0.1", headers={"Host": "127.0.0.1"})
    assert con._admit(far)[1].status == 403
    assert con._admit(near) == (acl.default, None)
    acl.update_default_password("pw")
    for token, ok in ((b"x:pw", False), (b"default:pw", True), (b":pw", True),
                      (b"default:pwx", False), (b"pw", False)):
        far.headers["Authorization"] = "Basic " + base64.b64encode(token).decode()
        user, refused = con._admit(far)
        assert (user is acl.default and refused is None) if ok else refused.status == 401


def _as(user, password):
    return "Basic " + base64.b64encode(b"%s:%s" % (user.encode(), password.encode())).decode()


def _box(port, argv, user, password):
    status, body = http(port, "/api/command", "POST", json.dumps({"argv": argv}).encode(),
                        {"Content-Type": "application/json", "X-Ferrumkv-Console": "1",
                         "Authorization": _as(user, password)})
    return status, (json.loads(body)["reply"] if status == 200 else body)


def test_acl_password_on_default_is_asked(make_server):
    """ACL SETUSER default >pw (no requirepass): the console asks for it too (issue 26 row 5:
    it used to serve the command box to anyone local)."""
    port = free_port()
    s = make_server(console_port=str(port))
    r = redis.Redis(port=s.port)
    assert http(port, "/api/snapshot")[0] == 200
    r.execute_command("ACL", "SETUSER", "default", ">pw")
    for path in ("/", "/api/snapshot", "/metrics", "/api/keys", "/api/curve"):
        assert http(port, path)[0] == 401, path
    assert command(port, ["ACL", "LIST"])[0] == 401
    assert _box(port, ["ACL", "WHOAMI"], "default", "wrong")[0] == 401
    assert _box(port, ["ACL", "WHOAMI"], "default", "pw") == (200, "default")
    assert _box(port, ["ACL", "WHOAMI"], "", "pw") == (200, "default")
    r.close()


def test_default_off_and_named_users(make_server):
    """``default off`` plus named users: default's credentials are refused even though it
    is nopass; each named user runs the command box with its own rights."""
    port = free_port()
    s = make_server(console_port=str(port))
    r = redis.Redis(port=s.port)
    r.execute_command("ACL", "SETUSER", "admin", "on", ">adminpw", "+@all", "~*")
    r.execute_command("ACL", "SETUSER", "app", "on", ">apppw", "+get", "+set", "+scan",
                      "+type", "~app:*")
    r.set("app:1", "a")
    r.set("secret", "s")
    r.execute_command("ACL", "SETUSER", "default", "off")
    assert http(port, "/api/snapshot")[0] == 401
    assert _box(port, ["ACL", "WHOAMI"], "default", "")[0] == 401
    assert _box(port, ["ACL", "WHOAMI"], "admin", "adminpw") == (200, "admin")
    assert _box(port, ["GET", "app:1"], "app", "apppw") == (200, "a")
    status, reply = _box(port, ["GET", "secret"], "app", "apppw")
    assert status == 200 and reply["error"].startswith("NOPERM")
    for argv in (["ACL", "SETUSER", "root", "on", "nopass", "+@all"],
                 ["CONFIG", "SET", "maxmemory", "1"], ["ACL", "LIST"]):
        status, reply = _box(port, argv, "app", "apppw")
        assert status == 200 and reply["error"].startswith("NOPERM"), argv
    assert b"root" not in b" ".join(r.execute_command("ACL", "USERS"))
    app = {"Authorization": _as("app", "apppw")}
    assert http(port, "/api/snapshot", headers=app)[0] == 403     # app may not run INFO
    assert http(port, "/metrics", headers=app)[0] == 403
    status, body = http(port, "/api/keys?count=1000", headers=app)
    assert status == 200 and [k["key"] for k in json.loads(body)["keys"]] == ["app:1"]
    status, body = http(port, "/api/keys?count=1000",
                        headers={"Authorization": _as("admin", "adminpw")})
    assert sorted(k["key"] for k in json.loads(body)["keys"]) == ["app:1", "secret"]
    r.close()


def test_aclfile_users_are_asked(make_server, tmp_path):
    """Users from an aclfile: the console needs one of them."""
    aclfile = tmp_path / "users.acl"
    aclfile.write_text("user default off\nuser ops on >opspw +@all ~*\n")
    port = free_port()
    make_server(console_port=str(port), dir=str(tmp_path), aclfile="users.acl")
    assert http(port, "/api/snapshot")[0] == 401
    assert http(port, "/api/snapshot", headers={"Authorization": _as("ops", "opspw")})[0] == 200
    assert _box(port, ["ACL", "WHOAMI"], "ops", "opspw") == (200, "ops")


def test_config_set_console_port_at_runtime(make_server):
    s = make_server()
    r = redis.Redis(port=s.port)
    port = free_port()
    r.config_set("console-port", port)
    deadline = time.time() + 5
    while s.server.console is None and time.time() < deadline:
        time.sleep(0.02)
    assert http(port, "/api/snapshot")[0] == 200
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(redis.ResponseError, match="Unable to listen on this port"):
            r.config_set("console-port", busy.getsockname()[1])
    assert http(port, "/api/snapshot")[0] == 200        # the old console still serves
    r.config_set("console-port", 0)
    deadline = time.time() + 5
    while s.server.console is not None and time.time() < deadline:
        time.sleep(0.02)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=2)


CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER),
                    reason="needs Debian's chromium and chromium-driver "
                           "(apt-get install chromium chromium-driver; .ci/run does)")
def test_page_in_a_real_browser_shows_info(console):
    """The page, loaded in headless Chromium, shows the live values INFO has; the screenshot
    goes to out/console.png."""
    pytest.importorskip("selenium")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1600"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        driver.get("http://127.0.0.1:%d/" % console.port)
        text = lambda i: driver.find_element("id", i).text          # noqa: E731
        deadline = time.time() + 20
        while time.time() < deadline and text("v-keys") in ("", "–"):
            time.sleep(0.2)
        info = console.r.info("everything")
        assert text("v-keys") == str(info["db0"]["keys"])
        assert text("v-maxmemory_policy") == "allkeys-ahe"
        assert text("v-ahe_alpha") == "%.6f" % info["ahe_alpha"]
        assert text("v-ahe_leaning").strip("()") == info["ahe_alpha_leaning"]
        used = int(driver.find_element("id", "v-memory").get_attribute("data-used"))
        assert abs(used - info["used_memory"]) < 4096
        # the command box and the key browser answer through the page
        driver.execute_script(
            "document.getElementById('cmd-line').value = 'GET k7';"
            "document.querySelector('#cmd-form button').click();"
            "document.querySelector('#keys-form button').click();")
        deadline = time.time() + 10
        while time.time() < deadline and text("cmd-out") != '"%s"' % ("v" * 20):
            time.sleep(0.1)
        assert text("cmd-out") == '"%s"' % ("v" * 20)
        rows = driver.find_elements("css selector", "#keys-out tbody tr")
        assert rows
        # what the page shows by itself: the advisor's answer, the busiest commands, the
        # clients (the test's redis-py connection among them), and no "1 keys" / "-0 s"
        rows_of = lambda table: driver.find_elements(            # noqa: E731
            "css selector", "#%s tbody tr, #%s > tr" % (table, table))
        deadline = time.time() + 10
        while time.time() < deadline and not (rows_of("advise-out") and rows_of("cmds-out")
                                              and rows_of("clients-out")):
            time.sleep(0.2)
        assert rows_of("advise-out") and rows_of("clients-out")
        # the tables re-render every poll: read a table's first column in one script
        first_cells = lambda table: driver.execute_script(          # noqa: E731
            "return [...document.querySelectorAll('#%s tbody tr td:first-child')]"
            ".map((td) => td.textContent)" % table)
        assert "set" in first_cells("cmds-out")
        page = driver.find_element("tag name", "body").text
        assert "1 keys" not in page and "-0 s" not in page
        # the key browser follows SCAN past empty pages (count 1, a MATCH of few keys)
        driver.execute_script(
            "document.querySelector('#keys-out tbody').replaceChildren();"
            "document.getElementById('keys-match').value = 'k29*';"
            "document.getElementById('keys-count').value = '1';"
            "document.querySelector('#keys-form button').click();")
        deadline = time.time() + 10
        while time.time() < deadline and not first_cells("keys-out"):
            time.sleep(0.1)
        keys = first_cells("keys-out")
        assert keys and all(k.startswith("k29") for k in keys), keys
        time.sleep(1.5)                     # a few polls drawn, for the picture
        os.makedirs(os.path.join(ROOT, "out"), exist_ok=True)
        driver.save_screenshot(os.path.join(ROOT, "out", "console.png"))
    finally:
        driver.quit()


def test_grafana_dashboard_names_only_metrics_we_export(console):
    """conf/grafana-ferrumkv.json plots what /metrics serves (no drifted metric names)."""
    import re
    from prometheus_client.parser import text_string_to_metric_families
    with open(os.path.join(ROOT, "conf", "grafana-ferrumkv.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = set(re.findall(r"\b((?:redis|ferrumkv)_[a-z_]+)\b", " ".join(exprs)))
    served = set()
    for family in text_string_to_metric_families(http(console.port, "/metrics")[1].decode()):
        served |= {s.name for s in family.samples}
    assert used and used <= served, used - served
    # every series says which server it is, and nothing is declared that no panel uses
    legends = [t.get("legendFormat", "") for p in dash["panels"] for t in p["targets"]]
    assert all("{{instance}}" in legend for legend in legends), legends
    declared = {i["name"] for i in dash.get("__inputs", [])}
    assert all("${%s}" % name in json.dumps(dash["panels"]) for name in declared), declared
