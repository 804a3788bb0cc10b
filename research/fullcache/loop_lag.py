"""Where do the long event-loop turns come from while 3M keys are written?

An in-process server (uvloop, CPU 0) takes redis-benchmark's 3M SETs (-P 16 -c 50, CPU 1);
a task measures how late a 1 ms sleep wakes (the loop's lag), and wrappers record every
data_received / cron / freeze_gc call over a few ms, the modules each freeze found new,
and the collector's pauses.  Session 7: the cron froze 7 times while numba loaded on the
pipelined-read scanner's thread, 5-20 ms each (a full collection per freeze); after the
fix (resp_scan imports with the collector off and freezes; the cron freezes once the
loading is over, without collecting) loop lag p99.9 17-18 -> 13 ms, max 21-24 -> 15-22 ms,
full collections during the fill 6-7 -> 1.

Session 8: each read over 3 ms also records the thread's own CPU time, the collections,
slot-table growths and index-dict resizes inside it, and its minor page faults.  The long
reads (4-12 ms, a cluster at 4.2 ms: one scheduler tick at HZ 250) used 0.1-0.2 ms of
CPU with none of those inside: the process was off the CPU, not working.  And the cron's
freeze after numba's import took 12 ms only because it logged gc.get_freeze_count() (a
walk of the frozen objects); it now takes ~0.

    .venv/bin/python research/fullcache/loop_lag.py      # ~20 s; port 7831
"""
import gc, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from ferrumkv_py.malloc_tuning import mmap_large_blocks
mmap_large_blocks()
from ferrumkv_py.config import Config
from ferrumkv_py import server as S, client as C
import uvloop, asyncio

long_calls = []
import resource
orig_dr = C.Client.data_received
ngc = [0]; ngrow = [0]; diag = []
def dr(self, data):
    db = self.db
    sizes = [sys.getsizeof(d) for d in db.shards]
    g0, gr0 = ngc[0], ngrow[0]
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter(); c0 = time.thread_time()
    orig_dr(self, data)
    dt = time.perf_counter() - t0; cdt = time.thread_time() - c0
    if dt > 0.003:
        long_calls.append(("data_received", dt * 1000, len(data)))
        resized = sum(1 for d, z in zip(db.shards, sizes) if sys.getsizeof(d) != z)
        diag.append((round(dt*1000,1), "cpu", round(cdt*1000,1), "gc", ngc[0]-g0, "grow", ngrow[0]-gr0, "resized", resized,
                     "minflt", resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0, "keys", len(db)))
C.Client.data_received = dr
from ferrumkv_py import slots as SL
_og = SL.SlotTable.grow_table
def gt(self):
    ngrow[0] += 1
    return _og(self)
SL.SlotTable.grow_table = gt
orig_cron = S.Server.cron
def cron(self):
    t0 = time.perf_counter()
    orig_cron(self)
    dt = time.perf_counter() - t0
    if dt > 0.002:
        long_calls.append(("cron", dt * 1000, 0))
S.Server.cron = cron
def timed(name, f):
    def w(*a, **k):
        t0 = time.perf_counter()
        r = f(*a, **k)
        dt = time.perf_counter() - t0
        if dt > 0.001:
            long_calls.append((name, dt * 1000, 0))
        return r
    return w
_seen = set(sys.modules)
_orig_freeze = S.Server.freeze_gc
def freeze_spy(self, collect=True):
    new = sorted(set(sys.modules) - _seen)
    _seen.update(new)
    long_calls.append(("newmods %d: %s" % (len(new), ",".join(new[:6])), 0.0, 0))
    t0 = time.perf_counter()
    r = _orig_freeze(self, collect)
    long_calls.append(("freeze collect=%s took %.1f ms" % (collect, (time.perf_counter() - t0) * 1000), 0.0, 0))
    return r
S.Server.freeze_gc = timed("freeze_gc", freeze_spy)
S.active_expire_cycle = timed("expire", S.active_expire_cycle)
from ferrumkv_py import keyspace as KS
KS.Keyspace.maintain = timed("maintain", KS.Keyspace.maintain)
from ferrumkv_py import stats as ST
ST.Stats.sample_ops = timed("sample_ops", ST.Stats.sample_ops)
ST.Stats.note_memory = timed("note_memory", ST.Stats.note_memory)
gcs = []
def cb(phase, info, _t=[0]):
    ngc[0] += 1
    if phase == "start":
        _t[0] = time.perf_counter()
    else:
        dt = (time.perf_counter() - _t[0]) * 1000
        if dt > 1:
            gcs.append((info["generation"], round(dt, 1)))
gc.callbacks.append(cb)

cfg = Config()
cfg.set("port", "7831")
srv = S.Server(cfg)
lags = []
async def lag_probe():
    while True:
        t0 = time.perf_counter()
        await asyncio.sleep(0.001)
        lags.append((time.perf_counter() - t0) * 1000)

async def main():
    await srv.start()
    srv.gc_freeze = True
    srv.freeze_gc()
    asyncio.get_running_loop().create_task(lag_probe())
    bench = await asyncio.create_subprocess_exec(
        "taskset", "-c", "1", "redis-benchmark", "-p", "7831", "-t", "set", "-n", "3000000",
        "-r", "3000000", "-d", "100", "-P", "16", "-c", "50", "-q",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await bench.wait()
    srv.request_shutdown("done")
os.sched_setaffinity(0, {0})
uvloop.run(main())
lags.sort()
n = len(lags)
print("loop-lag probes", n, "p50 %.2f p99 %.2f p99.9 %.2f max %.2f ms" % (lags[n//2], lags[int(n*.99)], lags[int(n*.999)], lags[-1]))
print("long data_received/cron:", len(long_calls))
import collections
byk = collections.Counter(k for k,_,_ in long_calls)
print(byk)
print(sorted(long_calls, key=lambda x: -x[1])[:15])
for c in long_calls:
    if c[0].startswith("newmods") or c[0].startswith("freeze"): print(c[0][:300])
print("longest reads: wall ms, CPU ms of the thread, collections, slot-table growths, index "
      "dicts resized, minor page faults, keys")
for d in sorted(diag, key=lambda x: -x[0])[:25]:
    print(d)
print("gc > 1ms:", len(gcs), sorted(gcs, key=lambda x: -x[1])[:10])
