"""The worker's workflow runner: the SDK's unsandboxed runner, keeping less of each run's start.

A Running NodeClaim run stays in the worker's cache for the node's life, so what a cached run holds is
memory per node (benchmarks/README.md, "Where each kilobyte goes"). Under the SDK's own
`UnsandboxedWorkflowRunner`, three things make a cached run hold more than it uses:

- **The start activation stays whole.** The SDK keeps references into the run's first activation for the
  run's lifetime (the start job's headers, the task's deployment version, `Info.raw_memo`, the last
  completion result). A parsed protobuf message keeps its whole arena alive while any part of it is
  referenced, so the start's search attribute and memo payloads, already decoded into `workflow.info()`,
  stay as well: 10.9 KiB for a Running claim, against 2.8 KiB without them.
- **Search attributes are decoded twice**: `Info.typed_search_attributes`, and the untyped
  `Info.search_attributes` the SDK has deprecated in its favour.
- **Per-run copies of what every run shares**: each run's search attribute keys and its set of
  workflow-logic flags are objects of its own.

`CompactWorkflowRunner` starts each run on copies without them: the memo and last completion result are
copied out of the activation, the activation handed to the run is a copy without the start's search
attributes and memo, equal keys and flag sets are shared. 59.5 to 50.4 KiB per cached Running claim,
measured with `benchmarks/workflow_memory.py --claims 1000`.

Contract: a workflow runs exactly as under `UnsandboxedWorkflowRunner`, with one difference: the
deprecated `workflow.info().search_attributes` starts empty (it holds only what the run upserts); read
`workflow.info().typed_search_attributes`, which is complete. Only the public runner interface of
`temporalio.worker` is used; the SDK reads the start's search attributes and memo into `Info` before
the run is created (tests/workflows/test_fleet_view.py checks what a run still sees of its start;
tests/unit/workers/test_workflow_runner.py what the copy keeps).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from temporalio import workflow
from temporalio.api.common.v1 import Memo, Payloads
from temporalio.bridge.proto.workflow_activation import WorkflowActivation
from temporalio.bridge.proto.workflow_completion import WorkflowActivationCompletion
from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes
from temporalio.converter import SerializationContext, StorageDriverStoreContext
from temporalio.worker import UnsandboxedWorkflowRunner, WorkflowInstance, WorkflowInstanceDetails

if TYPE_CHECKING:  # the interface's parameter type, which the SDK does not export
    from temporalio.worker._command_aware_visitor import CommandInfo


class CompactWorkflowRunner(UnsandboxedWorkflowRunner):
    """`UnsandboxedWorkflowRunner` whose runs keep less of their start (see the module docstring). One per
    worker: it holds the keys and flag sets its runs share."""

    def __init__(self) -> None:
        super().__init__()
        self._keys: dict[SearchAttributeKey, SearchAttributeKey] = {}
        self._flag_sets: dict[frozenset, frozenset] = {}  # type: ignore[type-arg]

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        memo = Memo()  # a message of its own: the run's memo no longer points into the activation
        for key, value in det.info.raw_memo.items():
            memo.fields[key].CopyFrom(value)
        last_completion = Payloads()
        last_completion.CopyFrom(det.last_completion_result)
        typed = [  # a list: the SDK updates it in place on upserts
            SearchAttributePair(self._keys.setdefault(pair.key, pair.key), pair.value)
            for pair in det.info.typed_search_attributes
        ]
        info = dataclasses.replace(
            det.info,
            raw_memo=dict(memo.fields),
            search_attributes={},
            typed_search_attributes=TypedSearchAttributes(typed),
        )
        flags = self._flag_sets.setdefault(det.default_workflow_logic_flags, det.default_workflow_logic_flags)
        compact = dataclasses.replace(
            det, info=info, last_completion_result=last_completion, default_workflow_logic_flags=flags
        )
        return _CompactStart(super().create_instance(compact))


def without_start_view(act: WorkflowActivation) -> WorkflowActivation:
    """`act` itself, or, when it starts the run, a copy of it (in a protobuf arena of its own) whose start
    job has no search attributes and no memo. Pure."""
    if not any(job.HasField("initialize_workflow") for job in act.jobs):
        return act
    scratch = WorkflowActivation.FromString(act.SerializeToString())
    for job in scratch.jobs:
        if job.HasField("initialize_workflow"):
            job.initialize_workflow.ClearField("search_attributes")
            job.initialize_workflow.ClearField("memo")
    # clearing does not shrink scratch's arena: parse again for one sized to what is left
    return WorkflowActivation.FromString(scratch.SerializeToString())


class _CompactStart(WorkflowInstance):
    """A run as the SDK made it, handed its start activation without the start's search attributes and
    memo (its Info already holds them)."""

    def __init__(self, run: WorkflowInstance) -> None:
        self._run = run

    def activate(self, act: WorkflowActivation) -> WorkflowActivationCompletion:
        return self._run.activate(without_start_view(act))

    def get_serialization_context(self, command_info: CommandInfo | None) -> SerializationContext | None:
        return self._run.get_serialization_context(command_info)

    def get_external_store_context(self, command_info: CommandInfo | None) -> StorageDriverStoreContext:
        return self._run.get_external_store_context(command_info)

    def get_info(self) -> workflow.Info:
        return self._run.get_info()

    def get_thread_id(self) -> int | None:
        return self._run.get_thread_id()
