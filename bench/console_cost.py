"""What the web console costs a busy server: -P 16 SET/GET with a browser open on the console
against the same server with the console off, side by side in one run.

Two ferrumkv servers with the same settings (allkeys-ahe, maxmemory, the litehit shadow on,
so the page draws every chart and the curve), one with ``console-port`` set and a headless
Chromium (Debian's ``chromium`` + ``chromium-driver``, through selenium) showing its page for
the whole run: the page polls /api/snapshot every second and the curve every five.  Servers
are pinned to CPU 0; redis-benchmark and the browser to CPU 1.  Runs are interleaved and the
median of ``--reps`` is kept; besides ops/s, the server's CPU per request (from /proc) is the
steadier number on a shared machine.  Goal (issue 19): console on >= 0.98 of off.

    .venv/bin/python bench/console_cost.py                 # ~3 minutes
    .venv/bin/python bench/console_cost.py --screenshot docs/img/console.png
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_bench import CLIENT_CPU, Proc, bench, free_port, median_result  # noqa: E402

GOAL = 0.98
SETTINGS = ["--maxmemory", "64mb", "--maxmemory-policy", "allkeys-ahe",
            "--litehit-shadow", "yes"]
BROWSER_WARMUP_S = 5          # the page loads and draws its first polls before timing


def open_browser(port: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    opts = Options()
    opts.binary_location = shutil.which("chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1500"):
        opts.add_argument(a)
    service = Service(shutil.which("chromedriver"))
    driver = webdriver.Chrome(service=service, options=opts)
    if os.cpu_count() > 1 and service.process is not None:
        # the browser is load on the client side: keep it off the server's CPU
        for pid in [service.process.pid] + _children(service.process.pid):
            try:
                os.sched_setaffinity(pid, {int(CLIENT_CPU)})
            except OSError:
                pass
    driver.get("http://127.0.0.1:%d/" % port)
    return driver


def _children(pid: int) -> list:
    out = []
    try:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with open("/proc/%s/stat" % entry) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
                        out += _children(int(entry))
    except OSError:
        pass
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=400_000, help="requests per run")
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--screenshot", help="save the console page under load here (PNG)")
    args = ap.parse_args()
    for exe in ("redis-benchmark", "chromium", "chromedriver"):
        if not shutil.which(exe):
            print("missing %s (apt-get install redis-tools chromium chromium-driver)" % exe)
            return 2
    console_port = free_port()
    off = Proc("ferrumkv", SETTINGS)
    on = Proc("ferrumkv", SETTINGS + ["--console-port", str(console_port)])
    driver = None
    try:
        driver = open_browser(console_port)
        time.sleep(BROWSER_WARMUP_S)
        got: dict = {(m, t): [] for m in ("off", "on") for t in ("set", "get")}
        for rep in range(args.reps):
            for test in ("set", "get"):
                for mode, proc in (("off", off), ("on", on)):
                    got[(mode, test)].append(bench(proc, test, args.requests, 16))
            print("rep %d/%d done" % (rep + 1, args.reps), flush=True)
            if args.screenshot and rep == 0:
                bench(on, "set", args.requests // 4, 16)    # the charts show load
                os.makedirs(os.path.dirname(os.path.abspath(args.screenshot)), exist_ok=True)
                driver.save_screenshot(args.screenshot)
                print("wrote", args.screenshot)
    finally:
        if driver is not None:
            driver.quit()
        off.stop()
        on.stop()
    print("%-10s %12s %12s %7s %10s %10s %9s  %s" % (
        "test", "off ops/s", "on ops/s", "ratio", "off cpu us", "on cpu us", "cpu ratio",
        "goal >= %.2f" % GOAL))
    for test in ("set", "get"):
        a, b = median_result(got[("off", test)]), median_result(got[("on", test)])
        ratio = b["rps"] / a["rps"]
        print("%-10s %12.0f %12.0f %7.3f %10.2f %10.2f %9.3f  %s" % (
            test.upper() + " -P 16", a["rps"], b["rps"], ratio, a["cpu"], b["cpu"],
            a["cpu"] / b["cpu"] if b["cpu"] else float("nan"),
            "met" if ratio >= GOAL else "not met"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
