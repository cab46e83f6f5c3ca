"""The SQL templates PostgreSQL's catalog functions are written as (weir.sql.catalog_functions,
catalog_definitions, catalog_absent, catalog_oid_casts): PostgreSQL's SQL with {0}, {1} ...
for the call's arguments, parsed once and filled in with the argument expressions, so
that the result is resolved like any query over pg_catalog."""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp

ARG = "__weir_arg"  # a filled-in template's placeholder for argument k: the column __weir_arg<k>


def fill(template: str, args: list[exp.Expression]) -> exp.Expression:
    """The template's tree with each {k} replaced by a copy of args[k]."""
    tree = _template_tree(template.format(*[f"{ARG}{k}" for k in range(len(args))], F="{F}")).copy()

    def put(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not node.table and node.name.startswith(ARG):
            return args[int(node.name.removeprefix(ARG))].copy()
        return node

    return tree.transform(put, copy=False)  # a copy already


@functools.lru_cache(maxsize=256)
def _template_tree(sql: str) -> exp.Expression:
    """A template parsed once (copied for each use: parsing it was a tenth of planning a
    catalog query)."""
    tree = sqlglot.parse_one(sql, read="postgres")
    for call in tree.find_all(exp.Anonymous):  # the template's own errors (not the arguments')
        if call.name.lower() == "raise_error":
            call.meta["weir_literal"] = True  # weir's own Spark call: weir.sql.functions lets it pass
    return tree


def parse_sql(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="postgres")


def quote_literal(text: str) -> str:
    """A SQL string literal of `text`."""
    return "'" + text.replace("'", "''") + "'"
