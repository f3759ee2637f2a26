"""Making planned NodeClaims real: the NodeClaim CR (deterministic name, the NodePool's template, the plan's
requirements and instance types in price order), then its workflow. Used by provisioning (`apply_plan`)
and by the disruption controller (replacements), so both launch claims the same way.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Protocol

from activities.metrics.registry import Metrics
from activities.provisioning.models import ProvisionRound
from apis import labels
from apis.meta import ObjectMeta, OwnerReference
from apis.nodeclaim import NodeClaim, NodeClaimSpec, ResourceRequirements
from apis.nodepool import NodePool
from apis.requirements import NodeSelectorRequirement
from kube import ops as kubeops
from kube import resources as r
from kube.types import Kube, Obj
from scheduling.types import PlannedNodeClaim


class WorkflowStarter(Protocol):
    """Starts (or finds running) the NodeClaim workflow of a claim. Idempotent. `claim` is the NodeClaim
    as the API returned it (its metadata.uid set): the workflow's input is built from it, and the workflow
    acts only on the NodeClaim with that uid. `waiter`, when set, is the id of a workflow waiting for this
    claim (the disruption controller, for a replacement): the claim's workflow signals it
    `replacement_ready` once the claim is Initialized, or once it ended without being so."""

    def start_node_claim(self, claim: Obj, waiter: str = "") -> None: ...


def node_claim_name(node_pool: str, run_id: str, round_: int, pods: list[str]) -> str:
    """`<nodepool>-<5 chars>`, like Karpenter's, but derived from the round and the claim's pods so a
    retried round names the same claim the same way."""
    digest = hashlib.sha256("\n".join([run_id, str(round_), *pods]).encode()).digest()
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    suffix = "".join(alphabet[b % len(alphabet)] for b in digest[:5])
    return f"{node_pool}-{suffix}"


class ClaimLauncher:
    """Creates planned NodeClaims and starts their workflows. Idempotent per (round, claim pods). Each claim
    this launcher creates (not one a retried round finds) counts in `karpenter_nodeclaims_created_total`."""

    def __init__(self, kube: Kube, starter: WorkflowStarter, metrics: Metrics | None = None) -> None:
        self.kube = kube
        self.starter = starter
        self.metrics = metrics or Metrics()

    def launch(
        self, round_: ProvisionRound, planned_claims: Sequence[PlannedNodeClaim], reason: str, waiter: str = ""
    ) -> list[str]:
        """Create each planned claim (AlreadyExists is fine: a retried round) and start its workflow;
        returns the names of the claims that exist. A claim whose NodePool is gone is skipped. `reason` is
        why they are created, as Karpenter labels it (`provisioned`, or the lowercase disruption reason);
        `waiter`: the workflow waiting for them (WorkflowStarter)."""
        created: list[str] = []
        pools: dict[str, NodePool] = {}
        for planned in planned_claims:
            pool = pools.get(planned.node_pool)
            if pool is None:
                pool_obj = kubeops.get_or_none(self.kube, r.NODEPOOL, planned.node_pool)
                if pool_obj is None:
                    continue
                pool = pools[planned.node_pool] = NodePool.model_validate(pool_obj)
            name = self.claim_name(round_, planned)
            claim, new = self._create_claim(name, planned, pool)
            if claim is None:
                continue
            if new:
                relaxed = str(planned.min_values_relaxed).lower()
                self.metrics.nodeclaims_created.labels(
                    reason=reason, nodepool=pool.name, min_values_relaxed=relaxed
                ).inc()
            self.starter.start_node_claim(claim, waiter=waiter)
            created.append(name)
        return created

    @staticmethod
    def claim_name(round_: ProvisionRound, planned: PlannedNodeClaim) -> str:
        """The name `launch` gives the claim planned in this round."""
        return node_claim_name(planned.node_pool, round_.run_id, round_.round, planned.pods)

    def _create_claim(self, name: str, planned: PlannedNodeClaim, pool: NodePool) -> tuple[Obj | None, bool]:
        """Create the claim (or find it from an earlier try of this round): (the claim as the API returns
        it, None when it was created and is gone already; whether this call created it)."""
        template = pool.spec.template
        # A claim may only carry keys a NodePool could (hostname and restricted domains are the
        # scheduler's business, not the node's); instance types come last, in the plan's price order.
        requirements = [
            req
            for req in planned.requirements
            if req.key != labels.INSTANCE_TYPE and labels.restricted_label_reason(req.key) is None
        ]
        requirements.append(
            NodeSelectorRequirement(key=labels.INSTANCE_TYPE, operator="In", values=planned.instance_types)
        )
        claim = NodeClaim(
            metadata=ObjectMeta(
                name=name,
                labels={**template.metadata.labels, **planned.labels, labels.NODEPOOL: pool.name},
                annotations={
                    **template.metadata.annotations,
                    **pool.hash_annotations(),
                    # Karpenter's: "true" when a minValues was lowered to plan it (min-values policy BestEffort)
                    labels.NODECLAIM_MIN_VALUES_RELAXED_ANNOTATION: str(planned.min_values_relaxed).lower(),
                },
                finalizers=[labels.TERMINATION_FINALIZER],
                owner_references=[
                    OwnerReference(
                        api_version=pool.api_version,
                        kind=pool.kind,
                        name=pool.name,
                        uid=pool.metadata.uid or "",
                        block_owner_deletion=True,
                    )
                ],
            ),
            spec=NodeClaimSpec(
                requirements=requirements,
                resources=ResourceRequirements(requests=planned.requests),
                node_class_ref=template.spec.node_class_ref,
                taints=planned.taints or template.spec.taints,
                startup_taints=planned.startup_taints or template.spec.startup_taints,
                expire_after=template.spec.expire_after,
                termination_grace_period=template.spec.termination_grace_period,
            ),
        )
        body: dict[str, Any] = claim.to_kube()
        body.pop("status", None)
        return kubeops.create_or_get(self.kube, r.NODECLAIM, body)
