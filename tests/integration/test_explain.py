"""EXPLAIN: Spark's plans for a query, and the timestamp a read would pick."""

from __future__ import annotations

import psycopg
import pytest

from tests.integration.server import WeirServer


def test_explain_plans_and_timestamp(server: WeirServer) -> None:
    with server.connect() as c:
        c.execute("CREATE TABLE ex_t (x int, y text)")
        (phys,) = c.execute("EXPLAIN PHYSICAL PLAN FOR SELECT x, count(*) FROM ex_t WHERE x > 1 GROUP BY x").fetchone()
        lines = phys.splitlines()
        assert any("HashAggregate" in ln for ln in lines)
        assert any(ln.startswith("   ") for ln in lines), "children are indented"
        (numbered,) = c.execute("EXPLAIN PHYSICAL PLAN WITH (node_ids) FOR SELECT * FROM ex_t WHERE x > 1"
                                ).fetchone()
        # every line carries its plan node id, as Spark's EXPLAIN FORMATTED numbers the plan
        ids = [int(ln.rsplit("(", 1)[1].rstrip(")")) for ln in numbered.splitlines()]
        assert sorted(ids) == list(range(1, len(ids) + 1)) and "Filter" in numbered, numbered
        (alias,) = c.execute("EXPLAIN PHYSICAL PLAN WITH (node identifiers) FOR SELECT * FROM ex_t WHERE x > 1"
                             ).fetchone()
        assert alias == numbered
        (opt,) = c.execute("EXPLAIN OPTIMIZED PLAN FOR SELECT * FROM ex_t WHERE x > 1").fetchone()
        assert "Filter" in opt
        (raw,) = c.execute("EXPLAIN RAW PLAN FOR SELECT * FROM ex_t").fetchone()
        assert "ex_t" in raw
        (ts,) = c.execute("EXPLAIN TIMESTAMP FOR SELECT * FROM ex_t").fetchone()
        assert "query timestamp:" in ts and "materialize.public.ex_t" in ts
        assert "read frontier:" in ts and "write frontier:" in ts
        # an option weir has no meaning for is refused, naming the valid ones
        with pytest.raises(psycopg.errors.InvalidParameterValue) as e:
            c.execute("EXPLAIN PHYSICAL PLAN WITH (node_ids, bogus) FOR SELECT * FROM ex_t")
        assert 'unrecognized EXPLAIN option "bogus"' in str(e.value)
        assert e.value.diag.message_hint is not None and "node_ids" in e.value.diag.message_hint
        c.execute("SELECT 1")  # the session carries on


def test_frontiers_relation(server: WeirServer) -> None:
    import time

    with server.connect() as c:
        c.execute("CREATE TABLE fr_t (x int)")
        (item_id,) = c.execute("SELECT id FROM mz_catalog.mz_tables WHERE name = 'fr_t'").fetchone()
        deadline = time.time() + 30
        rows = []
        while not rows and time.time() < deadline:
            rows = c.execute("SELECT read_frontier, write_frontier FROM mz_internal.mz_frontiers "
                             "WHERE object_id = %s", (item_id,)).fetchall()
            time.sleep(0.5)
        assert rows, "mz_frontiers has no row for a new table"
        read, write = (int(v) for v in rows[0])
        assert 0 < read < write, "since trails upper"
        assert write - read <= 1500, "the compaction window is about one second"
