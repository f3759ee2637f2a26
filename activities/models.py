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
    """A NodePool or EC2NodeClass left out of a round, and why. `reason` is the status condition reason:
    '' (in older histories) means ValidationFailed; NodeClassNotReady / NodeClassNotFound mark a NodePool
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


class ApplyPlanInput(BaseModel):
    round: ProvisionRound
    plan: ProvisionPlan


class ApplyPlanResult(BaseModel):
    created: list[str] = Field(default_factory=list)  # NodeClaim names (new or already there)


class ClaimRef(BaseModel):
    """A NodeClaim by name and, when the workflow recorded it at start, `metadata.uid`: a NodeClaim with
    the name and another uid is not this claim (activities.ownership)."""

    name: str
    uid: str = ""


class ClaimIdentity(ClaimRef):
    """The claim an activity acts for and how to recognise its Node: `spec.providerID` is the claim's
    instance, and `node_uid` the Node's uid recorded at registration (activities.ownership)."""

    provider_id: str = ""
    node_name: str = ""
    node_uid: str = ""


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


class MarkLaunchedInput(ClaimRef):
    launch: LaunchOutcome


class RegistrationCheck(ClaimRef):
    provider_id: str


class NodeRef(BaseModel):
    """The Node of a claim, once registered ('' before), with its uid; `claim_gone` when the NodeClaim no
    longer exists (or the name is another claim's): the workflow ends without waiting for a Node."""

    node_name: str = ""
    node_uid: str = ""
    claim_gone: bool = False


class InitializationResult(BaseModel):
    """`gone`: the NodeClaim or its Node no longer exists (or the name is now another object's); the
    workflow stops waiting and terminates what is still its own."""

    initialized: bool = False
    waiting_for: str = ""
    gone: bool = False


class ClaimState(BaseModel):
    """What the running phase needs to know about the claim and its node, read fresh. An object with the
    claim's (or node's) name and another identity counts as not existing."""

    exists: bool = True
    deleting: bool = False
    node_deleting: bool = False
    node_exists: bool = True

    @property
    def gone(self) -> bool:
        """The claim or its node is gone or being deleted: the node drains and terminates."""
        return self.deleting or self.node_deleting or not self.node_exists


class DrainInput(ClaimIdentity):
    force: bool = False  # terminationGracePeriod passed: delete the pods instead of evicting
    # drain start + terminationGracePeriod: each pod is deleted at deadline - its own grace period (DS-16)
    deadline: datetime | None = None


class DrainProgress(BaseModel):
    remaining: int = 0
    evicted: int = 0  # through the Eviction API (in histories older than `deleted`, forced deletes too)
    deleted: int = 0  # deleted directly: terminationGracePeriod bypassing PDBs and do-not-disrupt
    blocked_by_pdb: int = 0
    message: str = ""


class TerminateInput(ClaimRef):
    """The claim's instance (or, when '', whichever instance is tagged for the claim). An instance tagged
    for another NodeClaim is never terminated."""

    instance_id: str


class TerminateResult(BaseModel):
    """`gone` once the instance no longer runs for this claim: terminated, unknown, or (`message` says)
    tagged for another NodeClaim, in which case it was not touched."""

    gone: bool = False
    message: str = ""


class FinalizeInput(ClaimIdentity):
    reason: str = ""
    expired: bool = False  # begin_termination: set condition Expired=True first (expireAfter or `expire`)


class LaunchFailedInput(ClaimRef):
    failure: str
    message: str


class DriftCheckInput(ClaimIdentity):
    """`fresh`: read the NodePool and EC2NodeClass from the API, not the worker's shared reads (the check
    was asked for because one of them changed)."""

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


class ReplacementInput(ClaimRef):  # the NodeClaim being replaced
    node_pool: str = ""
    attempt: int = 0


class ReplacementResult(BaseModel):
    """The replacement NodeClaim (created or already there); `name` is '' when the original is gone. With
    `from_template`, `expire_after` and `termination_grace_period` are the NodePool template's now (for
    the replacement's workflow); without, the original's apply."""

    name: str = ""
    uid: str = ""
    message: str = ""
    expire_after: str | None = None
    termination_grace_period: str | None = None
    from_template: bool = False


class ReplacementState(BaseModel):
    initialized: bool = False
    gone: bool = False
    message: str = ""
