"""Disruption marks that nothing acts on any more, which Karpenter clears at every disruption pass. Pure.

A disruption command taints its candidates' Nodes `karpenter.sh/disrupted:NoSchedule` and sets their
NodeClaims' `DisruptionReason`. The NodeClaims' deletion follows, or an abort removes both marks. A
controller stopped between the two leaves a node tainted for good: a controller workflow terminated by
hand, or Karpenter itself, uninstalled in the middle of a command before nodeflow took over. No pod
schedules on such a node, and no disruption method takes it, since it counts as being disrupted.
Karpenter's disruption controller clears the taint and the condition, at the start of each pass, from
every node that is neither in its orchestration queue nor being deleted.

nodeflow's controller executes one command at a time and decides only between commands. At its decision,
the only marks in use are those of the candidates it has handed over: it has signalled their NodeClaim
workflows, which begin deleting them within moments. The controller passes the NodeClaims it handed over
in the last RECENT (its queue, in Karpenter's words). A mark is stale when the Node carries the taint,
neither the Node nor its NodeClaim is being deleted, the NodeClaim was not handed over, and its
`DisruptionReason` has not been True for less than RECENT (a mark just made by a controller that was then
restarted). Nodes with no NodeClaim are not Karpenter's, and are left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from apis import labels as L
from apis.meta import get_condition, parse_rfc3339
from apis.nodeclaim import DISRUPTION_REASON, NodeClaim
from scheduling.disruption.candidates import node_claims_by_node
from scheduling.disruption.model import Obj

RECENT = timedelta(minutes=5)


@dataclass(frozen=True)
class StaleMark:
    """A Node tainted `karpenter.sh/disrupted` whose NodeClaim no disruption is acting on."""

    node: str
    node_claim: str
    node_claim_uid: str
    provider_id: str


def is_marked(node: Obj) -> bool:
    """Tainted `karpenter.sh/disrupted:NoSchedule`, the taint a disruption command adds."""
    taints = (node.get("spec") or {}).get("taints") or []
    return any(t.get("key") == L.DISRUPTED_TAINT_KEY and t.get("effect") == "NoSchedule" for t in taints)


def stale_marks(
    nodes: Sequence[Obj], claims: Sequence[NodeClaim], now: datetime, handed_over: Collection[str] = ()
) -> list[StaleMark]:
    """The marked Nodes, by name, whose marks should be cleared at `now`, the NodeClaims named in
    `handed_over` aside (see the module docstring)."""
    claim_of = node_claims_by_node(nodes, claims)
    out = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name", ""))):
        meta = node.get("metadata") or {}
        name = str(meta.get("name", ""))
        claim = claim_of.get(name)
        if claim is None or claim.name in handed_over or not is_marked(node):
            continue
        if meta.get("deletionTimestamp") or claim.metadata.deletion_timestamp:
            continue
        reason = get_condition(claim.status.conditions, DISRUPTION_REASON)
        since = parse_rfc3339(reason.last_transition_time) if reason is not None and reason.status == "True" else None
        if since is not None and now - since < RECENT:
            continue
        provider_id = str((node.get("spec") or {}).get("providerID") or "")
        out.append(StaleMark(name, claim.name, claim.metadata.uid or "", provider_id))
    return out
