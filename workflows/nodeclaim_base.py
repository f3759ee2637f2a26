"""What the NodeClaim workflow's phases share: its state, the claim's identity for activities, durable
sleeps, drift bookkeeping, the replacement sub-flow of the running phase (`replace` signal), the
provisioner kick, the signal to a disruption controller waiting for this claim, and the fleet view
(search attributes and memo). Deterministic."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from activities.nodeclaim.initialization import InitializationResult
from activities.nodeclaim.models import ClaimIdentity, ClaimRef
from activities.nodeclaim.running import DriftResult
from apis.nodeclaim import DRIFTED
from workflows import search_attributes as sa
from workflows import timing
from workflows.external import signal_workflow
from workflows.messages import DisruptionSignal, ProvisionerSignal
from workflows.nodeclaim_state import RUNNING, NodeClaimInput, NodeClaimState, input_json
from workflows.provisioner import WORKFLOW_ID as PROVISIONER_ID

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out")


def workflow_id(name: str) -> str:
    """The NodeClaim workflow's id for the claim `name`."""
    return f"nodeclaim-{name}"


class NodeClaimWorkflowBase:
    """Helpers of workflows.nodeclaim.NodeClaimWorkflow (which holds the signals and the phases)."""

    def __init__(self) -> None:
        self.state = NodeClaimState(name="")
        self.input = NodeClaimInput(name="")
        self.pending_termination = ""  # why the claim must terminate (a signal or a phase asked); '' = no
        self._continue = False  # a phase asks for continue-as-new (the running phase's run is full)
        self.drift_check_requested = False  # the `check_drift` signal: run the running check now
        self.skip_drain = False  # the `repair` signal: terminate without draining
        self.node_seen = False  # the `node_changed` signal since the last look at the Node
        self._initialization: InitializationResult | None = None  # `register`'s first initialization check

    def _continued_input(self) -> dict[str, Any]:
        """The next run's input (a NodeClaimInput as JSON): the state, and any signalled request not acted on
        yet. Fields at their defaults are left out (the next run's NodeClaimInput has them anyway): the
        input is kept in the worker's memory for as long as the run is cached, about nine times its size,
        and a Running claim's run is cached for days (benchmarks/README.md, idle cost)."""
        continued = dataclasses.replace(
            self.input,
            state=self.state,
            pending_termination=self.pending_termination,
            drift_check_requested=self.drift_check_requested,
            skip_drain=self.skip_drain,
        )
        return input_json(continued)

    def _entered_running(self, before: str) -> bool:
        """The claim just became Running in this run: the long phase starts in a fresh run."""
        return before != RUNNING and self.state.phase == RUNNING

    def _record_drift(self, result: DriftResult) -> None:
        self.state.drift_checks += 1
        self.state.last_drift_check = workflow.now()
        self.state.drift_reason, self.state.drift_message = result.reason, result.message
        if result.drifted:
            self.state.conditions[DRIFTED] = f"True ({result.reason})"
        else:
            self.state.conditions.pop(DRIFTED, None)

    def _ref_fields(self) -> dict[str, str]:
        """The claim's name and the NodeClaim uid recorded at start (activities act on that object only)."""
        return {"name": self.state.name, "uid": self.input.claim_uid}

    def _ref(self) -> ClaimRef:
        return ClaimRef(**self._ref_fields())

    def _identity(self) -> dict[str, str]:
        """The fields of ClaimIdentity: the claim, and its Node by providerID and the uid recorded at
        registration (activities never touch a Node that does not match)."""
        return ClaimIdentity(
            **self._ref_fields(),
            provider_id=self.state.provider_id,
            node_name=self.state.node_name,
            node_uid=self.state.node_uid,
        ).model_dump()

    def _claim_gone(self) -> str:
        uid = f" (uid {self.input.claim_uid})" if self.input.claim_uid else ""
        return f"the NodeClaim {self.state.name}{uid} no longer exists"

    async def _run_activity(self, activity: Callable[[Any, In], Out], arg: In) -> Out:
        """Run a short activity (SHORT_ACTIVITY per attempt, ACTIVITY_RETRY) and return its result."""
        method: Callable[[Any, In], Awaitable[Out]] = activity  # type: ignore[assignment]
        return await workflow.execute_activity_method(
            method, arg, start_to_close_timeout=timing.SHORT_ACTIVITY, retry_policy=timing.ACTIVITY_RETRY
        )

    async def _sleep_until(self, wake: Callable[[], bool], duration: timedelta | None) -> None:
        """A durable timer that a signal making `wake` true cuts short; with `duration` None, no timer at all:
        only a signal ends the wait. The fleet view is published first: what the claim waits in is what
        the Temporal UI shows."""
        self._publish()
        if wake():
            return
        try:
            await workflow.wait_condition(wake, timeout=duration)
        except TimeoutError:
            pass

    async def _tell_waiter(self) -> None:
        """Signal the workflow waiting for this claim (NodeClaimInput.waiter: the disruption controller, for
        a replacement) `replacement_ready`, once: the claim is Initialized, or ended without being so. The
        waiter looks at the claim itself; should it be gone, its own poll stands in."""
        waiter = self.input.waiter
        self.input = dataclasses.replace(self.input, waiter="")
        if not await signal_workflow(waiter, DisruptionSignal.REPLACEMENT_READY, self.state.name):
            # the waiter ended (its command rolled back, or it was terminated by hand)
            workflow.logger.info("%s not told that %s is %s", waiter, self.state.name, self.state.phase)

    async def _kick_provisioner(self) -> None:
        """Pods of a failed or terminated claim are pending again: start a provisioning round."""
        if not await signal_workflow(PROVISIONER_ID, ProvisionerSignal.PODS_PENDING):
            # the provisioner may not be running (e.g. tests); the pod watcher re-triggers
            workflow.logger.info("provisioner not signalled")

    def _history_too_long(self) -> bool:
        info = workflow.info()
        return info.get_current_history_length() > timing.MAX_HISTORY_EVENTS or info.is_continue_as_new_suggested()

    def _published_values(self) -> dict[str, str]:
        """The search attributes that follow the state (the empty ones but Phase left out) and the memo's
        `summary`, in the shape of `_published`."""
        values = {
            sa.PHASE.name: self.state.phase,
            sa.NODE_POOL.name: self.state.node_pool,
            sa.INSTANCE_TYPE.name: self.state.instance_type,
            sa.ZONE.name: self.state.zone,
            sa.CAPACITY_TYPE.name: self.state.capacity_type,
            sa.NODE_NAME.name: self.state.node_name,
        }
        kept = {name: value for name, value in values.items() if value or name == sa.PHASE.name}
        return {**kept, "summary": self.state.summary()}

    def _published(self) -> dict[str, str]:
        """What this run's search attributes and memo say now: what it started with (what the starter set,
        Phase and NodePool and the summary, or what continue-as-new carried over) and what it has upserted
        since, which the SDK keeps in workflow.info(). Read each time rather than kept: a copy would be one
        more object per cached run."""
        info = workflow.info()
        published = {key.name: value for key in sa.ALL if (value := info.typed_search_attributes.get(key))}
        summary = workflow.memo_value("summary", default=None, type_hint=str)
        if summary is not None:
            published["summary"] = summary
        return published

    def _continued_view(self) -> dict[str, Any]:
        """continue_as_new's `search_attributes` and `memo`: the fleet view of the state as it is now, carried
        to the next run without an upsert."""
        values = self._published_values()
        summary = values.pop("summary")
        keys = {key.name: key for key in sa.ALL}
        pairs = [SearchAttributePair(keys[name], value) for name, value in values.items()]
        return {"search_attributes": TypedSearchAttributes(pairs), "memo": {"summary": summary}}

    def _publish(self) -> None:
        """Search attributes and memo follow the state (the Temporal UI's fleet view). Only what changed
        since the last upsert of this run (or what continue-as-new carried over) is sent."""
        current = self._published_values()
        summary = current.pop("summary")
        keys = {key.name: key for key in sa.ALL}
        published = self._published()
        changed = [name for name, value in current.items() if published.get(name) != value]
        if changed:
            workflow.upsert_search_attributes([keys[name].value_set(current[name]) for name in changed])
        if published.get("summary") != summary:
            workflow.upsert_memo({"summary": summary})
