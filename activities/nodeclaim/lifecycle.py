"""Every NodeClaim lifecycle activity, phase by phase, over one set of boundaries: what a worker
registers for the NodeClaim workflow."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from activities.metrics.registry import Metrics
from activities.nodeclaim.base import ClaimActivities
from activities.nodeclaim.initialization import InitializationActivities
from activities.nodeclaim.launch import LaunchActivities
from activities.nodeclaim.registration import RegistrationActivities
from activities.nodeclaim.running import RunningActivities
from activities.nodeclaim.termination import TerminationActivities
from cloudprovider.types import CloudProvider
from kube import ops as kubeops
from kube.node_directory import NodeDirectory
from kube.shared_reads import SharedReads
from kube.types import Kube

PHASES: tuple[type[ClaimActivities], ...] = (
    LaunchActivities,
    RegistrationActivities,
    InitializationActivities,
    RunningActivities,
    TerminationActivities,
)


def node_claim_activities(
    kube: Kube,
    cloud: CloudProvider,
    recorder: kubeops.Recorder,
    cluster_name: str,
    metrics: Metrics | None = None,
    nodes: NodeDirectory | None = None,
) -> list[Callable[..., Any]]:
    """The bound activities of every phase (one SharedReads for all, so a NodePool or EC2NodeClass read by
    one phase serves the others for its TTL), counting into `metrics`, finding Nodes through `nodes` (the
    worker's Node watch index; without it, registration LISTs Nodes)."""
    shared_reads = SharedReads(kube)
    metrics = metrics or Metrics()
    nodes = nodes or NodeDirectory()
    return [
        fn
        for phase in PHASES
        for fn in phase(kube, cloud, recorder, cluster_name, shared_reads, metrics, nodes).activities
    ]
