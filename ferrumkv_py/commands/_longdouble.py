"""x87 80-bit long double arithmetic for INCRBYFLOAT and HINCRBYFLOAT, exact as in Redis.

Redis parses increments with strtold, adds in `long double` (64-bit significand on x86-64)
and prints the sum with "%.17Lf" minus trailing zeros.  Doubles would print 10.5 + 0.1 as
10.59999999999999964, so the arithmetic is redone here exactly with integers: a finite
value is (m, e) meaning m * 2**e with |m| < 2**64, rounded to nearest, ties to even, with
subnormals below 2**-16382 and overflow past 2**16384, as the hardware does.

Complexity: each function's docstring; all are O(digits or exponent bits) big-int work.
"""

from __future__ import annotations

from .. import errors
from ..errors import CommandError

LD_MANT_BITS = 64             # significand bits of the x87 extended format
LD_EXP_MIN = -16445           # exponent of the smallest subnormal step, 2**-16445
LD_EXP_MAX = 16320            # largest e of a finite m * 2**e with 2**63 <= m < 2**64
LD_DEC_MAX_EXP = 4933         # 10**4933 > largest long double (about 1.19e4932)
LD_DEC_MIN_EXP = -4952        # 10**-4952 < half the smallest subnormal (about 1.8e-4951)
LD_MAX_CHARS = 5 * 1024       # Redis MAX_LONG_DOUBLE_CHARS: longer inputs are refused
LD_HUMAN_DECIMALS = 17        # "%.17Lf"
LD_INF = "inf"                # parsed infinity (the sign does not matter to INCRBYFLOAT)
_INT_STR_CHUNK = 4000         # digits per int<->str step (CPython limits one step to 4300)

_LD_DEC = None
_LD_HEX = None
_LD_INF_RX = None


def _ld_regexes():
    global _LD_DEC, _LD_HEX, _LD_INF_RX
    import re
    _LD_DEC = re.compile(rb"([+-]?)(?:([0-9]+)\.?([0-9]*)|\.([0-9]+))(?:[eE]([+-]?[0-9]+))?\Z")
    _LD_HEX = re.compile(rb"([+-]?)0[xX](?:([0-9a-fA-F]+)\.?([0-9a-fA-F]*)|\.([0-9a-fA-F]+))"
                         rb"(?:[pP]([+-]?[0-9]+))?\Z")
    _LD_INF_RX = re.compile(rb"[+-]?inf(?:inity)?\Z", re.IGNORECASE)


def _dec_int(digits: bytes) -> int:
    """int(digits) without CPython's 4300-digit conversion limit."""
    if len(digits) <= _INT_STR_CHUNK:
        return int(digits or b"0")
    head = _dec_int(digits[:-_INT_STR_CHUNK])
    return head * 10 ** _INT_STR_CHUNK + int(digits[-_INT_STR_CHUNK:])


def _int_dec(n: int) -> str:
    """str(n) for n >= 0 without CPython's 4300-digit conversion limit."""
    if n < 10 ** _INT_STR_CHUNK:
        return str(n)
    hi, lo = divmod(n, 10 ** _INT_STR_CHUNK)
    return _int_dec(hi) + str(lo).zfill(_INT_STR_CHUNK)


def _ld_round(num: int, den: int):
    """The long double nearest to num/den > 0 as (m, e); None on overflow, (0, 0) on
    underflow to zero.  Complexity: O(bits of num and den)."""
    e = max(num.bit_length() - den.bit_length() - LD_MANT_BITS, LD_EXP_MIN)
    while True:
        n, d = (num, den << e) if e >= 0 else (num << -e, den)
        q, r = divmod(n, d)
        if q >> LD_MANT_BITS:
            e += 1
        elif not q >> (LD_MANT_BITS - 1) and e > LD_EXP_MIN:
            e -= 1
        else:
            break
    if 2 * r > d or (2 * r == d and q & 1):
        q += 1
        if q >> LD_MANT_BITS:
            q >>= 1
            e += 1
    if e > LD_EXP_MAX:
        return None
    return (q, e) if q else (0, 0)


def parse_long_double(b: bytes, msg: str = errors.NOT_FLOAT):
    """Redis string2ld: strtold over the whole string (no NUL inside), no leading space, no
    NaN, no overflow, no underflow to zero.  Returns (m, e) or LD_INF.
    Complexity: O(len(b)) plus big-int work proportional to the exponent."""
    if _LD_DEC is None:
        _ld_regexes()
    if not b or len(b) >= LD_MAX_CHARS or b[:1].isspace() or b"\0" in b:
        raise CommandError(msg)        # a NUL would end strtold early: Redis checks length
    m = _LD_DEC.match(b)
    if m is not None:
        sign, ip, fp, only_fp, exp = m.groups()
        digits = (ip + fp) if ip is not None else only_fp
        exp10 = int(exp or b"0") - len(fp if ip is not None else only_fp)
        digits = digits.lstrip(b"0")
        if not digits:
            return (0, 0)
        mag = len(digits) + exp10           # value < 10**mag
        if mag - 1 >= LD_DEC_MAX_EXP or mag < LD_DEC_MIN_EXP:
            raise CommandError(msg)
        n = _dec_int(digits)
        r = _ld_round(n * 10 ** exp10, 1) if exp10 >= 0 else _ld_round(n, 10 ** -exp10)
    else:
        m = _LD_HEX.match(b)
        if m is None:
            if _LD_INF_RX.match(b):
                return LD_INF
            raise CommandError(msg)
        sign, ip, fp, only_fp, exp = m.groups()
        hexd = (ip + fp) if ip is not None else only_fp
        exp2 = int(exp or b"0") - 4 * len(fp if ip is not None else only_fp)
        n = int(hexd, 16)
        if not n:
            return (0, 0)
        bits = n.bit_length() + exp2
        if bits > LD_EXP_MAX + LD_MANT_BITS + 1 or bits < LD_EXP_MIN - 1:
            raise CommandError(msg)
        r = _ld_round(n << exp2, 1) if exp2 >= 0 else _ld_round(n, 1 << -exp2)
    if r is None or r == (0, 0):
        raise CommandError(msg)
    return (-r[0], r[1]) if sign == b"-" else r


def long_double_add(a, b):
    """a + b rounded to long double; LD_INF when it overflows or an operand is infinite.
    Complexity: O(|e_a - e_b|) bits."""
    if a is LD_INF or b is LD_INF:
        return LD_INF
    (ma, ea), (mb, eb) = a, b
    e = min(ea, eb)
    total = (ma << (ea - e)) + (mb << (eb - e))
    if total == 0:
        return (0, 0)
    mag = abs(total)
    r = _ld_round(mag << e, 1) if e >= 0 else _ld_round(mag, 1 << -e)
    if r is None:
        return LD_INF
    return (-r[0], r[1]) if total < 0 else r


def format_long_double_human(v) -> bytes:
    """Redis ld2string(LD_STR_HUMAN): "%.17Lf", trailing zeros and '.' removed, "-0" -> "0".
    Complexity: O(digits)."""
    m, e = v
    scale = 10 ** LD_HUMAN_DECIMALS
    if e >= 0:
        n = (abs(m) * scale) << e
    else:
        d = 1 << -e
        n, r = divmod(abs(m) * scale, d)
        if 2 * r > d or (2 * r == d and n & 1):
            n += 1
    s = _int_dec(n).rjust(LD_HUMAN_DECIMALS + 1, "0")
    ip, fp = s[:-LD_HUMAN_DECIMALS], s[-LD_HUMAN_DECIMALS:].rstrip("0")
    text = ip + "." + fp if fp else ip
    if m < 0 and text != "0":
        text = "-" + text
    return text.encode()
