"""SHOW TABLES / VIEWS / MATERIALIZED VIEWS / INDEXES / SOURCES / OBJECTS / CLUSTERS /
CLUSTER REPLICAS / COLUMNS / SCHEMAS / DATABASES / ROLES: queries over the builtin catalog
relations, with Materialize's columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from weir.catalog.model import TEMP_SCHEMA_ALIASES
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
        if parts[-1] in TEMP_SCHEMA_ALIASES:  # the session's own (none yet: nothing to show)
            return session.temp_schema_id or ""
        db = parts[0] if len(parts) == 2 else session.database
        return coord.lookup_schema(db, parts[-1]).id
    for name in session.search_path:
        try:
            return coord.lookup_schema(session.database, name).id
        except WeirError:
            continue
    raise WeirError(SqlState.INVALID_SCHEMA_NAME, "no schema has been selected")


def show_sql(session: Session, show: st.ShowObjects) -> str:
    """The query's text: the plan cache is keyed by it, so a repeated SHOW is neither
    parsed nor planned again (the schema's id is in the text)."""
    what = show.what
    coord = session.coord
    if what in ("tables", "views", "objects"):
        sid = _schema_id(session, show.from_name)
        rel = {"tables": "mz_tables", "views": "mz_views", "objects": "mz_objects"}[what]
        extra = ", o.type AS type" if what == "objects" else ""
        sql = (f"SELECT o.name AS name{extra}, '' AS comment FROM mz_catalog.{rel} o "
               f"WHERE o.schema_id = {_q(sid)}")
    elif what == "holds":
        sid = _schema_id(session, show.from_name)
        sql = ("SELECT h.name AS name, h.at AS at, h.max_lag AS max_lag, h.auto_advances AS auto_advances, "
               "string_agg(o.name, ', ' ORDER BY o.name) AS objects FROM mz_catalog.mz_holds h "
               "JOIN mz_catalog.mz_hold_objects ho ON ho.hold_id = h.id JOIN mz_catalog.mz_objects o "
               f"ON o.id = ho.on_id WHERE h.schema_id = {_q(sid)} GROUP BY h.name, h.at, h.max_lag, h.auto_advances")
    elif what in ("materialized views", "sources"):
        sid = _schema_id(session, show.from_name)
        rel, extra = (("mz_materialized_views", "") if what == "materialized views"
                      else ("mz_sources", ", o.type AS type"))
        sql = (f"SELECT o.name AS name{extra}, c.name AS cluster, '' AS comment FROM mz_catalog.{rel} o "
               f"LEFT JOIN mz_catalog.mz_clusters c ON o.cluster_id = c.id WHERE o.schema_id = {_q(sid)}"
               + _in_cluster(session, show))
    elif what == "indexes":
        sql = _indexes(session, show)
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
        return _finish(sql + " ORDER BY c.position", show, keep_order=True)
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
    return _finish(sql, show)


def _in_cluster(session: Session, show: st.ShowObjects) -> str:
    if show.in_cluster is None:
        return ""
    return f" AND c.id = {_q(session.coord.catalog.get_cluster(show.in_cluster).id)}"


def _indexes(session: Session, show: st.ShowObjects) -> str:
    """name, on, cluster, key (the key columns or expressions, text[]): the indexes in a
    schema (the first of the search path unless FROM or ON or IN CLUSTER says otherwise),
    on one object, or on one cluster."""
    if show.on_name is not None:
        where = f"i.on_id = {_q(session.coord.resolver(session).lookup(show.on_name).id)}"
    elif show.from_name is not None or show.in_cluster is None:
        where = f"io.schema_id = {_q(_schema_id(session, show.from_name))}"
    else:
        where = "true"
    return ("SELECT i.name AS name, o.name AS \"on\", c.name AS cluster, "
            "array_agg(coalesce(col.name, ic.on_expression) ORDER BY ic.index_position) AS key, "
            "'' AS comment "
            "FROM mz_catalog.mz_indexes i JOIN mz_catalog.mz_objects io ON io.id = i.id "
            "JOIN mz_catalog.mz_objects o ON o.id = i.on_id "
            "LEFT JOIN mz_catalog.mz_clusters c ON c.id = i.cluster_id "
            "JOIN mz_catalog.mz_index_columns ic ON ic.index_id = i.id "
            "LEFT JOIN mz_catalog.mz_columns col ON col.id = i.on_id AND col.position = ic.on_position "
            f"WHERE {where}{_in_cluster(session, show)} GROUP BY i.id, i.name, o.name, c.name")


def _finish(sql: str, show: st.ShowObjects, keep_order: bool = False) -> str:
    if show.like is not None or show.where is not None:
        cond = f"name LIKE {_q(show.like)}" if show.like is not None else str(show.where)
        sql = f"SELECT * FROM ({sql}) AS show WHERE {cond}"
    if not keep_order:
        first = "cluster, replica" if show.what == "cluster replicas" else "name"
        sql = f"SELECT * FROM ({sql}) AS show_sorted ORDER BY {first}"
    return sql
