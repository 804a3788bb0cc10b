"""Idle memory: compiled kernels load only when their feature is used (memory_trim, the
on-demand resp_scan and shadow imports).  Each check runs in a fresh interpreter, since
the test process has long imported everything."""

from __future__ import annotations

import subprocess
import sys

from ferrumkv_py import memory_trim


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True).stdout


HEAVY = "[m for m in ('numba', 'numpy', 'llvmlite') if m in sys.modules]"


def test_server_start_imports_no_compiled_kernels():
    out = run("import sys\n"
              "from ferrumkv_py.server import Server\n"
              "from ferrumkv_py.config import Config\n"
              "s = Server(Config())\n"
              "print(%s)\n" % HEAVY)
    assert out.strip() == "[]"


def test_shadow_on_loads_its_kernels():
    out = run("import sys\n"
              "from ferrumkv_py.server import Server\n"
              "from ferrumkv_py.config import Config\n"
              "c = Config(); c.set('litehit-shadow', 'yes')\n"
              "s = Server(c)\n"
              "print('numpy' in sys.modules, s.shadow is not None)\n")
    assert out.split() == ["True", "True"]


def test_scanner_is_requested_by_the_first_pipeline():
    out = run("import sys\n"
              "from ferrumkv_py import resp_scan, resp_hiredis\n"
              "r = resp_hiredis.RequestReader()\n"
              "print(len(r.get_batch(b'*1\\r\\n$4\\r\\nPING\\r\\n')), resp_scan._state['requested'])\n"
              "one = b'*2\\r\\n$4\\r\\nECHO\\r\\n$300\\r\\n' + b'x' * 300 + b'\\r\\n'\n"
              "print(len(r.get_batch(one)), resp_scan._state['requested'])\n"
              "print(len(r.get_batch(b'*1\\r\\n$4\\r\\nPING\\r\\n' * 40)), resp_scan._state['requested'])\n"
              "for t in __import__('threading').enumerate():\n"
              "    if t.name == 'resp_scan-load': t.join(120)\n"
              "print(resp_hiredis.whole_frames is not None, 'numba' in sys.modules)\n")
    # one big command is not a pipeline: only the read with 40 frames asks for numba
    assert out.split() == ["1", "False", "1", "False", "40", "True", "True", "True"]


def test_malloc_trim_available_on_glibc():
    if not sys.platform.startswith("linux"):
        return
    import platform
    if platform.libc_ver()[0] == "glibc":
        assert memory_trim.trim_after_free() is True
