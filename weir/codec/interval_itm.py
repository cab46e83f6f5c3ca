"""What interval input adds up as it reads a value: PostgreSQL's struct pg_itm_in (years,
months, days, microseconds, each range-checked) and how a unit's fraction cascades into
the smaller ones (AdjustFractMicroseconds / Days / Years, in doubles). Shared by the
PostgreSQL-format reader (weir.codec.interval_parse) and the ISO 8601 one
(weir.codec.interval_iso)."""

from __future__ import annotations

from weir.codec.interval import INT32, INT64, USEC_PER_DAY


class BadFormat(Exception):
    """DTERR_BAD_FORMAT"""


class FieldOverflow(Exception):
    """DTERR_FIELD_OVERFLOW"""


class ItmIn:
    """The value read so far, field by field (PostgreSQL's struct pg_itm_in)."""

    def __init__(self) -> None:
        self.usec = 0
        self.mday = 0
        self.mon = 0
        self.year = 0

    def checked(self, v: int, bounds: tuple[int, int]) -> int:
        if not bounds[0] <= v <= bounds[1]:
            raise FieldOverflow
        return v

    def fract_micros(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        usec = int(frac)
        frac -= usec
        usec += int(round(frac))
        self.usec = self.checked(self.usec + usec, INT64)

    def fract_days(self, frac: float, scale: int) -> None:
        if frac == 0:
            return
        frac *= scale
        extra = int(frac)
        self.mday = self.checked(self.mday + extra, INT32)
        frac -= extra
        self.fract_micros(frac, USEC_PER_DAY)

    def fract_years(self, frac: float, scale: int) -> None:
        self.mon = self.checked(self.mon + int(round(frac * scale * 12)), INT32)

    def micros(self, val: int, fval: float, scale: int) -> None:
        self.usec = self.checked(self.usec + self.checked(val * scale, INT64), INT64)
        self.fract_micros(fval, scale)

    def days(self, val: int, scale: int) -> None:
        self.mday = self.checked(self.mday + self.checked(self.checked(val, INT32) * scale, INT32), INT32)

    def months(self, val: int) -> None:
        self.mon = self.checked(self.mon + self.checked(val, INT32), INT32)

    def years(self, val: int, scale: int) -> None:
        self.year = self.checked(self.year + self.checked(self.checked(val, INT32) * scale, INT32), INT32)
