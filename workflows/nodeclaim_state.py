"""The NodeClaim workflow's input and state: what continue-as-new carries and the `status` query returns."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel

LAUNCHING = "Launching"
REGISTERING = "Registering"
INITIALIZING = "Initializing"
RUNNING = "Running"
DRAINING = "Draining"
TERMINATING = "Terminating"
DELETED = "Deleted"
PHASES = (LAUNCHING, REGISTERING, INITIALIZING, RUNNING, DRAINING, TERMINATING, DELETED)


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
    launched_at: datetime | None = None
    registration_deadline: datetime | None = None
    expires_at: datetime | None = None
    termination_reason: str = ""
    drain_started_at: datetime | None = None
    drain_deadline: datetime | None = None
    waiting_for: str = ""
    failure: str = ""

    def summary(self) -> str:
        """One line for the memo and the CLI."""
        where = f"{self.instance_type or '?'} in {self.zone or '?'} ({self.capacity_type or '?'})"
        node = self.node_name or self.instance_id or "no instance yet"
        return f"{self.phase}: {self.name} from {self.node_pool or '?'}, {where}, {node}"


class NodeClaimInput(BaseModel):
    name: str
    node_pool: str = ""
    expire_after: str = "720h"
    termination_grace_period: str | None = None
    registration_ttl: str = "15m"
    state: NodeClaimState | None = None  # set by continue-as-new
