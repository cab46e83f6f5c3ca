"""Intervals a day-time interval cannot hold ('1 month', '36 hours', '1 day -1 hour'), in
arithmetic with dates and timestamps.

PostgreSQL's interval has three fields: months, days and microseconds. Added to a
timestamp it moves the calendar by the months (clamped to the month's last day), then by
the days, then by the time. Spark's calendar interval (`make_interval`) has the same three
fields and its timestamp + interval does the same three steps in the same order (weir's
replicas run in UTC, weir's only time zone), so `ts + INTERVAL '1 month'` runs on Spark as
written. A calendar interval can do nothing else faithfully on Spark (compare, sum,
multiply, become a column: Spark cannot store or compare one), so everywhere else such a
literal is refused with 0A000, as before.
"""

from __future__ import annotations

from sqlglot import exp

from weir import types as T
from weir.codec import interval as cinterval
from weir.errors import SqlState, WeirError
from weir.sql import infer
from weir.sql.infer import Types

_USEC_PER_HOUR = 3_600_000_000
_INT_MAX = 2**31


def literal(value: cinterval.PgInterval) -> exp.Expression:
    """`make_interval(0, months, 0, days, hours, 0, seconds)`: Spark's calendar interval
    with exactly the value's three fields (the time split into whole hours and the rest,
    both with the time's sign)."""
    sign = -1 if value.micros < 0 else 1
    hours, rest = divmod(abs(value.micros), _USEC_PER_HOUR)
    if hours >= _INT_MAX:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                        f'interval "{cinterval.out(value)}" is not supported: more than 2^31 hours')
    secs = f"{'-' if sign < 0 else ''}{rest // 1_000_000}.{rest % 1_000_000:06d}"
    node = exp.Anonymous(this="make_interval", expressions=[
        exp.Literal.number(0), exp.Literal.number(value.months), exp.Literal.number(0),
        exp.Literal.number(value.days), exp.Literal.number(sign * hours), exp.Literal.number(0),
        exp.Cast(this=exp.Literal.string(secs), to=exp.DataType.build("DECIMAL(18,6)"))])
    node.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    node.meta["weir_calendar"] = cinterval.out(value)
    return node


def is_calendar(node: exp.Expression) -> bool:
    """A calendar interval literal, parenthesised or negated."""
    while isinstance(node, (exp.Paren, exp.Neg)):
        node = node.this
    return isinstance(node, exp.Anonymous) and "weir_calendar" in node.meta


def check_use(node: exp.Expression, types: Types) -> exp.Expression:
    """A calendar interval literal passes only as the interval of `date/timestamp ±
    interval` (or `interval + date/timestamp`); anything else is refused."""
    cur = node
    while isinstance(cur.parent, (exp.Paren, exp.Neg)):
        cur = cur.parent
    parent = cur.parent
    if isinstance(parent, (exp.Add, exp.Sub)):
        other = parent.expression if cur.arg_key == "this" else parent.this
        if (isinstance(parent, exp.Add) or cur.arg_key == "expression") and _datetime(types.of(other)):
            return node
    raise WeirError(SqlState.FEATURE_NOT_SUPPORTED,
                    f"interval '{node.meta['weir_calendar']}' is not supported here",
                    hint="weir computes an interval with months, or with hours beyond a day, only "
                         "added to or subtracted from a date or timestamp (Spark's day-time "
                         "interval holds days and time of day only)")


def arith(node: exp.Expression, types: Types) -> exp.Expression:
    """`date ± interval` is a timestamp (without time zone) in PostgreSQL: the date is cast
    to one first (Spark would add a calendar interval to the date and keep a date, and a
    day-time interval to its own cast of the date to a timestamp with time zone)."""
    if not isinstance(node, (exp.Add, exp.Sub)):
        return node
    for key, other_key in (("this", "expression"), ("expression", "this")):
        interval = is_calendar(node.args[key]) or infer.is_interval(types.of(node.args[key]))
        if interval and infer.is_date(types.of(node.args[other_key])):
            node.set(other_key, exp.Cast(this=node.args[other_key],
                                         to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark")))
    return node


def _datetime(t: T.PgType | None) -> bool:
    return infer.is_timestamp(t) or infer.is_date(t)
