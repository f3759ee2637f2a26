"""Payloads of the provisioning activities (`solve`, `apply_plan`) and the provisioner workflow.

They are recorded in workflow histories: see README, "Versioning", before renaming or removing a field.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from scheduling.types import PlannedNodeClaim, UnschedulablePod


class ProvisionRound(BaseModel):
    """One provisioning round of the provisioner workflow (its run id and round number name the claims)."""

    run_id: str
    round: int
    trigger_pods: int = 0


class InvalidObject(BaseModel):
    """A NodePool or EC2NodeClass left out of a round, and why. `reason` is the status condition reason:
    '' means ValidationFailed; NodeClassNotReady / NodeClassNotFound mark a NodePool
    whose EC2NodeClass cannot be used."""

    kind: str
    name: str
    message: str
    reason: str = ""


class ProvisionPlan(BaseModel):
    """What `solve` decided: claims to launch, pods left pending and why, NodePools rejected."""

    node_claims: list[PlannedNodeClaim] = Field(default_factory=list)
    unschedulable: list[UnschedulablePod] = Field(default_factory=list)
    invalid: list[InvalidObject] = Field(default_factory=list)
    pending_pods: int = 0
    placed_on_existing: int = 0
    pod_uids: dict[str, str] = Field(default_factory=dict)  # "namespace/name" -> uid, of the nominated pods
    # "namespace/name" -> where a pod placed on capacity that exists or is coming will run, as Karpenter's
    # Nominated event names it ("nodeclaim/<name>, node/<name>"); at most POD_EVENTS_PER_ROUND of them
    nominated: dict[str, str] = Field(default_factory=dict)
    node_pools_without_types: list[str] = Field(default_factory=list)  # scheduling.types.Plan's


class ApplyPlanInput(BaseModel):
    round: ProvisionRound
    plan: ProvisionPlan


class ApplyPlanResult(BaseModel):
    created: list[str] = Field(default_factory=list)  # NodeClaim names (new or already there)
