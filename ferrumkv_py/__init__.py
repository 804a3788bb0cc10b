"""ferrumkv_py: a Redis-compatible cache server."""
__version__ = "0.1.0"
