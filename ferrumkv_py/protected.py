"""Protected mode: who may connect, and who may change protected configs.

Redis 7.0 (``clientAcceptHandler``): with ``protected-mode yes`` and no password for the
default user, a connection whose peer is not local gets the ``-DENIED ...`` error
(``errors.PROTECTED_MODE_DENIED``) and is closed.  Local means what Redis's
``connIsLocal`` says: a Unix socket, an IPv4 peer in 127.0.0.0/8 or the IPv6 peer ``::1``
(compared as text, so ``::ffff:127.0.0.1`` is not local, as in Redis).  The same test
decides ``enable-protected-configs local``.  Complexity: O(1).
"""

from __future__ import annotations


def is_local_peer(peer) -> bool:
    """``peer`` as asyncio's ``peername``: (host, port[, ...]) for TCP, a path for Unix."""
    if not isinstance(peer, tuple):
        return True          # Unix socket (a str or bytes path, possibly empty)
    host = str(peer[0])
    return host.startswith("127.") or host == "::1"


def denies(protected_mode: bool, requirepass: str, peer) -> bool:
    """True when protected mode must refuse a connection from ``peer``."""
    return bool(protected_mode) and not requirepass and not is_local_peer(peer)
