"""The coordinator's side of compute (Materialize's compute-client): replica
connections, dataflow and peek bookkeeping. Never imports weir.compute.replica."""

from weir.compute.controller.compute_controller import (
    ComputeController,
    Orchestrator,
    ReplicaStatus,
)

__all__ = ["ComputeController", "Orchestrator", "ReplicaStatus"]
