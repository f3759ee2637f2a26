"""The initialization phase of a NodeClaim (Karpenter: nodeclaim/lifecycle/initialization.go): the claim
is Initialized once its Node is Ready, its startup and ephemeral taints are gone and the extended
resources it asked for are there."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities.nodeclaim import ownership
from activities.nodeclaim import translate as claims
from activities.nodeclaim.base import ClaimActivities, claim_logger
from activities.nodeclaim.models import ClaimIdentity
from apis import labels
from apis.meta import is_true
from apis.nodeclaim import CONSISTENT_STATE_FOUND, INITIALIZED
from kube.types import Obj

log = logging.getLogger(__name__)


class InitializationResult(BaseModel):
    """`initialized`, or what it waits for; `gone`: the NodeClaim or its Node no longer exists (or the name
    is now another object's): the workflow stops waiting and terminates what is still its own."""

    initialized: bool = False
    waiting_for: str = ""
    gone: bool = False


class InitializationActivities(ClaimActivities):
    """`check_initialized`."""

    @property
    def activities(self) -> list[Callable[..., Any]]:
        return [self.check_initialized]

    @activity.defn(name="check_initialized")
    def check_initialized(self, ident: ClaimIdentity) -> InitializationResult:
        """Initialized = Ready, startup and ephemeral taints gone, requested extended resources present.
        When it is, label the Node and set Initialized and Ready on the claim; until then Initialized is
        Unknown with the reason and a message saying what it waits for (written when that changes). The call
        that sets Initialized times it from the claim's creation. Then Karpenter's consistency check of the
        node's shape (claims.shape_issues): ConsistentStateFound False (ConsistencyCheckFailed) with a
        FailedConsistencyCheck Warning on the NodeClaim for each resource the Node registered less than 90%
        of, else True."""
        claim = self._claim(ident)
        node = ownership.get(self.kube, self._own_node(ident))
        if claim is None or node is None:
            gone = self._own_claim(ident).describe() if claim is None else self._own_node(ident).describe()
            return InitializationResult(gone=True, waiting_for=f"{gone} is gone")
        reason, waiting_for = claims.initialization_blocker(node, claim)
        if reason:
            self._set_conditions(ident, (INITIALIZED, "Unknown", reason, f"waiting for {waiting_for}"))
            return InitializationResult(waiting_for=waiting_for)

        def label(obj: Obj) -> bool:
            node_labels = obj["metadata"].get("labels") or {}
            if node_labels.get(labels.INITIALIZED) == "true":
                return False
            obj["metadata"]["labels"] = {**node_labels, labels.INITIALIZED: "true"}
            return True

        ownership.update(self.kube, self._own_node(ident), label)
        issues = claims.shape_issues(node, claim)
        consistent = (CONSISTENT_STATE_FOUND, "True", "ConsistentStateFound", "")
        if issues:
            consistent = (CONSISTENT_STATE_FOUND, "False", "ConsistencyCheckFailed", "; ".join(issues))
        self._set_conditions(
            ident,
            (INITIALIZED, "True", "Initialized", "node is ready and its startup taints are gone"),
            consistent,
        )  # Ready follows (claim_base.setting_conditions)
        if not is_true(claim.status.conditions, INITIALIZED):
            self._observe_startup(claim, INITIALIZED)
            claim_logger(log, ident, self._pool_of(claim)).info("initialized NodeClaim %s", ident.name)
            if issues and (claim_obj := self._claim_obj(ident)) is not None:  # read only for Events to record
                for issue in issues:
                    self.recorder.record(claim_obj, "Warning", "FailedConsistencyCheck", issue)
        return InitializationResult(initialized=True)
