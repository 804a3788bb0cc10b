"""acl_table.py: the ACL view of Redis 7.0's command table, derived from the command data
file command_specs.py serves (one copy of Redis's COMMAND data), checked against redis-server."""

from __future__ import annotations

import json

import pytest
from redis.connection import Connection

from ferrumkv_py import acl_table, command_specs


def test_one_home_for_the_data():
    # the table is built from the file COMMAND INFO / DOCS are served from, not a copy
    assert acl_table.load(command_specs.DATA_FILE) == acl_table.TABLE
    with open(command_specs.DATA_FILE, encoding="utf-8") as f:
        tops = set(json.load(f)["info"])
    assert {name for name, *_, parent in acl_table.TABLE if not parent} == tops


def test_rows_are_sorted_and_subcommands_have_parents():
    names = [row[0] for row in acl_table.TABLE]
    assert names == sorted(names) and len(set(names)) == len(names)
    rows = {row[0]: row for row in acl_table.TABLE}
    for name, _cats, _noauth, _specs, parent in acl_table.TABLE:
        if parent:
            assert name.startswith(parent + "|") and parent in rows
        else:
            assert "|" not in name


def test_known_rows():
    rows = {row[0]: row for row in acl_table.TABLE}
    assert rows["append"] == ("append", ("write", "string", "fast"), False, ((1, 0, 1, 2),), "")
    assert rows["auth"] == ("auth", ("fast", "connection"), True, (), "")
    assert rows["bitop"][3] == ((2, 0, 1, 2), (3, -1, 1, 1))     # dest writes, sources read
    assert rows["blmpop"][3] == ((0, 0, 0, 3),)                   # keynum spec: begin 0
    assert rows["acl|cat"][4] == "acl"
    assert rows["zcard"][3] == ((1, 0, 1, 0),)                    # no ACCESS flag: none asked


def test_a_data_file_elsewhere_loads(tmp_path):
    with open(command_specs.DATA_FILE, encoding="utf-8") as f:
        data = json.load(f)
    data["info"] = {"get": data["info"]["get"], "acl": data["info"]["acl"]}
    path = tmp_path / "commands.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    names = [row[0] for row in acl_table.load(str(path))]
    assert names[0] == "acl" and "acl|whoami" in names and names[-1] == "get"


@pytest.mark.needs_redis
def test_table_equals_redis_servers_command(redis_server):
    c = Connection(port=redis_server, protocol=3)      # maps, as the data file holds
    c.connect()
    try:
        c.send_command("COMMAND")
        live = c.read_response()        # raw: redis-py's COMMAND callback reshapes it
    finally:
        c.disconnect()
    assert tuple(sorted(acl_table.rows_of(live), key=lambda row: row[0])) == acl_table.TABLE
