"""The typed tables the differential generator queries, created identically in weir and
PostgreSQL: every type the issue names, NULLs in every column, duplicate rows, an empty
table and a NULL-only one (aggregates over empty and NULL-only inputs)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]  # (name, PostgreSQL type)
    rows: tuple[str, ...]  # VALUES tuples as SQL text

    def ddl(self) -> str:
        cols = ", ".join(f"{n} {t}" for n, t in self.columns)
        return f"CREATE TABLE {self.name} ({cols})"

    def insert(self) -> str | None:
        return f"INSERT INTO {self.name} VALUES {', '.join(self.rows)}" if self.rows else None

    def type_of(self, column: str) -> str:
        return dict(self.columns)[column]


# `id` is unique in every table with rows, so ORDER BY ... id fully determines order.
T1 = Table("t1", (("id", "int"), ("i", "int"), ("b", "bigint"), ("n", "numeric"), ("s", "text"),
                  ("f", "boolean"), ("d", "double precision"), ("dt", "date"), ("ts", "timestamp")), (
    "(1, 1, 100, 1.5, 'a', true, 1.25, '2024-01-01', '2024-01-01 10:00:00')",
    "(2, 2, 200, -2.25, 'b', false, -0.5, '2024-02-29', '2024-02-29 23:59:59')",
    "(3, 2, 200, -2.25, 'b', false, -0.5, '2024-02-29', '2024-02-29 23:59:59')",
    "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "(5, 3, -7, 10, 'C', true, 3, '1999-12-31', '1999-12-31 00:00:00')",
    "(6, 0, 0, 0, '', NULL, 0, '2000-01-01', '2000-01-01 12:30:00')",
    "(7, -1, 9000000000, 0.001, 'a', true, 1e10, '2024-01-01', '2024-01-01 10:00:00')",
    "(8, 3, NULL, 7, 'c ', false, NULL, '2023-06-15', NULL)",
))
T2 = Table("t2", (("id", "int"), ("i", "int"), ("k", "int"), ("s", "text"), ("n", "numeric")), (
    "(1, 1, 10, 'a', 1.5)",
    "(2, 2, 20, 'x', NULL)",
    "(3, 2, 20, 'x', NULL)",
    "(4, 4, NULL, NULL, 4)",
    "(5, NULL, 50, 'b', 0)",
    "(6, 5, 60, 'C', -2.25)",
))
T3 = Table("t3", (("id", "int"), ("i", "int"), ("s", "text")), (
    "(1, 1, 'a')", "(2, 1, 'a')", "(3, 6, 'z')", "(4, NULL, 'b')", "(5, 2, NULL)",
))
EMPTY = Table("te", (("id", "int"), ("i", "int"), ("n", "numeric"), ("s", "text"), ("d", "double precision")), ())
NULLS = Table("tn", (("id", "int"), ("i", "int"), ("n", "numeric"), ("s", "text"), ("d", "double precision")), (
    "(1, NULL, NULL, NULL, NULL)", "(2, NULL, NULL, NULL, NULL)",
))
TABLES = (T1, T2, T3, EMPTY, NULLS)


def setup_statements(tables: tuple[Table, ...] = TABLES) -> list[str]:
    out = []
    for t in tables:
        out.append(t.ddl())
        if (ins := t.insert()) is not None:
            out.append(ins)
    return out


def indexed_setup_statements(schema: str, tables: tuple[Table, ...] = TABLES) -> list[str]:
    """weir only: each table as an indexed view over its data in `schema`, so a query reads
    in-memory arrangements instead of scanning and consolidating shards for every
    reference (what makes batches of queries cheap); the same rows as `setup_statements`."""
    out = [f"CREATE SCHEMA {schema}"]
    for t in tables:
        data = Table(f"{schema}.{t.name}_data", t.columns, t.rows)
        out.append(data.ddl())
        if (ins := data.insert()) is not None:
            out.append(ins)
        out.append(f"CREATE VIEW {schema}.{t.name} AS SELECT * FROM {schema}.{t.name}_data")
        out.append(f"CREATE DEFAULT INDEX ON {schema}.{t.name}")
    return out
