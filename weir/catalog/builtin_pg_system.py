"""pg_catalog's relations about the rest of the system: types, functions, databases, roles,
settings, sessions, and the kinds of object weir does not have (access methods, enums,
ranges, extensions, triggers, rules, tablespaces, locks), which are empty.

Types and functions come from weir's type map and function gate (weir.catalog.pg_types,
weir.catalog.pg_functions); databases and roles from the catalog. pg_settings and
pg_stat_activity are views: what they show depends on the session reading them (its
settings) or on what is running (mz_internal.mz_sessions). Columns and types are
PostgreSQL 15's, in its order, without the columns of types weir does not have (xid).
"""

from __future__ import annotations

from typing import Any

from weir.catalog.builtin_pg_catalog import (
    ACL,
    ARRANGEMENT_AM,
    ARRANGEMENT_AM_OID,
    C_COLLATION,
    CHAR,
    DEFAULT_COLLATION,
    INT2VECTOR,
    NAME,
    NODE_TREE,
    OID,
    OID_ARRAY,
    OIDVECTOR,
    REGPROC,
    Columns,
    aclitems,
    ids,
    role_oid,
)
from weir.catalog.builtins import BuiltinTable, BuiltinView, acl
from weir.catalog.model import MZ_CATALOG, MZ_INTERNAL, MZ_SYSTEM_ROLE_ID, PG_CATALOG, Snapshot
from weir.catalog.pg_functions import INTERNAL_LANGUAGE, proc_rows
from weir.catalog.pg_types import type_rows
from weir.catalog.vars import VARS, VarDef
from weir.types import (
    BOOL,
    BY_OID,
    BYTEA,
    FLOAT4,
    INT2,
    INT4,
    INT8,
    TEXT,
    TEXT_ARRAY,
    TIMESTAMPTZ,
    PgType,
)

Row = tuple[Any, ...]
UTF8 = 6  # pg_database.encoding: PostgreSQL's number for UTF8


def system_schema_oid(s: Snapshot, name: str) -> int:
    return next((x.oid for x in s.schemas if x.database_id is None and x.name == name), 0)


def _types(s: Snapshot) -> list[Row]:
    return type_rows(system_schema_oid(s, PG_CATALOG), system_schema_oid(s, MZ_CATALOG),
                     role_oid(s, MZ_SYSTEM_ROLE_ID))


def _procs(s: Snapshot) -> list[Row]:
    return proc_rows(system_schema_oid(s, PG_CATALOG), role_oid(s, MZ_SYSTEM_ROLE_ID))


def _databases(s: Snapshot) -> list[Row]:
    """Strings compare byte by byte (Spark's ordering): the C collation."""
    return [(d.oid, d.name, role_oid(s, d.owner_id), UTF8, "c", False, True, -1, DEFAULT_TABLESPACE, "C", "C",
             None, None, aclitems(s, acl(s, "database", d.id, d.owner_id))) for d in s.databases]


# PostgreSQL's two tablespaces, which every installation has: pg_default, where a
# database's relations are (for weir, its data directory), and pg_global, for shared
# catalogs. weir has no others (CREATE TABLESPACE is not in weir).
DEFAULT_TABLESPACE, GLOBAL_TABLESPACE = 1663, 1664


def _tablespaces(s: Snapshot) -> list[Row]:
    owner = role_oid(s, MZ_SYSTEM_ROLE_ID)
    return [(DEFAULT_TABLESPACE, "pg_default", owner, None, None), (GLOBAL_TABLESPACE, "pg_global", owner, None, None)]


def _authid(s: Snapshot) -> list[Row]:
    """Only superusers create roles and databases in weir."""
    return [(r.oid, r.name, r.superuser, r.inherit, r.superuser, r.superuser, r.login, False, False, -1,
             r.password, None) for r in s.roles]


def _roles(s: Snapshot) -> list[Row]:
    return [(r.name, r.superuser, r.inherit, r.superuser, r.superuser, r.login, False, -1, "********", None,
             False, None, r.oid) for r in s.roles]


def _users(s: Snapshot) -> list[Row]:
    return [(r.name, r.oid, r.superuser, r.superuser, False, False, "********", None, None)
            for r in s.roles if r.login]


def _auth_members(s: Snapshot) -> list[Row]:
    return [(role_oid(s, m.role_id), role_oid(s, m.member_id), role_oid(s, m.grantor_id), False)
            for m in s.role_members]


def _collations(s: Snapshot) -> list[Row]:
    """The collations weir's columns name (attcollation): the database default, which is C."""
    namespace, owner = system_schema_oid(s, PG_CATALOG), role_oid(s, MZ_SYSTEM_ROLE_ID)
    return [(DEFAULT_COLLATION, "default", namespace, owner, "d", True, -1, None, None, None, None),
            (C_COLLATION, "C", namespace, owner, "c", True, -1, "C", "C", None, None)]


def _access_methods(s: Snapshot) -> list[Row]:
    """An index's access method (pg_class.relam of an index): weir's indexes are arrangements,
    with no handler function; tables have none (relam 0)."""
    return [(ARRANGEMENT_AM_OID, ARRANGEMENT_AM, "-", "i")]


def _none(s: Snapshot) -> list[Row]:
    return []


def _languages(s: Snapshot) -> list[Row]:
    """The one language of pg_proc's functions (prolang): "internal", as they are built in;
    weir has no validator function for it."""
    return [(INTERNAL_LANGUAGE, "internal", role_oid(s, MZ_SYSTEM_ROLE_ID), False, False, 0, 0, 0, None)]


# ---------------------------------------------------------------- pg_settings


def _vartype(v: VarDef) -> str:
    """Durations and sizes show with their unit ('2min'), so they are strings here."""
    return {"bool": "bool", "int": "integer", "float": "real", "enum": "enum"}.get(v.kind, "string")


def _context(v: VarDef) -> str:
    """PostgreSQL's words: SET changes it (user), only ALTER SYSTEM (sighup), nothing (internal)."""
    return "user" if v.session else "sighup" if v.system else "internal"


def _category(v: VarDef) -> str:
    return ("Client Connection Defaults" if v.session else "Server Settings" if v.system
            else "Preset Options")


def _bound(v: VarDef, x: float | None) -> str | None:
    if x is None or v.kind not in ("int", "float"):
        return None
    return str(int(x)) if v.kind == "int" else str(x)


def _settings_defaults(s: Snapshot) -> list[Row]:
    return [(v.name, _category(v), v.description, _context(v), _vartype(v), _bound(v, v.min),
             _bound(v, v.max), list(v.choices) if v.kind == "enum" else None, v.default) for v in VARS]


def _text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _settings_query() -> str:
    """Each parameter's value for the reading session (current_setting), beside what the
    registry says of it. reset_val is the default: ALTER SYSTEM's value is not shown."""
    values = ", ".join(f"({_text(v.name)}, current_setting({_text(v.name)}))" for v in VARS)
    return ("SELECT d.name, s.setting, CAST(NULL AS text) AS unit, d.category, d.short_desc, "
            "CAST(NULL AS text) AS extra_desc, d.context, d.vartype, "
            "CASE WHEN s.setting = d.boot_val THEN 'default' ELSE 'session' END AS source, d.min_val, d.max_val, "
            "d.enumvals, d.boot_val, d.boot_val AS reset_val, CAST(NULL AS text) AS sourcefile, "
            "CAST(NULL AS integer) AS sourceline, false AS pending_restart "
            f"FROM {MZ_INTERNAL}.pg_settings_defaults d JOIN (VALUES {values}) AS s(name, setting) "
            "ON d.name = s.name")


# ---------------------------------------------------------------- pg_stat_activity

def _session_roles(s: Snapshot) -> list[Row]:
    """Per role, the columns of pg_stat_activity weir's live sessions (mz_internal.mz_sessions)
    do not hold: the role's oid and name, and the database (which sessions do not record)."""
    return [(r.id, None, None, r.oid, r.name) for r in s.roles]


_ACTIVITY = (
    "SELECT x.datid, x.datname, s.connection_id AS pid, CAST(NULL AS integer) AS leader_pid, x.usesysid, "
    "x.usename, CAST(NULL AS text) AS application_name, CAST(NULL AS text) AS client_hostname, "
    "CAST(NULL AS integer) AS client_port, s.connected_at AS backend_start, "
    "CAST(NULL AS timestamp with time zone) AS xact_start, CAST(NULL AS timestamp with time zone) AS query_start, "
    "CAST(NULL AS timestamp with time zone) AS state_change, CAST(NULL AS text) AS wait_event_type, "
    "CAST(NULL AS text) AS wait_event, "
    "CASE WHEN s.connection_id = pg_backend_pid() THEN CAST('active' AS text) END AS state, "
    "CAST(NULL AS bigint) AS query_id, CAST(NULL AS text) AS query, CAST('client backend' AS text) AS backend_type "
    f"FROM {MZ_INTERNAL}.mz_sessions s LEFT JOIN {MZ_INTERNAL}.pg_stat_activity_roles x ON x.role_id = s.role_id")


def _t(*cols: tuple[str, PgType]) -> Columns:
    return cols


CHAR_ARRAY = BY_OID[1002]

TABLES: list[BuiltinTable] = [
    BuiltinTable(PG_CATALOG, "pg_type", *ids(603), _t(
        ("oid", OID), ("typname", NAME), ("typnamespace", OID), ("typowner", OID), ("typlen", INT2),
        ("typbyval", BOOL), ("typtype", CHAR), ("typcategory", CHAR), ("typispreferred", BOOL),
        ("typisdefined", BOOL), ("typdelim", CHAR), ("typrelid", OID), ("typsubscript", REGPROC),
        ("typelem", OID), ("typarray", OID), ("typinput", REGPROC), ("typoutput", REGPROC),
        ("typreceive", REGPROC), ("typsend", REGPROC), ("typmodin", REGPROC), ("typmodout", REGPROC),
        ("typanalyze", REGPROC), ("typalign", CHAR), ("typstorage", CHAR), ("typnotnull", BOOL),
        ("typbasetype", OID), ("typtypmod", INT4), ("typndims", INT4), ("typcollation", OID),
        ("typdefaultbin", NODE_TREE), ("typdefault", TEXT), ("typacl", ACL)), _types,
        frozenset({"typdefaultbin", "typdefault", "typacl"})),
    BuiltinTable(PG_CATALOG, "pg_database", *ids(604), _t(
        ("oid", OID), ("datname", NAME), ("datdba", OID), ("encoding", INT4), ("datlocprovider", CHAR),
        ("datistemplate", BOOL), ("datallowconn", BOOL), ("datconnlimit", INT4), ("dattablespace", OID),
        ("datcollate", TEXT), ("datctype", TEXT), ("daticulocale", TEXT), ("datcollversion", TEXT),
        ("datacl", ACL)), _databases, frozenset({"daticulocale", "datcollversion"})),
    BuiltinTable(PG_CATALOG, "pg_roles", *ids(605), _t(
        ("rolname", NAME), ("rolsuper", BOOL), ("rolinherit", BOOL), ("rolcreaterole", BOOL),
        ("rolcreatedb", BOOL), ("rolcanlogin", BOOL), ("rolreplication", BOOL), ("rolconnlimit", INT4),
        ("rolpassword", TEXT), ("rolvaliduntil", TIMESTAMPTZ), ("rolbypassrls", BOOL), ("rolconfig", TEXT_ARRAY),
        ("oid", OID)), _roles, frozenset({"rolvaliduntil", "rolconfig"})),
    # password verifiers: superusers only, as in PostgreSQL
    BuiltinTable(PG_CATALOG, "pg_authid", *ids(606), _t(
        ("oid", OID), ("rolname", NAME), ("rolsuper", BOOL), ("rolinherit", BOOL), ("rolcreaterole", BOOL),
        ("rolcreatedb", BOOL), ("rolcanlogin", BOOL), ("rolreplication", BOOL), ("rolbypassrls", BOOL),
        ("rolconnlimit", INT4), ("rolpassword", TEXT), ("rolvaliduntil", TIMESTAMPTZ)), _authid,
        frozenset({"rolpassword", "rolvaliduntil"}), restricted=True),
    BuiltinTable(PG_CATALOG, "pg_user", *ids(607), _t(
        ("usename", NAME), ("usesysid", OID), ("usecreatedb", BOOL), ("usesuper", BOOL), ("userepl", BOOL),
        ("usebypassrls", BOOL), ("passwd", TEXT), ("valuntil", TIMESTAMPTZ), ("useconfig", TEXT_ARRAY)), _users,
        frozenset({"valuntil", "useconfig"})),
    BuiltinTable(PG_CATALOG, "pg_auth_members", *ids(631), _t(
        ("roleid", OID), ("member", OID), ("grantor", OID), ("admin_option", BOOL)), _auth_members),
    BuiltinTable(PG_CATALOG, "pg_proc", *ids(613), _t(
        ("oid", OID), ("proname", NAME), ("pronamespace", OID), ("proowner", OID), ("prolang", OID),
        ("procost", FLOAT4), ("prorows", FLOAT4), ("provariadic", OID), ("prosupport", REGPROC),
        ("prokind", CHAR), ("prosecdef", BOOL), ("proleakproof", BOOL), ("proisstrict", BOOL),
        ("proretset", BOOL), ("provolatile", CHAR), ("proparallel", CHAR), ("pronargs", INT2),
        ("pronargdefaults", INT2), ("prorettype", OID), ("proargtypes", OIDVECTOR), ("proallargtypes", OID_ARRAY),
        ("proargmodes", CHAR_ARRAY), ("proargnames", TEXT_ARRAY), ("proargdefaults", NODE_TREE),
        ("protrftypes", OID_ARRAY), ("prosrc", TEXT), ("probin", TEXT), ("prosqlbody", NODE_TREE),
        ("proconfig", TEXT_ARRAY), ("proacl", ACL)), _procs,
        frozenset({"proallargtypes", "proargmodes", "proargnames", "proargdefaults", "protrftypes", "probin",
                   "prosqlbody", "proconfig", "proacl"})),
    BuiltinTable(PG_CATALOG, "pg_collation", *ids(619), _t(
        ("oid", OID), ("collname", NAME), ("collnamespace", OID), ("collowner", OID), ("collprovider", CHAR),
        ("collisdeterministic", BOOL), ("collencoding", INT4), ("collcollate", TEXT), ("collctype", TEXT),
        ("colliculocale", TEXT), ("collversion", TEXT)), _collations,
        frozenset({"collcollate", "collctype", "colliculocale", "collversion"})),
    BuiltinTable(MZ_INTERNAL, "pg_settings_defaults", *ids(650), _t(
        ("name", TEXT), ("category", TEXT), ("short_desc", TEXT), ("context", TEXT), ("vartype", TEXT),
        ("min_val", TEXT), ("max_val", TEXT), ("enumvals", TEXT_ARRAY), ("boot_val", TEXT)), _settings_defaults,
        frozenset({"min_val", "max_val", "enumvals"})),
    BuiltinTable(MZ_INTERNAL, "pg_stat_activity_roles", *ids(651), _t(
        ("role_id", TEXT), ("datid", OID), ("datname", NAME), ("usesysid", OID), ("usename", NAME)),
        _session_roles, frozenset({"datid", "datname"})),
    BuiltinTable(PG_CATALOG, "pg_language", *ids(652), _t(
        ("oid", OID), ("lanname", NAME), ("lanowner", OID), ("lanispl", BOOL), ("lanpltrusted", BOOL),
        ("lanplcallfoid", OID), ("laninline", OID), ("lanvalidator", OID), ("lanacl", ACL)), _languages,
        frozenset({"lanacl"})),
    # weir's only encoding is UTF8: there is nothing to convert between
    BuiltinTable(PG_CATALOG, "pg_conversion", *ids(653), _t(
        ("oid", OID), ("conname", NAME), ("connamespace", OID), ("conowner", OID), ("conforencoding", INT4),
        ("contoencoding", INT4), ("conproc", REGPROC), ("condefault", BOOL)), _none),
    BuiltinTable(PG_CATALOG, "pg_am", *ids(618), _t(
        ("oid", OID), ("amname", NAME), ("amhandler", REGPROC), ("amtype", CHAR)), _access_methods),
    # what weir has none of
    BuiltinTable(PG_CATALOG, "pg_enum", *ids(620), _t(
        ("oid", OID), ("enumtypid", OID), ("enumsortorder", FLOAT4), ("enumlabel", NAME)), _none),
    BuiltinTable(PG_CATALOG, "pg_range", *ids(621), _t(
        ("rngtypid", OID), ("rngsubtype", OID), ("rngmultitypid", OID), ("rngcollation", OID),
        ("rngsubopc", OID), ("rngcanonical", REGPROC), ("rngsubdiff", REGPROC)), _none),
    BuiltinTable(PG_CATALOG, "pg_extension", *ids(624), _t(
        ("oid", OID), ("extname", NAME), ("extowner", OID), ("extnamespace", OID), ("extrelocatable", BOOL),
        ("extversion", TEXT), ("extconfig", OID_ARRAY), ("extcondition", TEXT_ARRAY)), _none,
        frozenset({"extconfig", "extcondition"})),
    BuiltinTable(PG_CATALOG, "pg_event_trigger", *ids(625), _t(
        ("oid", OID), ("evtname", NAME), ("evtevent", NAME), ("evtowner", OID), ("evtfoid", OID),
        ("evtenabled", CHAR), ("evttags", TEXT_ARRAY)), _none, frozenset({"evttags"})),
    BuiltinTable(PG_CATALOG, "pg_trigger", *ids(626), _t(
        ("oid", OID), ("tgrelid", OID), ("tgparentid", OID), ("tgname", NAME), ("tgfoid", OID), ("tgtype", INT2),
        ("tgenabled", CHAR), ("tgisinternal", BOOL), ("tgconstrrelid", OID), ("tgconstrindid", OID),
        ("tgconstraint", OID), ("tgdeferrable", BOOL), ("tginitdeferred", BOOL), ("tgnargs", INT2),
        ("tgattr", INT2VECTOR), ("tgargs", BYTEA), ("tgqual", NODE_TREE), ("tgoldtable", NAME),
        ("tgnewtable", NAME)), _none, frozenset({"tgqual", "tgoldtable", "tgnewtable"})),
    BuiltinTable(PG_CATALOG, "pg_rewrite", *ids(627), _t(
        ("oid", OID), ("rulename", NAME), ("ev_class", OID), ("ev_type", CHAR), ("ev_enabled", CHAR),
        ("is_instead", BOOL), ("ev_qual", NODE_TREE), ("ev_action", NODE_TREE)), _none),
    BuiltinTable(PG_CATALOG, "pg_tablespace", *ids(628), _t(
        ("oid", OID), ("spcname", NAME), ("spcowner", OID), ("spcacl", ACL), ("spcoptions", TEXT_ARRAY)), _tablespaces,
        frozenset({"spcacl", "spcoptions"})),
    # weir takes no locks a session could wait on: empty is the honest answer
    BuiltinTable(PG_CATALOG, "pg_locks", *ids(630), _t(
        ("locktype", TEXT), ("database", OID), ("relation", OID), ("page", INT4), ("tuple", INT2),
        ("virtualxid", TEXT), ("classid", OID), ("objid", OID), ("objsubid", INT2), ("virtualtransaction", TEXT),
        ("pid", INT4), ("mode", TEXT), ("granted", BOOL), ("fastpath", BOOL), ("waitstart", TIMESTAMPTZ)), _none,
        frozenset({"locktype", "database", "relation", "page", "tuple", "virtualxid", "classid", "objid",
                   "objsubid", "virtualtransaction", "pid", "mode", "waitstart"})),
    BuiltinTable(PG_CATALOG, "pg_shdescription", *ids(632), _t(
        ("objoid", OID), ("classoid", OID), ("description", TEXT)), _none),
    # What weir has none of (row security policies, extended statistics, logical
    # replication publications): empty, for the queries psql's \d sends
    BuiltinTable(PG_CATALOG, "pg_policy", *ids(633), _t(
        ("oid", OID), ("polname", NAME), ("polrelid", OID), ("polcmd", CHAR), ("polpermissive", BOOL),
        ("polroles", OID_ARRAY), ("polqual", NODE_TREE), ("polwithcheck", NODE_TREE)), _none,
        frozenset({"polqual", "polwithcheck"})),
    BuiltinTable(PG_CATALOG, "pg_statistic_ext", *ids(634), _t(
        ("oid", OID), ("stxrelid", OID), ("stxname", NAME), ("stxnamespace", OID), ("stxowner", OID),
        ("stxstattarget", INT4), ("stxkeys", INT2VECTOR), ("stxkind", CHAR_ARRAY), ("stxexprs", NODE_TREE)), _none,
        frozenset({"stxexprs"})),
    BuiltinTable(PG_CATALOG, "pg_publication", *ids(635), _t(
        ("oid", OID), ("pubname", NAME), ("pubowner", OID), ("puballtables", BOOL), ("pubinsert", BOOL),
        ("pubupdate", BOOL), ("pubdelete", BOOL), ("pubtruncate", BOOL), ("pubviaroot", BOOL)), _none),
    BuiltinTable(PG_CATALOG, "pg_publication_namespace", *ids(636), _t(
        ("oid", OID), ("pnpubid", OID), ("pnnspid", OID)), _none),
    # weir has no sequences and no operator classes (an index is an arrangement,
    # pg_am's one access method): empty, for the catalog queries SQLAlchemy's reflection sends
    BuiltinTable(PG_CATALOG, "pg_sequence", *ids(696), _t(
        ("seqrelid", OID), ("seqtypid", OID), ("seqstart", INT8), ("seqincrement", INT8), ("seqmax", INT8),
        ("seqmin", INT8), ("seqcache", INT8), ("seqcycle", BOOL)), _none),
    BuiltinTable(PG_CATALOG, "pg_opclass", *ids(697), _t(
        ("oid", OID), ("opcmethod", OID), ("opcname", NAME), ("opcnamespace", OID), ("opcowner", OID),
        ("opcfamily", OID), ("opcintype", OID), ("opcdefault", BOOL), ("opckeytype", OID)), _none),
    BuiltinTable(PG_CATALOG, "pg_publication_rel", *ids(637), _t(
        ("oid", OID), ("prpubid", OID), ("prrelid", OID), ("prqual", NODE_TREE), ("prattrs", INT2VECTOR)), _none,
        frozenset({"prqual", "prattrs"})),
]

# pg_stat_user_tables: the user's tables and materialized views, with the counters of
# PostgreSQL's statistics collector, which weir does not keep (NULL: unknown)
_COUNTERS = ("seq_scan", "seq_tup_read", "idx_scan", "idx_tup_fetch", "n_tup_ins", "n_tup_upd", "n_tup_del",
             "n_tup_hot_upd", "n_live_tup", "n_dead_tup", "n_mod_since_analyze", "n_ins_since_vacuum")
_LAST = ("last_vacuum", "last_autovacuum", "last_analyze", "last_autoanalyze")
_COUNTS = ("vacuum_count", "autovacuum_count", "analyze_count", "autoanalyze_count")
_USER_TABLES = (
    "SELECT c.oid AS relid, n.nspname AS schemaname, c.relname, "
    + ", ".join(f"CAST(NULL AS bigint) AS {c}" for c in _COUNTERS) + ", "
    + ", ".join(f"CAST(NULL AS timestamp with time zone) AS {c}" for c in _LAST) + ", "
    + ", ".join(f"CAST(NULL AS bigint) AS {c}" for c in _COUNTS)
    + f" FROM {PG_CATALOG}.pg_class c JOIN {PG_CATALOG}.pg_namespace n ON n.oid = c.relnamespace "
    "WHERE c.relkind IN ('r', 'm', 'p') AND n.nspname NOT IN "
    "('pg_catalog', 'information_schema', 'mz_catalog', 'mz_internal', 'mz_introspection')")

VIEWS: list[BuiltinView] = [
    BuiltinView(PG_CATALOG, "pg_settings", *ids(623), _t(
        ("name", TEXT), ("setting", TEXT), ("unit", TEXT), ("category", TEXT), ("short_desc", TEXT),
        ("extra_desc", TEXT), ("context", TEXT), ("vartype", TEXT), ("source", TEXT), ("min_val", TEXT),
        ("max_val", TEXT), ("enumvals", TEXT_ARRAY), ("boot_val", TEXT), ("reset_val", TEXT),
        ("sourcefile", TEXT), ("sourceline", INT4), ("pending_restart", BOOL)), _settings_query()),
    BuiltinView(PG_CATALOG, "pg_stat_activity", *ids(629), _t(
        ("datid", OID), ("datname", NAME), ("pid", INT4), ("leader_pid", INT4), ("usesysid", OID),
        ("usename", NAME), ("application_name", TEXT), ("client_hostname", TEXT), ("client_port", INT4),
        ("backend_start", TIMESTAMPTZ), ("xact_start", TIMESTAMPTZ), ("query_start", TIMESTAMPTZ),
        ("state_change", TIMESTAMPTZ), ("wait_event_type", TEXT), ("wait_event", TEXT), ("state", TEXT),
        ("query_id", INT8), ("query", TEXT), ("backend_type", TEXT)), _ACTIVITY),
    BuiltinView(PG_CATALOG, "pg_stat_user_tables", *ids(654), _t(
        ("relid", OID), ("schemaname", NAME), ("relname", NAME), *((c, INT8) for c in _COUNTERS),
        *((c, TIMESTAMPTZ) for c in _LAST), *((c, INT8) for c in _COUNTS)), _USER_TABLES),
]
