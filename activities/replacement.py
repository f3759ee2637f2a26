"""Replacing a running NodeClaim (the `replace` signal of its workflow): create the replacement NodeClaim
and watch it until it is Initialized or gone. What the replacement looks like is activities.replace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities import kubeops, replace
from activities.claim_base import ClaimActivities
from activities.models import ClaimRef
from apis import labels
from apis.meta import is_true
from apis.nodeclaim import INITIALIZED, NodeClaim
from apis.nodepool import NodePool
from kube import resources as r
from kube.errors import AlreadyExistsError


class ReplacementInput(ClaimRef):
    """The NodeClaim being replaced, its NodePool ('' = read from the claim's label) and which `replace`
    of it this is (names the replacement, see activities.replace.replacement_name)."""

    node_pool: str = ""
    attempt: int = 0


class ReplacementResult(BaseModel):
    """The replacement NodeClaim (created or already there); `name` is '' when the original is gone.
    `expire_after` and `termination_grace_period` are the replacement's spec (its NodePool template's now,
    or the original's when the NodePool is gone): what the replacement's workflow must use."""

    name: str = ""
    uid: str = ""
    message: str = ""
    expire_after: str | None = None
    termination_grace_period: str | None = None


class ReplacementState(BaseModel):
    initialized: bool = False
    gone: bool = False
    message: str = ""


class ReplacementActivities(ClaimActivities):
    """`create_replacement`, `replacement_state`."""

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.create_replacement, self.replacement_state]

    @activity.defn(name="create_replacement")
    def create_replacement(self, inp: ReplacementInput) -> ReplacementResult:
        """Create the replacement NodeClaim of `inp.name` (activities.replace: the original's requirements
        and resources, the rest from its NodePool's template as it is now; a name derived from the original
        and the attempt). Idempotent: an existing replacement is kept. The result carries the expireAfter
        and terminationGracePeriod the replacement's workflow must use."""
        original = self._claim_obj(inp)
        if original is None or original["metadata"].get("deletionTimestamp"):
            return ReplacementResult(message=f"NodeClaim {inp.name} is gone or being deleted")
        node_pool = inp.node_pool or (original["metadata"].get("labels") or {}).get(labels.NODEPOOL, "")
        name = replace.replacement_name(inp.name, node_pool, inp.attempt)
        pool = self.shared_reads.get(NodePool, r.NODEPOOL, node_pool, fresh=True) if node_pool else None
        body = replace.replacement_body(original, name, pool)
        try:
            uid = self.kube.create(r.NODECLAIM, body)["metadata"].get("uid", "")
            self.recorder.record(original, "Normal", "Replacing", f"launching replacement NodeClaim {name}")
        except AlreadyExistsError:
            existing = kubeops.get_or_none(self.kube, r.NODECLAIM, name)  # None: gone already (failed)
            uid = existing["metadata"].get("uid", "") if existing else ""
        return ReplacementResult(
            name=name,
            uid=uid,
            message=f"replacement {name} created",
            expire_after=body["spec"].get("expireAfter"),
            termination_grace_period=body["spec"].get("terminationGracePeriod"),
        )

    @activity.defn(name="replacement_state")
    def replacement_state(self, ref: ClaimRef) -> ReplacementState:
        """Whether the replacement NodeClaim is Initialized, or gone (its launch failed)."""
        obj = kubeops.get_or_none(self.kube, r.NODECLAIM, ref.name)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return ReplacementState(gone=True, message=f"replacement {ref.name} is gone")
        claim = NodeClaim.model_validate(obj)
        if is_true(claim.status.conditions, INITIALIZED):
            return ReplacementState(initialized=True, message=f"replacement {ref.name} is initialized")
        return ReplacementState(message=f"replacement {ref.name} to initialize")
