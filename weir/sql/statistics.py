"""var_pop, var_samp, stddev_pop, stddev_samp (and their aliases) of double precision.

PostgreSQL accumulates them with Youngs-Cramer sums, which are exact for integral
inputs: var_pop of 100000003, 100000004, 100000006, 100000007 is exactly 2.5. Spark's
running-moments update rounds its running mean every row and answers 2.5000000049670534.
So for integral inputs below 10^13 weir computes the sums exactly in decimal and divides
once in double precision; anything else (fractions, NaN, infinities, larger values, a sum
that overflows 38 digits) falls back to Spark's aggregate, whose error is then of the
same order as PostgreSQL's own. Inside a window or a FILTER, and with DISTINCT, Spark's
aggregate is used as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from weir.sql import translate as tr
from weir.sql.infer import Types

Handler = Callable[[exp.Expression, Types], exp.Expression]

_EXACT_BELOW = "1e13"  # squares stay below 10^26, so sums of 10^12 rows fit 38 digits

_INTEGRAL = "(NOT isnan({x}) AND abs({x}) < " + _EXACT_BELOW + " AND {x} = floor({x}))"
_EXACT = "CAST(CASE WHEN " + _INTEGRAL + " THEN {x} END AS DECIMAL(38,0))"
# n·Σx² − (Σx)²: exact, or NULL when a sum or product leaves 38 digits
_SPREAD = (f"try_subtract(try_multiply(CAST(count({{x}}) AS DECIMAL(38,0)), "
           f"try_sum({_EXACT} * {_EXACT})), try_multiply(try_sum({_EXACT}), try_sum({_EXACT})))")
_TEMPLATE = ("CASE WHEN count_if(NOT " + _INTEGRAL + ") = 0 AND " + _SPREAD + " IS NOT NULL "
             "THEN {exact} ELSE {fallback} END")

_POP = "CAST(" + _SPREAD + " AS DOUBLE) / (CAST(count({x}) AS DOUBLE) * CAST(count({x}) AS DOUBLE))"
_SAMP = ("CAST(" + _SPREAD + " AS DOUBLE) / (CAST(count({x}) AS DOUBLE) * "
         "CAST(nullif(count({x}) - 1, 0) AS DOUBLE))")  # one row: NULL


def _moments(exact: str, sqrt: bool) -> Handler:
    def handler(node: exp.Expression, types: Types) -> exp.Expression:
        node = tr.float_only(node, types)
        if isinstance(node.parent, (exp.Window, exp.Filter)) or isinstance(node.this, exp.Distinct):
            return node
        value = f"sqrt({exact})" if sqrt else exact
        return tr.spark_template(_TEMPLATE.format(exact=value, fallback="{fallback}", x="{x}"),
                                 x=node.this, fallback=node)
    return handler


HANDLERS: dict[type, Handler] = {
    exp.VariancePop: _moments(_POP, sqrt=False), exp.Variance: _moments(_SAMP, sqrt=False),
    exp.StddevPop: _moments(_POP, sqrt=True), exp.StddevSamp: _moments(_SAMP, sqrt=True),
    exp.Stddev: _moments(_SAMP, sqrt=True),
}
