"""The NodeClaim workflow's input and state: what continue-as-new carries and the `status` query returns.

Both are pydantic dataclasses with slots, not BaseModels: a Running claim's run holds them in the worker's
cache for the node's life, and a slotted dataclass keeps no per-instance `__dict__` or set of fields set
(0.7 KiB per run for the two, against 2.5 as models; benchmarks/README.md, "The start kept small").
Serialize with `input_json` and `state_json`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.dataclasses import dataclass

from apis import labels

LAUNCHING = "Launching"
REGISTERING = "Registering"
INITIALIZING = "Initializing"
RUNNING = "Running"
DRAINING = "Draining"
TERMINATING = "Terminating"
DELETED = "Deleted"
PHASES = (LAUNCHING, REGISTERING, INITIALIZING, RUNNING, DRAINING, TERMINATING, DELETED)


def workflow_id(name: str) -> str:
    """The NodeClaim workflow's id for the claim `name`."""
    return f"nodeclaim-{name}"


@dataclass(slots=True)
class NodeClaimState:
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
    termination_reason: str = ""
    drain_started_at: datetime | None = None
    drain_deadline: datetime | None = None
    waiting_for: str = ""
    failure: str = ""
    # Conditions as the workflow last set them: type -> "True", "False" or "True (Reason)".
    conditions: dict[str, str] = field(default_factory=dict)
    drift_reason: str = ""  # a scheduling.drift reason while drifted, else ""
    drift_message: str = ""
    drift_checks: int = 0
    last_drift_check: datetime | None = None
    expired: bool = False  # `expire` signalled (expireAfter passed, or manual): condition Expired before draining
    registration_failed: bool = False  # the Node did not register within the registration TTL

    def conditions_summary(self) -> str:
        """`Drifted=True (AMIDrift), Initialized=True`, sorted by type."""
        return ", ".join(f"{k}={v}" for k, v in sorted(self.conditions.items()))

    def summary(self) -> str:
        """One line for the memo and the CLI; once terminating or deleted, it says why."""
        where = f"{self.instance_type or '?'} in {self.zone or '?'} ({self.capacity_type or '?'})"
        node = self.node_name or self.instance_id or "no instance yet"
        line = f"{self.phase}: {self.name} from {self.node_pool or '?'}, {where}, {node}"
        why = self.termination_reason or self.failure
        return f"{line}; {why}" if why and self.phase in (TERMINATING, DELETED, DRAINING) else line


class ClaimSettings(BaseModel):
    """What the worker's settings decide for every claim whose workflow it starts (recorded in the input,
    so replay never depends on configuration)."""

    registration_ttl: str = "15m"


@dataclass(slots=True)
class NodeClaimInput:
    """A NodeClaim workflow's input; build it with `node_claim_input` (or `node_claim_input_from_object`).
    `claim_uid`: the NodeClaim's metadata.uid when the workflow was started; a NodeClaim with the name and
    another uid is not this workflow's (it ends instead of acting on it)."""

    name: str
    claim_uid: str = ""
    node_pool: str = ""
    termination_grace_period: str | None = None
    registration_ttl: str = "15m"
    state: NodeClaimState | None = None  # set by continue-as-new
    # Set by continue-as-new: what signals asked for and the run had not acted on yet (a signal can arrive
    # in the very workflow task that continues as new): a termination, a drift check (`check_drift`
    # before the running phase, e.g. a node class changed while the node initialized), and whether the
    # termination skips the drain (`repair`).
    pending_termination: str = ""
    drift_check_requested: bool = False
    skip_drain: bool = False
    # The workflow waiting for this claim (the disruption controller, for a replacement it launched): it
    # is signalled `replacement_ready` once the claim is Initialized, or ended without being so; then the
    # field is cleared, so the Running run's input does not carry it.
    waiter: str = ""

    def settings(self) -> ClaimSettings:
        """The worker settings this run was started with (a replacement's workflow gets the same)."""
        return ClaimSettings(registration_ttl=self.registration_ttl)


_INPUT = TypeAdapter(NodeClaimInput)
_STATE = TypeAdapter(NodeClaimState)


def input_json(claim_input: NodeClaimInput) -> dict[str, Any]:
    """`claim_input` as JSON-ready data, fields at their defaults left out (a workflow input). Pure."""
    return _INPUT.dump_python(claim_input, mode="json", exclude_defaults=True)  # type: ignore[no-any-return]


def state_json(state: NodeClaimState) -> dict[str, Any]:
    """`state` as JSON-ready data, every field. Pure."""
    return _STATE.dump_python(state, mode="json")  # type: ignore[no-any-return]


def node_claim_input(
    name: str,
    uid: str,
    node_pool: str,
    termination_grace_period: str | None,
    settings: ClaimSettings,
    waiter: str = "",
) -> NodeClaimInput:
    """The input of a new NodeClaim workflow, from the claim's name, metadata.uid, NodePool and
    spec.terminationGracePeriod, and the worker's settings (expireAfter is not the workflow's: the leader's
    claim sweep signals `expire`, activities.nodeclaim.sweep); `waiter`: the workflow waiting for the claim
    (NodeClaimInput.waiter). The one place such an input is made: the provisioner's claims, replacements
    and adopted claims all start this way. Pure."""
    return NodeClaimInput(
        name=name,
        claim_uid=uid,
        node_pool=node_pool,
        termination_grace_period=termination_grace_period,
        registration_ttl=settings.registration_ttl,
        waiter=waiter,
    )


def node_claim_input_from_object(claim: Mapping[str, Any], settings: ClaimSettings, waiter: str = "") -> NodeClaimInput:
    """`node_claim_input` for a NodeClaim object as the API serves it (metadata.name and uid, the
    karpenter.sh/nodepool label and spec.terminationGracePeriod). Pure."""
    meta, spec = claim["metadata"], claim.get("spec") or {}
    return node_claim_input(
        meta["name"],
        meta.get("uid", ""),
        (meta.get("labels") or {}).get(labels.NODEPOOL, ""),
        spec.get("terminationGracePeriod"),
        settings,
        waiter,
    )
