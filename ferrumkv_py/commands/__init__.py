"""Command families; importing this package registers every command in ``registry.COMMANDS``.

Handlers have the signature ``handler(client, argv) -> reply`` (see ``resp.py`` for reply
values) and raise ``errors.CommandError`` for error replies.  Arity, auth, MULTI and OOM are
checked by the dispatcher before a handler runs.

Every module here is a command family (``strings.py``, ``admin.py`` for the server group,
``connection.py`` for the connection group ...) except those whose name starts with ``_``:
helpers the families share (``_util.py`` argument parsing, ``_longdouble.py``,
``_stored.py``), imported by the families that use them, not as families.
"""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(__name__ + "." + _mod.name)
