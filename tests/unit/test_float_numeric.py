"""float4/float8 -> numeric as PostgreSQL 15 converts (float4_numeric / float8_numeric:
FLT_DIG and DBL_DIG significant digits of the exact binary value)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from weir.codec.numeric_math import FLOAT4_DIGITS, FLOAT8_DIGITS, from_float
from weir.errors import WeirError


@pytest.mark.parametrize(("value", "want"), [
    (1.23, "1.23"), (1234565, "1234560"), (1234575, "1234580"), (1.2345678, "1.23457"),
    (1e-7, "1E-7"), (-0.5, "-0.5"), (3.4e38, "3.4E+38"),
])
def test_float4(value: float, want: str) -> None:
    assert from_float(Decimal(float(np.float32(value))), FLOAT4_DIGITS) == Decimal(want)


@pytest.mark.parametrize(("value", "want"), [
    (0.1, "0.1"), (1.2345678901234567, "1.23456789012346"), (1e20, "1E+20"), (2.0 ** 53, "9007199254740990"),
])
def test_float8(value: float, want: str) -> None:
    assert from_float(Decimal(value), FLOAT8_DIGITS) == Decimal(want)


def test_nan_and_infinity_are_refused() -> None:
    for v in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(WeirError) as info:
            from_float(Decimal(v), FLOAT8_DIGITS)
        assert info.value.sqlstate == "0A000"
