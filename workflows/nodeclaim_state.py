"""The NodeClaim workflow's input and state: what continue-as-new carries and the `status` query returns."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

LAUNCHING = "Launching"
REGISTERING = "Registering"
INITIALIZING = "Initializing"
RUNNING = "Running"
DRAINING = "Draining"
TERMINATING = "Terminating"
DELETED = "Deleted"
PHASES = (LAUNCHING, REGISTERING, INITIALIZING, RUNNING, DRAINING, TERMINATING, DELETED)

# The drift check interval of a claim whose starter does not say (the worker passes its setting
# `drift_check_interval`); recorded in the workflow's input, so replay never depends on configuration.
DEFAULT_DRIFT_CHECK_INTERVAL = "5m"

# The workflow code revision a run was started for, recorded in its input (so replay never depends on
# it changing). 0: inputs written before the field existed; such runs take `workflow.patched` branches.
# 1: every patch of workflows.nodeclaim up to PATCH_PUBLISH_CHANGES_ONLY is in effect without its marker,
# a continued run does not re-publish what continue-as-new carried over, and the running phase does one
# `running_check` per cycle and continues as new every few cycles (memory per cached run stays flat).
CURRENT_REVISION = 1


class NodeClaimState(BaseModel):
    name: str
    phase: str = LAUNCHING
    node_pool: str = ""
    instance_id: str = ""
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    provider_id: str = ""
    node_name: str = ""
    node_uid: str = ""  # the Node's metadata.uid, recorded at registration
    launched_at: datetime | None = None
    registration_deadline: datetime | None = None
    expires_at: datetime | None = None
    termination_reason: str = ""
    drain_started_at: datetime | None = None
    drain_deadline: datetime | None = None
    waiting_for: str = ""
    failure: str = ""
    # Conditions as the workflow last set them: type -> "True", "False" or "True (Reason)".
    conditions: dict[str, str] = Field(default_factory=dict)
    drift_reason: str = ""  # a scheduling.drift reason while drifted, else ""
    drift_message: str = ""
    drift_checks: int = 0
    last_drift_check: datetime | None = None
    expired: bool = False  # expireAfter passed or `expire` signalled: condition Expired before draining
    replacement: str = ""  # the NodeClaim replacing this one (`replace` signal)
    replace_attempts: int = 0

    def conditions_summary(self) -> str:
        """`Drifted=True (AMIDrift), Initialized=True`, sorted by type."""
        return ", ".join(f"{k}={v}" for k, v in sorted(self.conditions.items()))

    def summary(self) -> str:
        """One line for the memo and the CLI."""
        where = f"{self.instance_type or '?'} in {self.zone or '?'} ({self.capacity_type or '?'})"
        node = self.node_name or self.instance_id or "no instance yet"
        return f"{self.phase}: {self.name} from {self.node_pool or '?'}, {where}, {node}"


class NodeClaimInput(BaseModel):
    """`claim_uid`: the NodeClaim's metadata.uid when the workflow was started; a NodeClaim with the name
    and another uid is not this workflow's (it ends instead of acting on it)."""

    name: str
    claim_uid: str = ""
    node_pool: str = ""
    expire_after: str = "720h"
    termination_grace_period: str | None = None
    registration_ttl: str = "15m"
    state: NodeClaimState | None = None  # set by continue-as-new
    drift_check_interval: str = DEFAULT_DRIFT_CHECK_INTERVAL
    revision: int = 0  # see CURRENT_REVISION; starters and continue-as-new set CURRENT_REVISION
    # Set by continue-as-new: a termination or replacement that signals asked for and the run had not
    # acted on yet (a signal can arrive in the very workflow task that continues as new).
    terminate_requested: str = ""
    replace_requested: str = ""
