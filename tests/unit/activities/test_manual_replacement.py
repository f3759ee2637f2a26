"""The manual replace activities (activities.disruption.manual_replacement), each called directly over MemKube: the
`Manual` command of a running claim (or why there is none), and the launch of its replacement on the
NodePool's template as it is now."""

from __future__ import annotations

import pytest

from activities.disruption.execution import DisruptionExecution, StartInput
from activities.disruption.manual_replacement import LaunchManualInput, ManualReplacement, ManualRequest
from activities.provisioning.models import ProvisionRound
from kube import resources as r
from kube.fake import Events, MemKube
from scheduling.disruption.replace import REPLACEMENT_OF_ANNOTATION
from tests.unit.activities.claimworld import NAME
from tests.unit.activities.test_disruption_activities import Starter, events, kube  # noqa: F401  (fixtures)

ROUND = ProvisionRound(run_id="disruption-run-1", round=4)


@pytest.fixture
def manual(kube: MemKube, events: Events) -> ManualReplacement:  # noqa: F811
    return ManualReplacement(kube, events, Starter())


def test_a_running_claim_is_planned_as_a_manual_replace_with_the_requests_reason(manual: ManualReplacement) -> None:
    plan = manual.plan_manual_replacement(ManualRequest(node_claim=NAME, reason="new AMI"))
    assert plan.command is not None and not plan.skipped
    command = plan.command
    assert (command.method, command.reason, command.action) == ("Manual", "Manual", "Replace")
    assert command.message == "new AMI"
    (candidate,) = command.candidates
    assert (candidate.node_claim, candidate.node, candidate.node_pool) == (NAME, "node-1", "default")
    assert command.replacements == []  # launched by launch_manual_replacements, not planned by the scheduler


def test_no_command_for_a_claim_gone_or_already_being_disrupted(
    manual: ManualReplacement,
    kube: MemKube,  # noqa: F811
    events: Events,  # noqa: F811
) -> None:
    assert "gone" in manual.plan_manual_replacement(ManualRequest(node_claim="nope")).skipped
    planned = manual.plan_manual_replacement(ManualRequest(node_claim=NAME))
    assert planned.command is not None
    DisruptionExecution(kube, events, Starter()).start_disruption(StartInput(command=planned.command))
    again = manual.plan_manual_replacement(ManualRequest(node_claim=NAME))
    assert again.command is None and "already being disrupted" in again.skipped


def test_no_command_for_a_claim_without_a_node_yet(manual: ManualReplacement, kube: MemKube) -> None:  # noqa: F811
    with kube.as_admin():
        kube.patch(r.NODECLAIM, NAME, {"status": {"nodeName": ""}}, subresource="status")
    assert "no Node yet" in manual.plan_manual_replacement(ManualRequest(node_claim=NAME)).skipped


def test_the_replacement_is_the_original_on_the_current_template_created_and_started_once(
    manual: ManualReplacement,
    kube: MemKube,  # noqa: F811
    events: Events,  # noqa: F811
) -> None:
    kube.patch(r.NODEPOOL, "default", {"spec": {"template": {"spec": {"expireAfter": "168h"}}}})
    inp = LaunchManualInput(round=ROUND, names=[NAME, "gone"], waiter="disruption")  # "gone" gets none

    (name,) = manual.launch_manual_replacements(inp)
    created = kube.get(r.NODECLAIM, name)
    assert name.startswith("default-") and name != NAME
    assert created["metadata"]["annotations"][REPLACEMENT_OF_ANNOTATION] == NAME
    assert created["metadata"]["labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert created["spec"]["expireAfter"] == "168h"  # the NodePool's template as it is now
    assert created["spec"]["requirements"] == kube.get(r.NODECLAIM, NAME)["spec"]["requirements"]
    assert ("Replacing", f"launching replacement NodeClaim {name}") in events.recorded

    assert manual.launch_manual_replacements(inp) == [name]  # a retried activity finds the same claim
    replacements = [c for c in kube.list(r.NODECLAIM) if REPLACEMENT_OF_ANNOTATION in c["metadata"]["annotations"]]
    assert len(replacements) == 1
    assert manual.starter.started == [name, name]  # type: ignore[attr-defined]  # the starter finds it running
    assert manual.starter.waiters == ["disruption", "disruption"]  # type: ignore[attr-defined]  # told when it is up


def test_the_replacement_of_a_claim_whose_nodepool_is_gone_copies_the_original(
    manual: ManualReplacement,
    kube: MemKube,  # noqa: F811
) -> None:
    kube.delete(r.NODEPOOL, "default")
    (name,) = manual.launch_manual_replacements(LaunchManualInput(round=ROUND, names=[NAME]))
    created = kube.get(r.NODECLAIM, name)
    assert "expireAfter" not in created["spec"]  # the original's spec, which has none
    assert created["metadata"]["annotations"][REPLACEMENT_OF_ANNOTATION] == NAME
