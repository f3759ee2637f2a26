"""The NodeClaim workflow: one per node, alive as long as the node; its history is the node's audit log.

It reads as the lifecycle, one method per phase: launch -> register -> initialize -> run -> drain ->
terminate. Each phase is a loop of idempotent activities and durable timers, so a worker killed at any
point resumes where it was, and continue-as-new carries the state to keep history bounded.

Signals: `delete` (the NodeClaim or its Node is being deleted), `drain`, `expire` and `replace` (manual;
each takes an optional reason string, so `temporal workflow signal --workflow-id nodeclaim-<name> --name
drain` works as is). Query: `status` (the NodeClaimState: phase, instance, node, conditions, waiting_for,
termination reason).

While running, a periodic drift check (every `NodeClaimInput.drift_check_interval`) keeps the claim's
Drifted condition current; drift only marks the claim, replacing drifted nodes belongs to the disruption
controller. `replace` launches a replacement NodeClaim (its own workflow, abandoned by this one when it
ends) and drains this node once the replacement is Initialized.

Memory per cached workflow: every command of a run (activity, timer, upsert, patch marker) is held in the
worker's cache for the run's lifetime. So the claim continues as new on entering Running and then every
RUNNING_CHECKS_PER_RUN checks, a continued run does not re-publish the search attributes and memo that
continue-as-new carried over, and each running cycle is one timer and one `running_check` activity.

Command-sequence changes are guarded so stored histories keep replaying: by `workflow.patched` (ids below)
for runs whose input has revision 0, and by `NodeClaimInput.revision` for runs started (or continued) by
newer code, which need no markers. Runs unsandboxed (the sandbox costs ~730 KiB per cached workflow);
determinism is guarded by replay tests over stored histories.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, WorkflowAlreadyStartedError

from activities.models import (
    ClaimIdentity,
    ClaimRef,
    DrainInput,
    DriftCheckInput,
    DriftResult,
    FinalizeInput,
    LaunchFailedInput,
    MarkLaunchedInput,
    RegistrationCheck,
    ReplacementInput,
    TerminateInput,
)
from activities.nodeclaim import NodeClaimActivities
from apis.duration import parse_duration
from workflows import search_attributes as sa
from workflows import timing
from workflows.nodeclaim_state import (
    CURRENT_REVISION,
    DELETED,
    DRAINING,
    INITIALIZING,
    LAUNCHING,
    REGISTERING,
    RUNNING,
    TERMINATING,
    NodeClaimInput,
    NodeClaimState,
)

PROVISIONER_ID = "provisioner"
# workflow.patched ids: the running phase with drift checks and `replace` (old runs keep the liveness loop).
PATCH_DRIFT_CHECK = "running-drift-check-v1"
# Memory per cached workflow: start the long Running phase in a fresh run (the launch, registration and
# initialization commands are then no longer held in the worker's cache), and upsert search attributes
# and the memo only when they change (every upsert is held for the run's lifetime).
PATCH_CONTINUE_WHEN_RUNNING = "continue-as-new-when-running-v1"
PATCH_PUBLISH_CHANGES_ONLY = "publish-changes-only-v1"
# Revision-1 runs (NodeClaimInput.revision) continue as new after this many running checks, so the commands
# a cached run holds stay few: the worker's memory per node does not grow with the node's age.
RUNNING_CHECKS_PER_RUN = 2


def workflow_id(name: str) -> str:
    return f"nodeclaim-{name}"


@workflow.defn(name="NodeClaim", sandboxed=False)
class NodeClaimWorkflow:
    def __init__(self) -> None:
        self.s = NodeClaimState(name="")
        self.inp = NodeClaimInput(name="")
        self.terminate_requested = ""
        self.replace_requested = ""
        self._published: dict[str, str] = {}
        self._continue = False  # a phase asks for continue-as-new (the running phase's run is full)
        self.check_requested = False  # the `check_drift` signal: run the running check now

    # -- messages ----------------------------------------------------------------------------------------

    @workflow.signal(name="delete")
    def delete(self, reason: str = "") -> None:
        """The NodeClaim or its Node is being deleted: drain and terminate."""
        self.terminate_requested = self.terminate_requested or reason or "NodeClaim deleted"

    @workflow.signal(name="drain")
    def drain(self, reason: str = "") -> None:
        """Manual drain: cordon and drain the node, then terminate it."""
        self.terminate_requested = self.terminate_requested or reason or "manual drain"

    @workflow.signal(name="expire")
    def expire(self, reason: str = "") -> None:
        """Manual expiration: as if expireAfter had passed (condition Expired, then drain and terminate)."""
        if not self.terminate_requested:
            self.s.expired = True
        self.terminate_requested = self.terminate_requested or reason or "expired (manual)"

    @workflow.signal(name="replace")
    def replace(self, reason: str = "") -> None:
        """Launch a replacement NodeClaim, then drain this node once the replacement is Initialized.
        Acted on in the running phase (a claim not yet running waits until it is)."""
        self.replace_requested = self.replace_requested or reason or "manual replace"

    @workflow.signal(name="check_drift")
    def check_drift(self, reason: str = "") -> None:
        """Run the running phase's check now instead of at its next interval: the worker sends it when the
        claim's NodePool or EC2NodeClass changes. Ignored before the running phase and by runs without
        drift checks."""
        self.check_requested = True

    @workflow.query(name="status")
    def status(self) -> NodeClaimState:
        """The claim's state: phase, instance, node, conditions, what it waits for, termination reason."""
        return self.s

    # -- run ---------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: NodeClaimInput) -> NodeClaimState:
        self.inp = inp
        self.s = inp.state or NodeClaimState(name=inp.name, node_pool=inp.node_pool)
        self.terminate_requested = self.terminate_requested or inp.terminate_requested
        self.replace_requested = self.replace_requested or inp.replace_requested
        phases: dict[str, Callable[[], Awaitable[None]]] = {
            LAUNCHING: self.launch,
            REGISTERING: self.register,
            INITIALIZING: self.initialize,
            RUNNING: self.running,
            DRAINING: self.drain_node,
            TERMINATING: self.terminate,
        }
        if self._revision() >= 1 and inp.state is not None:
            self._published = self._published_values()  # continue-as-new carried them over
        self._publish()
        while self.s.phase != DELETED:
            before = self.s.phase
            await phases[before]()
            self._publish()
            if self._continue or self._history_too_long() or self._entered_running(before):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(self._continued_input(), memo={"summary": self.s.summary()})
        return self.s

    def _continued_input(self) -> NodeClaimInput:
        """The next run's input: the state, and any signalled request not acted on yet."""
        update = {
            "state": self.s,
            "revision": CURRENT_REVISION,
            "terminate_requested": self.terminate_requested,
            "replace_requested": self.replace_requested,
        }
        return self.inp.model_copy(update=update)

    def _revision(self) -> int:
        return self.inp.revision

    def _patched(self, patch_id: str) -> bool:
        """`workflow.patched`, except in runs of revision 1 or later, where every patch up to
        PATCH_PUBLISH_CHANGES_ONLY is in effect by construction and records no marker (each marker is one
        more command held in the worker's cache for the run's lifetime)."""
        return self._revision() >= 1 or workflow.patched(patch_id)

    def _entered_running(self, before: str) -> bool:
        """The claim just became Running in this run (and the code is new enough to start afresh then)."""
        return before != RUNNING and self.s.phase == RUNNING and self._patched(PATCH_CONTINUE_WHEN_RUNNING)

    async def launch(self) -> None:
        try:
            outcome = await workflow.execute_activity_method(
                NodeClaimActivities.launch,
                self._ref(),
                start_to_close_timeout=timing.LAUNCH_ATTEMPT,
                schedule_to_close_timeout=timing.LAUNCH_TIMEOUT,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.LAUNCH_RETRY,
            )
        except ActivityError as err:
            cause = err.cause
            await self._launch_failed("LaunchFailed", str(cause or err))
            return
        if outcome.failure:
            await self._launch_failed(outcome.failure, outcome.message)
            return
        self.s.instance_id = outcome.instance_id
        self.s.instance_type = outcome.instance_type
        self.s.zone = outcome.zone
        self.s.capacity_type = outcome.capacity_type
        self.s.provider_id = outcome.provider_id
        self.s.node_pool = outcome.node_pool or self.s.node_pool
        if outcome.claim_deleting:
            self.terminate_requested = self.terminate_requested or "NodeClaim deleted while launching"
        await self._act(NodeClaimActivities.mark_launched, MarkLaunchedInput(**self._ref_fields(), launch=outcome))
        self.s.conditions["Launched"] = "True"
        now = workflow.now()
        self.s.launched_at = now
        self.s.registration_deadline = now + (parse_duration(self.inp.registration_ttl) or timedelta(minutes=15))
        expire_after = parse_duration(self.inp.expire_after)
        self.s.expires_at = now + expire_after if expire_after is not None else None
        self.s.phase = TERMINATING if self.terminate_requested else REGISTERING

    async def _launch_failed(self, failure: str, message: str) -> None:
        self.s.failure = f"{failure}: {message}"
        await self._act(
            NodeClaimActivities.launch_failed,
            LaunchFailedInput(**self._ref_fields(), failure=failure, message=message),
        )
        await self._kick_provisioner()
        self.s.phase = DELETED

    async def register(self) -> None:
        interval = timing.REGISTRATION_POLL_FIRST
        while True:
            found = await self._act(
                NodeClaimActivities.find_node, RegistrationCheck(**self._ref_fields(), provider_id=self.s.provider_id)
            )
            if found.claim_gone:
                self.terminate_requested = self.terminate_requested or self._claim_gone()
                self.s.phase = TERMINATING
                return
            if found.node_name:
                self.s.node_name, self.s.node_uid = found.node_name, found.node_uid
                await self._act(NodeClaimActivities.register_node, FinalizeInput(**self._identity()))
                self.s.conditions["Registered"] = "True"
                self.s.phase = DRAINING if self.terminate_requested else INITIALIZING
                return
            if self.terminate_requested:
                self.s.phase = TERMINATING
                return
            deadline = self.s.registration_deadline
            if deadline is not None and workflow.now() >= deadline:
                self.terminate_requested = f"the node did not register within {self.inp.registration_ttl}"
                self.s.phase = TERMINATING
                return
            self.s.waiting_for = "the Node with this instance's providerID"
            await self._sleep_unless_terminating(interval)
            interval = min(interval * 1.5, timing.REGISTRATION_POLL_MAX)

    async def initialize(self) -> None:
        interval = timing.REGISTRATION_POLL_FIRST
        while not self.terminate_requested:
            result = await self._act(NodeClaimActivities.check_initialized, FinalizeInput(**self._identity()))
            if result.gone:
                self.terminate_requested = self.terminate_requested or result.waiting_for
                break
            if result.initialized:
                self.s.conditions["Initialized"] = "True"
                self.s.waiting_for = ""
                self.s.phase = RUNNING
                return
            self.s.waiting_for = result.waiting_for
            await self._sleep_unless_terminating(interval)
            interval = min(interval * 1.5, timing.REGISTRATION_POLL_MAX)
        self.s.phase = DRAINING

    async def running(self) -> None:
        if not self._patched(PATCH_DRIFT_CHECK):
            await self._running_without_drift_checks()
            return
        interval = self._drift_check_interval()
        checks = 0
        while not self.terminate_requested:
            if self.replace_requested:
                await self._replace()
                continue
            now = workflow.now()
            if self.s.expires_at is not None and now >= self.s.expires_at:
                self._expire_now()
                break
            wait = interval  # the liveness backstop (claim_state) runs on the same cadence
            if self.s.expires_at is not None:
                wait = min(wait, self.s.expires_at - now)
            await self._sleep_until(
                lambda: bool(self.terminate_requested or self.replace_requested or self.check_requested), wait
            )
            if self.terminate_requested or self.replace_requested:
                continue
            fresh, self.check_requested = self.check_requested, False
            if not await self._running_check(fresh):
                self.terminate_requested = "the NodeClaim or its Node was deleted"
                break
            checks += 1
            if self._revision() >= 1 and checks >= RUNNING_CHECKS_PER_RUN:
                self._continue = True
                return
            if self._history_too_long():
                return
        self.s.phase = DRAINING

    async def _running_check(self, fresh: bool = False) -> bool:
        """One cycle's liveness and drift check; False when the claim or its node is going away. Revision-1
        runs do both in one activity, older runs in two (`claim_state`, then `check_drift`). `fresh`: asked
        for by `check_drift`, so the NodePool and EC2NodeClass are read fresh."""
        if self._revision() < 1:
            state = await self._act(NodeClaimActivities.claim_state, FinalizeInput(**self._identity()))
            if state.gone:
                return False
            self._record_drift(
                await self._act(
                    NodeClaimActivities.check_drift,
                    DriftCheckInput(**self._identity(), instance_id=self.s.instance_id),
                )
            )
            return True
        check = await self._act(
            NodeClaimActivities.running_check,
            DriftCheckInput(**self._identity(), instance_id=self.s.instance_id, fresh=fresh),
        )
        if check.gone:
            return False
        self._record_drift(check.drift)
        return True

    async def _running_without_drift_checks(self) -> None:
        """The running phase before PATCH_DRIFT_CHECK (kept for workflows started on older code)."""
        while not self.terminate_requested:
            now = workflow.now()
            if self.s.expires_at is not None and now >= self.s.expires_at:
                self._expire_now()
                break
            wait = timing.LIVENESS_CHECK
            if self.s.expires_at is not None:
                wait = min(wait, self.s.expires_at - now)
            await self._sleep_unless_terminating(wait)
            if self.terminate_requested:
                break
            state = await self._act(NodeClaimActivities.claim_state, FinalizeInput(**self._identity()))
            if state.gone:
                self.terminate_requested = "the NodeClaim or its Node was deleted"
            if self._history_too_long():
                return
        self.s.phase = DRAINING

    def _expire_now(self) -> None:
        self.s.expired = True
        self.terminate_requested = f"expired after {self.inp.expire_after}"

    def _drift_check_interval(self) -> timedelta:
        try:
            parsed = parse_duration(self.inp.drift_check_interval)
        except ValueError:
            workflow.logger.warning("drift_check_interval %r does not parse", self.inp.drift_check_interval)
            parsed = None
        return max(parsed or timing.DRIFT_CHECK, timing.MIN_DRIFT_CHECK)

    def _record_drift(self, result: DriftResult) -> None:
        self.s.drift_checks += 1
        self.s.last_drift_check = workflow.now()
        self.s.drift_reason, self.s.drift_message = result.reason, result.message
        if result.drifted:
            self.s.conditions["Drifted"] = f"True ({result.reason})"
        else:
            self.s.conditions.pop("Drifted", None)

    async def _replace(self) -> None:
        """Launch a replacement and wait (durable timers, backoff) until it is Initialized; then this node
        drains. A replacement that fails to launch (its claim is deleted) cancels the replace."""
        self.s.replace_attempts += 1
        created = await self._act(
            NodeClaimActivities.create_replacement,
            ReplacementInput(**self._ref_fields(), node_pool=self.s.node_pool, attempt=self.s.replace_attempts),
        )
        if not created.name:
            self.terminate_requested = self.terminate_requested or created.message
            return
        self.s.replacement = created.name
        child: dict[str, object] = {
            "name": created.name,
            "claim_uid": created.uid,
            "state": None,
            "terminate_requested": "",
            "replace_requested": "",
        }
        if created.from_template:  # the NodePool's template now, not the original's (older results lack it)
            child |= {
                "expire_after": created.expire_after or self.inp.expire_after,
                "termination_grace_period": created.termination_grace_period,
            }
        try:
            await workflow.start_child_workflow(
                NodeClaimWorkflow.run,
                self.inp.model_copy(update=child),
                id=workflow_id(created.name),
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
            )
        except WorkflowAlreadyStartedError:
            pass  # started already (by the adopter after a crash, or an earlier attempt)
        interval = timing.REPLACEMENT_POLL_FIRST
        while not self.terminate_requested:
            state = await self._act(NodeClaimActivities.replacement_state, ClaimRef(name=created.name))
            if state.initialized:
                self.terminate_requested = f"replaced by {created.name} ({self.replace_requested})"
                break
            if state.gone:
                self.s.failure = f"replace: {state.message}; this node keeps running"
                self.s.replacement = ""
                break
            self.s.waiting_for = state.message
            await self._sleep_unless_terminating(interval)
            interval = min(interval * 2, timing.REPLACEMENT_POLL_MAX)
        self.s.waiting_for = ""
        self.replace_requested = ""

    async def drain_node(self) -> None:
        ref = FinalizeInput(**self._identity(), reason=self.terminate_requested, expired=self.s.expired)
        await self._act(NodeClaimActivities.begin_termination, ref)
        self.s.termination_reason = self.terminate_requested
        if self.s.expired:
            self.s.conditions["Expired"] = "True"
        if self.s.drain_started_at is None:
            self.s.drain_started_at = workflow.now()
            grace = parse_duration(self.inp.termination_grace_period) if self.inp.termination_grace_period else None
            self.s.drain_deadline = self.s.drain_started_at + grace if grace else None
        while self.s.node_name:
            force = self.s.drain_deadline is not None and workflow.now() >= self.s.drain_deadline
            progress = await workflow.execute_activity_method(
                NodeClaimActivities.drain_step,
                DrainInput(**self._identity(), force=force, deadline=self.s.drain_deadline),
                start_to_close_timeout=timing.DRAIN_STEP,
                heartbeat_timeout=timing.HEARTBEAT,
                retry_policy=timing.ACTIVITY_RETRY,
            )
            if progress.remaining == 0:
                self.s.conditions["Drained"] = "True"
                break
            self.s.waiting_for = progress.message
            await workflow.sleep(timing.DRAIN_POLL)
            if self._history_too_long():
                return
        self.s.waiting_for = ""
        self.s.phase = TERMINATING

    async def terminate(self) -> None:
        if not self.s.termination_reason:
            ref = FinalizeInput(**self._identity(), reason=self.terminate_requested, expired=self.s.expired)
            await self._act(NodeClaimActivities.begin_termination, ref)
            self.s.termination_reason = self.terminate_requested
        while True:
            result = await self._act(
                NodeClaimActivities.terminate_instance,
                TerminateInput(**self._ref_fields(), instance_id=self.s.instance_id),
            )
            if result.gone:
                if result.message:
                    self.s.failure = result.message
                break
            self.s.waiting_for = f"instance {self.s.instance_id} to terminate"
            await workflow.sleep(timing.TERMINATE_POLL)
        await self._act(NodeClaimActivities.finalize, FinalizeInput(**self._identity()))
        self.s.waiting_for = ""
        self.s.phase = DELETED
        await self._kick_provisioner()

    # -- helpers -----------------------------------------------------------------------------------------

    def _ref_fields(self) -> dict[str, str]:
        """The claim's name and the NodeClaim uid recorded at start (activities act on that object only)."""
        return {"name": self.s.name, "uid": self.inp.claim_uid}

    def _ref(self) -> ClaimRef:
        return ClaimRef(**self._ref_fields())

    def _identity(self) -> dict[str, str]:
        """The fields of ClaimIdentity: the claim, and its Node by providerID and the uid recorded at
        registration (activities never touch a Node that does not match)."""
        return ClaimIdentity(
            **self._ref_fields(), provider_id=self.s.provider_id, node_name=self.s.node_name, node_uid=self.s.node_uid
        ).model_dump()

    def _claim_gone(self) -> str:
        uid = f" (uid {self.inp.claim_uid})" if self.inp.claim_uid else ""
        return f"the NodeClaim {self.s.name}{uid} no longer exists"

    async def _act(self, fn, arg):  # type: ignore[no-untyped-def]
        return await workflow.execute_activity_method(
            fn, arg, start_to_close_timeout=timing.SHORT_ACTIVITY, retry_policy=timing.ACTIVITY_RETRY
        )

    async def _sleep_unless_terminating(self, duration: timedelta) -> None:
        await self._sleep_until(lambda: bool(self.terminate_requested), duration)

    @staticmethod
    async def _sleep_until(wake: Callable[[], bool], duration: timedelta) -> None:
        """A durable timer that a signal making `wake` true cuts short."""
        try:
            await workflow.wait_condition(wake, timeout=duration)
        except TimeoutError:
            pass

    async def _kick_provisioner(self) -> None:
        """Pods of a failed or terminated claim are pending again: start a provisioning round."""
        try:
            await workflow.get_external_workflow_handle(PROVISIONER_ID).signal("pods_pending", [])
        except Exception:  # the provisioner may not be running (e.g. tests); the pod watcher re-triggers
            workflow.logger.info("provisioner not signalled")

    def _history_too_long(self) -> bool:
        info = workflow.info()
        return info.get_current_history_length() > timing.MAX_HISTORY_EVENTS or info.is_continue_as_new_suggested()

    def _published_values(self) -> dict[str, str]:
        """The search attributes that follow the state (the empty ones but Phase left out) and the memo's
        `summary`, as `_published` records what was sent."""
        values = {
            sa.PHASE.name: self.s.phase,
            sa.NODE_POOL.name: self.s.node_pool,
            sa.INSTANCE_TYPE.name: self.s.instance_type,
            sa.ZONE.name: self.s.zone,
            sa.CAPACITY_TYPE.name: self.s.capacity_type,
            sa.NODE_NAME.name: self.s.node_name,
        }
        kept = {name: value for name, value in values.items() if value or name == sa.PHASE.name}
        return {**kept, "summary": self.s.summary()}

    def _publish(self) -> None:
        """Search attributes and memo follow the state (the Temporal UI's fleet view). Only what changed
        since the last upsert of this run is sent (older runs sent everything every time)."""
        current = self._published_values()
        summary = current.pop("summary")
        changes_only = self._patched(PATCH_PUBLISH_CHANGES_ONLY)
        keys = {key.name: key for key in sa.ALL}
        changed = [name for name, value in current.items() if not changes_only or self._published.get(name) != value]
        if changed:
            workflow.upsert_search_attributes([keys[name].value_set(current[name]) for name in changed])
            self._published.update({name: current[name] for name in changed})
        if not changes_only or self._published.get("summary") != summary:
            workflow.upsert_memo({"summary": summary})
            self._published["summary"] = summary


__all__ = ["NodeClaimWorkflow", "workflow_id"]
