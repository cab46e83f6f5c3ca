"""pg_catalog's relations about relations: pg_namespace, pg_class, pg_attribute, pg_index,
pg_indexes, pg_tables, pg_views, pg_matviews, pg_attrdef, pg_depend (and the ones weir has
nothing for: pg_description, pg_constraint, pg_inherits), derived from the catalog.

PostgreSQL's catalogs are per database. Each of these is computed for every database, as a
builtin table `mz_internal.<name>_all_databases` with a database_name column (as
Materialize names them), and pg_catalog.<name> is the view of it a session's database
sees: its own objects and the system ones. Columns and types are PostgreSQL 15's, in its
order, without the columns of types weir does not have (xid, anyarray).

A relation's oid is its catalog oid (the one mz_catalog shows); classid / refclassid and
the like are the oids of weir's pg_class and pg_namespace relations.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from weir.catalog.builtins import BuiltinTable, BuiltinView, ItemRows, acl
from weir.catalog.model import (
    INDEX,
    MATERIALIZED_VIEW,
    MZ_INTERNAL,
    PG_CATALOG,
    SOURCE,
    TABLE,
    TEMP_SCHEMA,
    VIEW,
    Item,
    Snapshot,
    index_on,
)
from weir.catalog.pg_types import facts
from weir.types import (
    BOOL,
    BY_NAME,
    BY_OID,
    FLOAT4,
    INT2,
    INT4,
    TEXT,
    TEXT_ARRAY,
    PgType,
    parse_type,
)

Row = tuple[Any, ...]
Columns = tuple[tuple[str, PgType], ...]

OID, NAME, CHAR = BY_NAME["oid"], BY_NAME["name"], BY_NAME['"char"']
ACL, NODE_TREE, REGPROC = BY_OID[1034], BY_NAME["pg_node_tree"], BY_NAME["regproc"]
INT2VECTOR, OIDVECTOR, INT2_ARRAY, OID_ARRAY = BY_NAME["int2vector"], BY_NAME["oidvector"], BY_OID[1005], BY_OID[1028]

DATABASE_NAME = "database_name"
RELKIND = {TABLE: "r", SOURCE: "r", VIEW: "v", MATERIALIZED_VIEW: "m", INDEX: "i"}
DEFAULT_COLLATION, C_COLLATION = 100, 950
_COLLATABLE = {25: DEFAULT_COLLATION, 1043: DEFAULT_COLLATION, 1042: DEFAULT_COLLATION, 19: C_COLLATION}
# pg_am's one access method, an index's (an arrangement, as in Materialize); s699 names no relation
ARRANGEMENT_AM = "arrangement"
ARRANGEMENT_AM_OID = 17000 + 699 - 600
# PostgreSQL allows 1600 columns: a column default's oid is its relation's * 1601 + attnum
# (weir gives defaults no oid of their own; these are stable and never an object's oid).
_ATTRDEF_OID_FACTOR = 1601


def ids(n: int) -> tuple[str, int]:
    """Builtin id s<n> and its oid: issue 14's relations use s600-s699, oids 17000-17099."""
    assert 600 <= n < 700
    return f"s{n}", 17000 + n - 600


def per_database(schema: str, name: str, n: int, hidden: int, columns: Columns,
                 compute: Callable[[Snapshot], list[Row]], nullable: frozenset[str] = frozenset(),
                 current: tuple[str, ...] = (), where: str = "") -> tuple[BuiltinTable, BuiltinView]:
    """`schema.name` as a database sees it: a view of `mz_internal.<name>_all_databases`
    (rows end with their database's name, NULL for system objects) keeping the session's
    database's rows. The `current` columns name a database: NULL (a system object's) shows
    as the current database. The view keeps the stored columns' names: a result column's
    type is its input column's (weir.adapter.query), so a view computes none of its own."""
    stored = (*columns, (DATABASE_NAME, TEXT))
    hidden_name = name if schema == PG_CATALOG else f"{schema}_{name}"
    table = BuiltinTable(MZ_INTERNAL, f"{hidden_name}_all_databases", *ids(hidden), stored, compute,
                         nullable | {DATABASE_NAME, *current})
    projection = ", ".join(f'coalesce(x."{c}", current_database()) AS "{c}"' if c in current else f'x."{c}"'
                           for c, _ in columns)
    query = (f"SELECT {projection} FROM {MZ_INTERNAL}.{table.name} x "
             f"WHERE (x.{DATABASE_NAME} IS NULL OR x.{DATABASE_NAME} = current_database()){where}")
    return table, BuiltinView(schema, name, *ids(n), columns, query)


# ---------------------------------------------------------------- shared derivations


def role_oid(snap: Snapshot, role_id: str) -> int:
    r = snap.role_by_id.get(role_id)
    return r.oid if r is not None else 0


def role_name(snap: Snapshot, role_id: str) -> str | None:
    r = snap.role_by_id.get(role_id)
    return r.name if r is not None else None


def item_acl(snap: Snapshot, i: Item) -> list[str]:
    """An item's privileges as mz_objects shows them (builtins: PUBLIC may SELECT)."""
    if i.builtin:
        return [f"{i.owner_id}=r/{i.owner_id}", f"=r/{i.owner_id}"]
    return acl(snap, i.kind, i.id, i.owner_id)


def aclitems(snap: Snapshot, entries: list[str]) -> list[str]:
    """weir's privileges ('u1=arwd/u1', PUBLIC an empty grantee) as PostgreSQL's aclitem
    text: role names for role ids."""
    out = []
    for e in entries:
        grantee, _, rest = e.partition("=")
        letters, _, grantor = rest.partition("/")
        out.append(f"{quote_acl_name(role_name(snap, grantee) or grantee) if grantee else ''}={letters}/"
                   f"{quote_acl_name(role_name(snap, grantor) or grantor)}")
    return out


def quote_acl_name(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_]+", name) else '"' + name.replace('"', '""') + '"'


def quote_ident(name: str) -> str:
    """PostgreSQL's quote_ident, without its keyword list."""
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


def database_name(snap: Snapshot, database_id: str | None) -> str | None:
    for d in snap.databases:
        if d.id == database_id:
            return d.name
    return None


def relation_kind(i: Item) -> str | None:
    """pg_class.relkind of an item; None: not a relation (sinks, holds ...)."""
    return RELKIND.get(i.kind)


def schema_oid(snap: Snapshot, i: Item) -> int:
    x = snap.schema_by_id.get(i.schema_id)
    return x.oid if x is not None else 0


def has_index(snap: Snapshot, i: Item) -> bool:
    return bool(snap.indexes_on.get(i.id))


def index_neighbours(old: Snapshot, new: Snapshot, changed: set[str]) -> set[str]:
    """The items whose rows mention the changed items besides their own: what an index is
    on (relhasindex, hasindexes), and the indexes on a changed object (pg_indexes names it)."""
    out: set[str] = set()
    for snap in (old, new):
        for k in changed:
            i = snap.item_by_id.get(k)
            if i is not None and i.kind == INDEX:
                out.add(index_on(i))
            elif i is not None and i.kind in RELKIND:
                out.update(x.id for x in snap.indexes_on.get(k, ()))
    return out


def key_columns(i: Item) -> list[tuple[str, int, PgType | None]]:
    """An index's keys: (the key, its column's position in the indexed object (0: an
    expression), that column's type)."""
    columns = i.definition.get("columns", [])
    names = [c["name"] for c in columns]
    out = []
    for key in i.definition.get("keys", []):
        if key in names:
            pos = names.index(key)
            out.append((key, pos + 1, _column_type(columns[pos])))
        else:
            out.append((key, 0, None))
    return out


def _column_type(c: dict[str, Any]) -> PgType | None:
    try:
        return parse_type(str(c.get("pg_type", "text")))
    except Exception:  # noqa: BLE001 - a type this build does not know: no attribute row
        return None


# ---------------------------------------------------------------- relation rows


def _namespaces(s: Snapshot) -> list[Row]:
    return [(x.oid, x.name, role_oid(s, x.owner_id), aclitems(s, acl(s, "schema", x.id, x.owner_id)),
             database_name(s, x.database_id)) for x in s.schemas]


def _class_of(s: Snapshot, i: Item) -> list[Row]:
    kind = relation_kind(i)
    if kind is None:
        return []
    natts = len(i.definition.get("keys", [])) if kind == "i" else len(i.columns)
    replident = "d" if kind in ("r", "m") else "n"
    relam = ARRANGEMENT_AM_OID if kind == "i" else 0
    return [(i.oid, i.name, schema_oid(s, i), 0, 0, role_oid(s, i.owner_id), relam, 0, 0, 0, -1.0, 0, 0,
             kind != "i" and has_index(s, i), False, _persistence(i), kind, natts, 0, False, False, False, False, False,
             True, replident, False, 0, aclitems(s, item_acl(s, i)), None, None, i.database_name)]


def _persistence(i: Item) -> str:
    """relpersistence: 't' for a session's temporary relation (psql and pgjdbc read it)."""
    return "t" if i.database_name is None and i.schema_name == TEMP_SCHEMA else "p"


def _attribute(relid: int, name: str, t: PgType, attnum: int, nullable: bool, default: str | None,
               database: str | None) -> Row:
    f = facts(t)
    return (relid, name, t.oid, -1, t.typlen, attnum, 1 if t.is_array else 0, -1, t.typmod, f[1], f[15], f[16],
            "", not nullable, default is not None, False, "", "", False, True, 0,
            _COLLATABLE.get(t.oid, 0), None, None, None, database)


def _attributes_of(s: Snapshot, i: Item) -> list[Row]:
    kind = relation_kind(i)
    if kind is None:
        return []
    if kind == "i":  # an index's attributes are its column keys (expressions: no row here)
        return [_attribute(i.oid, key, t, n, True, None, i.database_name)
                for n, (key, pos, t) in enumerate(key_columns(i), start=1) if pos and t is not None]
    return [_attribute(i.oid, c.name, c.type, n, c.nullable, c.default, i.database_name)
            for n, c in enumerate(i.columns, start=1)]


def _index_of(s: Snapshot, i: Item) -> list[Row]:
    if i.kind != INDEX:
        return []
    on = s.item_by_id.get(index_on(i))
    keys = key_columns(i)
    return [(i.oid, on.oid if on is not None else 0, len(keys), len(keys), False, False, False, False, True,
             False, True, False, True, True, False, [pos for _, pos, _ in keys],
             [_COLLATABLE.get(t.oid, 0) if t is not None else 0 for _, _, t in keys], [0] * len(keys),
             [0] * len(keys), None, None, i.database_name)]


def index_definition(s: Snapshot, i: Item) -> str:
    """pg_indexes.indexdef (and pg_get_indexdef()): the index as weir's CREATE INDEX names it,
    fully qualified, with PostgreSQL's USING clause naming its kind."""
    on = s.item_by_id.get(index_on(i))
    cluster = next((c.name for c in s.clusters if c.id == i.cluster_id), None)
    keys = ", ".join(quote_ident(k) if pos else f"({k})" for k, pos, _ in key_columns(i))
    where = f"{quote_ident(on.schema_name)}.{quote_ident(on.name)}" if on is not None else "?"
    in_cluster = f" IN CLUSTER {quote_ident(cluster)}" if cluster else ""
    # USING arrangement: what a weir index is (psql's \d prints what follows " USING ")
    return f"CREATE INDEX {quote_ident(i.name)}{in_cluster} ON {where} USING {ARRANGEMENT_AM} ({keys})"


def _indexes_of(s: Snapshot, i: Item) -> list[Row]:
    on = s.item_by_id.get(index_on(i)) if i.kind == INDEX else None
    if on is None or relation_kind(on) not in ("r", "m"):
        return []
    return [(on.schema_name, on.name, i.name, None, index_definition(s, i), i.database_name)]


def _views_of(s: Snapshot, i: Item) -> list[Row]:
    if i.kind != VIEW:
        return []
    return [(i.schema_name, i.name, role_name(s, i.owner_id), i.definition.get("query", ""), i.database_name)]


def _matviews_of(s: Snapshot, i: Item) -> list[Row]:
    if i.kind != MATERIALIZED_VIEW:
        return []
    return [(i.schema_name, i.name, role_name(s, i.owner_id), None, has_index(s, i), True,
             i.definition.get("query", ""), i.database_name)]


def _tables_of(s: Snapshot, i: Item) -> list[Row]:
    if relation_kind(i) != "r":
        return []
    return [(i.schema_name, i.name, role_name(s, i.owner_id), None, has_index(s, i), False, False, False,
             i.database_name)]


def _attrdefs_of(s: Snapshot, i: Item) -> list[Row]:
    if relation_kind(i) is None:
        return []
    return [(i.oid * _ATTRDEF_OID_FACTOR + n, i.oid, n, c.default, i.database_name)
            for n, c in enumerate(i.columns, start=1) if c.default is not None]


def _depends_of(s: Snapshot, i: Item) -> list[Row]:
    """A relation depends on its schema, and on the relations it reads (an index: 'a',
    dropped with what it indexes; anything else: 'n')."""
    if relation_kind(i) is None:
        return []
    out = [(PG_CLASS_OID, i.oid, 0, PG_NAMESPACE_OID, schema_oid(s, i), 0, "n", i.database_name)]
    for d in i.dependencies:
        ref = s.item_by_id.get(d)
        if ref is not None and relation_kind(ref) is not None:
            out.append((PG_CLASS_OID, i.oid, 0, PG_CLASS_OID, ref.oid, 0, "a" if i.kind == INDEX else "n",
                        i.database_name))
    return out


def _none(s: Snapshot) -> list[Row]:
    return []


def _t(*cols: tuple[str, PgType]) -> Columns:
    return cols


_PG_NAMESPACE, PG_NAMESPACE_OID = 600, ids(600)[1]
# PostgreSQL's bootstrap catalogs keep their fixed oids, which clients and scripts may
# hard-code (`SELECT oid FROM pg_class WHERE relname = 'pg_class'` is 1259); weir.catalog.builtins
# gives them these, and the catalog moves a stored builtin to a changed oid at start-up
PG_FIXED_OIDS = {"pg_type": 1247, "pg_attribute": 1249, "pg_proc": 1255, "pg_class": 1259}
_PG_CLASS, PG_CLASS_OID = 601, PG_FIXED_OIDS["pg_class"]
_NEIGHBOURS = index_neighbours

TABLES: list[BuiltinTable] = []
VIEWS: list[BuiltinView] = []


def _add(pair: tuple[BuiltinTable, BuiltinView]) -> None:
    TABLES.append(pair[0])
    VIEWS.append(pair[1])


_add(per_database(PG_CATALOG, "pg_namespace", _PG_NAMESPACE, 640, _t(
    ("oid", OID), ("nspname", NAME), ("nspowner", OID), ("nspacl", ACL)), _namespaces))
_add(per_database(PG_CATALOG, "pg_class", _PG_CLASS, 641, _t(
    ("oid", OID), ("relname", NAME), ("relnamespace", OID), ("reltype", OID), ("reloftype", OID),
    ("relowner", OID), ("relam", OID), ("relfilenode", OID), ("reltablespace", OID), ("relpages", INT4),
    ("reltuples", FLOAT4), ("relallvisible", INT4), ("reltoastrelid", OID), ("relhasindex", BOOL),
    ("relisshared", BOOL), ("relpersistence", CHAR), ("relkind", CHAR), ("relnatts", INT2), ("relchecks", INT2),
    ("relhasrules", BOOL), ("relhastriggers", BOOL), ("relhassubclass", BOOL), ("relrowsecurity", BOOL),
    ("relforcerowsecurity", BOOL), ("relispopulated", BOOL), ("relreplident", CHAR), ("relispartition", BOOL),
    ("relrewrite", OID), ("relacl", ACL), ("reloptions", TEXT_ARRAY), ("relpartbound", NODE_TREE)),
    ItemRows(_class_of, _NEIGHBOURS), frozenset({"reloptions", "relpartbound"})))
_add(per_database(PG_CATALOG, "pg_attribute", 602, 642, _t(
    ("attrelid", OID), ("attname", NAME), ("atttypid", OID), ("attstattarget", INT4), ("attlen", INT2),
    ("attnum", INT2), ("attndims", INT4), ("attcacheoff", INT4), ("atttypmod", INT4), ("attbyval", BOOL),
    ("attalign", CHAR), ("attstorage", CHAR), ("attcompression", CHAR), ("attnotnull", BOOL),
    ("atthasdef", BOOL), ("atthasmissing", BOOL), ("attidentity", CHAR), ("attgenerated", CHAR),
    ("attisdropped", BOOL), ("attislocal", BOOL), ("attinhcount", INT4), ("attcollation", OID),
    ("attacl", ACL), ("attoptions", TEXT_ARRAY), ("attfdwoptions", TEXT_ARRAY)), ItemRows(_attributes_of),
    frozenset({"attacl", "attoptions", "attfdwoptions"})))
_add(per_database(PG_CATALOG, "pg_index", 608, 643, _t(
    ("indexrelid", OID), ("indrelid", OID), ("indnatts", INT2), ("indnkeyatts", INT2), ("indisunique", BOOL),
    ("indnullsnotdistinct", BOOL), ("indisprimary", BOOL), ("indisexclusion", BOOL), ("indimmediate", BOOL),
    ("indisclustered", BOOL), ("indisvalid", BOOL), ("indcheckxmin", BOOL), ("indisready", BOOL),
    ("indislive", BOOL), ("indisreplident", BOOL), ("indkey", INT2VECTOR), ("indcollation", OIDVECTOR),
    ("indclass", OIDVECTOR), ("indoption", INT2VECTOR), ("indexprs", NODE_TREE), ("indpred", NODE_TREE)),
    ItemRows(_index_of), frozenset({"indexprs", "indpred"})))
_add(per_database(PG_CATALOG, "pg_indexes", 609, 644, _t(
    ("schemaname", NAME), ("tablename", NAME), ("indexname", NAME), ("tablespace", NAME), ("indexdef", TEXT)),
    ItemRows(_indexes_of, _NEIGHBOURS), frozenset({"tablespace"})))
_add(per_database(PG_CATALOG, "pg_views", 610, 645, _t(
    ("schemaname", NAME), ("viewname", NAME), ("viewowner", NAME), ("definition", TEXT)), ItemRows(_views_of),
    frozenset({"viewowner"})))
_add(per_database(PG_CATALOG, "pg_matviews", 611, 646, _t(
    ("schemaname", NAME), ("matviewname", NAME), ("matviewowner", NAME), ("tablespace", NAME),
    ("hasindexes", BOOL), ("ispopulated", BOOL), ("definition", TEXT)), ItemRows(_matviews_of, _NEIGHBOURS),
    frozenset({"matviewowner", "tablespace"})))
_add(per_database(PG_CATALOG, "pg_tables", 612, 647, _t(
    ("schemaname", NAME), ("tablename", NAME), ("tableowner", NAME), ("tablespace", NAME),
    ("hasindexes", BOOL), ("hasrules", BOOL), ("hastriggers", BOOL), ("rowsecurity", BOOL)),
    ItemRows(_tables_of, _NEIGHBOURS), frozenset({"tableowner", "tablespace"})))
_add(per_database(PG_CATALOG, "pg_attrdef", 615, 648, _t(
    ("oid", OID), ("adrelid", OID), ("adnum", INT2), ("adbin", NODE_TREE)), ItemRows(_attrdefs_of)))
_add(per_database(PG_CATALOG, "pg_depend", 622, 649, _t(
    ("classid", OID), ("objid", OID), ("objsubid", INT4), ("refclassid", OID), ("refobjid", OID),
    ("refobjsubid", INT4), ("deptype", CHAR)), ItemRows(_depends_of)))

# What weir has none of: comments, constraints (NOT NULL is pg_attribute's), inheritance.
TABLES += [
    BuiltinTable(PG_CATALOG, "pg_description", *ids(614), _t(
        ("objoid", OID), ("classoid", OID), ("objsubid", INT4), ("description", TEXT)), _none),
    BuiltinTable(PG_CATALOG, "pg_constraint", *ids(616), _t(
        ("oid", OID), ("conname", NAME), ("connamespace", OID), ("contype", CHAR), ("condeferrable", BOOL),
        ("condeferred", BOOL), ("convalidated", BOOL), ("conrelid", OID), ("contypid", OID), ("conindid", OID),
        ("conparentid", OID), ("confrelid", OID), ("confupdtype", CHAR), ("confdeltype", CHAR),
        ("confmatchtype", CHAR), ("conislocal", BOOL), ("coninhcount", INT4), ("connoinherit", BOOL),
        ("conkey", INT2_ARRAY), ("confkey", INT2_ARRAY), ("conpfeqop", OID_ARRAY), ("conppeqop", OID_ARRAY),
        ("conffeqop", OID_ARRAY), ("confdelsetcols", INT2_ARRAY), ("conexclop", OID_ARRAY),
        ("conbin", NODE_TREE)), _none,
        frozenset({"conkey", "confkey", "conpfeqop", "conppeqop", "conffeqop", "confdelsetcols", "conexclop",
                   "conbin"})),
    BuiltinTable(PG_CATALOG, "pg_inherits", *ids(617), _t(
        ("inhrelid", OID), ("inhparent", OID), ("inhseqno", INT4), ("inhdetachpending", BOOL)), _none),
]
