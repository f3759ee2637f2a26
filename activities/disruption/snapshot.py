"""The cluster as the disruption decision takes it, read through the Kube boundary. No Temporal.

`read_disruption_input(kube, instance_types, ...)` is the one snapshot builder: the controller's
`decide_disruption` activity (activities.disruption.decision) and the `nodeflow explain` / `nodeflow simulate
--disruption --from-cluster` commands call it, so the commands judge a node exactly as the controller
does. It imports neither temporalio nor a cloud client: the caller passes the instance-type catalog (the
cloud provider's, or the built-in AWS catalog offline).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from apis.ec2nodeclass import EC2NodeClass
from apis.instancetype import InstanceType
from apis.nodeclaim import NodeClaim
from apis.nodepool import NodePool, is_managed
from kube import resources as r
from kube import watch_cache
from kube.types import Kube, Obj
from kube.watch_cache import WatchCache
from scheduling.disruption import DisruptionInput
from scheduling.provisioning.provisionable import is_bound
from scheduling.types import SchedulingInput, SchedulingPolicies

log = logging.getLogger(__name__)


def parse_all(
    objs: Sequence[Obj], model: type[NodePool] | type[EC2NodeClass] | type[NodeClaim], skipped: list[str] | None = None
) -> list[Any]:
    """Every object that validates as `model`; the others are logged and, when `skipped` is given, named
    in it (`Kind "name": invalid, skipped`)."""
    out = []
    for obj in objs:
        try:
            out.append(model.model_validate(obj))
        except ValidationError:
            name = (obj.get("metadata") or {}).get("name")
            log.info("disruption: skipping invalid %s %s", model.__name__, name)
            if skipped is not None:
                skipped.append(f'{model.__name__} "{name}": invalid, skipped')
    return out


def read_disruption_input(
    kube: Kube,
    instance_types: Sequence[InstanceType],
    *,
    now: datetime | None = None,
    spot_to_spot_consolidation: bool = False,
    single_node_first: Sequence[str] = (),
    skipped: list[str] | None = None,
    watched: bool = True,
    cache: WatchCache | None = None,
    policies: SchedulingPolicies | None = None,
) -> DisruptionInput:
    """Nodes, NodeClaims, bound pods, PodDisruptionBudgets, NodePools, EC2NodeClasses, DaemonSets and the
    volume, runtime and Namespace objects, read now, with the given catalog; `now` defaults to the current
    UTC time.
    Invalid NodeClaims, NodePools and EC2NodeClasses are left out (named in `skipped` when given).
    `watched` False leaves out what the leader watches (pods, Nodes, NodeClaims, NodePools,
    EC2NodeClasses: empty lists), for a look that only needs the rest (scheduling.disruption.settled
    `side_key`); `with_watched` adds them later. `cache`: the leader's watch cache (kube.watch_cache);
    once synced, those watched kinds are read from it instead of being listed. Raises the Kube boundary's
    errors (kube.errors) when the API cannot be read. `policies`: Karpenter's scheduling settings, which
    the simulations of consolidation schedule with (scheduling.types.SchedulingPolicies)."""
    side = DisruptionInput(
        cluster=SchedulingInput(
            instance_types=list(instance_types),
            daemonsets=kube.list(r.DAEMONSET),
            persistent_volume_claims=kube.list(r.PVC),
            persistent_volumes=kube.list(r.PV),
            storage_classes=kube.list(r.STORAGECLASS),
            runtime_classes=kube.list(r.RUNTIMECLASS),
            namespaces=kube.list(r.NAMESPACE),
            **(policies or SchedulingPolicies()).fields(),
        ),
        pod_disruption_budgets=kube.list(r.PDB),
        now=now or datetime.now(UTC),
        spot_to_spot_consolidation=spot_to_spot_consolidation,
        single_node_first=list(single_node_first),
    )
    return with_watched(side, kube, cache, skipped) if watched else side


def with_watched(
    side: DisruptionInput, kube: Kube, cache: WatchCache | None = None, skipped: list[str] | None = None
) -> DisruptionInput:
    """`side`, a snapshot read with `watched` False, with what the leader watches read now (from `cache`
    once it is synced, as read_disruption_input reads them), so a look that read the rest first need not
    read it again. Invalid NodeClaims, NodePools and EC2NodeClasses are left out (named in `skipped`)."""

    def read(resource: r.Resource) -> list[Obj]:
        return watch_cache.read(kube, resource, cache)

    cluster = SchedulingInput(
        **{
            **dict(side.cluster),
            "bound_pods": [p for p in read(r.POD) if is_bound(p)],
            "nodes": read(r.NODE),
            "node_claims": parse_all([c for c in read(r.NODECLAIM) if is_managed(c)], NodeClaim, skipped),
            "node_pools": parse_all([p for p in read(r.NODEPOOL) if is_managed(p)], NodePool, skipped),
            "node_classes": parse_all(read(r.EC2NODECLASS), EC2NodeClass, skipped),
        }
    )
    return side.model_copy(update={"cluster": cluster})
