"""Pure translations between a NodeClaim and what the cloud and the Node need (no I/O)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from apis import labels
from apis.ec2nodeclass import EC2NodeClass
from apis.nodeclaim import API_VERSION, NodeClaim
from apis.requirements import NodeSelectorRequirement
from apis.values.quantity import to_units
from cloudprovider.types import (
    TAG_CLUSTER_PREFIX,
    TAG_EKS_CLUSTER_NAME,
    TAG_NODECLAIM,
    TAG_NODEPOOL,
    Instance,
    LaunchRequest,
)
from scheduling.constraints.taints import is_ephemeral_taint

WELL_KNOWN_RESOURCES = frozenset({"cpu", "memory", "pods", "ephemeral-storage"})


def requirement_values(requirements: list[NodeSelectorRequirement], key: str) -> list[str]:
    """The allowed values of an `In` requirement on key, in order (empty = unconstrained)."""
    for req in requirements:
        if req.key == key and req.operator == "In":
            return list(req.values)
    return []


def single_value_labels(claim: NodeClaim) -> dict[str, str]:
    """Labels a node gets from the claim: its metadata labels plus each `In` requirement with one value."""
    out = dict(claim.metadata.labels)
    for req in claim.spec.requirements:
        if req.operator != "In" or len(req.values) != 1:
            continue
        if req.key in labels.WELL_KNOWN_LABELS or not labels.is_restricted_node_label(req.key):
            out.setdefault(req.key, req.values[0])
    return out


def launch_request(claim: NodeClaim, node_class: EC2NodeClass, cluster_name: str) -> LaunchRequest:
    """The cloud launch for this claim: instance types in the claim's order (cheapest first), the zones and
    capacity types it allows, idempotency token = the claim's uid, and the tags every instance carries."""
    node_pool = claim.metadata.labels.get(labels.NODEPOOL, "")
    tags = {
        **(node_class.spec.tags or {}),
        TAG_NODECLAIM: claim.name,
        TAG_NODEPOOL: node_pool,
        f"{TAG_CLUSTER_PREFIX}{cluster_name}": "owned",
        TAG_EKS_CLUSTER_NAME: cluster_name,
        labels.NODECLASS: node_class.name,
    }
    return LaunchRequest(
        node_claim_name=claim.name,
        node_pool=node_pool,
        client_token=claim.metadata.uid or claim.name,
        node_class=node_class,
        instance_types=requirement_values(claim.spec.requirements, labels.INSTANCE_TYPE),
        zones=requirement_values(claim.spec.requirements, labels.ZONE),
        zone_ids=requirement_values(claim.spec.requirements, labels.ZONE_ID),
        capacity_types=requirement_values(claim.spec.requirements, labels.CAPACITY_TYPE) or ["on-demand"],
        labels=single_value_labels(claim),
        taints=[t.to_kube() for t in [*claim.spec.taints, *claim.spec.startup_taints]],
        tags=tags,
        min_values={r.key: r.min_values for r in claim.spec.requirements if r.min_values is not None},
    )


_REGION_OF_ZONE = re.compile(r"^([a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-\d+)")


def region_of_zone(zone: str) -> str:
    """The region of an availability, local or wavelength zone name (`us-west-2a`, `us-west-2-lax-1a`,
    `us-east-1-wl1-bos-wlz-1` -> `us-west-2`, `us-west-2`, `us-east-1`); '' when it is not one."""
    match = _REGION_OF_ZONE.match(zone)
    return match.group(1) if match else ""


def launched_labels(
    instance: Instance,
    type_labels: dict[str, str],
    zone_ids: Mapping[str, str] | None = None,
    os_labels: tuple[str, str | None] = ("linux", None),
) -> dict[str, str]:
    """Labels the claim gets once its instance exists, as Karpenter's: the chosen type's labels, the
    offering (type, zone, capacity type), the region, the zone's id (`topology.k8s.aws/zone-id`) when
    `zone_ids` (zone name -> zone id, from the EC2NodeClass's resolved subnets) knows it, and the node's
    operating system as its node class decides it (`os_labels`: kubernetes.io/os and, for Windows,
    node.kubernetes.io/windows-build, as `scheduling.provisioning.catalog.node_class_os` gives them); for an instance
    in a capacity reservation, the reservation's id and type (karpenter.k8s.aws/capacity-reservation-id,
    -type); for an instance in a placement group, its id and, in a partition group, the partition
    (karpenter.k8s.aws/placement-group-id, -partition)."""
    os_name, windows_build = os_labels
    out = {
        **type_labels,
        labels.OS: os_name,
        labels.INSTANCE_TYPE: instance.instance_type,
        labels.ZONE: instance.zone,
        labels.CAPACITY_TYPE: instance.capacity_type,
    }
    if region := region_of_zone(instance.zone):
        out[labels.REGION] = region
    if zone_id := (zone_ids or {}).get(instance.zone):
        out[labels.ZONE_ID] = zone_id
    if windows_build:
        out[labels.WINDOWS_BUILD] = windows_build
    if instance.capacity_reservation_id:
        out[labels.CAPACITY_RESERVATION_ID] = instance.capacity_reservation_id
        out[labels.CAPACITY_RESERVATION_TYPE] = instance.capacity_reservation_type or "default"
    if instance.placement_group_id:
        out[labels.PLACEMENT_GROUP_ID] = instance.placement_group_id
    if instance.placement_group_partition:
        out[labels.PLACEMENT_GROUP_PARTITION] = instance.placement_group_partition
    return out


def sync_node(node: dict[str, Any], claim: NodeClaim) -> bool:
    """Registration: make the Node carry the claim's labels, annotations and taints, our termination finalizer, an
    ownerReference to the claim (as Karpenter's registration adds, so the garbage collector removes a Node whose
    NodeClaim is gone) and the registered label, and drop the unregistered taint. The claim's startupTaints are
    added too when the Node is first registered (not labelled registered yet), as Karpenter's registration adds
    them, so a node whose bootstrap did not set them (a Custom AMI's) still waits for the agent that removes
    them; a later sync does not put back one already removed. A Node labelled
    `karpenter.sh/do-not-sync-taints=true` gets neither: its taints are left as they are, the unregistered one
    apart. Returns whether anything changed."""
    meta = node.setdefault("metadata", {})
    before = repr(_synced(node))
    node_labels = meta.setdefault("labels", {}) or {}
    meta["labels"] = node_labels
    first_registration = node_labels.get(labels.REGISTERED) != "true"
    sync_taints = node_labels.get(labels.DO_NOT_SYNC_TAINTS) != "true"
    node_labels.update(single_value_labels(claim))
    node_labels[labels.REGISTERED] = "true"
    annotations = meta.get("annotations") or {}
    annotations.update({k: v for k, v in claim.metadata.annotations.items() if not k.startswith("kubectl.")})
    meta["annotations"] = annotations
    finalizers = list(meta.get("finalizers") or [])
    if labels.TERMINATION_FINALIZER not in finalizers:
        finalizers.append(labels.TERMINATION_FINALIZER)
    meta["finalizers"] = finalizers
    owners = list(meta.get("ownerReferences") or [])
    if claim.metadata.uid and not any(ref.get("uid") == claim.metadata.uid for ref in owners):
        owners.append(
            {
                "apiVersion": API_VERSION,
                "kind": "NodeClaim",
                "name": claim.metadata.name,
                "uid": claim.metadata.uid,
                "blockOwnerDeletion": True,
            }
        )
        meta["ownerReferences"] = owners
    spec = node.setdefault("spec", {})
    taints = [t for t in spec.get("taints") or [] if t.get("key") != labels.UNREGISTERED_TAINT_KEY]
    wanted = [*claim.spec.taints, *(claim.spec.startup_taints if first_registration else [])] if sync_taints else []
    for taint in wanted:
        if not any(t.get("key") == taint.key and t.get("effect") == taint.effect for t in taints):
            taints.append(taint.to_kube())
    spec["taints"] = taints
    return before != repr(_synced(node))


def _synced(node: dict[str, Any]) -> tuple[Any, ...]:
    """What sync_node writes on a Node."""
    meta = node.get("metadata") or {}
    return (
        meta.get("labels"),
        meta.get("annotations"),
        meta.get("finalizers"),
        meta.get("ownerReferences"),
        node.get("spec"),
    )


def initialization_blocker(node: dict[str, Any], claim: NodeClaim) -> tuple[str, str]:
    """Why the node is not initialized yet: the reason of the claim's Initialized condition while it waits
    (Karpenter's reasons) and what it waits for; ("", "") when it is. In order: the Node is Ready
    (`NodeNotReady`), the claim's startup taints are gone (`StartupTaintsExist`), the taints the node
    lifecycle controller puts on a new node are gone (`KnownEphemeralTaintsExist`), and the extended
    resources the claim requested are allocatable (`ResourceNotRegistered`)."""
    name = node.get("metadata", {}).get("name", "")
    conditions = node.get("status", {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        why = f" ({ready.get('reason') or ready.get('status')})" if ready else " (no Ready condition yet)"
        return "NodeNotReady", f"Node {name} to be Ready{why}"
    taints = node.get("spec", {}).get("taints") or []
    for taint in claim.spec.startup_taints:
        if any(t.get("key") == taint.key and t.get("effect") == taint.effect for t in taints):
            return (
                "StartupTaintsExist",
                f"startup taint {taint.key}:{taint.effect} to be removed from Node {name}",
            )
    for taint in taints:
        if is_ephemeral_taint(str(taint.get("key") or "")):
            spec = f"{taint.get('key')}:{taint.get('effect')}"
            return "KnownEphemeralTaintsExist", f"taint {spec} to be removed from Node {name}"
    allocatable = node.get("status", {}).get("allocatable") or {}
    for resource in sorted(claim.spec.resources.requests):
        if resource not in WELL_KNOWN_RESOURCES and str(allocatable.get(resource, "0")) in ("0", ""):
            return (
                "ResourceNotRegistered",
                f"resource {resource}, requested by the NodeClaim, to be allocatable on Node {name}",
            )
    return "", ""


CONSISTENT_SHARE = 0.9  # a Node registering less than this share of a resource the claim expected is flagged


def shape_issues(node: dict[str, Any], claim: NodeClaim) -> list[str]:
    """Karpenter's node shape consistency check: each resource of the claim's `status.capacity` that the
    Node's `status.capacity` lacks, or has less than CONSISTENT_SHARE of (the instance type data or the VM
    memory overhead being wrong, or a device plugin missing). Empty when the Node is as expected."""
    found = (node.get("status") or {}).get("capacity") or {}
    issues = []
    for resource, expected_text in sorted(claim.status.capacity.items()):
        try:
            expected = to_units(resource, expected_text)
            actual = to_units(resource, found[resource]) if resource in found else None
        except ValueError:
            continue  # a quantity nodeflow cannot read is no evidence either way
        if expected <= 0:
            continue
        if actual is None:
            issues.append(f"expected resource {resource!r} didn't register on the node")
        elif actual < CONSISTENT_SHARE * expected:
            share = 100 * actual / expected
            got = found[resource]
            issues.append(
                f"expected {expected_text} of resource {resource}, but found {got} ({share:.1f}% of expected)"
            )
    return issues
