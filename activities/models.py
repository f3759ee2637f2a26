"""Payloads of activities: one pydantic model in, one out (temporalio's pydantic data converter).

These are recorded in workflow histories: add fields only with defaults, never rename or remove.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from scheduling.types import PlannedNodeClaim, UnschedulablePod


class ProvisionRound(BaseModel):
    """One provisioning round of the provisioner workflow (its run id and round number name the claims)."""

    run_id: str
    round: int
    trigger_pods: int = 0


class InvalidObject(BaseModel):
    kind: str
    name: str
    message: str


class ProvisionPlan(BaseModel):
    """What `solve` decided: claims to launch, pods left pending and why, NodePools rejected."""

    node_claims: list[PlannedNodeClaim] = Field(default_factory=list)
    unschedulable: list[UnschedulablePod] = Field(default_factory=list)
    invalid: list[InvalidObject] = Field(default_factory=list)
    pending_pods: int = 0
    placed_on_existing: int = 0


class ApplyPlanInput(BaseModel):
    round: ProvisionRound
    plan: ProvisionPlan


class ApplyPlanResult(BaseModel):
    created: list[str] = Field(default_factory=list)  # NodeClaim names (new or already there)


class ClaimRef(BaseModel):
    name: str


class LaunchOutcome(BaseModel):
    """Result of a launch attempt. `failure` is set (and `instance_id` empty) when the claim cannot launch:
    'InsufficientCapacity', 'NodeClassNotReady' or 'NodeClaimGone'."""

    instance_id: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    provider_id: str = ""
    image_id: str = ""
    node_pool: str = ""
    claim_deleting: bool = False  # the claim was deleted while launching: terminate what launched
    failure: str = ""
    message: str = ""


class MarkLaunchedInput(BaseModel):
    name: str
    launch: LaunchOutcome


class RegistrationCheck(BaseModel):
    name: str
    provider_id: str


class NodeRef(BaseModel):
    """The Node of a claim, once registered ('' before)."""

    node_name: str = ""


class InitializationResult(BaseModel):
    initialized: bool = False
    waiting_for: str = ""


class ClaimState(BaseModel):
    """What the running phase needs to know about the claim and its node, read fresh."""

    exists: bool = True
    deleting: bool = False
    node_deleting: bool = False
    node_exists: bool = True

    @property
    def gone(self) -> bool:
        """The claim or its node is gone or being deleted: the node drains and terminates."""
        return self.deleting or self.node_deleting or not self.node_exists


class DrainInput(BaseModel):
    name: str
    node_name: str
    force: bool = False  # terminationGracePeriod passed: delete the pods instead of evicting
    # drain start + terminationGracePeriod: each pod is deleted at deadline - its own grace period (DS-16)
    deadline: datetime | None = None


class DrainProgress(BaseModel):
    remaining: int = 0
    evicted: int = 0  # through the Eviction API (in histories older than `deleted`, forced deletes too)
    deleted: int = 0  # deleted directly: terminationGracePeriod bypassing PDBs and do-not-disrupt
    blocked_by_pdb: int = 0
    message: str = ""


class TerminateInput(BaseModel):
    name: str
    instance_id: str


class TerminateResult(BaseModel):
    gone: bool = False


class FinalizeInput(BaseModel):
    name: str
    node_name: str = ""
    reason: str = ""
    expired: bool = False  # begin_termination: set condition Expired=True first (expireAfter or `expire`)


class LaunchFailedInput(BaseModel):
    name: str
    failure: str
    message: str


class DriftCheckInput(BaseModel):
    """`fresh`: read the NodePool and EC2NodeClass from the API, not the worker's shared reads (the check
    was asked for because one of them changed)."""

    name: str
    node_name: str = ""
    instance_id: str = ""
    fresh: bool = False


class DriftResult(BaseModel):
    """The outcome of a drift check: `reason` is one of scheduling.drift.REASONS when drifted."""

    drifted: bool = False
    reason: str = ""
    message: str = ""
    claim_exists: bool = True


class RunningCheck(BaseModel):
    """The running phase's one round trip per cycle: the claim's liveness, then (while it is alive) its
    drift check. `drift` is left at its defaults when the claim or its node is gone or being deleted."""

    state: ClaimState = Field(default_factory=ClaimState)
    drift: DriftResult = Field(default_factory=DriftResult)

    @property
    def gone(self) -> bool:
        return self.state.gone


class ReplacementInput(BaseModel):
    name: str  # the NodeClaim being replaced
    node_pool: str = ""
    attempt: int = 0


class ReplacementResult(BaseModel):
    """The replacement NodeClaim (created or already there); `name` is '' when the original is gone. With
    `from_template`, `expire_after` and `termination_grace_period` are the NodePool template's now (for
    the replacement's workflow); without, the original's apply."""

    name: str = ""
    message: str = ""
    expire_after: str | None = None
    termination_grace_period: str | None = None
    from_template: bool = False


class ReplacementState(BaseModel):
    initialized: bool = False
    gone: bool = False
    message: str = ""
