"""What a NodeClaim's termination records once its Node or NodeClaim is gone (activities.nodeclaim.termination's
`finalize`, the call that removes the finalizer): Karpenter's terminated counters, by NodePool, capacity
type and zone, and the termination, instance-termination and lifetime times, each measured from the
objects' own timestamps."""

from __future__ import annotations

from datetime import UTC, datetime

from activities.metrics.labels import owner_labels, seconds_since, zone_of
from activities.metrics.registry import Metrics
from apis import labels
from apis.meta import get_condition
from apis.nodeclaim import INSTANCE_TERMINATING, NodeClaim
from kube.types import Obj


def observe_node_terminated(metrics: Metrics, node: Obj, claim: Obj | None) -> None:
    """The Node lost its finalizer: count it terminated, and time its termination (from its own deletion,
    or its NodeClaim's when that came first) and its lifetime."""
    meta = node["metadata"]
    node_labels = meta.get("labels") or {}
    claim_labels = (claim["metadata"].get("labels") or {}) if claim is not None else {}
    pool = str(node_labels.get(labels.NODEPOOL, "")) or owner_labels(claim_labels)["nodepool"]
    metrics.nodes_terminated.labels(nodepool=pool, zone=zone_of(node_labels)).inc()
    now = datetime.now(UTC)
    requested = [seconds_since(meta.get("deletionTimestamp"), now)]
    if claim is not None:
        requested.append(seconds_since(claim["metadata"].get("deletionTimestamp"), now))
    termination = max((s for s in requested if s is not None), default=None)
    if termination is not None:
        metrics.nodes_termination_duration.labels(nodepool=pool).observe(termination)
    lifetime = seconds_since(meta.get("creationTimestamp"), now)
    if lifetime is not None:
        metrics.nodes_lifetime_duration.labels(nodepool=pool).observe(lifetime)


def observe_claim_terminated(metrics: Metrics, claim: Obj) -> None:
    """The NodeClaim lost its finalizer: count it terminated, and time its termination and its
    instance's (from `InstanceTerminating`)."""
    claim_labels = claim["metadata"].get("labels") or {}
    owner = owner_labels(claim_labels)
    metrics.nodeclaims_terminated.labels(**owner, zone=zone_of(claim_labels)).inc()
    now = datetime.now(UTC)
    pool = owner["nodepool"]
    termination = seconds_since(claim["metadata"].get("deletionTimestamp"), now)
    if termination is not None:
        metrics.nodeclaims_termination_duration.labels(nodepool=pool).observe(termination)
    conditions = NodeClaim.model_validate(claim).status.conditions
    terminating = get_condition(conditions, INSTANCE_TERMINATING)
    instance = seconds_since(terminating.last_transition_time, now) if terminating is not None else None
    if instance is not None:
        metrics.nodeclaims_instance_termination_duration.labels(nodepool=pool).observe(instance)
