"""Every error a client can see, with Redis 7.0's exact texts.

Handlers raise :class:`CommandError` (or a subclass carrying another RESP prefix); only the
dispatcher turns one into ``-PREFIX message\\r\\n``.  A command error never closes the
connection; only a malformed frame (``resp.ProtocolError``) does.
"""

from __future__ import annotations


class CommandError(Exception):
    """An error reply.  ``text`` is the full reply text without the leading ``-``."""

    prefix = "ERR"

    def __init__(self, msg: str):
        super().__init__(msg)
        self.text = msg if self._has_prefix(msg) else "%s %s" % (self.prefix, msg)

    @staticmethod
    def _has_prefix(msg: str) -> bool:
        head = msg.split(" ", 1)[0]
        return head.isupper() and head.isalpha() and len(head) > 1 and head in _KNOWN_PREFIXES

    @property
    def code(self) -> str:
        """The first word, as INFO errorstats counts it (ERR, WRONGTYPE, OOM...)."""
        return self.text.split(" ", 1)[0]


_KNOWN_PREFIXES = {"ERR", "WRONGTYPE", "OOM", "NOAUTH", "WRONGPASS", "NOPROTO", "EXECABORT",
                   "BUSYKEY", "NOSCRIPT", "NOPERM", "LOADING", "READONLY", "NOTBUSY",
                   "BUSY", "UNKILLABLE"}


class WrongTypeError(CommandError):
    prefix = "WRONGTYPE"

    def __init__(self, msg: str = "WRONGTYPE Operation against a key holding the wrong kind of value"):
        super().__init__(msg)


class OOMError(CommandError):
    prefix = "OOM"

    def __init__(self, msg: str = "OOM command not allowed when used memory > 'maxmemory'."):
        super().__init__(msg)


class ScriptError(CommandError):
    """A script's error, sent as the script made it: ``error({err='MY text'})`` replies
    ``-MY text ...`` even though MY is no Redis error code (no ``ERR`` is added)."""

    def __init__(self, text: str):
        Exception.__init__(self, text)
        self.text = text


# ---- message constants (text after the prefix unless the prefix is part of it) ----
SYNTAX = "syntax error"
NOT_INT = "value is not an integer or out of range"
NOT_FLOAT = "value is not a valid float"
OVERFLOW = "increment or decrement would overflow"
INCR_FLOAT_NAN = "increment would produce NaN or Infinity"
NO_SUCH_KEY = "no such key"
INDEX_OUT_OF_RANGE = "index out of range"
INVALID_EXPIRE = "invalid expire time in '%s' command"
DB_INDEX_OUT_OF_RANGE = "DB index is out of range"
INVALID_DB_INDEX = "invalid DB index"
NOT_POSITIVE = "value is out of range, must be positive"
MIN_MAX_NOT_FLOAT = "min or max is not a float"
MIN_MAX_NOT_STRING = "min or max not valid string range item"
WRONG_ARGS = "wrong number of arguments for '%s' command"
UNKNOWN_COMMAND = "unknown command '%s', with args beginning with: %s"
UNKNOWN_SUBCOMMAND = "unknown subcommand '%s'. Try %s HELP."
NOAUTH = "NOAUTH Authentication required."
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NOT_SET = ("AUTH <password> called without any password configured for the default user. "
                "Are you sure your configuration is correct?")
NOPROTO = "NOPROTO unsupported protocol version"
MULTI_NESTED = "MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "DISCARD without MULTI"
WATCH_IN_MULTI = "WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
MAX_CLIENTS = "max number of clients reached"
SAME_OBJECT = "source and destination objects are the same"
STRING_TOO_LONG = "string exceeds maximum allowed size (proto-max-bulk-len)"
OFFSET_OUT_OF_RANGE = "offset is out of range"
# ---- containers: lists, hashes, sets, sorted sets ----
ZADD_XX_AND_NX = "XX and NX options at the same time are not compatible"
ZADD_GT_LT_NX = "GT, LT, and/or NX options at the same time are not compatible"
ZADD_INCR_SINGLE_PAIR = "INCR option supports a single increment-element pair"
ZSCORE_NAN = "resulting score is not a number (NaN)"
ZRANGE_LIMIT_NEEDS_BY = ("syntax error, LIMIT is only supported in combination with either "
                         "BYSCORE or BYLEX")
ZRANGE_BYLEX_WITHSCORES = "syntax error, WITHSCORES not supported in combination with BYLEX"
HASH_NOT_INT = "hash value is not an integer"
HASH_NOT_FLOAT = "hash value is not a float"
NAN_OR_INFINITY = "value is NaN or Infinity"
LPOS_RANK_ZERO = ("RANK can't be zero: use 1 to start from the first match, 2 from the second "
                  "... or use negative to start from the end of the list")
LPOS_COUNT_NEGATIVE = "COUNT can't be negative"
LPOS_MAXLEN_NEGATIVE = "MAXLEN can't be negative"
RANDOM_COUNT_RANGE = ("value is out of range, value must between -9223372036854775807 and "
                      "9223372036854775807")
NUMKEYS_NOT_POSITIVE = "numkeys should be greater than 0"
NUMKEYS_TOO_MANY = "Number of keys can't be greater than number of args"
LIMIT_NEGATIVE = "LIMIT can't be negative"
INVALID_CURSOR = "invalid cursor"
# ---- strings and keys ----
DECR_OVERFLOW = "decrement would overflow"
EXPIRE_NX_CONFLICT = "NX and XX, GT or LT options at the same time are not compatible"
EXPIRE_GT_LT_CONFLICT = "GT and LT options at the same time are not compatible"
UNSUPPORTED_OPTION = "Unsupported option %s"
LFU_NOT_SELECTED = ("An LFU maxmemory policy is not selected, access frequency not tracked. "
                    "Please note that when switching between policies at runtime LRU and LFU "
                    "data will take some time to adjust.")
LFU_SELECTED = ("An LFU maxmemory policy is selected, idle time not tracked. Please note "
                "that when switching between policies at runtime LRU and LFU data will take "
                "some time to adjust.")
NOT_IN_MULTI = "Command not allowed inside a transaction"
HELLO_NOAUTH = ("NOAUTH HELLO must be called with the client already authenticated, otherwise "
                "the HELLO AUTH <user> <pass> option can be used to authenticate the client "
                "and select the RESP protocol version at the same time")
CONFIG_SET_FAILED = "CONFIG SET failed (possibly related to argument '%s') - %s"
CONFIG_SET_UNKNOWN = "Unknown option or number of arguments for CONFIG SET - '%s'"
INT_OUT_OF_RANGE = "value is out of range, value must between -2147483648 and 2147483647"
# ---- scripting (EVAL, SCRIPT, FUNCTION) ----
NOSCRIPT = "NOSCRIPT No matching script. Please use EVAL."
NUMKEYS_NEGATIVE = "Number of keys can't be negative"
NUMKEYS_GREATER = "Number of keys can't be greater than number of args"
SCRIPT_WRITE_FLAG_RO = "Can not execute a script with write flag using *_ro command."
BUSY_EVAL = ("BUSY Redis is busy running a script. You can only call SCRIPT KILL or "
             "SHUTDOWN NOSAVE.")
BUSY_FUNCTION = ("BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                 "SHUTDOWN NOSAVE.")
NOTBUSY = "NOTBUSY No scripts in execution right now."
UNKILLABLE = ("UNKILLABLE Sorry the script already executed write commands against the "
              "dataset. You can either wait the script termination or kill the server in a "
              "hard way using the SHUTDOWN NOSAVE command.")
SCRIPT_FLUSH_OPTION = "SCRIPT FLUSH only support SYNC|ASYNC option"
