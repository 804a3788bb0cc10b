"""Every INFO field of our own has a row in docs/info-fields.md: the fields our server prints
(with the AHE policies under both controllers, the litehit shadow with extra capacities,
maxmemory set) that a real redis-server 7.0 does not print must each be named there."""

from __future__ import annotations

import os
import re

import pytest
import redis

pytestmark = pytest.mark.needs_redis

# Redis's own families, whose names follow the data (a command, an error, a database)
REDIS_FAMILIES = re.compile(r"^(cmdstat_|latency_percentiles_usec_|errorstat_|db\d+$)")
DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "info-fields.md")


def documented_patterns(text: str) -> list:
    """The field names of the doc's table rows (first column), as regexes.  A name written
    ``_suffix`` after another (``a_b_recency_won`` / ``_frequency_won``) replaces as many
    trailing words of it; in parentheses (``x`` (``_human``)) it is appended; ``genN`` and
    ``<C>`` stand for numbers."""
    out = []
    for line in text.splitlines():
        if not line.startswith("| `") and not line.startswith("| spec only"):
            continue
        cell = line.split("|")[1]
        prev = None
        for m in re.finditer(r"(\()?`([A-Za-z0-9_<>]+)`", cell):
            name = m.group(2)
            if name.startswith("_") and prev is not None:
                if m.group(1):
                    name = prev + name
                else:
                    words = prev.split("_")
                    name = "_".join(words[:len(words) - name.count("_")]) + name
            prev = name if not m.group(1) else prev
            out.append(re.compile("^" + re.escape(name).replace("genN", r"gen\d")
                                  .replace("<C>", r"\d+") + "$"))
    return out


def test_the_doc_parser_reads_the_row_forms():
    pats = documented_patterns(
        "| `ahe_duels_recency_won` / `_frequency_won` | c | m |\n"
        "| `litehit_window_reuse_real_hit_rate` / `_reuse_exact_hit_rate` | f | m |\n"
        "| `litehit_shadow_memory` (`_human`) | bytes | m |\n"
        "| `gc_genN_collections` | count | m |\n"
        "| `litehit_slot_<C>_hit_rate` | f | m |\n")
    names = ["ahe_duels_recency_won", "ahe_duels_frequency_won",
             "litehit_window_reuse_real_hit_rate", "litehit_window_reuse_exact_hit_rate",
             "litehit_shadow_memory", "litehit_shadow_memory_human", "gc_gen2_collections",
             "litehit_slot_5000_hit_rate"]
    for n in names:
        assert any(p.match(n) for p in pats), n
    assert not any(p.match("ahe_duels_frequency") for p in pats)


def fields(port: int) -> set:
    r = redis.Redis(port=port)
    try:
        return set(r.info("everything"))
    finally:
        r.close()


def test_every_field_of_our_own_has_a_row(make_server, redis_server):
    ours = set()
    for controller in ("adaptive", "spec"):
        s = make_server(maxmemory="10mb", maxmemory_policy="allkeys-ahe",
                        ahe_controller=controller, litehit_shadow="yes",
                        litehit_capacities="100 1000")
        r = redis.Redis(port=s.port)
        for i in range(50):
            r.set(b"k%d" % i, b"v")
            r.get(b"k%d" % i)
        r.close()
        ours |= fields(s.port)
    assert any(f.startswith("litehit_slot_") for f in ours)
    theirs = fields(redis_server)
    with open(DOC, encoding="utf-8") as f:
        pats = documented_patterns(f.read())
    missing = sorted(f for f in ours - theirs
                     if not REDIS_FAMILIES.match(f) and not any(p.match(f) for p in pats))
    assert not missing, "INFO fields without a row in docs/info-fields.md: %s" % missing
