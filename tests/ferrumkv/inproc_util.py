"""Helpers for tests that feed frames to a Client in-process, without a socket."""

from __future__ import annotations


class NullTransport:
    """The transport of an in-process Client: writes go nowhere, no peer, close does nothing
    (bench/server_bench.py has its own, since bench scripts do not import tests)."""

    def write(self, data):
        pass

    def get_extra_info(self, name):
        return None

    def get_write_buffer_size(self):
        return 0

    def close(self):
        pass
