"""PostgreSQL's planner settings (enable_seqscan, work_mem, jit_above_cost ...) are accepted,
validated and shown as PostgreSQL does, so scripts that tune PostgreSQL's planner run on
weir unchanged; they change no answer (weir's plans are Spark's). Compared with a real
PostgreSQL 15 statement by statement."""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.both_servers import paired
from tests.integration.server import WeirServer
from tests.pg_server import pg_server  # noqa: F401

SETTINGS = [
    ("enable_seqscan", "off"), ("enable_hashagg", "false"), ("enable_sort", "0"),
    ("enable_bitmapscan", "no"), ("enable_hashjoin", "off"), ("enable_nestloop", "off"),
    ("enable_mergejoin", "1"), ("enable_memoize", "off"), ("enable_indexscan", "off"),
    ("enable_indexonlyscan", "off"), ("enable_partitionwise_join", "on"), ("geqo", "off"),
    ("work_mem", "'64kB'"), ("work_mem", "65536"), ("work_mem", "'1GB'"),
    ("jit_above_cost", "0"), ("jit_above_cost", "-1"), ("parallel_setup_cost", "0"),
    ("parallel_tuple_cost", "0.5"), ("max_parallel_workers_per_gather", "4"),
    ("min_parallel_table_scan_size", "0"), ("escape_string_warning", "off"),
    ("random_page_cost", "1.1"), ("constraint_exclusion", "on"), ("plan_cache_mode", "force_generic_plan"),
]
BAD = [("enable_seqscan", "maybe"), ("work_mem", "10"), ("work_mem", "'lots'"),
       ("max_parallel_workers_per_gather", "-1"), ("jit_above_cost", "'x'"),
       ("constraint_exclusion", "sometimes")]


@pytest.fixture(scope="module")
def both(server: WeirServer, pg_server):  # noqa: ANN201, F811
    yield from paired(server, pg_server, "planner_settings", [])


def _show(conn: psycopg.Connection, name: str) -> str:
    return conn.execute(f"SHOW {name}").fetchone()[0]


@pytest.mark.parametrize(("name", "value"), SETTINGS)
def test_set_show_reset_as_postgres(both, name: str, value: str) -> None:  # noqa: ANN001
    w, p = both
    assert _show(w, name) == _show(p, name)  # PostgreSQL's default, in its words
    for conn in (w, p):
        conn.execute(f"SET {name} = {value}")
    assert _show(w, name) == _show(p, name)
    for conn in (w, p):
        conn.execute(f"RESET {name}")
    assert _show(w, name) == _show(p, name)


@pytest.mark.parametrize(("name", "value"), BAD)
def test_bad_values_fail_as_in_postgres(both, name: str, value: str) -> None:  # noqa: ANN001
    states = []
    for conn in both:
        with pytest.raises(psycopg.Error) as info:
            conn.execute(f"SET {name} = {value}")
        states.append(info.value.sqlstate)
    assert states[0] == states[1] == "22023"


def test_set_local_ends_with_the_transaction_and_answers_do_not_change(both) -> None:  # noqa: ANN001
    w, p = both
    w.execute("CREATE TABLE ps_t (a int)")
    w.execute("INSERT INTO ps_t VALUES (3), (1), (2)")
    with w.transaction():
        w.execute("SET LOCAL enable_sort = off")
        w.execute("SET LOCAL work_mem = '64kB'")
        assert _show(w, "enable_sort") == "off"
        assert [r[0] for r in w.execute("SELECT a FROM ps_t ORDER BY a").fetchall()] == [1, 2, 3]
    assert (_show(w, "enable_sort"), _show(w, "work_mem")) == ("on", "4MB")
    names = {r[0] for r in w.execute("SELECT name FROM pg_catalog.pg_settings WHERE name LIKE 'enable_%'")}
    assert {"enable_seqscan", "enable_hashagg", "enable_sort"} <= names
