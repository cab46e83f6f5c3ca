"""Durable, transactional catalog: databases, schemas, roles, clusters, replicas,
items, grants, system variables, the timestamp oracle's high-water mark; plus the
builtin relation definitions and the configuration-parameter registry."""

from weir.catalog.model import (
    Cluster,
    ClusterChange,
    ColumnDef,
    Database,
    DropResult,
    Item,
    Privilege,
    Replica,
    Role,
    RoleMembership,
    Schema,
    Snapshot,
)
from weir.catalog.store import Catalog

__all__ = [
    "Catalog", "Cluster", "ClusterChange", "ColumnDef", "Database", "DropResult", "Item",
    "Privilege", "Replica", "Role", "RoleMembership", "Schema", "Snapshot",
]
