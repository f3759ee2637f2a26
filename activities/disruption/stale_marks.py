"""Clearing the disruption marks nothing acts on (scheduling.disruption.stale says which): the Node's
`karpenter.sh/disrupted:NoSchedule` taint and the NodeClaim's `DisruptionReason` condition, as
Karpenter's disruption controller clears them before each pass. The controller's decision calls it
(activities.disruption.decision), never the leader's look ahead, which runs while a command is under way."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime

from activities.disruption.execution import NOT_DISRUPTED
from activities.nodeclaim import ownership
from activities.nodeclaim.base import dropping_condition
from apis.nodeclaim import DISRUPTION_REASON
from kube.errors import KubeError
from kube.types import Kube, Obj
from scheduling.disruption.model import DisruptionInput
from scheduling.disruption.stale import stale_marks

log = logging.getLogger(__name__)
_WITHOUT_REASON = dropping_condition(DISRUPTION_REASON)


def clear_stale_marks(
    kube: Kube, snapshot: DisruptionInput, now: datetime, handed_over: Collection[str] = ()
) -> list[str]:
    """Untaint each stale Node and remove its NodeClaim's DisruptionReason, the NodeClaims the controller
    handed over aside (scheduling.disruption.stale); the Nodes cleared. Each object
    is checked to be the one read (uid, providerID) before it is written. A failed write is logged and
    left to the next decision; this never raises for an API failure."""
    cleared = []
    for mark in stale_marks(snapshot.cluster.nodes, snapshot.cluster.node_claims, now, handed_over):
        deleting = False

        def untaint(node: Obj) -> bool:  # runs again on a conflict: `deleting` is the last attempt's
            nonlocal deleting
            # A Node whose deletion began since the snapshot is its termination's to taint: left alone.
            deleting = bool((node.get("metadata") or {}).get("deletionTimestamp"))
            return not deleting and NOT_DISRUPTED(node)

        try:
            if ownership.update(kube, ownership.node(mark.node, mark.provider_id), untaint) is None or deleting:
                continue  # gone, not the Node read, or being deleted now
            claim = ownership.node_claim(mark.node_claim, mark.node_claim_uid)
            ownership.update(kube, claim, _WITHOUT_REASON, subresource="status")
        except KubeError as err:
            log.warning("stale karpenter.sh/disrupted taint on Node %s not cleared (the next decision retries): %s",
                        mark.node, err, extra={"node": mark.node, "nodeclaim": mark.node_claim})  # fmt: skip
            continue
        log.info("cleared a stale karpenter.sh/disrupted taint from Node %s: no disruption acts on it", mark.node,
                 extra={"node": mark.node, "nodeclaim": mark.node_claim})  # fmt: skip
        cleared.append(mark.node)
    return cleared
