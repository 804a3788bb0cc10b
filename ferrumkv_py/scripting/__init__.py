"""The Lua scripting engine behind EVAL / EVALSHA / SCRIPT and FUNCTION / FCALL.

One ``lupa.lua51`` runtime per server (Lua 5.1, as Redis), sandboxed as Redis 7.0 does
(``sandbox.py`` says how), with ``redis.call`` bridged to the command table.

**Where a script runs, and how other clients are served meanwhile.**  A script runs inline,
on the event loop's thread, inside the dispatcher's call for EVAL: a 1-call EVALSHA costs a
few microseconds, where handing each script to a worker thread and back cost ~45 us
(measured with ``timeit``-style loops: 0.56 us for a Lua call, 44.9 us for a queue round trip
to a thread).  Atomicity is then free: nothing else runs on the loop until the script returns.
Long scripts are handled as Redis handles them (``processEventsWhileBlocked``): Lua calls a
count hook every ``HOOK_INSTRUCTIONS`` VM instructions; once the script has run longer than
``busy-reply-threshold`` (alias ``lua-time-limit``, ms), the hook polls the sockets of the
other connected clients (``poll`` with a zero timeout), reads what they sent and runs it
through the normal dispatcher (:meth:`Client.call`), which answers ``-BUSY ...`` to every
command without the ``allow_busy`` flag (``server.busy_script`` is set).  SCRIPT KILL /
FUNCTION KILL (allowed while busy) mark the run killed and the next hook raises the kill
error; SHUTDOWN NOSAVE stops the server and the script with it.  While the script runs, the
cron, active expiry and eviction do not run (they live on the same loop), and nothing the
busy clients may run touches the keyspace.  New connections are accepted and served the
same way (``busy_accept.py``, called from ``busy``).  Not done while busy: reading from the
script's own connection (as Redis, which protects the caller).

Layout (each module's docstring has the detail):

* ``engine``: :class:`Engine`, the VM, the script cache, ``redis.call`` in Redis's
  ``scriptCall`` order, the count hook, SCRIPT/FUNCTION KILL; :func:`engine`, :class:`ScriptTimeLimit`;
* ``scripts``: a compiled script, the running script's context, the shebang, and
  :class:`ScriptClient` (the client a script's commands run on, a ``ClientState``);
* ``replies``: replies both ways (a handler's reply -> Lua value; the Lua -> RESP encoder);
* ``busy``: serving the other clients while a script is busy;
* ``sandbox``: the Lua bootstrap and Redis 7.0's sandbox (its guarantees listed, each with
  its test), with the pieces pasted in: ``guard`` (read-only tables, wrapped globals, the
  count hook, the heap bound),
  ``redis_api`` (the ``redis.*`` table and ``math.random``), ``loader`` (FUNCTION LOAD's
  load-time sandbox and ``redis.register_function``) and the libraries ``lib_bit``,
  ``lib_cjson``, ``lib_cmsgpack``, ``lib_struct``.

Complexity: a script's own; the bridge is O(arguments + reply size) per redis.call.
"""

from .engine import REDIS_VERSION, REDIS_VERSION_NUM, Engine, ScriptTimeLimit, engine
from .replies import parse_resp
from .scripts import SHEBANG_FLAGS, ScriptClient

__all__ = ["REDIS_VERSION", "REDIS_VERSION_NUM", "SHEBANG_FLAGS", "Engine", "ScriptClient",
           "engine", "ScriptTimeLimit", "parse_resp"]
