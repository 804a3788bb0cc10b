"""Persistence: RDB files as redis-server 7.0 writes them, snapshots taken without fork.

Layout::

    rdbfile.py   the file format: header, AUX, FUNCTION2, SELECTDB/RESIZEDB, key records,
                 EOF + CRC-64; the Loader that reads a file into a scratch keyspace
    snapshot.py  the forkless point-in-time snapshot: the cut, the sliced walk, the hook
                 every slot-changing Database method calls (Keyspace.snapshot)
    filesink.py  FileSink: chunks, CRC-64, temp file, fsync, rename (a writer thread for
                 BGSAVE)
    saver.py     Persistence: SAVE, BGSAVE, save rules, SHUTDOWN's save, loading at start
                 (-LOADING meanwhile), INFO persistence

``docs/persistence.md`` has the design, its invariants and the proof of point-in-time
consistency.  The commands are ``commands/persistence.py``.
"""

from .saver import Persistence  # noqa: F401
