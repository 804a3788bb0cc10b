"""MEMORY STATS, DOCTOR, MALLOC-STATS and PURGE (MEMORY USAGE / HELP: introspection.py).

The numbers come from the same model INFO memory reports (``memory.py``, ``info.py``):
``total.allocated`` is INFO's ``used_memory`` (the modelled data set plus keyspace
overhead), ``startup.allocated`` its ``used_memory_startup`` (0: the model at start; the
interpreter's own RSS is INFO's ``rss_baseline``, docs/memory.md), and the allocator fields
describe pymalloc as seen from the process RSS.  Field names and order are redis-server 7.0.15's.
"""

from __future__ import annotations

import gc
import sys

from .. import memory
from ..info import memory_overhead
from ..memory_trim import trim_after_free
from ..registry import command
from ..resp import OK

DOCTOR_MIN_BYTES = 5 * 1024 * 1024        # below this the report says "empty"
DOCTOR_PEAK_RATIO = 1.5                   # peak over current
DOCTOR_FRAG_RATIO = 1.4                   # RSS over (used + startup)
DOCTOR_FRAG_MIN_BYTES = 10 << 20
DOCTOR_CLIENT_BUF_BYTES = 1024 * 200      # average per client
DOCTOR_MAX_SCRIPTS = 1000

EMPTY_REPORT = (
    "Hi Sam, this instance is empty or is using very little memory, my issues detector "
    "can't be used in these conditions. Please, leave for your mission on Earth and fill it "
    "with some data. The new Sam and I will be back to our programming as soon as I "
    "finished rebooting.\n")
HEALTHY_REPORT = ("Hi Sam, I can't find any memory issue in your instance. I can only "
                  "account for what occurs on this base.\n")
ISSUES_HEAD = "Sam, I detected a few issues in this Redis instance memory implants:\n\n"
ISSUES_TAIL = "I'm here to keep you safe, Sam. I want to help you.\n"
PEAK_ISSUE = (
    " * Peak memory: In the past this instance used more than 150% the memory that is "
    "currently using. The allocator is normally not able to release memory after a peak, so "
    "you can expect to see a big fragmentation ratio, however this is actually harmless and "
    "is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is "
    "currently bigger than expected, the memory will be used as soon as you fill the Redis "
    "instance with more data. If the memory peak was only occasional and you want to try to "
    "reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is "
    "to shutdown and restart the instance.\n\n")
FRAG_ISSUE = (
    " * High total RSS: This instance has a memory fragmentation and RSS overhead greater "
    "than 1.4 (this means that the Resident Set Size of the Redis process is much larger "
    "than the sum of the logical allocations Redis performed). This problem is usually due "
    "either to a large peak memory (check if there is a peak memory entry above in the "
    "report) or may result from a workload that causes the allocator to fragment memory a "
    "lot. If the problem is a large peak memory, then there is no issue. Otherwise, note "
    "that this server runs on CPython: its allocator (pymalloc over glibc malloc) keeps the "
    "pages of freed objects for reuse, MEMORY PURGE returns what it can of them to the "
    "system, and the RSS also holds the interpreter and its compiled kernels, a fixed cost "
    "that used_memory does not count (docs/memory.md). Note: The currently used allocator "
    "is \"pymalloc\".\n\n")
CLIENT_ISSUE = (
    " * Big client buffers: The clients output buffers in this instance are greater than "
    "200K per client (on average). This may result from different causes, like Pub/Sub "
    "clients subscribed to channels bot not receiving data fast enough, so that data piles "
    "on the Redis instance output buffer, or clients sending commands with large replies or "
    "very large sequences of commands in the same pipeline. Please use the CLIENT LIST "
    "command in order to investigate the issue if it causes problems in your instance, or "
    "to understand better why certain clients are using a big amount of memory.\n\n")
SCRIPTS_ISSUE = (
    " * Many scripts: There seem to be many cached scripts in this instance (more than "
    "1000). This may be because scripts are generated and `EVAL`ed, instead of being "
    "parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT "
    "FLUSH` is called periodically, the scripts' caches may end up consuming most of your "
    "memory.\n\n")


def _script_count(server) -> int:
    eng = server.__dict__.get("scripting")
    return len(eng.scripts) if eng is not None else 0


def overhead(server) -> dict:
    """Redis getMemoryOverheadData over our model (info.memory_overhead) plus what MEMORY
    STATS and DOCTOR read beside it.  Complexity: O(clients + databases)."""
    o = memory_overhead(server)
    o["scripts"] = _script_count(server)
    return o


@command("stats", 2, "", parent="memory")
def memory_stats(c, argv):
    """MEMORY STATS
    Returns details about the memory usage of the server (Redis's field names)."""
    o = overhead(c.server)
    out = {b"peak.allocated": o["peak"], b"total.allocated": o["used"],
           b"startup.allocated": o["startup"], b"replication.backlog": 0,
           b"clients.slaves": 0, b"clients.normal": o["clients"], b"cluster.links": 0,
           b"aof.buffer": 0, b"lua.caches": 0, b"functions.caches": 0}
    for db_id, main, expires in o["dbs"]:
        out[b"db.%d" % db_id] = {b"overhead.hashtable.main": main,
                                  b"overhead.hashtable.expires": expires,
                                  b"overhead.hashtable.slot-to-keys": 0}
    used, rss = o["used"], o["rss"]
    out.update({
        b"overhead.total": o["overhead"], b"keys.count": o["keys"],
        b"keys.bytes-per-key": o["per_key"], b"dataset.bytes": o["dataset"],
        b"dataset.percentage": float(o["dataset_perc"]),
        b"peak.percentage": float(o["peak_perc"]),
        # pymalloc has no separate allocated / active / resident counters: the model's
        # bytes for all three, and the process RSS beyond them as RSS overhead
        b"allocator.allocated": used, b"allocator.active": used, b"allocator.resident": used,
        b"allocator-fragmentation.ratio": 1.0, b"allocator-fragmentation.bytes": 0,
        b"allocator-rss.ratio": 1.0, b"allocator-rss.bytes": 0,
        b"rss-overhead.ratio": float(rss / used) if used else 0.0,
        b"rss-overhead.bytes": rss - used,
        b"fragmentation": float(o["frag"]), b"fragmentation.bytes": o["frag_bytes"],
    })
    return out


def doctor_report(server) -> str:
    """Redis getMemoryDoctorReport's rules and texts over our model.  Complexity: O(clients)."""
    o = overhead(server)
    if o["used"] < DOCTOR_MIN_BYTES:     # the data set (the interpreter itself is ~40 MB)
        return EMPTY_REPORT
    issues = []
    if o["used"] and o["peak"] / o["used"] > DOCTOR_PEAK_RATIO:
        issues.append(PEAK_ISSUE)
    if o["frag"] > DOCTOR_FRAG_RATIO and o["frag_bytes"] > DOCTOR_FRAG_MIN_BYTES:
        issues.append(FRAG_ISSUE)
    nclients = len(server.clients)
    if nclients and o["clients"] / nclients > DOCTOR_CLIENT_BUF_BYTES:
        issues.append(CLIENT_ISSUE)
    if o["scripts"] > DOCTOR_MAX_SCRIPTS:
        issues.append(SCRIPTS_ISSUE)
    if not issues:
        return HEALTHY_REPORT
    return ISSUES_HEAD + "".join(issues) + ISSUES_TAIL


@command("doctor", 2, "", parent="memory")
def memory_doctor(c, argv):
    """MEMORY DOCTOR
    Outputs a memory problems report."""
    return doctor_report(c.server).encode()


@command("malloc-stats", 2, "", parent="memory")
def memory_malloc_stats(c, argv):
    """MEMORY MALLOC-STATS
    Returns the allocator's statistics (pymalloc, as the process sees it)."""
    o = overhead(c.server)
    lines = ["___ Begin pymalloc statistics ___",
             "Allocator: pymalloc (CPython %s)" % sys.version.split()[0],
             "allocated blocks: %d" % sys.getallocatedblocks(),
             "gc tracked objects per generation: %s" % " ".join(
                 str(n) for n in gc.get_count()),
             "modelled data set bytes (used_memory): %d" % o["used"],
             "rss baseline bytes (the process when ready): %d" % o["baseline"],
             "process rss bytes: %d" % o["rss"],
             "___ End pymalloc statistics ___", ""]
    return "\n".join(lines).encode()


@command("purge", 2, "", parent="memory")
def memory_purge(c, argv):
    """MEMORY PURGE
    Asks the allocator to release free memory (glibc malloc_trim)."""
    trim_after_free()
    return OK
