"""Command line: ``ferrumkv-server [CONFIG_FILE] [--name value ...]``, Redis style.

Any config name (``conf/ferrumkv.conf`` lists them) can be given as ``--name value`` and
overrides the file.  This is the only module of the server that prints or exits.
"""

from __future__ import annotations

import sys

from . import __version__
from .config import SPECS, Config, ConfigError, format_value

USAGE = """Usage: ferrumkv-server [/path/to/ferrumkv.conf] [--name value ...]
       ferrumkv-server -v | --version
       ferrumkv-server -h | --help

Examples:
       ferrumkv-server                                   (port 6380, no memory limit)
       ferrumkv-server conf/ferrumkv.conf
       ferrumkv-server --port 7777 --maxmemory 256mb --maxmemory-policy allkeys-ahe
"""


def build_config(argv: list[str]) -> Config:
    """Defaults, then the config file (if the first word is not an option), then options."""
    config = Config()
    args = list(argv)
    if args and not args[0].startswith("--"):
        config.load_file(args.pop(0))
    config.load_args(args)
    return config


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help"):
        lines = [USAGE, "Options (name, default):"] + [
            "  --%-30s %-14s %s" % (spec.name, format_value(spec, spec.default) or '""',
                                    spec.doc) for spec in SPECS.values()]
        try:
            print("\n".join(lines))
        except BrokenPipeError:  # `ferrumkv-server --help | head`
            pass
        return 0
    if argv and argv[0] in ("-v", "--version"):
        print("ferrumkv_py v=%s" % __version__)
        return 0
    try:
        config = build_config(argv)
    except ConfigError as e:
        where = ("Reading the configuration file, at line %d" % e.lineno if e.lineno
                 else "Reading the command line options")
        print("\n*** FATAL CONFIG FILE ERROR (ferrumkv_py %s) ***\n%s\n>>> '%s'\n%s"
              % (__version__, where, e.line, e.msg), file=sys.stderr)
        return 1
    except OSError as e:
        print("Fatal error, can't open config file '%s': %s" % (e.filename, e.strerror),
              file=sys.stderr)
        return 1
    from .server import run
    return run(config)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
