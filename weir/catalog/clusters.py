"""Clusters and their replicas, with each replica's incarnation number.

A managed cluster owns replicas r1..rN of its size; `alter_cluster` keeps them
in line with size and replication factor and reports what it created and
dropped so the orchestrator can start/stop processes. The incarnation is the
replica's fencing epoch: every process start bumps it durably.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import Connection, Row, delete, insert, select, update

from weir.catalog import tables as t
from weir.catalog.base import id_key
from weir.catalog.model import (
    MATERIALIZE_ROLE_ID,
    Cluster,
    ClusterChange,
    DropResult,
    Replica,
    kind_label,
)
from weir.catalog.objects import dumps
from weir.catalog.roles import RESERVED_NAME, RolesMixin
from weir.errors import SqlState, WeirError


def _cluster(r: Row[Any]) -> Cluster:
    return Cluster(r.id, r.name, r.owner_id, bool(r.managed), r.size,
                   None if r.replication_factor is None else int(r.replication_factor),
                   json.loads(r.options or "{}"))


def _replica(r: Row[Any]) -> Replica:
    return Replica(r.id, r.cluster_id, r.name, r.size, int(r.incarnation), r.owner_id,
                   json.loads(r.options or "{}"))


class ClustersMixin(RolesMixin):
    """Clusters, replicas, incarnations."""

    def list_clusters(self) -> list[Cluster]:
        with self._read() as c:
            rows = c.execute(select(t.clusters)).all()
        return sorted((_cluster(r) for r in rows), key=lambda x: id_key(x.id))

    def find_cluster(self, name: str) -> Cluster | None:
        with self._read() as c:
            r = c.execute(select(t.clusters).where(t.clusters.c.name == name)).first()
        return _cluster(r) if r else None

    def get_cluster(self, name: str) -> Cluster:
        """By name; 42704 if there is none."""
        cl = self.find_cluster(name)
        if cl is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT, f'cluster "{name}" does not exist')
        return cl

    def get_cluster_by_id(self, cluster_id: str) -> Cluster:
        with self._read() as c:
            r = c.execute(select(t.clusters).where(t.clusters.c.id == cluster_id)).first()
        if r is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT,
                            f"cluster with id {cluster_id} does not exist")
        return _cluster(r)

    def create_cluster(self, name: str, size: str | None = "1", replication_factor: int = 1,
                       managed: bool = True, owner_id: str = MATERIALIZE_ROLE_ID,
                       options: dict[str, Any] | None = None) -> Cluster:
        """A cluster; a managed one gets replicas r1..r<replication_factor> of `size`.
        42710 if the name is taken, 42939 for mz_* names."""
        if name.lower().startswith("mz_"):
            raise WeirError(RESERVED_NAME, f'cluster name "{name}" is reserved')
        if managed and not size:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE, "a managed cluster needs a SIZE")
        if replication_factor < 0:
            raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                            "REPLICATION FACTOR must be zero or more")
        with self._write() as c:
            if self.find_cluster(name) is not None:
                raise WeirError(SqlState.DUPLICATE_OBJECT, f'cluster "{name}" already exists')
            self._require_role_id(c, owner_id)
            cl = Cluster(self._next_id(c, "cluster"), name, owner_id, managed,
                         size if managed else None, replication_factor if managed else None,
                         dict(options or {}))
            c.execute(insert(t.clusters).values(
                id=cl.id, name=name, owner_id=owner_id, managed=managed, size=cl.size,
                replication_factor=cl.replication_factor, options=dumps(cl.options)))
            if managed:
                for n in range(1, replication_factor + 1):
                    self.create_replica(cl.id, f"r{n}", size or "1", owner_id)
            return cl

    def alter_cluster(self, name: str, *, size: str | None = None,
                      replication_factor: int | None = None, rename_to: str | None = None,
                      options: dict[str, Any] | None = None,
                      managed: bool | None = None) -> ClusterChange:
        """Change a cluster. For a managed cluster, a new size replaces every replica
        (new ids), and a new replication factor adds r<k> / drops the highest."""
        with self._write() as c:
            cl = self.get_cluster(name)
            values: dict[str, Any] = {}
            if rename_to is not None and rename_to != name:
                if rename_to.lower().startswith("mz_"):
                    raise WeirError(RESERVED_NAME, f'cluster name "{rename_to}" is reserved')
                if self.find_cluster(rename_to) is not None:
                    raise WeirError(SqlState.DUPLICATE_OBJECT,
                                    f'cluster "{rename_to}" already exists')
                values["name"] = rename_to
            if options is not None:
                values["options"] = dumps({**cl.options, **options})
            is_managed = cl.managed if managed is None else managed
            values["managed"] = is_managed
            new_size = size if size is not None else cl.size
            new_rf = replication_factor if replication_factor is not None else (
                cl.replication_factor if cl.replication_factor is not None
                else len(self.list_replicas(cl.id)))
            if is_managed:
                if not new_size:
                    raise WeirError(SqlState.INVALID_PARAMETER_VALUE,
                                    "a managed cluster needs a SIZE")
                values["size"], values["replication_factor"] = new_size, new_rf
            else:
                values["size"], values["replication_factor"] = None, None
            c.execute(update(t.clusters).where(t.clusters.c.id == cl.id).values(**values))
            created: list[Replica] = []
            dropped: list[Replica] = []
            if is_managed:
                current = self.list_replicas(cl.id)
                if size is not None and any(r.size != new_size for r in current):
                    for r in current:
                        dropped.append(self.drop_replica(r.id))
                    current = []
                names = {r.name for r in current}
                keep = sorted(current, key=lambda r: id_key(r.id))
                while len(keep) > new_rf:
                    r = keep.pop()
                    dropped.append(self.drop_replica(r.id))
                n = 1
                while len(keep) + len(created) < new_rf:
                    while f"r{n}" in names:
                        n += 1
                    names.add(f"r{n}")
                    created.append(self.create_replica(cl.id, f"r{n}", new_size or "1",
                                                       cl.owner_id))
            return ClusterChange(self.get_cluster_by_id(cl.id), tuple(created),
                                 tuple(dropped))

    def drop_cluster(self, name: str, cascade: bool = False) -> DropResult:
        """2BP01 while items run on it unless `cascade`; drops its replicas."""
        with self._write() as c:
            cl = self.get_cluster(name)
            ids = [r[0] for r in c.execute(
                select(t.items.c.id).where(t.items.c.cluster_id == cl.id))]
            if ids and not cascade:
                first = self.get_item(min(ids, key=id_key))
                raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                                f'cannot drop cluster "{name}" because other objects depend '
                                f'on it (e.g. {kind_label(first.kind)} "{first.name}")',
                                hint="Use DROP ... CASCADE to drop the dependent objects too.")
            items = self._drop_items(c, ids)
            reps = self.list_replicas(cl.id)
            c.execute(delete(t.replicas).where(t.replicas.c.cluster_id == cl.id))
            c.execute(delete(t.clusters).where(t.clusters.c.id == cl.id))
            self._delete_privileges(c, "cluster", [cl.id])
            return DropResult(items=items, replicas=tuple(reps))

    # -- replicas ----------------------------------------------------------------------

    def list_replicas(self, cluster_id: str | None = None) -> list[Replica]:
        q = select(t.replicas)
        if cluster_id is not None:
            q = q.where(t.replicas.c.cluster_id == cluster_id)
        with self._read() as c:
            rows = c.execute(q).all()
        return sorted((_replica(r) for r in rows), key=lambda x: id_key(x.id))

    def get_replica(self, replica_id: str) -> Replica:
        with self._read() as c:
            r = c.execute(select(t.replicas).where(t.replicas.c.id == replica_id)).first()
        if r is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT,
                            f"cluster replica with id {replica_id} does not exist")
        return _replica(r)

    def find_replica(self, cluster_id: str, name: str) -> Replica | None:
        with self._read() as c:
            r = c.execute(select(t.replicas).where(
                (t.replicas.c.cluster_id == cluster_id) & (t.replicas.c.name == name))).first()
        return _replica(r) if r else None

    def resolve_replica(self, cluster: str, replica: str) -> Replica:
        """`cluster.replica` by names; 42704 if either is unknown."""
        cl = self.get_cluster(cluster)
        r = self.find_replica(cl.id, replica)
        if r is None:
            raise WeirError(SqlState.UNDEFINED_OBJECT,
                            f'cluster replica "{cluster}.{replica}" does not exist')
        return r

    def create_replica(self, cluster_id: str, name: str, size: str,
                       owner_id: str = MATERIALIZE_ROLE_ID,
                       options: dict[str, Any] | None = None) -> Replica:
        """A replica (incarnation 0); 42710 if the cluster already has that name."""
        with self._write() as c:
            cl = self.get_cluster_by_id(cluster_id)
            if self.find_replica(cluster_id, name) is not None:
                raise WeirError(SqlState.DUPLICATE_OBJECT,
                                f'cluster replica "{cl.name}.{name}" already exists')
            self._require_role_id(c, owner_id)
            rep = Replica(self._next_id(c, "replica"), cluster_id, name, size, 0, owner_id,
                          dict(options or {}))
            c.execute(insert(t.replicas).values(
                id=rep.id, cluster_id=cluster_id, name=name, size=size, incarnation=0,
                owner_id=owner_id, options=dumps(rep.options)))
            return rep

    def drop_replica(self, replica_id: str) -> Replica:
        with self._write() as c:
            rep = self.get_replica(replica_id)
            c.execute(delete(t.replicas).where(t.replicas.c.id == replica_id))
            return rep

    def bump_incarnation(self, replica_id: str) -> int:
        """Durably increment the replica's incarnation (its fencing epoch); returns it."""
        with self._write() as c:
            return self._bump(c, replica_id)

    def _bump(self, c: Connection, replica_id: str) -> int:
        rep = self.get_replica(replica_id)
        c.execute(update(t.replicas).where(t.replicas.c.id == replica_id).values(
            incarnation=t.replicas.c.incarnation + 1))
        return rep.incarnation + 1
