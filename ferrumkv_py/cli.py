"""Command line: ``ferrumkv-server [CONFIG_FILE] [--name value ...]``, Redis style.

Any config name (``conf/ferrumkv.conf`` lists them) can be given as ``--name value`` and
overrides the file.  This is the only module of the server that prints or exits.
"""

from __future__ import annotations

import os
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


REDIS_VERSION = "7.0.15"   # what the FATAL banner names, as the server's INFO does


class StartupError(Exception):
    """A start-up failure found after the configuration was read (Redis's "sanity checks"):
    reported as a FATAL CONFIG FILE ERROR without a line."""


def build_config(argv: list[str]) -> Config:
    """Defaults, then the config file (if the first word is not an option), then options.

    Raises ConfigError (a bad line), OSError (the config file cannot be read) or
    StartupError (a path the server cannot use).
    """
    config = Config()
    args = list(argv)
    first_lineno = 2
    if args and not args[0].startswith("--"):
        first_lineno = config.load_file(args.pop(0)) + 2
    try:
        config.load_args(args, first_lineno)
    except ConfigError as e:
        e.from_command_line = True
        raise
    check_paths(config)
    return config


def check_paths(config: Config) -> None:
    """What Redis checks once the whole configuration is read: the log file opens."""
    from .safefile import open_regular
    logfile = config["logfile"]
    if logfile:
        try:
            open_regular(logfile, "a").close()
        except OSError as e:
            raise StartupError("Can't open the log file: %s" % e.strerror) from None
    from .acl_file import check_startup
    problem = check_startup(config)     # config-file users and the aclfile
    if problem:
        raise StartupError(problem)
    trace = config["litehit-trace-file"]
    if trace and config["litehit-shadow"]:
        try:
            open_regular(os.path.join(config["dir"], trace), "a", nofollow=True).close()
        except OSError as e:
            raise StartupError("Can't open the trace file: %s" % e.strerror) from None


def _fatal(where: str, line: str, msg: str) -> None:
    """Redis's report: banner, then (for a line) where and the line, then the reason."""
    out = "\n*** FATAL CONFIG FILE ERROR (Redis %s) ***\n" % REDIS_VERSION
    if where:
        out += "%s\n>>> '%s'\n" % (where, line)
    out += "%s\n" % msg
    sys.stderr.buffer.write(out.encode("utf-8", "surrogateescape"))
    sys.stderr.flush()


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
        msg = e.msg
        if e.from_command_line and e.lineno:     # Redis's text, then where it really is
            msg += "\n(line %d is the command-line option --%s: Redis numbers options as " \
                "lines after the config file)" % (e.lineno, e.line.split(" ")[0])
        _fatal("Reading the configuration file, at line %d" % e.lineno if e.lineno else "",
               e.line, msg)
        return 1
    except StartupError as e:
        _fatal("", "", str(e))
        return 1
    except OSError as e:
        print("Fatal error, can't open config file '%s': %s"
              % (os.path.abspath(e.filename or ""), e.strerror), file=sys.stderr)
        return 1
    from .server import run
    return run(config)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
