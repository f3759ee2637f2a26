"""Label values and ages the metrics (activities.metrics.registry) take from Kubernetes objects: a NodeClaim's or
Node's owner labels, a Node's well-known labels, seconds since a timestamp, a disruption reason,
a disruption command's labels."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from apis import labels
from scheduling.disruption import Command

# The node's well-known labels on `karpenter_nodes_allocatable` and `karpenter_pods_state`, by label name.
NODE_LABELS = ("instance_type", "capacity_type", "zone", "arch", "os")
# Karpenter's `consolidation_type` label of each consolidation method ('' for the others).
CONSOLIDATION_TYPES = {"SingleNodeConsolidation": "single", "MultiNodeConsolidation": "multi",
                       "SplitConsolidation": "split"}  # fmt: skip


def owner_labels(obj_labels: Mapping[str, str]) -> dict[str, str]:
    """`nodepool` and `capacity_type` label values of a NodeClaim or Node with these labels ('' unknown)."""
    return {
        "nodepool": obj_labels.get(labels.NODEPOOL, ""),
        "capacity_type": obj_labels.get(labels.CAPACITY_TYPE, ""),
    }


def zone_of(obj_labels: Mapping[str, str]) -> str:
    """The `zone` label value of a NodeClaim or Node with these labels ('' before its launch chose one)."""
    return obj_labels.get(labels.ZONE, "")


def node_labels(obj_labels: Mapping[str, str]) -> dict[str, str]:
    """The NODE_LABELS values of a Node with these labels ('' for each it lacks)."""
    keys = (labels.INSTANCE_TYPE, labels.CAPACITY_TYPE, labels.ZONE, labels.ARCH, labels.OS)
    return {name: obj_labels.get(key, "") for name, key in zip(NODE_LABELS, keys, strict=True)}


def seconds_since(stamp: str | datetime | None, now: datetime | None = None) -> float | None:
    """Seconds from `stamp` (RFC 3339 as Kubernetes writes it, or a datetime) to `now` (default: the
    current time), never negative; None when there is no stamp or it does not parse."""
    if not stamp:
        return None
    try:
        when = stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - when).total_seconds())


def disruption_reason(reason: str) -> str:
    """A disruption reason as Karpenter's `reason` label has it: lowercase (`Underutilized` -> `underutilized`)."""
    return reason.lower()


def consolidation_type(method: str) -> str:
    """Karpenter's `consolidation_type` label of a disruption method ('' for a method that is not
    consolidation)."""
    return CONSOLIDATION_TYPES.get(method, "")


def command_labels(command: Command) -> dict[str, str]:
    """A disruption command's `decision`, `reason` and `consolidation_type` labels, as Karpenter's
    disruption counters take them."""
    return {
        "decision": command.action.lower(),
        "reason": disruption_reason(command.reason),
        "consolidation_type": consolidation_type(command.method),
    }
