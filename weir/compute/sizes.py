"""Replica sizes: what a cluster replica's SIZE means in Spark settings.

A size names a Spark master and the driver's resources. The defaults run
Spark in local mode inside the replica process; a config may add sizes that
point at a standalone / Kubernetes / YARN master (`{"sizes": {...}}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from weir.errors import SqlState, WeirError


@dataclass(frozen=True)
class ReplicaSize:
    name: str
    master: str
    workers: int
    driver_memory: str
    spark_conf: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return self.master.startswith("local")


DEFAULT_SIZES: dict[str, ReplicaSize] = {
    "1": ReplicaSize("1", "local[1]", 1, "1g"),
    "2": ReplicaSize("2", "local[2]", 2, "2g"),
    "4": ReplicaSize("4", "local[4]", 4, "4g"),
}


def size_map(config: Mapping[str, Any] | None = None) -> dict[str, ReplicaSize]:
    """The default sizes overlaid with `config["sizes"]` (name -> fields)."""
    sizes = dict(DEFAULT_SIZES)
    for name, spec in ((config or {}).get("sizes") or {}).items():
        workers = int(spec.get("workers", 1))
        sizes[str(name)] = ReplicaSize(
            str(name),
            str(spec.get("master", f"local[{workers}]")),
            workers,
            str(spec.get("driver_memory", "1g")),
            {str(k): str(v) for k, v in (spec.get("spark_conf") or {}).items()},
        )
    return sizes


def resolve_size(size: str, config: Mapping[str, Any] | None = None) -> ReplicaSize:
    sizes = size_map(config)
    try:
        return sizes[str(size)]
    except KeyError:
        valid = ", ".join(f"'{s}'" for s in sizes)
        raise WeirError(
            SqlState.INVALID_PARAMETER_VALUE,
            f"unknown cluster replica size '{size}'; valid sizes are {valid}",
        ) from None
