"""PostgreSQL's numeric functions, exactly: the result scales of numeric.c
(select_div_scale, numeric_ln/log/sqrt/exp) with Python decimals. The constant
evaluator calls them on the coordinator, and the replica's UDF `weir_numeric`
(weir.codec.spark_udfs) in Spark jobs: Spark has them only in double precision, and
its decimal division keeps as few as 6 fractional digits."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Context, Decimal

from weir.errors import SqlState, WeirError

_MIN_SIG_DIGITS = 16
_MAX_SCALE = 1000
_CTX = Context(prec=1100)
CONTEXT = _CTX  # the precision every operation here computes with


def dscale(d: Decimal) -> int:
    exponent = d.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _weight(d: Decimal) -> tuple[int, int]:
    """(weight, first digit) of d in PostgreSQL's base-10000 digits."""
    if d == 0:
        return 0, 0
    w = d.copy_abs().adjusted() // 4
    return w, int(d.copy_abs().scaleb(-4 * w, _CTX))


def _round(d: Decimal, scale: int) -> Decimal:
    return d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_CTX)


def div(a: Decimal, b: Decimal) -> Decimal:
    if b == 0:
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
    w1, f1 = _weight(a)
    w2, f2 = _weight(b)
    qweight = w1 - w2 - (1 if f1 <= f2 else 0)
    rscale = min(max(_MIN_SIG_DIGITS - qweight * 4, dscale(a), dscale(b), 0), _MAX_SCALE)
    if a == 0:
        return _round(Decimal(0), rscale)
    return _round(_CTX.divide(a, b), rscale)


def _ln_dweight(d: Decimal) -> int:
    if Decimal("0.9") <= d <= Decimal("1.1"):
        x = d - 1
        return x.adjusted() if x != 0 else 0
    return int(math.log10(abs(float(_CTX.ln(d)))))


def _check_log(d: Decimal) -> None:
    if d == 0:
        raise WeirError("2201E", "cannot take logarithm of zero")
    if d < 0:
        raise WeirError("2201E", "cannot take logarithm of a negative number")


def ln(d: Decimal) -> Decimal:
    if not d.is_finite():  # numeric_ln: NaN and +Infinity are their own logarithm
        if not d.is_nan():
            _check_log(d)
        return d
    _check_log(d)
    rscale = min(max(_MIN_SIG_DIGITS - _ln_dweight(d), dscale(d), 0), _MAX_SCALE)
    return _round(_CTX.ln(d), rscale)


def log(base: Decimal, d: Decimal) -> Decimal:
    if not (base.is_finite() and d.is_finite()):  # numeric_log's special values
        if base.is_nan() or d.is_nan():
            return Decimal("NaN")
        _check_log(base)
        _check_log(d)
        if base.is_infinite():
            return Decimal("NaN") if d.is_infinite() else Decimal(0)
        return d  # log(finite, Infinity) = Infinity
    _check_log(base)
    _check_log(d)
    if base == 1:
        raise WeirError(SqlState.DIVISION_BY_ZERO, "division by zero")
    result_dweight = _ln_dweight(d) - _ln_dweight(base)
    rscale = min(max(_MIN_SIG_DIGITS - result_dweight, dscale(base), dscale(d), 0), _MAX_SCALE)
    return _round(_CTX.divide(_CTX.ln(d), _CTX.ln(base)), rscale)


def sqrt(d: Decimal) -> Decimal:
    if d.is_nan():
        return d
    if d < 0:
        raise WeirError("2201F", "cannot take square root of a negative number")
    if d.is_infinite():
        return d
    w, _ = _weight(d)
    sweight = (w + 1) * 4 // 2 - 1
    rscale = min(max(_MIN_SIG_DIGITS - sweight, dscale(d), 0), _MAX_SCALE)
    return _round(_CTX.sqrt(d), rscale)


def exp(d: Decimal) -> Decimal:
    if not d.is_finite():  # PostgreSQL: exp(NaN) = NaN, exp(-Infinity) = 0, exp(Infinity) = Infinity
        return Decimal(0) if d.is_infinite() and d < 0 else d
    val = float(d)
    if val * 0.434294481903252 > 131072:
        raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
    rscale = min(max(_MIN_SIG_DIGITS - int(val * 0.434294481903252), dscale(d), 0), _MAX_SCALE)
    return _round(_CTX.exp(d), rscale)


_INT32 = 2**31


def power(base: Decimal, e: Decimal) -> Decimal:
    """PostgreSQL 15's numeric power (numeric_power / power_var): an integral exponent that
    fits an int32 gives the exact power at scale max(16, base's scale); any other is
    exp(e * ln(base)) at 16 significant digits (or the inputs' scales, if larger)."""
    if base == 0 and e < 0:
        raise WeirError("2201F", "zero raised to a negative power is undefined")
    integral = e == e.to_integral_value()
    if base < 0 and not integral:
        raise WeirError("2201F", "a negative number raised to a non-integer power yields a complex result")
    if integral and -_INT32 <= e < _INT32:
        n = int(e)
        rscale = min(max(_MIN_SIG_DIGITS, dscale(base), 0), _MAX_SCALE)
        if base == 0 or n == 0:
            return _round(Decimal(1) if n == 0 else Decimal(0), rscale)
        weight = n * math.log10(abs(float(base))) if abs(base) < Decimal("1e300") \
            else n * float(abs(base).log10(_CTX))
        if weight > 1000:
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
        if weight + 1 < -rscale:
            return _round(Decimal(0), rscale)
        return _round(_CTX.power(base, n), rscale)
    if base == 0:
        return _round(Decimal(0), _MIN_SIG_DIGITS)
    negative = base < 0 and int(e) % 2 == 1
    product = _CTX.multiply(_CTX.ln(abs(base)), e)
    val = float(product)
    if abs(val) > 1000 * 3.01:
        if val > 0:
            raise WeirError(SqlState.NUMERIC_VALUE_OUT_OF_RANGE, "value overflows numeric format")
        return _round(Decimal(0), 1000)
    val *= 0.434294481903252
    rscale = min(max(_MIN_SIG_DIGITS - int(val), dscale(base), dscale(e), 0), _MAX_SCALE)
    result = _round(_CTX.exp(product), rscale)
    return -result if negative and result else result


FLOAT4_DIGITS, FLOAT8_DIGITS = 6, 15  # FLT_DIG, DBL_DIG


def from_float(d: Decimal, digits: int) -> Decimal:
    """float4/float8 -> numeric as PostgreSQL converts: the value printed with `%.{digits}g`
    (FLT_DIG 6, DBL_DIG 15 significant digits: 1.23::float4 is 1.23, not 1.23000001907349),
    rounded half to even on the exact binary value as glibc's printf (and Python's format)."""
    if not d.is_finite():
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"cannot convert {'NaN' if d.is_nan() else 'infinity'} to numeric",
                        hint="weir's numeric holds finite values only.")
    return Decimal(format(float(d), f".{digits}g"))


# operation name (of the replica's UDF weir_numeric) -> function
OPERATIONS = {
    "div": div, "ln": ln, "sqrt": sqrt, "exp": exp, "power": power,
    "float4": lambda d: from_float(d, FLOAT4_DIGITS), "float8": lambda d: from_float(d, FLOAT8_DIGITS),
    "log": lambda *a: log(*a) if len(a) == 2 else log(Decimal(10), a[0]),
}
