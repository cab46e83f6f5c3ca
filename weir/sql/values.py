"""Literal values weir can only partly represent on Spark, checked where they enter a query."""

from __future__ import annotations

import datetime as dt

from weir.codec import interval as cinterval
from weir.errors import SqlState, WeirError


def interval_literal(text: str) -> dt.timedelta:
    """An interval literal for Spark: only values a day-time interval shows as PostgreSQL
    does ('1 month' has no days count, '36 hours' is not '1 day 12:00:00')."""
    value = cinterval.parse(text)
    td = value.as_timedelta()
    if td is None:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f"interval '{text}' is not supported here: weir computes intervals as days and "
                        "time of day (no months, hours below 24 with the sign of the days)")
    return td
