"""The catalog's SQL tables (SQLAlchemy Core), portable across SQLite and PostgreSQL.

Every table is prefixed `weir_` because the same database also holds
pyiceberg's SQL-catalog tables. JSON payloads are stored as TEXT (sorted keys)
so both backends store byte-identical values.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

ids = Table(
    "weir_ids", metadata,
    Column("name", String(64), primary_key=True),  # e.g. "item.user", "oid.user"
    Column("next", BigInteger, nullable=False),
)

databases = Table(
    "weir_databases", metadata,
    Column("id", String(32), primary_key=True),
    Column("oid", BigInteger, nullable=False, unique=True),
    Column("name", Text, nullable=False, unique=True),
    Column("owner_id", String(32), nullable=False),
)

schemas = Table(
    "weir_schemas", metadata,
    Column("id", String(32), primary_key=True),
    Column("oid", BigInteger, nullable=False, unique=True),
    Column("database_id", String(32), nullable=True),
    Column("name", Text, nullable=False),
    Column("owner_id", String(32), nullable=False),
    UniqueConstraint("database_id", "name", name="weir_schemas_db_name"),
)

roles = Table(
    "weir_roles", metadata,
    Column("id", String(32), primary_key=True),
    Column("oid", BigInteger, nullable=False, unique=True),
    Column("name", Text, nullable=False, unique=True),
    Column("superuser", Boolean, nullable=False),
    Column("login", Boolean, nullable=False),
    Column("inherit", Boolean, nullable=False),
    Column("password", Text, nullable=True),
)

role_members = Table(
    "weir_role_members", metadata,
    Column("role_id", String(32), nullable=False),
    Column("member_id", String(32), nullable=False),
    Column("grantor_id", String(32), nullable=False),
    PrimaryKeyConstraint("role_id", "member_id", name="weir_role_members_pk"),
    Index("weir_role_members_member", "member_id"),
)

clusters = Table(
    "weir_clusters", metadata,
    Column("id", String(32), primary_key=True),
    Column("name", Text, nullable=False, unique=True),
    Column("owner_id", String(32), nullable=False),
    Column("managed", Boolean, nullable=False),
    Column("size", Text, nullable=True),
    Column("replication_factor", Integer, nullable=True),
    Column("options", Text, nullable=False, default="{}"),
)

replicas = Table(
    "weir_cluster_replicas", metadata,
    Column("id", String(32), primary_key=True),
    Column("cluster_id", String(32), nullable=False),
    Column("name", Text, nullable=False),
    Column("size", Text, nullable=False),
    Column("incarnation", BigInteger, nullable=False),
    Column("owner_id", String(32), nullable=False),
    Column("options", Text, nullable=False, default="{}"),
    UniqueConstraint("cluster_id", "name", name="weir_replicas_cluster_name"),
)

items = Table(
    "weir_items", metadata,
    Column("id", String(32), primary_key=True),
    Column("oid", BigInteger, nullable=False, unique=True),
    Column("schema_id", String(32), nullable=False),
    Column("name", Text, nullable=False),
    Column("kind", String(64), nullable=False),
    Column("owner_id", String(32), nullable=False),
    Column("cluster_id", String(32), nullable=True),
    Column("columns", Text, nullable=False),
    Column("create_sql", Text, nullable=False),
    Column("definition", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),  # ms since the Unix epoch
    UniqueConstraint("schema_id", "name", name="weir_items_schema_name"),
    Index("weir_items_cluster", "cluster_id"),
)

item_dependencies = Table(
    "weir_item_dependencies", metadata,
    Column("item_id", String(32), nullable=False),
    Column("depends_on", String(32), nullable=False),
    PrimaryKeyConstraint("item_id", "depends_on", name="weir_item_dependencies_pk"),
    Index("weir_item_dependencies_on", "depends_on"),
)

privileges = Table(
    "weir_privileges", metadata,
    Column("object_type", String(32), nullable=False),  # database|schema|item|cluster|system
    Column("object_id", String(32), nullable=False),
    Column("grantee_id", String(32), nullable=False),
    Column("grantor_id", String(32), nullable=False),
    Column("privileges", String(32), nullable=False),
    PrimaryKeyConstraint("object_type", "object_id", "grantee_id", "grantor_id",
                         name="weir_privileges_pk"),
)

system_vars = Table(
    "weir_system_vars", metadata,
    Column("name", String(128), primary_key=True),
    Column("value", Text, nullable=False),
)

oracle = Table(
    "weir_oracle", metadata,
    Column("id", Integer, primary_key=True),
    Column("ts", BigInteger, nullable=False),
)

kv = Table(
    "weir_metadata", metadata,
    Column("key", String(128), primary_key=True),
    Column("value", Text, nullable=False),
)
