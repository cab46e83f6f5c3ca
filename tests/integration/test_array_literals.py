"""Untyped literals beside arrays, compared with PostgreSQL 15: PostgreSQL resolves
'{1,2}' in `a = '{1,2}'`, `a || '{3}'`, `x IN ('{1}')`, CASE, COALESCE, NULLIF, VALUES and UNION to
the array operand's type and reads it with array_in (22P02 when it is not an array
literal, as in `ARRAY[1] || '3'`). Arrays compare only with arrays of their own type
(42883 otherwise); numeric arrays of any scales, and GREATEST / LEAST, as PostgreSQL orders
arrays. Each query as a SELECT (text and binary), as a
materialized view's contents and through an index on a view."""

from __future__ import annotations

import pytest

from tests.integration.both_servers import (
    errors,
    indexed_views_as_postgres,
    materialized_views_as_postgres,
    paired,
    select_as_postgres,
)
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETUP = [
    "CREATE TABLE al (id int, a int[], t text[])",
    "INSERT INTO al VALUES (1, '{1,2}', '{x,\"y z\"}'), (2, '{1,NULL}', '{}'), (3, NULL, NULL), (4, '{}', '{\"\"}')",
]

QUERIES = [
    "SELECT ARRAY[1,2] = '{1,2}' AS e, '{1,2}' = ARRAY[1,2] AS f, ARRAY[1,2] < '{1,3}' AS l, "
    "ARRAY[1,2] <> '{1,NULL}' AS n, ARRAY[1,2] >= '{1,2,0}' AS g",
    "SELECT ARRAY[1,2] || '{3}' AS c, '{0}' || ARRAY[1,2] AS d, ARRAY[1] || '{}' AS z",
    "SELECT ARRAY['a'] = '{a}' AS e, ARRAY[1.5] = '{1.50}' AS f, ARRAY[ARRAY[1,2]] = '{{1,2}}' AS g",
    "SELECT ARRAY[NULL::int] IS DISTINCT FROM '{NULL}' AS d, ARRAY[1] IS NOT DISTINCT FROM '{1}' AS n, "
    "ARRAY[1] IN ('{1}', '{2}') AS i, ARRAY[3] NOT IN ('{1}', '{2}') AS o",
    "SELECT CASE WHEN true THEN ARRAY[1] ELSE '{2}' END AS c, COALESCE(NULL::int[], '{5}') AS k, "
    "NULLIF(ARRAY[1], '{1}') AS z, NULLIF(ARRAY[1], '{2}') AS y",
    "SELECT id, a = '{1,2}' AS e, a || '{9}' AS c, t = '{x,\"y z\"}' AS s, COALESCE(a, '{}') AS k, "
    "t || '{\"\"}' AS u FROM al",
    "SELECT id FROM al WHERE a = '{1,2}' OR t = '{}' OR a > '{1,3}'",
    # a column of VALUES or of a set operation's branches
    "SELECT ARRAY[1] AS a UNION SELECT '{2}'",
    "SELECT x FROM (VALUES (ARRAY[1]), ('{2}'), (NULL)) v(x)",
    "SELECT '{3}' AS a UNION ALL SELECT ARRAY[1] UNION ALL SELECT '{}'",
    "SELECT id, a FROM al UNION ALL SELECT 9, '{7,NULL}' EXCEPT SELECT 1, '{1,2}'",
    # numeric arrays of different scales compare as numbers (Spark would not compare them)
    "SELECT ARRAY[1.5] = ARRAY[1.50] AS e, ARRAY[1.5] < ARRAY[1.50, 2] AS l, ARRAY[1::numeric(5,2)] = ARRAY[1.0] AS c, "
    "ARRAY[1.5] IS DISTINCT FROM ARRAY[1.50] AS d, ARRAY[1.5] IN (ARRAY[1.50]) AS i",
    # GREATEST / LEAST order arrays as PostgreSQL does: a NULL element after every value
    "SELECT greatest(ARRAY[1,NULL], ARRAY[1,2]) AS g, least(ARRAY[1,NULL], ARRAY[1,2], NULL) AS l, "
    "greatest(NULL::int[], NULL::int[]) AS n, greatest(ARRAY[1.5], ARRAY[1.25, 3]) AS d, "
    "least(ARRAY['b'], ARRAY['a', NULL], '{c}') AS t",
    "SELECT id, greatest(a, '{1,1}') AS g, least(a, ARRAY[1]) AS l FROM al",
]

ERRORS_AS_POSTGRES = [
    "SELECT ARRAY[1,2] || '3'",
    "SELECT ARRAY['a'] || 'b'",
    "SELECT ARRAY[1,2] = '{1,x}'",
    "SELECT id FROM al WHERE a = '1,2'",
    # PostgreSQL has no comparison of arrays of different types (no array cast is implicit)
    "SELECT ARRAY[1] = ARRAY[1::bigint]",
    "SELECT ARRAY[1] < ARRAY[1::bigint]",
    "SELECT ARRAY[1] IS DISTINCT FROM ARRAY[1::bigint]",
    "SELECT ARRAY[1] IN (ARRAY[1::bigint])",
    "SELECT ARRAY['a'::varchar] = ARRAY['a'::text]",
    "SELECT ARRAY[1::float4] = ARRAY[1::float8]",
    "SELECT ARRAY[current_date] = ARRAY[now()::timestamp]",
    "SELECT id FROM al WHERE a = t",
]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "array_literals", SETUP)


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("sql", QUERIES)
def test_select_same_as_postgres(both, sql: str, binary: bool) -> None:  # noqa: ANN001
    select_as_postgres(both, sql, binary)


def test_materialized_views_as_postgres(both) -> None:  # noqa: ANN001
    materialized_views_as_postgres(both, "al_mv", QUERIES, change=(
        "INSERT INTO al VALUES (5, '{1,3}', '{x}')", "DELETE FROM al WHERE id = 5"))


def test_indexed_views_as_postgres(both) -> None:  # noqa: ANN001
    indexed_views_as_postgres(both, "al_v", QUERIES)


@pytest.mark.parametrize("sql", ERRORS_AS_POSTGRES)
def test_errors_as_postgres(both, sql: str) -> None:  # noqa: ANN001
    got = errors(both, sql)
    assert got[0] == got[1]
