"""SHOW TABLES / VIEWS / OBJECTS / CLUSTERS / CLUSTER REPLICAS / COLUMNS / SCHEMAS /
DATABASES / ROLES: queries over the builtin catalog relations, as Materialize does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp

from weir.errors import SqlState, WeirError
from weir.sql import statements as st

if TYPE_CHECKING:
    from weir.adapter.session import Session


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _schema_id(session: Session, parts: list[str] | None) -> str:
    coord = session.coord
    if parts:
        if len(parts) > 2:
            raise WeirError(SqlState.SYNTAX_ERROR, f"invalid schema name {'.'.join(parts)}")
        db = parts[0] if len(parts) == 2 else session.database
        return coord.lookup_schema(db, parts[-1]).id
    for name in session.search_path:
        try:
            return coord.lookup_schema(session.database, name).id
        except WeirError:
            continue
    raise WeirError(SqlState.INVALID_SCHEMA_NAME, "no schema has been selected")


def show_query(session: Session, show: st.ShowObjects) -> exp.Expression:
    what = show.what
    coord = session.coord
    if what in ("tables", "views", "objects", "sources", "indexes"):
        sid = _schema_id(session, show.from_name)
        rel = {"tables": "mz_tables", "views": "mz_views", "objects": "mz_objects",
               "sources": "mz_objects", "indexes": "mz_objects"}[what]
        extra = ", o.type AS type" if what == "objects" else ""
        cond = ""
        if what == "sources":
            cond = " AND o.type = 'source'"
        if what == "indexes":
            cond = " AND o.type = 'index'"
        sql = (f"SELECT o.name AS name{extra}, '' AS comment FROM mz_catalog.{rel} o "
               f"WHERE o.schema_id = {_q(sid)}{cond}")
    elif what == "clusters":
        sql = ("SELECT c.name AS name, coalesce(string_agg(r.name || ' (' || r.size || ')', ', ' "
               "ORDER BY r.name || ' (' || r.size || ')'), '') AS replicas, '' AS comment "
               "FROM mz_catalog.mz_clusters c LEFT JOIN mz_catalog.mz_cluster_replicas r "
               "ON r.cluster_id = c.id GROUP BY c.name")
    elif what == "cluster replicas":
        ready = coord.ready_replica_ids()
        ready_list = ", ".join(_q(r) for r in ready) or "''"
        sql = ("SELECT c.name AS cluster, r.name AS replica, r.size AS size, "
               f"(r.id IN ({ready_list})) AS ready, '' AS comment "
               "FROM mz_catalog.mz_cluster_replicas r JOIN mz_catalog.mz_clusters c "
               "ON r.cluster_id = c.id")
        if show.from_name:
            sql += f" WHERE c.name = {_q(show.from_name[-1])}"
    elif what == "columns":
        assert show.from_name is not None
        desc = coord.resolver(session).lookup(show.from_name)
        sql = ("SELECT c.name AS name, c.nullable AS nullable, c.type AS type, '' AS comment "
               f"FROM mz_catalog.mz_columns c WHERE c.id = {_q(desc.id)}")
        return _finish(sqlglot.parse_one(sql + " ORDER BY c.position", read="postgres"), show,
                       keep_order=True)
    elif what == "schemas":
        db = show.from_name[-1] if show.from_name else session.database
        db_id = coord.lookup_database(db).id
        sql = ("SELECT s.name AS name, '' AS comment FROM mz_catalog.mz_schemas s "
               f"WHERE s.database_id = {_q(db_id)} OR s.database_id IS NULL")
    elif what == "databases":
        sql = "SELECT d.name AS name, '' AS comment FROM mz_catalog.mz_databases d"
    elif what == "roles":
        sql = "SELECT r.name AS name, '' AS comment FROM mz_catalog.mz_roles r"
    else:
        raise WeirError(SqlState.FEATURE_NOT_SUPPORTED, f"SHOW {what.upper()} not yet supported")
    return _finish(sqlglot.parse_one(sql, read="postgres"), show)


def _finish(q: exp.Expression, show: st.ShowObjects, keep_order: bool = False) -> exp.Expression:
    assert isinstance(q, exp.Query)
    if show.like is not None or show.where is not None:
        cond = f"name LIKE {_q(show.like)}" if show.like is not None else str(show.where)
        q = exp.select("*").from_(q.subquery("show")).where(sqlglot.parse_one(cond, read="postgres"))
    if not keep_order:
        names = [s.alias_or_name for s in q.selects] if not isinstance(q.selects[0], exp.Star) else []
        first = ["cluster", "replica"] if "replica" in names else ["name"]
        q = exp.select("*").from_(q.subquery("show_sorted")).order_by(*first)
    return q
