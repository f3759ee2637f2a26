"""workers.temporal.workflow_runner.without_start_view: what a run is handed of its start activation."""

from __future__ import annotations

from temporalio.api.common.v1 import Payload
from temporalio.bridge.proto.workflow_activation import WorkflowActivation

from workers.temporal.workflow_runner import without_start_view


def _payload(data: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def _start_activation() -> WorkflowActivation:
    act = WorkflowActivation(run_id="run-1", history_length=3)
    init = act.jobs.add().initialize_workflow
    init.workflow_type, init.workflow_id = "NodeClaim", "nodeclaim-a"
    init.arguments.append(_payload(b'{"name":"a"}'))
    init.headers["_tracer-data"].CopyFrom(_payload(b'{"traceparent":"00-1-2-01"}'))
    init.memo.fields["summary"].CopyFrom(_payload(b'"Running: a"'))
    init.search_attributes.indexed_fields["Phase"].CopyFrom(_payload(b'"Running"'))
    act.jobs.add().signal_workflow.signal_name = "check_drift"  # a signal in the same activation stays
    return act


def test_a_start_activation_loses_its_search_attributes_and_memo_and_keeps_the_rest() -> None:
    act = _start_activation()
    slim = without_start_view(act)

    assert slim is not act
    init = slim.jobs[0].initialize_workflow
    assert not init.HasField("search_attributes") and not init.HasField("memo")
    assert list(init.arguments) == list(act.jobs[0].initialize_workflow.arguments)
    assert dict(init.headers) == dict(act.jobs[0].initialize_workflow.headers)
    assert (init.workflow_type, init.workflow_id) == ("NodeClaim", "nodeclaim-a")
    assert (slim.run_id, slim.history_length, slim.jobs[1].signal_workflow.signal_name) == ("run-1", 3, "check_drift")
    # the activation the worker holds is left as it was
    assert act.jobs[0].initialize_workflow.search_attributes.indexed_fields["Phase"].data == b'"Running"'
    assert slim.ByteSize() < act.ByteSize()


def test_any_other_activation_is_handed_on_as_it_is() -> None:
    act = WorkflowActivation(run_id="run-1")
    act.jobs.add().signal_workflow.signal_name = "delete"
    assert without_start_view(act) is act
