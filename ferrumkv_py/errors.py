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
                   "INVALIDOBJ", "TESTFAILED", "BUSY", "UNKILLABLE", "NOGROUP", "BUSYGROUP", "UNBLOCKED"}


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
# persistence (persistence/saver.py; the dispatcher's checks)
LOADING = "LOADING Redis is loading the dataset in memory"
MISCONF = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
           "persist to disk. Commands that may modify the data set are disabled, because "
           "this instance is configured to report errors during writes if RDB snapshotting "
           "fails (stop-writes-on-bgsave-error option). Please check the Redis logs for "
           "details about the RDB error.")
BGSAVE_IN_PROGRESS = "Background save already in progress"
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
AUTH_NOT_SET = ("AUTH <password> called without any password configured for the default user. "
                "Are you sure your configuration is correct?")
NOPROTO = "NOPROTO unsupported protocol version"
MULTI_NESTED = "MULTI calls can not be nested"
EXEC_WITHOUT_MULTI = "EXEC without MULTI"
DISCARD_WITHOUT_MULTI = "DISCARD without MULTI"
WATCH_IN_MULTI = "WATCH inside MULTI is not allowed"
EXECABORT = "EXECABORT Transaction discarded because of previous errors."
EXEC_ABORT_BECAUSE = "EXECABORT Transaction discarded because of: %s"   # a refused EXEC
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
OUT_OF_RANGE = "value is out of range"   # HRANDFIELD / ZRANDMEMBER: a pair count past LONG_MAX/2
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
# ---- DUMP / RESTORE ----
BUSYKEY = "BUSYKEY Target key name already exists."
INVALID_TTL = "Invalid TTL value, must be >= 0"
INVALID_IDLETIME = "Invalid IDLETIME value, must be >= 0"
INVALID_FREQ = "Invalid FREQ value, must be >= 0 and <= 255"
DUMP_PAYLOAD_WRONG = "DUMP payload version or checksum are wrong"
BAD_DATA_FORMAT = "Bad data format"
# ---- geo, SORT, sorted-set algebra, LCS (commands/geo.py, sort.py, zsetops.py, lcs.py) ----
GEO_UNIT = "unsupported unit provided. please use M, KM, FT, MI"
GEO_INVALID_PAIR = "invalid longitude,latitude pair %f,%f"
GEO_NEED_RADIUS = "need numeric radius"
GEO_NEED_WIDTH = "need numeric width"
GEO_NEED_HEIGHT = "need numeric height"
GEO_RADIUS_NEGATIVE = "radius cannot be negative"
GEO_BOX_NEGATIVE = "height or width cannot be negative"
GEO_BAD_MEMBER = "could not decode requested zset member"
GEO_COUNT = "COUNT must be > 0"
GEO_STORE_WITH = "%s is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
GEO_NEED_FROM = "exactly one of FROMMEMBER or FROMLONLAT can be specified for %s"
GEO_NEED_BY = "exactly one of BYRADIUS and BYBOX can be specified for %s"
GEO_ANY_NEEDS_COUNT = "the ANY argument requires COUNT argument"
ZSETOP_NO_KEYS = "at least 1 input key is needed for '%s' command"
ZSETOP_WEIGHT = "weight value is not a float"
SORT_NOT_DOUBLE = "One or more scores can't be converted into double"
LCS_NOT_STRINGS = "The specified keys must contain string values"
LCS_LEN_AND_IDX = "If you want both the length and indexes, please just use IDX."
LCS_TOO_LONG = "String too long for LCS"
LCS_TABLE_TOO_BIG = "Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
# ---- bitmaps and HyperLogLog (commands/bitmaps.py, commands/hyperloglog.py) ----
BIT_OFFSET = "bit offset is not an integer or out of range"
BIT_VALUE = "bit is not an integer or out of range"
BITPOS_BIT = "The bit argument must be 1 or 0."
BITOP_NOT_ONE_KEY = "BITOP NOT must be called with a single source key."
BITFIELD_TYPE = ("Invalid bitfield type. Use something like i16 u8. Note that u64 is not "
                 "supported but i64 is.")
BITFIELD_OVERFLOW = "Invalid OVERFLOW type specified"
BITFIELD_RO_GET_ONLY = "BITFIELD_RO only supports the GET subcommand"
HLL_WRONGTYPE = "WRONGTYPE Key is not a valid HyperLogLog string value."
HLL_INVALID = "INVALIDOBJ Corrupted HLL object detected"
PFDEBUG_NO_KEY = "The specified key does not exist"
PFDEBUG_NOT_SPARSE = "HLL encoding is not sparse"
PFDEBUG_UNKNOWN = "Unknown PFDEBUG subcommand '%s'"
PFSELFTEST_REGISTER = "TESTFAILED Register %d should be %d but is %d"
PFSELFTEST_NOT_SPARSE = "TESTFAILED sparse encoding not used"
PFSELFTEST_DISAGREE = "TESTFAILED dense/sparse disagree"
PFSELFTEST_ERROR = "TESTFAILED Too big error. card:%d abserr:%d"
IMMUTABLE_CONFIG = "can't set immutable config"
PROTECTED_CONFIG = "can't set protected config"
PROTECTED_MODE_DENIED = (
    "DENIED Redis is running in protected mode because protected mode is enabled and no "
    "password is set for the default user. In this mode connections are only accepted from "
    "the loopback interface. If you want to connect from external computers to Redis you may "
    "adopt one of the following solutions: 1) Just disable protected mode sending the command "
    "'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from "
    "the same host the server is running, however MAKE SURE Redis is not publicly accessible "
    "from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "
    "Alternatively you can just disable the protected mode by editing the Redis configuration "
    "file, and setting the protected mode option to 'no', and then restarting the server. 3) "
    "If you started the server manually just for testing, restart it with the "
    "'--protected-mode no' option. 4) Setup a an authentication password for the default "
    "user. NOTE: You only need to do one of the above things in order for the server to "
    "start accepting connections from the outside.")
GETKEYS_INVALID = "Invalid arguments specified for command"
# ---- pub/sub and client tracking ----
PUBSUB_CONTEXT = ("Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                  "RESET are allowed in this context")
SUBCOMMAND_SYNTAX = ("unknown subcommand or wrong number of arguments for '%s'. Try %s HELP.")
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

# ---- DEBUG, LOLWUT (commands/debug.py, commands/lolwut.py) ----
DEBUG_NOT_ALLOWED = (
    "DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you "
    "can run it from a local connection, otherwise you need to set this option in the "
    "configuration file, and then restart the server.")
DEBUG_PROTOCOL_TYPE = ("Wrong protocol type name. Please use one of the following: "
                       "string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|"
                       "true|false")
DEBUG_PUSH_RESP2 = "RESP2 is not supported by this command"
DEBUG_NOT_LISTPACK = "Not a listpack encoded object."
DEBUG_NOT_QUICKLIST = "Not a quicklist encoded object."
DEBUG_PACKED_THRESHOLD = "argument must be a memory value bigger than 1 and smaller than 4gb"
DEBUG_NO_PERSISTENCE = ("DEBUG %s is not supported: ferrumkv keeps data in memory only, "
                        "there is no RDB or AOF file to save or load")
LOLWUT_TOO_LARGE = ("LOLWUT canvas too large for this server: at most %d pixels "
                    "(use fewer columns or squares)")
# ---- ACL (acl.py, commands/acl.py) ----
NOPERM_CMD = "NOPERM this user has no permissions to run the '%s' command"
NOPERM_KEY = "NOPERM this user has no permissions to access one of the keys used as arguments"
NOPERM_CHANNEL = ("NOPERM this user has no permissions to access one of the channels used as "
                  "arguments")
NOPERM_EXEC = ("NOPERM ACLs rules changed between the moment the transaction was accumulated "
               "and the EXEC call. This command is no longer allowed for the following "
               "reason: %s")
EXEC_REASON_CMD = "no permission to execute the command or subcommand"
EXEC_REASON_KEY = "no permission to touch the specified keys"
EXEC_REASON_CHANNEL = "no permission to access one of the channels used as arguments"
SCRIPT_NOPERM_CMD = "ERR The user executing the script can't run this command or subcommand"
SCRIPT_NOPERM_KEY = ("ERR The user executing the script can't access at least one of the keys "
                     "mentioned in the command arguments")
SCRIPT_NOPERM_CHANNEL = ("ERR The user executing the script can't publish to the channel "
                         "mentioned in the command")
ACL_SETUSER_MODIFIER = "Error in ACL SETUSER modifier '%s': %s"
ACL_USERNAME_SPACES = "Usernames can't contain spaces or null characters"
ACL_UNMATCHED_PAREN = "Unmatched parenthesis in acl selector starting at '%s'."
ACL_DEL_DEFAULT = "The 'default' user cannot be removed"
ACL_NO_FILE = ("This Redis instance is not configured to use an ACL file. You may want to "
               "specify users via the ACL SETUSER command and then issue a CONFIG REWRITE "
               "(assuming you have a Redis configuration file set) in order to store users "
               "in the Redis configuration.")
ACL_SAVE_FAILED = ("There was an error trying to save the ACLs. Please check the server logs "
                   "for more information")
ACL_UNKNOWN_CATEGORY = "Unknown category '%s'"
ACL_GENPASS_BITS = ("ACL GENPASS argument must be the number of bits for the output password, "
                    "a positive number up to %d")
ACL_DRYRUN_NO_USER = "User '%s' not found"
ACL_DRYRUN_NO_COMMAND = "Command '%s' not found"
ACL_DRYRUN_CMD = "This user has no permissions to run the '%s' command"
ACL_DRYRUN_KEY = "This user has no permissions to access the '%s' key"
ACL_DRYRUN_CHANNEL = "This user has no permissions to access the '%s' channel"
SORT_BY_ACL = "BY option of SORT denied due to insufficient ACL permissions."
SORT_GET_ACL = "GET option of SORT denied due to insufficient ACL permissions."
# ---- blocking pops (blocking.py, commands/blocking.py) ----
TIMEOUT_NOT_FLOAT = "timeout is not a float or out of range"
TIMEOUT_NEGATIVE = "timeout is negative"
COUNT_NOT_POSITIVE = "count should be greater than 0"
UNBLOCKED_BY_CLIENT = "UNBLOCKED client unblocked via CLIENT UNBLOCK"
UNBLOCK_REASON = "CLIENT UNBLOCK reason should be TIMEOUT or ERROR"
# ---- operators: SLOWLOG, LATENCY, MONITOR, CLIENT PAUSE (commands/operators.py) ----
SLOWLOG_COUNT = "count should be greater than or equal to -1"
LATENCY_NO_SAMPLES = "No samples available for event '%s'"
MONITOR_DENY_BLOCKING = "MONITOR isn't allowed for DENY BLOCKING client"
PAUSE_TIMEOUT_NOT_INT = "timeout is not an integer or out of range"
PAUSE_TIMEOUT_NEGATIVE = "timeout is negative"
PAUSE_MODE = "CLIENT PAUSE mode must be WRITE or ALL"
NO_SUCH_USER = "No such user '%s'"

# ---- streams (t_stream.c) ----
STREAM_BAD_ID = "Invalid stream ID specified as stream command argument"
XADD_ID_ZERO = "The ID specified in XADD must be greater than 0-0"
XADD_ID_EXHAUSTED = "The stream has exhausted the last possible ID, unable to add more items"
XADD_ID_SMALL = "The ID specified in XADD is equal or smaller than the target stream top item"
XADD_TOO_LARGE = "Elements are too large to be stored"
XTRIM_BOTH = "syntax error, MAXLEN and MINID options at the same time are not compatible"
XTRIM_MAXLEN_NEGATIVE = "The MAXLEN argument must be >= 0."
XTRIM_LIMIT_NEGATIVE = "The LIMIT argument must be >= 0."
XTRIM_LIMIT_NO_STRATEGY = ("syntax error, LIMIT cannot be used without specifying a trimming "
                           "strategy")
XTRIM_NO_STRATEGY = "syntax error, XTRIM must be called with a trimming strategy"
XTRIM_LIMIT_NO_APPROX = "syntax error, LIMIT cannot be used without the special ~ option"
XRANGE_BAD_START = "invalid start ID for the interval"
XRANGE_BAD_END = "invalid end ID for the interval"
XREAD_BLOCK_IN_SCRIPT = "%s command is not allowed with BLOCK option from scripts"
XREAD_UNBALANCED = ("Unbalanced XREAD list of streams: for each stream key an ID or '$' must "
                    "be specified.")
XREAD_GROUP_OPTION = "The GROUP option is only supported by XREADGROUP. You called XREAD instead."
XREAD_NOACK_OPTION = "The NOACK option is only supported by XREADGROUP. You called XREAD instead."
XREADGROUP_MISSING_GROUP = "Missing GROUP option for XREADGROUP"
XREADGROUP_NOGROUP = ("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with "
                      "GROUP option")
XREADGROUP_DOLLAR = ("The $ ID is meaningless in the context of XREADGROUP: you want to read "
                     "the history of this consumer by specifying a proper ID, or use the > ID "
                     "to get new messages. The $ ID would just return an empty result set.")
XREAD_GT_ID = ("The > ID can be specified only when calling XREADGROUP using the GROUP <group> "
               "<consumer> option.")
XREADGROUP_DELETED = "UNBLOCKED the stream key no longer exists"
XREADGROUP_GROUP_GONE = "NOGROUP the consumer group this client was blocked on no longer exists"
TIMEOUT_NOT_INT = "timeout is not an integer or out of range"
XGROUP_ENTRIESREAD = "value for ENTRIESREAD must be positive or -1"
XGROUP_NEEDS_KEY = ("The XGROUP subcommand requires the key to exist. Note that for CREATE you "
                    "may want to use the MKSTREAM option to create an empty stream "
                    "automatically.")
XGROUP_NOGROUP = "NOGROUP No such consumer group '%s' for key name '%s'"
BUSYGROUP = "BUSYGROUP Consumer Group name already exists"
XSETID_ENTRIES_ADDED = "entries_added must be positive"
XSETID_BELOW_MAXDELETED = ("The ID specified in XSETID is smaller than the provided "
                           "max_deleted_entry_id")
XSETID_SMALL = "The ID specified in XSETID is smaller than the target stream top item"
XSETID_ENTRIES_SMALL = ("The entries_added specified in XSETID is smaller than the target "
                        "stream length")
STREAM_NOGROUP = "NOGROUP No such key '%s' or consumer group '%s'"
XCLAIM_MIN_IDLE = "Invalid min-idle-time argument for XCLAIM"
XCLAIM_IDLE = "Invalid IDLE option argument for XCLAIM"
XCLAIM_TIME = "Invalid TIME option argument for XCLAIM"
XCLAIM_RETRYCOUNT = "Invalid RETRYCOUNT option argument for XCLAIM"
XCLAIM_UNKNOWN_OPTION = "Unrecognized XCLAIM option '%s'"
XAUTOCLAIM_MIN_IDLE = "Invalid min-idle-time argument for XAUTOCLAIM"
XAUTOCLAIM_COUNT = "COUNT must be > 0"
