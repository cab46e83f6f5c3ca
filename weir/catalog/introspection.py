"""Each replica's introspection sources and views (designs 001 and 004): for every log
variant a source `mz_introspection.<log>_<replica_id>` (its part of the replica's
introspection shard) and for every log view a view `mz_introspection.<view>_<replica_id>`
over them. They belong to their replica: created with it, dropped with it (2BP01 naming a
user object that reads them, unless CASCADE)."""

from __future__ import annotations

from sqlalchemy import select

from weir.catalog import tables as t
from weir.catalog.base import id_key
from weir.catalog.clusters import ClustersMixin
from weir.catalog.model import (
    MZ_INTROSPECTION,
    MZ_SYSTEM_ROLE_ID,
    SOURCE,
    VIEW,
    ColumnDef,
    Item,
    kind_label,
)
from weir.compute import introspection as ci
from weir.errors import SqlState, WeirError

DEFAULT_INTERVAL = "1s"


class IntrospectionMixin(ClustersMixin):
    def introspection_items(self, replica_ids: set[str] | None = None) -> list[Item]:
        """The introspection sources and views of these replicas (all when None)."""
        schema = self.get_schema(None, MZ_INTROSPECTION)
        items = self.list_items(schema_id=schema.id)
        return [i for i in items if "replica_id" in i.definition and not i.builtin
                and (replica_ids is None or i.definition["replica_id"] in replica_ids)]

    def create_introspection_items(self, replica_id: str) -> list[Item]:
        """The replica's sources, then its views; none twice (idempotent)."""
        schema = self.get_schema(None, MZ_INTROSPECTION)
        made: list[Item] = []
        shard = ci.shard_id(replica_id)
        with self._write():
            sources: dict[str, str] = {}
            for v in ci.LOG_VARIANTS:
                name = v.source_name(replica_id)
                item = self.find_item(schema.id, name) or self.create_item(
                    SOURCE, schema.id, name, [ColumnDef(n, ty) for n, ty in v.columns], "",
                    {"type": "introspection", "replica_id": replica_id, "introspection_log": v.name,
                     "shard_id": shard}, MZ_SYSTEM_ROLE_ID)
                sources[v.name] = item.id
                made.append(item)
            for view in ci.LOG_VIEWS:
                name = view.view_name(replica_id)
                deps = [sources[n] for n in sources if "{" + n + "}" in view.query]
                item = self.find_item(schema.id, name) or self.create_item(
                    VIEW, schema.id, name, [ColumnDef(n, ty) for n, ty in view.columns], "",
                    {"query": view.sql(replica_id), "replica_id": replica_id}, MZ_SYSTEM_ROLE_ID,
                    dependencies=deps)
                made.append(item)
        return made

    def drop_introspection_items(self, replica_ids: set[str], cascade: bool = False) -> tuple[Item, ...]:
        """Drop these replicas' introspection items; 2BP01 if a user object reads them
        unless `cascade`, which drops those too. Returns what was dropped."""
        with self._write() as c:
            own = {i.id for i in self.introspection_items(replica_ids)}
            if not own:
                return ()
            others = self._dependent_ids(c, own) - own
            if others and not cascade:
                dep = self.get_item(min(others, key=id_key))
                rows = c.execute(select(t.item_dependencies.c.depends_on).where(
                    t.item_dependencies.c.item_id == dep.id)).all()
                read = next((self.get_item(r[0]) for r in rows if r[0] in own), None)
                what = f'{kind_label(read.kind)} "{read.name}"' if read is not None else "its introspection"
                raise WeirError(SqlState.DEPENDENT_OBJECTS_STILL_EXIST,
                                f"cannot drop the replica's {what}: still depended upon by "
                                f'{kind_label(dep.kind)} "{dep.full_name}"',
                                hint="Use DROP ... CASCADE to drop the dependent objects too.")
            return self._drop_items(c, own)
