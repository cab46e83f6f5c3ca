"""Which incremental strategy maintains a dataflow, built from its query (or why none)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from weir.compute.replica.dataflow_spec import REDUCE
from weir.compute.replica.incremental import join, join_shape
from weir.compute.replica.incremental.maintained import Incremental, InputUpdates, Source
from weir.compute.replica.incremental.reduce import Reduce

log = logging.getLogger(__name__)


def build(strategy: str, dataflow_id: str, sql: str, inputs: Sequence[tuple[str, Sequence[Any]]],
          schema: Any, new_session: Callable[[], Any], partitions: int,
          directory: str) -> tuple[Incremental | None, str | None]:
    """The dataflow's strategy ("reduce": a GROUP BY of count / sum over its inputs or over
    a delta join of two; "join": a delta join then linear operators), or None (it
    recomputes) and why. Its state goes under `directory`."""
    source: Source | None = None
    try:
        if join_shape.has_join(sql):
            shape = join_shape.split(sql, {name: [c[0] for c in columns] for name, columns in inputs})
            source = delta = join.DeltaJoin(shape, inputs, new_session, partitions, directory)
            sql = shape.post_sql
        elif strategy == REDUCE:
            source, delta = InputUpdates(inputs), None
        else:
            raise join_shape.NotJoinable("the query has no join")
        if strategy == REDUCE:
            ready = source

            def analyse(query: str, views: Mapping[str, Any] | None = None) -> Any:
                """The query over the (empty) inputs and `views` (name: Spark schema)."""
                session = new_session()
                ready.register_empty(session)
                for name, view_schema in (views or {}).items():
                    session.createDataFrame([], view_schema).createOrReplaceTempView(name)
                return session.sql(query)

            return Reduce(sql, source, schema, analyse, partitions, directory), None
        assert delta is not None
        return join.JoinedView(sql, delta, schema, directory), None
    except Exception as e:  # NotReducible, NotJoinable, or Spark refusing a part of the query
        if source is not None:
            source.close()
        why = f"not {'reducible' if strategy == REDUCE else 'joinable'}: {str(e).splitlines()[0][:200]}"
        log.info("dataflow %s: recomputing (%s)", dataflow_id, why)
        return None, why
