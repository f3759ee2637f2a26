"""scheduling.disruption.stale: which karpenter.sh/disrupted taints nothing acts on any more."""

from __future__ import annotations

from datetime import timedelta

from apis.nodeclaim import NodeClaim
from scheduling.disruption.stale import RECENT, stale_marks
from tests.unit.scheduling.disruption_builders import NOW, karpenter_node, stamp

DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


def with_reason(claim: NodeClaim, since: str) -> NodeClaim:
    obj = claim.to_kube()
    reason = {"type": "DisruptionReason", "status": "True", "reason": "Drifted", "lastTransitionTime": since}
    obj["status"]["conditions"].append(reason)
    return NodeClaim.model_validate(obj)


def test_a_taint_whose_claim_no_disruption_marked_recently_is_stale() -> None:
    node, claim = karpenter_node("n", "m5.large", taints=[DISRUPTED])
    [mark] = stale_marks([node], [claim], NOW)
    assert (mark.node, mark.node_claim, mark.provider_id) == ("n", "claim-n", "aws:///us-west-2a/i-n")
    old = with_reason(claim, stamp(NOW - RECENT - timedelta(seconds=1)))
    assert [m.node for m in stale_marks([node], [old], NOW)] == ["n"]


def test_a_recent_mark_a_deletion_another_effect_or_no_claim_is_left() -> None:
    node, claim = karpenter_node("n", "m5.large", taints=[DISRUPTED])
    assert stale_marks([node], [with_reason(claim, stamp(NOW - timedelta(minutes=1)))], NOW) == []
    deleting, deleting_claim = karpenter_node("d", "m5.large", taints=[DISRUPTED], deleting=True)
    assert stale_marks([deleting], [deleting_claim], NOW) == []
    other, other_claim = karpenter_node("o", "m5.large", taints=[{**DISRUPTED, "effect": "NoExecute"}])
    assert stale_marks([other], [other_claim], NOW) == []
    assert stale_marks([node], [], NOW) == [], "a Node with no NodeClaim is not Karpenter's"
