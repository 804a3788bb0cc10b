"""Command families; importing this package registers every command in ``registry.COMMANDS``.

Handlers have the signature ``handler(client, argv) -> reply`` (see ``resp.py`` for reply
values) and raise ``errors.CommandError`` for error replies.  Arity, auth, MULTI and OOM are
checked by the dispatcher before a handler runs.
"""

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    importlib.import_module(__name__ + "." + _mod.name)
