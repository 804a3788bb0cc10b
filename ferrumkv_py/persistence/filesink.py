"""Where a save's bytes go: chunks of records, the CRC-64, ``temp-<pid>.rdb``, fsync, rename.

A BGSAVE hands chunks to a writer thread (the CRC kernel is compiled ``nogil``; ``write``
and ``fsync`` release the GIL too); SAVE writes in the caller's thread.  The file appears
under ``dbfilename`` only complete and synced (rename, then the directory is synced), so a
crash at any point leaves the previous file as it was.  Complexity: O(bytes).
"""

from __future__ import annotations

import os
import queue
import struct
import threading

from .. import lzf
from .rdbfile import OP_EOF

SINK_CHUNK_BYTES = 1 << 20        # records are handed to the writer in chunks this big


class FileSink:
    """Where a save's bytes go: chunks of records, CRC-64, the temp file, rename.

    ``threaded``: a writer thread does the CRC, writes and syncs (BGSAVE); else
    :meth:`emit` writes in the caller's thread once a chunk is full (SAVE).
    """

    def __init__(self, directory: str, filename: str, checksum: bool, threaded: bool):
        self.dir = directory
        self.path = os.path.join(directory, filename)
        self.tmp = os.path.join(directory, "temp-%d.rdb" % os.getpid())
        self.checksum = checksum
        self.crc = 0
        self.buf: list = []
        self.buf_bytes = 0
        self.queued_bytes = 0         # handed to the thread, not yet written
        self.written = 0
        self.error: str | None = None
        self.f = open(self.tmp, "wb")
        self.q: queue.Queue | None = None
        self.thread = None
        self.on_done = None           # called (from the thread) when the file is final
        if threaded:
            self.q = queue.Queue()
            self.thread = threading.Thread(target=self._run, name="rdb-writer", daemon=True)
            self.thread.start()

    def emit(self, data: bytes) -> None:
        self.buf.append(data)
        self.buf_bytes += len(data)
        if self.buf_bytes >= SINK_CHUNK_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.buf:
            return
        chunk = b"".join(self.buf)
        self.buf = []
        self.buf_bytes = 0
        if self.q is not None:
            self.queued_bytes += len(chunk)
            self.q.put(chunk)
        else:
            self._write(chunk)

    def _write(self, chunk: bytes) -> None:
        if self.error is not None:
            return
        try:
            if self.checksum:
                self.crc = lzf.crc64(chunk, self.crc)
            self.f.write(chunk)
            self.written += len(chunk)
        except OSError as e:
            self.error = str(e)

    def _finish(self) -> None:
        """EOF + CRC, fsync, rename, directory fsync (in the thread, or the caller's)."""
        self._write(bytes((OP_EOF,)))          # the CRC covers every byte before it
        if self.error is None:
            try:
                self.f.write(struct.pack("<Q", self.crc if self.checksum else 0))
            except OSError as e:
                self.error = str(e)
        try:
            if self.error is None:
                self.f.flush()
                os.fsync(self.f.fileno())
            self.f.close()
            if self.error is None:
                os.replace(self.tmp, self.path)
                fd = os.open(self.dir, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as e:
            self.error = str(e)
        if self.error is not None:
            self._remove_tmp()

    def _remove_tmp(self) -> None:
        try:
            self.f.close()
            os.unlink(self.tmp)
        except OSError:
            pass

    def _run(self) -> None:
        while True:
            chunk = self.q.get()
            if chunk is None:
                self._finish()
                break
            if chunk is _ABORT:
                self.error = "aborted"
                self._remove_tmp()
                break
            self._write(chunk)
            self.queued_bytes -= len(chunk)
        if self.on_done is not None:
            self.on_done()

    def close(self) -> None:
        """All records are in: finish the file (in the thread when there is one)."""
        self.flush()
        if self.q is not None:
            self.q.put(None)
        else:
            self._finish()

    def abort(self) -> None:
        if self.q is not None:
            self.q.put(_ABORT)
            self.thread.join()
        else:
            self._remove_tmp()


_ABORT = object()
