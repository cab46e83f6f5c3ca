"""Floating point and numeric codecs for `weir.codec` (PostgreSQL 15 formats).

Floats print the shortest round-trip digits (extra_float_digits=1), fixed
notation for decimal exponents in [-4, 15) for double precision and [-4, 6)
for real, otherwise '1e+20' style. Numerics are `decimal.Decimal`s printed
without exponent; the binary form is PostgreSQL's NumericVar: int16 ndigits,
int16 weight, uint16 sign, int16 dscale, then base-10000 digits.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from fractions import Fraction

from weir.errors import SqlState, WeirError

_F4 = struct.Struct(">f")
_F8 = struct.Struct(">d")
_NUM_HEAD = struct.Struct(">hhHh")
_NUM_STRUCTS: dict[int, struct.Struct] = {}
_NUMERIC_POS, _NUMERIC_NEG, _NUMERIC_NAN = 0x0000, 0x4000, 0xC000
_NUMERIC_PINF, _NUMERIC_NINF = 0xD000, 0xF000
_NUMERIC_DSCALE_MAX = 0x3FFF
_NUMERIC_WEIGHT_MAX = 131072 // 4
_CTX = Context(prec=1_000_000, Emax=999_999_999, Emin=-999_999_999)
_INF = math.inf

_SPECIAL_FLOATS = {
    "nan": math.nan, "+nan": math.nan, "-nan": math.nan,
    "infinity": _INF, "+infinity": _INF, "-infinity": -_INF,
    "inf": _INF, "+inf": _INF, "-inf": -_INF,
}
_FLOAT_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*\Z", re.ASCII)
_NUMERIC_RE = re.compile(r"\s*([+-]?(?:\d+\.?\d*|\.\d+))(?:[eE]([+-]?\d+))?\s*\Z", re.ASCII)
_NONZERO = re.compile(r"[1-9]")
_SPECIAL_NUMERICS = {
    "nan": Decimal("NaN"), "infinity": Decimal("Infinity"), "+infinity": Decimal("Infinity"),
    "-infinity": Decimal("-Infinity"), "inf": Decimal("Infinity"), "+inf": Decimal("Infinity"),
    "-inf": Decimal("-Infinity"),
}


def _err(state: str, message: str, detail: str | None = None) -> WeirError:
    return WeirError(state, message, detail)


# ---------------------------------------------------------------- floats


def _special_float_out(v: float) -> str:
    if v != v:
        return "NaN"
    return "Infinity" if v > 0 else "-Infinity"


def _digits_out(neg: bool, digits: str, exp: int, fixed_below: int) -> str:
    """Format significant digits d.ddd x 10^exp like PostgreSQL's Ryu output."""
    sign = "-" if neg else ""
    if -4 <= exp < fixed_below:
        if exp < 0:
            return f"{sign}0.{'0' * (-exp - 1)}{digits}"
        whole, frac = digits[: exp + 1].ljust(exp + 1, "0"), digits[exp + 1 :]
        return f"{sign}{whole}.{frac}" if frac else sign + whole
    mantissa = f"{digits[0]}.{digits[1:]}" if len(digits) > 1 else digits
    return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _shortest(ax: float, bits: int, min_exp: int, start: int) -> tuple[str, int]:
    """Ryu's shortest digits (as PostgreSQL builds it: both interval bounds excluded).

    ax is a positive finite float with a `bits`-bit significand; returns the
    significant digits without trailing zeros and the decimal exponent.
    """
    m, e = math.frexp(ax)
    ulp_exp = max(e - bits, min_exp)
    half = Fraction(2) ** (ulp_exp - 1)
    pow2 = m == 0.5 and e - bits > min_exp
    x = Fraction(ax)
    lo, hi = x - (half / 2 if pow2 else half), x + half
    for p in range(start, 18):
        mant, _, ex = f"{ax:.{p - 1}e}".partition("e")
        n, exp10 = int(mant.replace(".", "")), int(ex) - p + 1
        d = n * Fraction(10) ** exp10
        if not lo < d < hi and pow2:  # the other side of an asymmetric interval
            n += 1 if d < x else -1
            d = n * Fraction(10) ** exp10
        if lo < d < hi:
            ds = str(n)
            return ds.rstrip("0") or "0", exp10 + len(ds) - 1
    raise AssertionError(ax)


def float8_out(v: float) -> str:
    if not isinstance(v, float):
        v = float(v)
    r = float.__repr__(v)
    if r.endswith(".0"):
        r = r[:-2]
    elif v != v or v in (_INF, -_INF):
        return _special_float_out(v)
    a = -v if v < 0 else v
    if a >= 9007199254740992.0:  # 2**53: bounds can be short decimals that Ryu excludes
        mant, _, ex = r.lstrip("-").partition("e")
        digits = mant.replace(".", "").rstrip("0")
        exp = int(ex) if ex else len(mant.partition(".")[0]) - 1
        shortest = _shortest(a, 53, -1074, len(digits))
        if shortest != (digits, exp) or exp == 15:
            return _digits_out(v < 0, *shortest, 15)
    elif 1e15 <= a:  # Python prints these in fixed notation, PostgreSQL does not
        digits = r.lstrip("-").replace(".", "").rstrip("0")
        return _digits_out(v < 0, digits, 15, 15)
    return r


def float4_round(v: float) -> float:
    return _F4.unpack(_F4.pack(v))[0]


def _f4_reads_back(s: str, a: float) -> bool:
    try:
        return _F4.unpack(_F4.pack(float(s)))[0] == a
    except OverflowError:
        return False


def float4_out(v: float) -> str:
    v = float(v)
    if v != v or v in (_INF, -_INF):
        return _special_float_out(v)
    x = float4_round(v)
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    a = -x if x < 0 else x
    s, p = "", 9
    lo, hi = 1, 9  # binary search for the fewest correctly rounded digits that read back
    while lo < hi:
        mid = (lo + hi) // 2
        if _f4_reads_back(f"{a:.{mid - 1}e}", a):
            hi = mid
        else:
            lo = mid + 1
    p = lo
    s = f"{a:.{p - 1}e}"
    pow2 = math.frexp(a)[0] == 0.5
    if pow2 or a >= 16777216.0:  # 2**24: check against Ryu's exclusive bounds
        return _digits_out(x < 0, *_shortest(a, 24, -149, 1 if pow2 else p), 6)
    mant, _, e = s.partition("e")
    return _digits_out(x < 0, mant.replace(".", "").rstrip("0") or "0", int(e), 6)


def _float_in(s: str, tname: str) -> float:
    m = _FLOAT_RE.match(s)
    if m is None:
        special = _SPECIAL_FLOATS.get(s.strip().lower())
        if special is None:
            raise _err(SqlState.INVALID_TEXT_REPRESENTATION,
                       f'invalid input syntax for type {tname}: "{s}"')
        return special
    text = m.group(1)
    v = float(text)
    if v in (_INF, -_INF) or (v == 0 and _NONZERO.search(text.partition("e")[0].partition("E")[0])):
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type {tname}')
    return v


def float8_in(s: str) -> float:
    return _float_in(s, "double precision")


def float4_in(s: str) -> float:
    v = _float_in(s, "real")
    if v != v or v in (_INF, -_INF):
        return v
    try:
        r = float4_round(v)
    except OverflowError:
        r = _INF
    if r in (_INF, -_INF) or (r == 0 and v != 0):
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, f'"{s}" is out of range for type real')
    return r


def float8_send(v: float) -> bytes:
    return _F8.pack(v)


def float4_send(v: float) -> bytes:
    try:
        return _F4.pack(v)
    except OverflowError:
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow") from None


def float8_recv(data: bytes) -> float:
    return _F8.unpack(data)[0]


def float4_recv(data: bytes) -> float:
    return _F4.unpack(data)[0]


def float_from_number(v: object, tname: str) -> float:
    """Assignment of an int/Decimal/float to real or double precision."""
    if isinstance(v, Decimal) and v.is_finite() or isinstance(v, int):
        try:
            f = float(v)
        except OverflowError:
            f = _INF
        if f in (_INF, -_INF) or (tname == "real" and _f4_overflows(f)):
            raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE,
                       f'"{numeric_out(Decimal(v))}" is out of range for type {tname}')
        return float4_round(f) if tname == "real" else f
    f = float(v)  # type: ignore[arg-type]
    if tname == "real" and f == f and f not in (_INF, -_INF):
        if _f4_overflows(f):
            raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")
        return float4_round(f)
    return f


def _f4_overflows(f: float) -> bool:
    try:
        return float4_round(f) in (_INF, -_INF)
    except OverflowError:
        return True


# ---------------------------------------------------------------- numeric


def numeric_out(v: Decimal) -> str:
    if not isinstance(v, Decimal):
        if isinstance(v, int):
            return str(v)
        v = Decimal(float8_out(v)) if isinstance(v, float) else Decimal(v)  # type: ignore[arg-type]
    s = str(v)
    if "E" in s or "n" in s or "N" in s or (s[0] == "-" and not v):
        if v.is_nan():
            return "NaN"
        if v.is_infinite():
            return "-Infinity" if v < 0 else "Infinity"
        if not v:
            v = v.copy_abs()
        return format(v, "f")
    return s


def numeric_out_trimmed(v: Decimal) -> str:
    """Unconstrained numeric's text: without trailing fractional zeros, as Materialize
    prints every numeric (its documented difference from PostgreSQL). weir cannot keep
    PostgreSQL's per-value scale: Spark holds unconstrained numeric as DECIMAL(38,10)."""
    s = numeric_out(v)
    if "." in s and s[-1] == "0":
        s = s.rstrip("0").rstrip(".")
        if s == "-0":
            s = "0"
    return s


def numeric_trimmed(v: Decimal) -> Decimal:
    """The value numeric_out_trimmed prints (binary format: dscale without trailing zeros)."""
    if isinstance(v, Decimal) and v.is_finite() and v.as_tuple().exponent < 0:  # type: ignore[operator]
        return Decimal(numeric_out_trimmed(v))
    return v


def _check_numeric_range(d: Decimal) -> Decimal:
    exp = d.as_tuple().exponent
    assert isinstance(exp, int)
    if -exp > _NUMERIC_DSCALE_MAX or (d and d.adjusted() >= _NUMERIC_WEIGHT_MAX * 4):
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    if exp > 0:  # no positive exponents: '1e2' has scale 0 and prints as '100'
        d = d.quantize(Decimal(1), context=_CTX)
    return d


def numeric_in(s: str) -> Decimal:
    m = _NUMERIC_RE.match(s)
    if m is None:
        special = _SPECIAL_NUMERICS.get(s.strip().lower())
        if special is None:
            raise _err(SqlState.INVALID_TEXT_REPRESENTATION,
                       f'invalid input syntax for type numeric: "{s}"')
        return special
    mant, exp = m.groups()
    if exp is not None and abs(int(exp)) > 2_000_000:
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    d = Decimal(mant if exp is None else f"{mant}E{exp}")
    if d.is_signed() and not d:
        d = d.copy_abs()
    return _check_numeric_range(d)


def numeric_from_number(v: object) -> Decimal:
    """Assignment of an int/float/Decimal to numeric (floats keep 15 digits like PG)."""
    if isinstance(v, Decimal):
        d = v
    elif isinstance(v, float):
        if v != v or v in (_INF, -_INF):
            return Decimal(v)
        d = Decimal(f"{v:.15g}")
    else:
        d = Decimal(v)  # type: ignore[arg-type]
    if not d.is_finite():
        return Decimal("NaN") if d.is_nan() else d
    if d.is_signed() and not d:
        d = d.copy_abs()
    return _check_numeric_range(d)


def numeric_typmod(d: Decimal, precision: int, scale: int) -> Decimal:
    """Round to numeric(precision, scale) the way PostgreSQL's apply_typmod does."""
    if d.is_nan():
        return d
    if d.is_infinite():
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                   f"A field with precision {precision}, scale {scale} cannot hold an infinite value.")
    try:
        r = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_CTX)
    except InvalidOperation:
        r = d
    maxdigits = precision - scale
    if r and r.adjusted() >= maxdigits:
        limit = f"10^{maxdigits}" if maxdigits else "1"
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                   f"A field with precision {precision}, scale {scale} must round to an "
                   f"absolute value less than {limit}.")
    return r.copy_abs() if not r else r


def numeric_stored(d: Decimal, precision: int = 38, scale: int = 10) -> Decimal:
    """An unconstrained numeric value as weir stores it (Spark's DECIMAL(38,10), README
    "numeric"). A value it cannot hold exactly is refused, never rounded: PostgreSQL and
    Materialize would keep every digit the user wrote. (numeric(p,s) columns round, as
    PostgreSQL does: the user chose the scale.)"""
    if not d.is_finite():
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"weir's numeric cannot store {numeric_out(d)}",
                        hint="NaN and Infinity are values of double precision in weir")
    exponent = d.normalize().as_tuple().exponent
    assert isinstance(exponent, int)
    if d and -exponent > scale:
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE,
                        f"{numeric_out(d)} has more fractional digits than weir's numeric holds exactly",
                        detail=f"weir's unconstrained numeric holds {scale} digits after the decimal "
                               f"point and {precision - scale} before it.",
                        hint=f"declare the column numeric(p, s) with the scale you need (s up to "
                             f"{precision}), or round the value")
    try:
        return numeric_typmod(d, precision, scale)
    except WeirError as e:
        raise _err(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow",
                   f"weir's unconstrained numeric holds at most {precision - scale} digits before "
                   f"the decimal point and {scale} after it.") from e


def numeric_send(v: Decimal) -> bytes:
    if not isinstance(v, Decimal):
        v = numeric_from_number(v)
    if not v.is_finite():
        if v.is_nan():
            return _NUM_HEAD.pack(0, 0, _NUMERIC_NAN, 0)
        # PostgreSQL reports dscale 32 for infinities (its header bits read as a scale).
        return _NUM_HEAD.pack(0, 0, _NUMERIC_NINF if v < 0 else _NUMERIC_PINF, 32)
    sign, digits, exp = v.as_tuple()
    assert isinstance(exp, int)
    n = int("".join(map(str, digits)))
    dscale = -exp if exp < 0 else 0
    if exp >= 0:
        n *= 10**exp
        frac_groups = 0
    else:
        pad = exp % 4
        n *= 10**pad
        frac_groups = (dscale + pad) // 4
    if not n:
        return _NUM_HEAD.pack(0, 0, _NUMERIC_POS, dscale)
    groups: list[int] = []
    while n:
        n, r = divmod(n, 10000)
        groups.append(r)
    weight = len(groups) - frac_groups - 1
    low = 0
    while groups[low] == 0:
        low += 1
    groups = groups[low:]
    groups.reverse()
    n = len(groups)
    st = _NUM_STRUCTS.get(n)
    if st is None:
        st = _NUM_STRUCTS[n] = struct.Struct(f">hhHh{n}H")
    return st.pack(n, weight, _NUMERIC_NEG if sign else _NUMERIC_POS, dscale, *groups)


def _bad_numeric(what: str) -> WeirError:
    return _err(SqlState.INVALID_BINARY_REPRESENTATION, f'invalid {what} in external "numeric" value')


def numeric_recv(data: bytes) -> Decimal:
    ndigits, weight, sign, dscale = _NUM_HEAD.unpack_from(data)
    if ndigits < 0 or ndigits > 3000:
        raise _bad_numeric("length")
    if len(data) != 8 + 2 * ndigits:
        raise struct.error("numeric length")
    if sign == _NUMERIC_NAN:
        return Decimal("NaN")
    if sign in (_NUMERIC_PINF, _NUMERIC_NINF):
        return Decimal("Infinity" if sign == _NUMERIC_PINF else "-Infinity")
    if sign not in (_NUMERIC_POS, _NUMERIC_NEG):
        raise _bad_numeric("sign")
    if dscale < 0 or dscale > _NUMERIC_DSCALE_MAX:
        raise _bad_numeric("scale")
    n = 0
    for g in struct.unpack_from(f">{ndigits}H", data, 8):
        if g >= 10000:
            raise _bad_numeric("digit")
        n = n * 10000 + g
    exp10 = 4 * (weight - ndigits + 1)
    if exp10 >= -dscale:
        n *= 10 ** (exp10 + dscale)
    else:  # digits beyond dscale are truncated away, as numeric_recv does
        n //= 10 ** (-dscale - exp10)
    return Decimal(f"{'-' if sign == _NUMERIC_NEG and n else ''}{n}E{-dscale}")
